/*
 * Sending user active messages: inline (am_short) when there is neither a
 * user header nor a reply request, one bcopy fragment, several fragments the
 * receiver reassembles, the same fragments sent zero-copy, or rendezvous
 * (an RTS; the receiver pulls the data with ucp_am_recv_data_nbx and its ATS
 * completes the send).
 */
#include "am.h"

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

#include <algorithm>
#include <cstring>

namespace ucp {

namespace {

constexpr uint32_t send_flags_mask = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER |
                                     UCP_AM_SEND_FLAG_RNDV;
/* send_state::am_flags: the id is layered (am_id_to_wire); no public flag uses it. */
constexpr uint32_t send_flag_layered = 1u << 31;
static_assert(!(send_flags_mask & send_flag_layered), "a free bit");

/* The header flag of the id's space (am_id_to_wire). */
uint8_t id_hdr_flags(const send_state &s)
{
    return (s.am_flags & send_flag_layered) ? wire::am_hdr_flag::LAYERED : 0;
}

wire::am_hdr make_hdr(const send_state &s)
{
    wire::am_hdr hdr{};
    hdr.am_id = s.user_am_id;
    hdr.flags = uint8_t(((s.am_flags & UCP_AM_SEND_FLAG_REPLY) ? wire::am_hdr_flag::REPLY : 0) |
                        id_hdr_flags(s));
    hdr.header_length = s.header_length;
    return hdr;
}

uint64_t short_header(uint16_t id, uint8_t hdr_flags, uint32_t header_length = 0)
{
    wire::am_hdr hdr{id, hdr_flags, 0, header_length};
    uint64_t value;
    std::memcpy(&value, &hdr, sizeof(value));
    return value;
}

size_t max_bcopy(const send_state &s)
{
    return s.ep->am_ep->owner().attr().am.max_bcopy;
}

/* ---- one fragment ------------------------------------------------------- */

ucs_status_t am_short_step(request *req)
{
    send_state &s       = req->u.send;
    ucs_status_t status = s.ep->am_ep->am_short(wire::AM_USER_SINGLE,
                                                short_header(s.user_am_id, id_hdr_flags(s)),
                                                s.packer.contig_buffer(),
                                                unsigned(s.packer.length()));
    if (status != UCS_OK) {
        return status;
    }
    send_done(req);
    return UCS_OK;
}

/*
 * The UCP header of the fragment at `offset` (`whole`: the message's only
 * one) with the user header in the first, the same for bcopy and zcopy
 * fragments; its AM id in *am_id.
 */
size_t am_header(request *req, size_t offset, bool whole, void *out, uint8_t *am_id)
{
    const send_state &s = req->u.send;
    char *p             = static_cast<char *>(out);
    if (offset != 0) {
        const wire::eager_middle_hdr hdr{req->worker->uuid, s.msg_id, offset};
        std::memcpy(p, &hdr, sizeof(hdr));
        *am_id = wire::AM_USER_MIDDLE;
        return sizeof(hdr);
    }
    const wire::am_hdr am = make_hdr(s);
    if (whole) {
        std::memcpy(p, &am, sizeof(am));
        p += sizeof(am);
        if (am.flags & wire::am_hdr_flag::REPLY) {
            const wire::am_reply_hdr reply{req->worker->uuid, s.ep->remote_id};
            std::memcpy(p, &reply, sizeof(reply));
            p += sizeof(reply);
        }
        *am_id = wire::AM_USER_SINGLE;
    } else {
        const uint64_t ep_id = (am.flags & wire::am_hdr_flag::REPLY) ? s.ep->remote_id : 0;
        const wire::am_first_hdr hdr{am, req->worker->uuid, s.msg_id, s.packer.length(), ep_id};
        std::memcpy(p, &hdr, sizeof(hdr));
        p += sizeof(hdr);
        *am_id = wire::AM_USER_FIRST;
    }
    if (s.header_length != 0) {
        std::memcpy(p, s.header, s.header_length);
        p += s.header_length;
    }
    return size_t(p - static_cast<char *>(out));
}

size_t pack_am_single(void *dest, void *arg)
{
    auto *req     = static_cast<request *>(arg);
    send_state &s = req->u.send;
    char *out     = static_cast<char *>(dest);
    uint8_t am_id;
    const size_t hdr = am_header(req, 0, true, out, &am_id);
    return hdr + s.packer.pack(out + hdr, 0, s.packer.length());
}

ucs_status_t am_single_step(request *req)
{
    ssize_t packed = req->u.send.ep->am_ep->am_bcopy(wire::AM_USER_SINGLE, pack_am_single, req, 0);
    if (packed < 0) {
        return ucs_status_t(packed);
    }
    send_done(req);
    return UCS_OK;
}

/* ---- several fragments -------------------------------------------------- */

size_t pack_am_first(void *dest, void *arg)
{
    auto *req     = static_cast<request *>(arg);
    send_state &s = req->u.send;
    char *out     = static_cast<char *>(dest);
    uint8_t am_id;
    const size_t hdr = am_header(req, 0, false, out, &am_id);
    s.offset         = s.packer.pack(out + hdr, 0, max_bcopy(s) - hdr);
    return hdr + s.offset;
}

size_t pack_am_middle(void *dest, void *arg)
{
    auto *req     = static_cast<request *>(arg);
    send_state &s = req->u.send;
    char *out     = static_cast<char *>(dest);
    uint8_t am_id;
    const size_t hdr = am_header(req, s.offset, false, out, &am_id);
    size_t n         = s.packer.pack(out + hdr, s.offset, s.ep->cfg->thresh.middle_frag);
    s.offset += n;
    return hdr + n;
}

ucs_status_t am_multi_step(request *req)
{
    return send_bcopy_fragments(req, {wire::AM_USER_FIRST, pack_am_first, wire::AM_USER_MIDDLE,
                                      pack_am_middle, "ucp_am_send"});
}

/* ---- eager zero-copy ---------------------------------------------------- */

/* A zcopy fragment's header: the whole message in one, or a first or
 * middle fragment, as with bcopy. */
size_t am_zcopy_header(request *req, size_t offset, size_t length, void *out, uint8_t *am_id)
{
    const bool whole = (offset == 0) && (length == req->u.send.packer.length());
    return am_header(req, offset, whole, out, am_id);
}

ucs_status_t am_zcopy_step(request *req)
{
    return zcopy::send(req, am_zcopy_header, req->u.send.ep->cfg->thresh.am_zcopy_frag);
}

/* ---- rendezvous --------------------------------------------------------- */

size_t pack_am_rts(void *dest, void *arg)
{
    auto *req     = static_cast<request *>(arg);
    send_state &s = req->u.send;
    wire::am_rts_hdr hdr{};
    hdr.am = make_hdr(s);
    rndv_fill_rts(hdr, req);
    char *out = static_cast<char *>(dest);
    std::memcpy(out, &hdr, sizeof(hdr));
    out += sizeof(hdr);
    if (s.header_length != 0) {
        std::memcpy(out, s.header, s.header_length);
        out += s.header_length;
    }
    if (!rndv_pack_keys(req, out)) {
        return 0;
    }
    return size_t(out - static_cast<char *>(dest)) + hdr.rkey_length;
}

ucs_status_t am_rts_step(request *req)
{
    ssize_t packed = req->u.send.ep->am_ep->am_bcopy(wire::AM_USER_RTS, pack_am_rts, req, 0);
    if (packed < 0) {
        return ucs_status_t(packed);
    }
    if (packed == 0) {
        return UCS_ERR_IO_ERROR; /* the key could not be packed */
    }
    send_done(req); /* complete once the receiver's ATS arrives too */
    return UCS_OK;
}

/* Rendezvous, if the RTS with the user header fits one fragment. */
send_step_t am_rndv_start(request *req)
{
    send_state &s            = req->u.send;
    const uint8_t lane_index = rndv_lane_of(req);
    if (lane_index == no_lane) {
        return nullptr;
    }
    const lane &l          = s.ep->lanes[lane_index];
    const size_t rkey_size = req->worker->context.mds[l.md_index].md->attr().rkey_packed_size;
    if (sizeof(wire::am_rts_hdr) + s.header_length + rkey_size > max_bcopy(s)) {
        return nullptr;
    }
    /* Registers the buffer and an id for the ATS; its own step is tag's. */
    return (rndv_select(req, s.header_length) != nullptr) ? am_rts_step : nullptr;
}

/* The step of protocol `p` for this message, or nullptr if it declines:
 * the selection table goes by data length, a user header is checked here. */
send_step_t am_start(request *req, proto::protocol p)
{
    send_state &s    = req->u.send;
    const bool reply = s.am_flags & UCP_AM_SEND_FLAG_REPLY;
    switch (p) {
    case proto::protocol::RNDV:
        return am_rndv_start(req);
    case proto::protocol::EAGER_SHORT:
        return (s.header_length == 0) ? am_short_step : nullptr;
    case proto::protocol::EAGER_ZCOPY:
        return zcopy::applies(req, sizeof(wire::am_first_hdr) + s.header_length) ? am_zcopy_step :
                                                                                   nullptr;
    case proto::protocol::EAGER_BCOPY_SINGLE: {
        const size_t single = sizeof(wire::am_hdr) + (reply ? sizeof(wire::am_reply_hdr) : 0) +
                              s.header_length;
        return (single + s.packer.length() <= max_bcopy(s)) ? am_single_step : nullptr;
    }
    default:
        return am_multi_step;
    }
}

send_step_t am_select_protocol(request *req)
{
    const send_state &s = req->u.send;
    uint8_t variant     = 0;
    if (s.am_flags & UCP_AM_SEND_FLAG_REPLY) {
        variant |= proto::am_variant::REPLY;
    }
    if (s.am_flags & UCP_AM_SEND_FLAG_EAGER) {
        variant |= proto::am_variant::FORCE_EAGER;
    }
    if (s.am_flags & UCP_AM_SEND_FLAG_RNDV) {
        variant |= proto::am_variant::FORCE_RNDV;
    }
    const proto::key k{proto::operation::AM, variant, s.packer.type_class(),
                       s.packer.memory_type()};
    return proto::select_first(s.ep->cfg->protocols.get(k), s.packer.length(),
                               [req](proto::protocol p) { return am_start(req, p); });
}

ucs_status_ptr_t am_send_common(ucp_ep *ep, uint16_t id, uint8_t hdr_flags, const void *header,
                                size_t header_length, const void *buffer, size_t count,
                                const ucp_request_param_t *param)
{
    ucp_worker *worker   = ep->worker;
    const uint32_t flags = (param->op_attr_mask & UCP_OP_ATTR_FIELD_FLAGS) ? param->flags : 0;
    if ((flags & ~send_flags_mask) ||
        ((flags & UCP_AM_SEND_FLAG_EAGER) && (flags & UCP_AM_SEND_FLAG_RNDV))) {
        ucs_error("ucp_am_send: invalid flags 0x%x", flags);
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    const ucp_datatype_t dt = (param->op_attr_mask & UCP_OP_ATTR_FIELD_DATATYPE) ?
                                  param->datatype :
                                  ucp_dt_make_contig(1);

    /* Fast path: small, contiguous, no reply: one am_short, the user header
     * (if any) inline before the data, as the single-fragment format has it. */
    const size_t max_short = size_t(std::max<int32_t>(ep->max_eager_short, 0));
    if (!(flags & (UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_RNDV)) &&
        (dt == ucp_dt_make_contig(1)) && (ep->max_eager_short >= 0) && (count <= max_short) &&
        (header_length <= max_short - count) && (ep->num_pending == 0) && ep->usable() &&
        !(param->op_attr_mask & (UCP_OP_ATTR_FIELD_REQUEST | UCP_OP_ATTR_FLAG_NO_IMM_CMPL)) &&
        dt::host_buffer(param, buffer, count)) {
        const uint64_t word = short_header(id, hdr_flags, uint32_t(header_length));
        ucs_status_t status;
        if (header_length == 0) {
            status = ep->am_ep->am_short(wire::AM_USER_SINGLE, word, buffer, unsigned(count));
        } else {
            const uct::iov parts[] = {{&word, sizeof(word), uct::MEM_HANDLE_NULL},
                                      {header, header_length, uct::MEM_HANDLE_NULL},
                                      {buffer, count, uct::MEM_HANDLE_NULL}};
            status                 = ep->am_ep->am_short_iov(wire::AM_USER_SINGLE, parts, 3);
        }
        if (ucs_likely(status == UCS_OK)) {
            return nullptr;
        }
        if (status != UCS_ERR_NO_RESOURCE) {
            return UCS_STATUS_PTR(status);
        }
    }

    if (!ep->usable()) {
        return UCS_STATUS_PTR(ep->status);
    }
    const size_t bcopy = ep->am_ep->owner().attr().am.max_bcopy;
    if (sizeof(wire::am_first_hdr) + header_length >= bcopy) {
        ucs_error("ucp_am_send: a %zu-byte header does not fit the transport's %zu-byte "
                  "fragments",
                  header_length, bcopy);
        return UCS_STATUS_PTR(UCS_ERR_EXCEEDS_LIMIT);
    }
    request *req = send_request_get(worker, param);
    if (req == nullptr) {
        return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    }
    ucs_status_t status = send_packer_start(req, ep, param, dt, buffer, count);
    if (status != UCS_OK) {
        return UCS_STATUS_PTR(status);
    }
    send_state &s   = req->u.send;
    s.ep            = ep;
    s.offset        = 0;
    s.msg_id        = worker->next_msg_id++;
    s.am_id         = wire::AM_USER_SINGLE;
    s.user_am_id    = id;
    s.am_flags      = flags | ((hdr_flags & wire::am_hdr_flag::LAYERED) ? send_flag_layered : 0);
    s.header        = header;
    s.header_length = uint32_t(header_length);
    if (flags & UCP_AM_SEND_FLAG_REPLY) {
        req->flags |= request_flag::NAMES_PEER_EP; /* rendezvous sets it too */
    }
    s.step = am_select_protocol(req);
    if (s.step == nullptr) {
        send_request_abort(req);
        return UCS_STATUS_PTR(UCS_ERR_UNSUPPORTED);
    }
    return send_request_start(req, param);
}

ucs_status_ptr_t am_send_checked(ucp_ep_h ep, unsigned id, const void *header, size_t header_length,
                                 const void *buffer, size_t count, const ucp_request_param_t *param)
{
    uint16_t wire_id;
    uint8_t hdr_flags;
    if ((ep == nullptr) || (param == nullptr) || !am_id_to_wire(id, &wire_id, &hdr_flags) ||
        (header_length > max_am_header) || ((header == nullptr) && (header_length != 0)) ||
        !buffer_valid(buffer, count, param)) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    worker_guard guard(ep->worker);
    ucs_status_ptr_t result = nullptr;
    ucs_status_t status     = guarded("ucp_am_send", [&]() {
        result = am_send_common(ep, wire_id, hdr_flags, header, header_length, buffer, count,
                                    param);
        return UCS_OK;
    });
    return (status == UCS_OK) ? result : UCS_STATUS_PTR(status);
}

} // namespace

} // namespace ucp

extern "C" {

ucs_status_ptr_t ucp_am_send_nbx(ucp_ep_h ep, unsigned id, const void *header, size_t header_length,
                                 const void *buffer, size_t count, const ucp_request_param_t *param)
{
    if (ucs_unlikely(ucp::ext::wants_counting(param))) {
        return ucp::ext::counted({ucp::ext::worker_of(ep), ucp::ext::op_kind::SEND, buffer, count,
                                  ep},
                                 param,
                                 [=](const ucp_request_param_t *base) {
            return ucp::am_send_checked(ep, id, header, header_length, buffer, count, base);
        });
    }
    return ucp::am_send_checked(ep, id, header, header_length, buffer, count, param);
}

ucs_status_ptr_t ucp_am_send_nb(ucp_ep_h ep, uint16_t id, const void *buffer, size_t count,
                                ucp_datatype_t datatype, ucp_send_callback_t cb, unsigned flags)
{
    if (flags & ~ucp::send_flags_mask) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_FLAGS;
    param.datatype     = datatype;
    /* As in UCX, the old call sends eagerly (its receivers are old handlers,
     * which take whole data): only the reply flag counts. */
    param.flags = (flags & UCP_AM_SEND_FLAG_REPLY) | UCP_AM_SEND_FLAG_EAGER;
    if (cb != nullptr) {
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_CALLBACK | ucp::param_legacy_callback;
        param.cb.send = ucp::callback_cast<ucp_send_nbx_callback_t>(cb);
    }
    return ucp::am_send_checked(ep, id, nullptr, 0, buffer, count, &param);
}

} // extern "C"
