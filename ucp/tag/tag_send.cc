/*
 * Tagged sends: the protocol per message size (eager short, eager bcopy in
 * one or many fragments, eager zcopy, rendezvous), sync sends, and the
 * public ucp_tag_send_* calls.
 */
#include "tag_send.h"

#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_worker.h>
#include <ucp/dt/dt_memtype.h>
#include <ucp/ext/op_cntr.h>
#include <ucp/proto/am_handlers.h>
#include <ucp/proto/bcopy_fragments.h>
#include <ucp/proto/eager_zcopy.h>
#include <ucp/proto/select.h>
#include <ucp/proto/send_common.h>
#include <ucp/proto/wire.h>
#include <ucs/debug/log.h>

#include <cstring>

namespace ucp {

namespace {

/* ---- eager ---------------------------------------------------------- */

ucs_status_t eager_short_step(request *req)
{
    send_state &s       = req->u.send;
    ucs_status_t status = s.ep->am_ep->am_short(wire::AM_EAGER_ONLY, s.tag,
                                                s.packer.contig_buffer(),
                                                unsigned(s.packer.length()));
    if (status != UCS_OK) {
        return status;
    }
    send_done(req);
    return UCS_OK;
}

/*
 * The UCP header of the eager fragment at `offset` (`whole`: the message's
 * only one), the same for bcopy and zcopy fragments; its AM id in *am_id.
 */
size_t eager_header(request *req, size_t offset, bool whole, void *out, uint8_t *am_id)
{
    const send_state &s = req->u.send;
    const bool sync     = (req->flags & request_flag::SYNC);
    char *p             = static_cast<char *>(out);
    if (whole) {
        if (sync) {
            const wire::eager_sync_hdr hdr{s.tag, req->worker->uuid, {req->id, s.ep->remote_id}};
            std::memcpy(p, &hdr, sizeof(hdr));
            *am_id = wire::AM_EAGER_SYNC_ONLY;
            return sizeof(hdr);
        }
        std::memcpy(p, &s.tag, sizeof(s.tag));
        *am_id = wire::AM_EAGER_ONLY;
        return sizeof(s.tag);
    }
    if (offset == 0) {
        const wire::eager_first_hdr hdr{s.tag, req->worker->uuid, s.msg_id, s.packer.length()};
        std::memcpy(p, &hdr, sizeof(hdr));
        if (!sync) {
            *am_id = wire::AM_EAGER_FIRST;
            return sizeof(hdr);
        }
        const wire::request_hdr rhdr{req->id, s.ep->remote_id};
        std::memcpy(p + sizeof(hdr), &rhdr, sizeof(rhdr));
        *am_id = wire::AM_EAGER_SYNC_FIRST;
        return sizeof(hdr) + sizeof(rhdr);
    }
    const wire::eager_middle_hdr hdr{req->worker->uuid, s.msg_id, offset};
    std::memcpy(p, &hdr, sizeof(hdr));
    *am_id = wire::AM_EAGER_MIDDLE;
    return sizeof(hdr);
}

size_t pack_eager_only(void *dest, void *arg)
{
    auto *req     = static_cast<request *>(arg);
    send_state &s = req->u.send;
    char *out     = static_cast<char *>(dest);
    uint8_t am_id;
    const size_t hdr = eager_header(req, 0, true, out, &am_id);
    return hdr + s.packer.pack(out + hdr, 0, s.packer.length());
}

ucs_status_t eager_only_step(request *req)
{
    send_state &s   = req->u.send;
    const bool sync = (req->flags & request_flag::SYNC);
    ssize_t packed  = s.ep->am_ep->am_bcopy(sync ? wire::AM_EAGER_SYNC_ONLY : wire::AM_EAGER_ONLY,
                                           pack_eager_only, req, 0);
    if (packed < 0) {
        return ucs_status_t(packed);
    }
    send_done(req);
    return UCS_OK;
}

size_t pack_eager_first(void *dest, void *arg)
{
    auto *req              = static_cast<request *>(arg);
    send_state &s          = req->u.send;
    const ep_thresholds &t = s.ep->cfg->thresh;
    char *out              = static_cast<char *>(dest);
    uint8_t am_id;
    const size_t hdr = eager_header(req, 0, false, out, &am_id);
    const size_t max = (req->flags & request_flag::SYNC) ? t.sync_first_frag : t.first_frag;
    s.offset         = s.packer.pack(out + hdr, 0, max);
    return hdr + s.offset;
}

size_t pack_eager_middle(void *dest, void *arg)
{
    auto *req     = static_cast<request *>(arg);
    send_state &s = req->u.send;
    char *out     = static_cast<char *>(dest);
    uint8_t am_id;
    const size_t hdr = eager_header(req, s.offset, false, out, &am_id);
    size_t n         = s.packer.pack(out + hdr, s.offset, s.ep->cfg->thresh.middle_frag);
    s.offset += n;
    return hdr + n;
}

ucs_status_t eager_multi_step(request *req)
{
    const bool sync = req->flags & request_flag::SYNC;
    return send_bcopy_fragments(req, {sync ? wire::AM_EAGER_SYNC_FIRST : wire::AM_EAGER_FIRST,
                                      pack_eager_first, wire::AM_EAGER_MIDDLE, pack_eager_middle,
                                      "ucp_tag_send"});
}

/* ---- eager zero-copy ---------------------------------------------------- */

/* A zcopy fragment's header: the whole message in one, or a first or
 * middle fragment, as with bcopy. */
size_t zcopy_header(request *req, size_t offset, size_t length, void *out, uint8_t *am_id)
{
    const bool whole = (offset == 0) && (length == req->u.send.packer.length());
    return eager_header(req, offset, whole, out, am_id);
}

ucs_status_t eager_zcopy_step(request *req)
{
    return zcopy::send(req, zcopy_header, req->u.send.ep->cfg->thresh.zcopy_frag);
}

} // namespace

/* ---- choosing a protocol ----------------------------------------------- */

namespace {

/* The step of protocol `p` for this message, or nullptr if it declines. */
send_step_t tag_start(request *req, proto::protocol p)
{
    switch (p) {
    case proto::protocol::EAGER_SHORT:
        return eager_short_step;
    case proto::protocol::RNDV:
        return rndv_select(req);
    case proto::protocol::EAGER_ZCOPY:
        return zcopy::applies(req, wire::eager_max_header) ? eager_zcopy_step : nullptr;
    case proto::protocol::EAGER_BCOPY_SINGLE:
        return eager_only_step;
    default:
        return eager_multi_step;
    }
}

} // namespace

send_step_t tag_select_protocol(request *req)
{
    const send_state &s = req->u.send;
    const proto::key k{(req->flags & request_flag::SYNC) ? proto::operation::TAG_SYNC :
                                                           proto::operation::TAG,
                       0, s.packer.type_class(), s.packer.memory_type()};
    return proto::select_first(s.ep->cfg->protocols.get(k), s.packer.length(),
                               [req](proto::protocol p) { return tag_start(req, p); });
}

ucs_status_ptr_t tag_send_common(ucp_ep *ep, const void *buffer, size_t count, ucp_tag_t tag,
                                 const ucp_request_param_t *param, bool sync)
{
    ucp_worker *worker      = ep->worker;
    const ucp_datatype_t dt = (param->op_attr_mask & UCP_OP_ATTR_FIELD_DATATYPE) ?
                                  param->datatype :
                                  ucp_dt_make_contig(1);

    /* Fast path: a small contiguous message goes out inline. No pooled
     * request; a caller's own request (FIELD_REQUEST, Open MPI's blocking
     * send) is only marked completed, as the general path would leave it,
     * without its callback (none runs inside the call). */
    const uint32_t attr = param->op_attr_mask;
    if (!sync && (dt == ucp_dt_make_contig(1)) && (ssize_t(count) <= ep->max_eager_short) &&
        (ep->num_pending == 0) && ep->usable() && !(attr & UCP_OP_ATTR_FLAG_NO_IMM_CMPL) &&
        (!(attr & UCP_OP_ATTR_FIELD_REQUEST) || (param->request != nullptr)) &&
        dt::host_buffer(param, buffer, count)) {
        ucs_status_t status = ep->am_ep->am_short(wire::AM_EAGER_ONLY, tag, buffer,
                                                  unsigned(count));
        if (ucs_likely(status == UCS_OK)) {
            if (attr & UCP_OP_ATTR_FIELD_REQUEST) {
                request_mark_done_external(request::from_user(param->request), worker);
            }
            return nullptr;
        }
        if (status != UCS_ERR_NO_RESOURCE) {
            return UCS_STATUS_PTR(status);
        }
    }

    if (!ep->usable()) {
        return UCS_STATUS_PTR(ep->status);
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
    s.tag         = tag;
    s.offset      = 0;
    s.msg_id      = worker->next_msg_id++;
    if (sync) {
        req->flags |= request_flag::SYNC | request_flag::NAMES_PEER_EP;
        if (worker->register_request(req) == 0) {
            send_request_abort(req);
            return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
        }
    }
    s.step = tag_select_protocol(req);
    if (s.step == nullptr) {
        send_request_abort(req);
        return UCS_STATUS_PTR(UCS_ERR_UNSUPPORTED);
    }
    return send_request_start(req, param);
}

} // namespace ucp

namespace {

ucs_status_ptr_t send_checked(ucp_ep_h ep, const void *buffer, size_t count, ucp_tag_t tag,
                              const ucp_request_param_t *param, bool sync)
{
    if ((ep == nullptr) || (param == nullptr) || !ucp::buffer_valid(buffer, count, param)) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    ucp::worker_guard guard(ep->worker);
    ucs_status_ptr_t result = nullptr;
    ucs_status_t status     = ucp::guarded("ucp_tag_send", [&]() {
        result = ucp::tag_send_common(ep, buffer, count, tag, param, sync);
        return UCS_OK;
    });
    return (status == UCS_OK) ? result : UCS_STATUS_PTR(status);
}

ucp_request_param_t legacy_send_param(ucp_datatype_t datatype, ucp_send_callback_t cb)
{
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_CALLBACK;
    param.datatype     = datatype;
    param.cb.send      = ucp::callback_cast<ucp_send_nbx_callback_t>(cb);
    return param;
}

} // namespace

extern "C" {

ucs_status_ptr_t ucp_tag_send_nbx(ucp_ep_h ep, const void *buffer, size_t count, ucp_tag_t tag,
                                  const ucp_request_param_t *param)
{
    if (ucs_unlikely(ucp::ext::wants_counting(param))) {
        return ucp::ext::counted({ucp::ext::worker_of(ep), ucp::ext::op_kind::SEND, buffer, count,
                                  ep},
                                 param, [=](const ucp_request_param_t *base) {
                                     return send_checked(ep, buffer, count, tag, base, false);
                                 });
    }
    return send_checked(ep, buffer, count, tag, param, false);
}

ucs_status_ptr_t ucp_tag_send_sync_nbx(ucp_ep_h ep, const void *buffer, size_t count, ucp_tag_t tag,
                                       const ucp_request_param_t *param)
{
    if (ucs_unlikely(ucp::ext::wants_counting(param))) {
        return ucp::ext::counted({ucp::ext::worker_of(ep), ucp::ext::op_kind::SEND, buffer, count,
                                  ep},
                                 param, [=](const ucp_request_param_t *base) {
                                     return send_checked(ep, buffer, count, tag, base, true);
                                 });
    }
    return send_checked(ep, buffer, count, tag, param, true);
}

ucs_status_ptr_t ucp_tag_send_nb(ucp_ep_h ep, const void *buffer, size_t count,
                                 ucp_datatype_t datatype, ucp_tag_t tag, ucp_send_callback_t cb)
{
    ucp_request_param_t param = legacy_send_param(datatype, cb);
    param.op_attr_mask |= ucp::param_legacy_callback;
    return send_checked(ep, buffer, count, tag, &param, false);
}

ucs_status_ptr_t ucp_tag_send_sync_nb(ucp_ep_h ep, const void *buffer, size_t count,
                                      ucp_datatype_t datatype, ucp_tag_t tag,
                                      ucp_send_callback_t cb)
{
    ucp_request_param_t param = legacy_send_param(datatype, cb);
    param.op_attr_mask |= ucp::param_legacy_callback;
    return send_checked(ep, buffer, count, tag, &param, true);
}

ucs_status_t ucp_tag_send_nbr(ucp_ep_h ep, const void *buffer, size_t count,
                              ucp_datatype_t datatype, ucp_tag_t tag, void *req)
{
    if (req == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucp_request_param_t param{};
    param.op_attr_mask      = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REQUEST;
    param.datatype          = datatype;
    param.request           = req;
    ucs_status_ptr_t result = send_checked(ep, buffer, count, tag, &param, false);
    if (UCS_PTR_IS_ERR(result)) {
        return UCS_PTR_STATUS(result);
    }
    return (result == nullptr) ? UCS_OK : UCS_INPROGRESS;
}

} // extern "C"
