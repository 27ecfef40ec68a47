/*
 * Element types and reduction kernels of the collectives: the table of
 * every (datatype, op) pair that has a meaning, as libfabric's fi_collective
 * lists them.
 */
#ifndef COLL_REDUCE_H
#define COLL_REDUCE_H

#include <coll/api/ucp_coll.h>

#include <cstddef>

namespace coll {

/* Bytes of one element; 0 for a value outside the enum. */
size_t dt_size(ucp_coll_dt_t dt);

/* dst[i] = lo[i] op hi[i] for count elements. dst may be lo or hi. The
 * operands keep their order (lo is the lower ranks' value), so every rank
 * that reduces the same two values gets the same bits, NaNs included. */
using reduce_fn = void (*)(void *dst, const void *lo, const void *hi, size_t count);

/* The kernel of (dt, op); nullptr when the pair has no meaning (bitwise ops
 * on floating point, MIN/MAX/logical ops on complex) or is out of range. */
reduce_fn reduce_function(ucp_coll_dt_t dt, ucp_coll_op_t op);

const char *dt_name(ucp_coll_dt_t dt);
const char *op_name(ucp_coll_op_t op);

} // namespace coll

#endif
