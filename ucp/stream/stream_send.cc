/*
 * Stream sends: the bytes go out in fragments of the AM lane, each with a
 * stream_hdr naming the sending worker and the peer's ep: copied (bcopy) below the
 * ep's zcopy threshold, sent from the application's buffer (eager zcopy,
 * in large fragments) from it; from the rendezvous threshold a contiguous
 * send goes as an AM_STREAM_RTS that the receiver pulls (stream_rndv.cc),
 * and completes with its ATS.
 */
#include "stream.h"

#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_guard.h>
#include <ucp/dt/dt_memtype.h>
#include <ucp/ext/op_cntr.h>
#include <ucp/proto/bcopy_fragments.h>
#include <ucp/proto/eager_zcopy.h>
#include <ucp/proto/select.h>
#include <ucp/proto/send_common.h>
#include <ucp/proto/wire.h>
#include <ucp/tag/rndv.h>
#include <ucs/debug/log.h>

#include <cstring>

namespace ucp {

namespace {

size_t fragment_room(const ucp_ep *ep)
{
    return ep->am_ep->owner().attr().am.max_bcopy - sizeof(wire::stream_hdr);
}

size_t pack_fragment(void *dest, void *arg)
{
    auto *req     = static_cast<request *>(arg);
    send_state &s = req->u.send;
    const wire::stream_hdr hdr{req->worker->uuid, s.ep->remote_id};
    char *out = static_cast<char *>(dest);
    std::memcpy(out, &hdr, sizeof(hdr));
    size_t n = s.packer.pack(out + sizeof(hdr), s.offset, fragment_room(s.ep));
    s.offset += n;
    return sizeof(hdr) + n;
}

ucs_status_t stream_step(request *req)
{
    if (req->u.send.packer.length() == 0) {
        send_done(req); /* a datatype of no bytes adds nothing to the stream */
        return UCS_OK;
    }
    /* Every fragment is alike: the stream header, then the next bytes. */
    return send_bcopy_fragments(req, {wire::AM_STREAM, pack_fragment, wire::AM_STREAM,
                                      pack_fragment, "ucp_stream_send"});
}

/* Every zcopy fragment carries the same header as a bcopy one. */
size_t zcopy_header(request *req, size_t, size_t, void *out, uint8_t *am_id)
{
    const wire::stream_hdr hdr{req->worker->uuid, req->u.send.ep->remote_id};
    std::memcpy(out, &hdr, sizeof(hdr));
    *am_id = wire::AM_STREAM;
    return sizeof(hdr);
}

ucs_status_t stream_rts_step(request *req)
{
    return rndv_send_rts(req, wire::AM_STREAM_RTS);
}

ucs_status_t stream_zcopy_step(request *req)
{
    return zcopy::send(req, zcopy_header, req->u.send.ep->cfg->thresh.zcopy_frag);
}

/* What the request-less fast path packs. */
struct inline_send {
    wire::stream_hdr hdr;
    const void *buffer;
    size_t length;
};

size_t pack_inline(void *dest, void *arg)
{
    auto *send = static_cast<inline_send *>(arg);
    std::memcpy(dest, &send->hdr, sizeof(send->hdr));
    std::memcpy(static_cast<char *>(dest) + sizeof(send->hdr), send->buffer, send->length);
    return sizeof(send->hdr) + send->length;
}

ucs_status_ptr_t send_common(ucp_ep *ep, const void *buffer, size_t count,
                             const ucp_request_param_t *param)
{
    ucp_worker *worker      = ep->worker;
    const ucp_datatype_t dt = (param->op_attr_mask & UCP_OP_ATTR_FIELD_DATATYPE) ?
                                  param->datatype :
                                  ucp_dt_make_contig(1);
    if (count == 0) {
        return nullptr; /* nothing to add to the stream */
    }
    if (!ep->usable()) {
        return UCS_STATUS_PTR(ep->status);
    }

    /* Fast path: one fragment, contiguous, nothing queued, wired up (the
     * data names the peer's ep): no request. Inline in the transport's
     * slot (am_short, the header's first word as its header) where it
     * fits: over shared memory the receiver then reads one cache line. */
    if ((dt == ucp_dt_make_contig(1)) && (count <= fragment_room(ep)) &&
        (count < ep->cfg->thresh.zcopy) && (ep->num_pending == 0) && (ep->flags & ep_flag::READY) &&
        !(param->op_attr_mask & (UCP_OP_ATTR_FIELD_REQUEST | UCP_OP_ATTR_FLAG_NO_IMM_CMPL)) &&
        dt::host_buffer(param, buffer, count)) {
        const wire::stream_hdr hdr{worker->uuid, ep->remote_id};
        /* max_eager_short counts the payload after an 8-byte word. */
        if (ssize_t(sizeof(hdr) - sizeof(uint64_t) + count) <= ep->max_eager_short) {
            const uct::iov iov[] = {{&hdr, sizeof(hdr), nullptr}, {buffer, count, nullptr}};
            ucs_status_t status  = ep->am_ep->am_short_iov(wire::AM_STREAM, iov, 2);
            if (ucs_likely(status == UCS_OK)) {
                return nullptr;
            }
            if (status != UCS_ERR_NO_RESOURCE) {
                return UCS_STATUS_PTR(status);
            }
        }
        inline_send send{hdr, buffer, count};
        ssize_t packed = ep->am_ep->am_bcopy(wire::AM_STREAM, pack_inline, &send, 0);
        if (ucs_likely(packed >= 0)) {
            return nullptr;
        }
        if (packed != UCS_ERR_NO_RESOURCE) {
            return UCS_STATUS_PTR(ucs_status_t(packed));
        }
    }

    request *req = send_request_get(worker, param);
    if (req == nullptr) {
        return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    }
    ucs_status_t status = send_packer_start(req, ep, param, dt, buffer, count);
    if (status != UCS_OK) {
        return UCS_STATUS_PTR(status);
    }
    send_state &s = req->u.send;
    s.ep          = ep;
    s.offset      = 0;
    s.am_id       = wire::AM_STREAM;
    s.tag         = 0; /* a stream RTS carries none */
    req->flags |= request_flag::NAMES_PEER_EP;
    const proto::key k{proto::operation::STREAM, 0, s.packer.type_class(), s.packer.memory_type()};
    s.step = proto::select_first(ep->cfg->protocols.get(k), s.packer.length(),
                                 [req](proto::protocol p) -> send_step_t {
                                     if (p == proto::protocol::RNDV) {
                                         return (rndv_select(req) != nullptr) ? stream_rts_step :
                                                                                nullptr;
                                     }
                                     if (p == proto::protocol::EAGER_ZCOPY) {
                                         return zcopy::applies(req, sizeof(wire::stream_hdr)) ?
                                                    stream_zcopy_step :
                                                    nullptr;
                                     }
                                     return stream_step; /* one or more copied fragments */
                                 });
    if (s.step == nullptr) {
        send_request_abort(req);
        return UCS_STATUS_PTR(UCS_ERR_UNSUPPORTED);
    }
    return send_request_start(req, param);
}

ucs_status_ptr_t send_checked(ucp_ep_h ep, const void *buffer, size_t count,
                              const ucp_request_param_t *param)
{
    if ((ep == nullptr) || (param == nullptr) || !ucp::buffer_valid(buffer, count, param)) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    worker_guard guard(ep->worker);
    ucs_status_ptr_t result = nullptr;
    ucs_status_t status     = guarded("ucp_stream_send", [&]() {
        result = send_common(ep, buffer, count, param);
        return UCS_OK;
    });
    return (status == UCS_OK) ? result : UCS_STATUS_PTR(status);
}

} // namespace

} // namespace ucp

extern "C" {

ucs_status_ptr_t ucp_stream_send_nbx(ucp_ep_h ep, const void *buffer, size_t count,
                                     const ucp_request_param_t *param)
{
    if (ucs_unlikely(ucp::ext::wants_counting(param))) {
        return ucp::ext::counted({ucp::ext::worker_of(ep), ucp::ext::op_kind::SEND, buffer, count,
                                  ep},
                                 param, [=](const ucp_request_param_t *base) {
                                     return ucp::send_checked(ep, buffer, count, base);
                                 });
    }
    return ucp::send_checked(ep, buffer, count, param);
}

ucs_status_ptr_t ucp_stream_send_nb(ucp_ep_h ep, const void *buffer, size_t count,
                                    ucp_datatype_t datatype, ucp_send_callback_t cb, unsigned flags)
{
    (void)flags; /* reserved, as in UCX */
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype     = datatype;
    if (cb != nullptr) {
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_CALLBACK | ucp::param_legacy_callback;
        param.cb.send = ucp::callback_cast<ucp_send_nbx_callback_t>(cb);
    }
    return ucp::send_checked(ep, buffer, count, &param);
}

} // extern "C"
