/*
 * Operations that count their completion on counters (UCP_OP_ATTR_FIELD_EXT,
 * ucp/api/ucp_ext.h). The nbx entry points that take it hand the call to
 * counted(): it checks the extension fields, and calls the operation again
 * with the caller's base parameters rewired so that the completion comes
 * here first (a callback of ours with a record as user data). A completion
 * inside the call (NULL or an error pointer) is counted at once, a later one
 * in the callback; then the caller's own callback runs with its own user
 * data. Each counter's pending_work counts the operations in flight on it,
 * so it cannot be destroyed under them. A param that also names a trigger
 * (UCP_EXT_PARAM_FIELD_TRIGGER) makes it a triggered operation instead
 * (trigger.h): the same start, kept by value and run later.
 */
#ifndef UCP_EXT_OP_CNTR_H
#define UCP_EXT_OP_CNTR_H

#include <ucp/api/ucp_ext.h>

#include <cstddef>
#include <new>
#include <type_traits>

namespace ucp::ext {

/* Which callback of ucp_request_param_t the operation completes with, and
 * where its byte count comes from. */
enum class op_kind {
    SEND,       /* cb.send; the bytes of counted()'s buffer and count */
    TAG_RECV,   /* cb.recv; ucp_tag_recv_info_t::length */
    STREAM_RECV /* cb.recv_stream; the length received */
};

inline bool wants_counting(const ucp_request_param_t *param)
{
    return (param != nullptr) && (param->op_attr_mask & UCP_OP_ATTR_FIELD_EXT);
}

/* What a counted operation is, beyond its parameters. */
struct op_desc {
    ucp_worker_h worker;
    op_kind kind;
    const void *buffer; /* a SEND's data: its size is counted with EVENTS_BYTES */
    size_t count;
    ucp_ep_h ep          = nullptr; /* a triggered one is cancelled when the ep goes */
    ucp_rkey_h rkey      = nullptr; /* a triggered one checks it is live when it fires */
    const size_t *length = nullptr; /* a stream receive's length output */
    bool can_trigger     = true;
    ucp_cntr *updates    = nullptr; /* ucp_cntr_op_nbx: held until a triggered one fires */
};

struct counted_op;

/* Checks the ext fields of `param` (counters live, on the worker); fills
 * *base with the caller's parameters completing through *op. */
ucs_status_t counted_begin(const op_desc &desc, const ucp_request_param_t *param,
                           ucp_request_param_t *base, counted_op **op);

/* The nbx call's result: what completed inside the call is counted now. */
ucs_status_ptr_t counted_end(counted_op *op, ucs_status_ptr_t result, const size_t *length);

/*
 * How a stored operation is started again: with the parameters it gets.
 * The entry points' lambdas capture a few pointers and sizes by value; they
 * are kept inside this object (no heap block per triggered operation, and
 * the start lies in the record it is queued with). A capture that does not
 * fit, or is not plain data, does not compile.
 */
class start_fn {
public:
    static constexpr std::size_t capacity = 64;

    template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, start_fn>>>
    start_fn(F f) noexcept /* NOLINT: converts like std::function */
    {
        static_assert(sizeof(F) <= capacity, "start_fn: the capture is too big");
        static_assert(alignof(F) <= alignof(std::max_align_t), "start_fn: over-aligned");
        static_assert(std::is_trivially_copyable_v<F> && std::is_trivially_destructible_v<F>,
                      "start_fn: capture plain values only");
        new (m_storage) F(f);
        m_call = [](const void *storage, const ucp_request_param_t *param) {
            return (*static_cast<const F *>(storage))(param);
        };
    }

    ucs_status_ptr_t operator()(const ucp_request_param_t *param) const
    {
        return m_call(m_storage, param);
    }

private:
    alignas(std::max_align_t) unsigned char m_storage[capacity];
    ucs_status_ptr_t (*m_call)(const void *, const ucp_request_param_t *);
};

/* The ext param asks for a trigger (UCP_EXT_PARAM_FIELD_TRIGGER). */
bool wants_trigger(const ucp_request_param_t *param);

/* Queues `start` until its trigger counter reaches the threshold (or starts
 * it now); ucp/ext/trigger.cc. */
ucs_status_ptr_t post_triggered(const op_desc &desc, const ucp_request_param_t *param,
                                start_fn start);

/* Runs `start(const ucp_request_param_t*)` counted, or triggered when the
 * param asks for it. `start` is kept by value for a triggered operation:
 * it must capture what it uses by value. */
template <typename Start>
ucs_status_ptr_t counted(const op_desc &desc, const ucp_request_param_t *param, Start start)
{
    if (wants_trigger(param)) {
        return post_triggered(desc, param, start_fn(start));
    }
    ucp_request_param_t base;
    counted_op *op;
    ucs_status_t status = counted_begin(desc, param, &base, &op);
    if (status != UCS_OK) {
        return UCS_STATUS_PTR(status);
    }
    return counted_end(op, start(&base), desc.length);
}

/* Checks that `cntr` lives on `worker` (says which field is wrong). */
bool cntr_live_on(ucp_cntr *cntr, ucp_worker_h worker, const char *field);

/* The counters of `ext` (fields in `known` only), checked live on `worker`
 * (caller holds its guard); nullptr where not given. */
ucs_status_t ext_counters(const ucp_ext_request_param_t *ext, ucp_worker_h worker, uint64_t known,
                          ucp_cntr **cntr, ucp_cntr **err_cntr);

/* Counts a failure of an operation with these counters (cancelled before
 * it started): 1 on err_cntr's error value, or cntr's. */
void count_failure(ucp_cntr *cntr, ucp_cntr *err_cntr);

/* The worker of `ep`; nullptr for a NULL ep (counted() refuses it). */
ucp_worker_h worker_of(ucp_ep_h ep);

/* UCS_ERR_UNSUPPORTED for calls that do not count (and say so). */
ucs_status_t refuse_counting(const char *call);

} // namespace ucp::ext

#endif
