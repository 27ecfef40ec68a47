/*
 * The algorithms: each builds the schedule of one collective (schedule.h)
 * for this rank. Which one runs is chosen by select.h.
 */
#ifndef COLL_ALGORITHMS_H
#define COLL_ALGORITHMS_H

#include "reduce.h"
#include "schedule.h"

#include <span>

namespace coll {

/* What an algorithm needs to know of the call. */
struct call {
    const ucp_coll_args_t &args;
    unsigned size; /* team size */
    unsigned rank;
    size_t esize;     /* bytes of an element */
    reduce_fn reduce; /* reductions */
    bool in_place;
    unsigned radix; /* of the knomial algorithms (UCX_COLL_KNOMIAL_RADIX) */
    size_t segment; /* bytes of a pipeline segment (UCX_COLL_PIPELINE_SEGMENT) */
};

using builder_fn = void (*)(task &t, const call &c);

struct algorithm {
    const char *name;
    builder_fn build;
};

/* The algorithms of a collective; the first is the default for small
 * messages. */
std::span<const algorithm> algorithms_of(ucp_coll_type_t coll);

/* The team's creation: a dissemination exchange of (size, key) so that
 * every member knows all others made the team alike. `check` holds this
 * rank's values and room for a peer's per round. */
void build_team_check(task &t, unsigned size, unsigned rank, uint64_t *check);

const char *coll_name(ucp_coll_type_t coll);

/* Bruck's alltoall: the blocks i (0 < i < n) with bit `dist`, in order,
 * from the rotated blocks into a contiguous buffer, and back. */
void bruck_pack(uint8_t *packed, const uint8_t *blocks, unsigned n, unsigned dist, size_t bb);
void bruck_unpack(uint8_t *blocks, const uint8_t *packed, unsigned n, unsigned dist, size_t bb);

} // namespace coll

#endif
