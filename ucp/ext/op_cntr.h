/*
 * Operations that count their completion on counters (UCP_OP_ATTR_FIELD_EXT,
 * ucp/api/ucp_ext.h). The nbx entry points that take it hand the call to
 * counted(): it checks the extension fields, and calls the operation again
 * with the caller's base parameters rewired so that the completion comes
 * here first (a callback of ours with a record as user data). A completion
 * inside the call (NULL or an error pointer) is counted at once, a later one
 * in the callback; then the caller's own callback runs with its own user
 * data. Each counter's pending_work counts the operations in flight on it,
 * so it cannot be destroyed under them.
 */
#ifndef UCP_EXT_OP_CNTR_H
#define UCP_EXT_OP_CNTR_H

#include <ucp/api/ucp_ext.h>

#include <cstddef>

namespace ucp::ext {

/* Which callback of ucp_request_param_t the operation completes with, and
 * where its byte count comes from. */
enum class op_kind {
    SEND,         /* cb.send; the bytes of counted()'s buffer and count */
    TAG_RECV,     /* cb.recv; ucp_tag_recv_info_t::length */
    STREAM_RECV   /* cb.recv_stream; the length received */
};

inline bool wants_counting(const ucp_request_param_t *param)
{
    return (param != nullptr) && (param->op_attr_mask & UCP_OP_ATTR_FIELD_EXT);
}

struct counted_op;

/* Checks the ext fields of `param` (counters live, on `worker`); fills
 * *base with the caller's parameters completing through *op. `buffer` and
 * `count`: a SEND's data (its size is counted with EVENTS_BYTES). */
ucs_status_t counted_begin(ucp_worker_h worker, const ucp_request_param_t *param,
                           op_kind kind, const void *buffer, size_t count,
                           ucp_request_param_t *base, counted_op **op);

/* The nbx call's result: what completed inside the call is counted now.
 * `length`: a stream receive's length output, else nullptr. */
ucs_status_ptr_t counted_end(counted_op *op, ucs_status_ptr_t result, const size_t *length);

/* Runs `start(const ucp_request_param_t*)`, counted; `buffer` and `count`
 * as for counted_begin. */
template <typename Start>
ucs_status_ptr_t counted(ucp_worker_h worker, const ucp_request_param_t *param, op_kind kind,
                         const void *buffer, size_t count, Start &&start,
                         const size_t *length = nullptr)
{
    ucp_request_param_t base;
    counted_op *op;
    ucs_status_t status = counted_begin(worker, param, kind, buffer, count, &base, &op);
    if (status != UCS_OK) {
        return UCS_STATUS_PTR(status);
    }
    return counted_end(op, start(&base), length);
}

/* The worker of `ep`; nullptr for a NULL ep (counted() refuses it). */
ucp_worker_h worker_of(ucp_ep_h ep);

/* UCS_ERR_UNSUPPORTED for calls that do not count (and say so). */
ucs_status_t refuse_counting(const char *call);

} // namespace ucp::ext

#endif
