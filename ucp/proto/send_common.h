/*
 * What every send operation shares: getting a request for an nbx call,
 * starting it with UCX's immediate-completion rules, and finishing it once
 * both the local part (SEND_DONE) and, where one is awaited, the peer's
 * reply (ACKED) are in.
 */
#ifndef UCP_PROTO_SEND_COMMON_H
#define UCP_PROTO_SEND_COMMON_H

#include <ucp/core/ucp_guard.h>
#include <ucp/core/ucp_request.h>

#include <cstring>

namespace ucp {

/* A private op_attr_mask bit: the callback has the pre-nbx signature. */
constexpr uint32_t param_legacy_callback = 1u << 31;

/* Stores a pre-nbx callback in ucp_request_param_t's callback union; the
 * LEGACY_CB flag makes completion call it with its own signature. */
template <typename To, typename From>
To callback_cast(From f)
{
    return reinterpret_cast<To>(reinterpret_cast<void (*)()>(f));
}

/* Bytes a bcopy packs as they are: `arg` of pack_span. */
struct byte_span {
    const void *data;
    size_t length;
};

/* uct::pack_callback_t copying a byte_span. */
inline size_t pack_span(void *dest, void *arg)
{
    const auto *span = static_cast<const byte_span *>(arg);
    std::memcpy(dest, span->data, span->length);
    return span->length;
}

/* A NULL buffer with data to move is an error, except for generic datatypes
 * (their callbacks own the data; MPICH passes NULL there). */
inline bool buffer_valid(const void *buffer, size_t count, const ucp_request_param_t *param)
{
    if ((buffer != nullptr) || (count == 0)) {
        return true;
    }
    return (param->op_attr_mask & UCP_OP_ATTR_FIELD_DATATYPE) &&
           ((param->datatype & UCP_DATATYPE_CLASS_MASK) == UCP_DATATYPE_GENERIC);
}

/* The request of an nbx call: the caller's (FIELD_REQUEST) or a pooled one,
 * with the callback and user data of `param`. nullptr: out of memory. */
request *send_request_get(ucp_worker *worker, const ucp_request_param_t *param);

/* Gives back a request whose operation never started. */
void send_request_abort(request *req);

/*
 * Starts the packer of a request from send_request_get on the caller's
 * buffer, in its memory type (dt/dt_memtype.h), with no registration yet.
 * A message in memory the CPU cannot touch that fits one bcopy fragment of
 * `ep` is staged whole into a host bounce buffer first (one copy, and a
 * failed copy fails the call rather than a fragment already on its way);
 * larger ones are staged per fragment, or go by a rendezvous lane for that
 * memory. On failure the request is given back.
 */
ucs_status_t send_packer_start(request *req, const ucp_ep *ep, const ucp_request_param_t *param,
                               ucp_datatype_t dt, const void *buffer, size_t count);

/* Copies the whole message of a non-host packer into a host bounce buffer
 * (send_state::bounce, freed with the request) and points the packer there.
 * UCS_ERR_IO_ERROR when the memory type's copier fails. */
ucs_status_t send_stage_whole(send_state &s);

/*
 * Runs the first step (req->u.send.step) or queues it, and turns the
 * outcome into the nbx return value: NULL when done at once (no callback
 * then, unless UCP_OP_ATTR_FLAG_NO_IMM_CMPL asks for a request), an error
 * pointer, or the request.
 */
ucs_status_ptr_t send_request_start(request *req, const ucp_request_param_t *param);

/*
 * The nbx result of a request that completed inside its call, while its
 * CALLBACK bit (`cb_flag`) was held back: with UCP_OP_ATTR_FLAG_NO_IMM_CMPL
 * the callback runs now and the request is returned; otherwise the request
 * goes back to the pool and NULL (or the error) is returned.
 */
ucs_status_ptr_t request_immediate_result(request *req, uint32_t cb_flag,
                                          const ucp_request_param_t *param);

/* The local part is done: completes unless a reply is still awaited. */
void send_done(request *req);

/* A peer's reply (sync ack, rendezvous ATS) for a SYNC request. */
void reply_arrived(request *req, ucs_status_t status);

/* Releases the send's resources and completes it. */
void send_request_finish(request *req, ucs_status_t status);

/* Rendezvous: the first step for a contiguous message of this size, or
 * nullptr; `user_header_length`: what the RTS carries besides its header
 * and the keys (an active message's user header). */
send_step_t rndv_select(request *req, size_t user_header_length = 0);

/* Rendezvous: releases the send's registrations on more mds, if any
 * (ucp/tag/rndv_keys.cc). */
void rndv_release_more_regs(request *req);

} // namespace ucp

#endif
