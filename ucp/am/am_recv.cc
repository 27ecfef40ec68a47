/*
 * Receiving user active messages: the AM handlers of the wire ids
 * (single, first/middle fragments, rendezvous RTS), reassembly, and the
 * call into the application's handler with the reply ep it asked for.
 *
 * A message asking for a reply ep names ours (its id, from the wireup): a
 * stale or forged id names nothing and the message is dropped.
 *
 * Data stays in the transport's buffer unless it must outlive the call:
 * the handler asked for persistent data, the worker's am_alignment is not
 * met, or the message was reassembled. Only then
 * the handler gets UCP_AM_RECV_ATTR_FLAG_DATA (UCP_CB_PARAM_FLAG_DATA) and
 * may keep the data by returning UCS_INPROGRESS.
 */
#include "am.h"

#include <ucp/core/ucp_ep.h>
#include <ucp/proto/am_handlers.h>
#include <ucp/proto/wire.h>
#include <ucs/debug/log.h>

#include <cstring>
#include <new>

namespace ucp {

namespace {

/* A copy of the handler of `id`: a handler may replace handlers as it runs. */
bool find_handler(ucp_worker *worker, uint16_t id, uint8_t send_flags, am_handler *out)
{
    const std::vector<am_handler> &table = am_handler_table(worker, send_flags);
    if (id >= table.size()) {
        return false;
    }
    const am_handler &h = table[id];
    if ((h.cb == nullptr) && (h.legacy_cb == nullptr)) {
        return false;
    }
    *out = h;
    return true;
}

void warn_unknown_id(const ucp_worker *worker, uint16_t id, uint8_t send_flags)
{
    ucs_warn("worker '%s': dropping an active message with id %u: no handler is set",
             worker->name.c_str(),
             (send_flags & wire::am_hdr_flag::LAYERED) ? UCP_EXT_AM_ID_LAYERED + id : id);
}

void warn_malformed(const ucp_worker *worker, const char *what, size_t length)
{
    ucs_warn("worker '%s': dropping a malformed %s (%zu bytes)", worker->name.c_str(), what,
             length);
}

ucs_status_t invoke(const am_handler &h, const void *header, size_t header_length, void *data,
                    size_t length, uint8_t send_flags, ucp_ep *reply, uint64_t recv_attr)
{
    const bool want_reply = send_flags & wire::am_hdr_flag::REPLY;
    if (h.legacy_cb != nullptr) {
        return h.legacy_cb(h.arg, data, length, want_reply ? reply : nullptr,
                           (recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA) ? UCP_CB_PARAM_FLAG_DATA : 0);
    }
    ucp_am_recv_param_t param;
    param.recv_attr = recv_attr;
    param.reply_ep  = nullptr;
    if (want_reply) {
        param.recv_attr |= UCP_AM_RECV_ATTR_FIELD_REPLY_EP;
        param.reply_ep = reply;
    }
    return h.cb(h.arg, (header_length != 0) ? header : nullptr, header_length, data, length,
                &param);
}

/* The reply ep a message asked for in *ep_p (nullptr when it asked for
 * none); false when the ep it names is not ours (the message is dropped). */
bool resolve_reply(ucp_worker *worker, uint8_t send_flags, uint64_t uuid, uint64_t ep_id,
                   ucp_ep **ep_p)
{
    *ep_p = nullptr;
    if (!(send_flags & wire::am_hdr_flag::REPLY)) {
        return true;
    }
    *ep_p = sender_ep(worker, ep_id, uuid);
    return *ep_p != nullptr;
}

void drop_desc(ucp_worker *worker, am_desc *desc, ucs_status_t status)
{
    if (desc->kind == am_desc_kind::RNDV) {
        am_rndv_finish(worker, desc, status);
    }
    am_desc_free(desc);
}

void legacy_pull_done(void *request, ucs_status_t status, size_t, void *user_data);

/* A legacy handler cannot take a rendezvous descriptor: pull the data
 * first, then call it with the whole message. */
void legacy_rndv_pull(ucp_worker *worker, am_desc *rts)
{
    am_desc *desc = am_desc_alloc(worker, rts->length, rts->header_length);
    if (desc == nullptr) {
        ucs_error("worker '%s': no memory for a %zu-byte active message", worker->name.c_str(),
                  rts->length);
        drop_desc(worker, rts, UCS_ERR_NO_MEMORY);
        return;
    }
    desc->kind          = am_desc_kind::EAGER;
    desc->am_id         = rts->am_id;
    desc->send_flags    = rts->send_flags;
    desc->src_uuid      = rts->src_uuid;
    desc->ep_id         = rts->ep_id;
    desc->length        = rts->length;
    desc->header_length = rts->header_length;
    desc->header        = desc->data() + desc->length;
    std::memcpy(desc->header, rts->header, rts->header_length);

    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                         UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    param.cb.recv_am     = legacy_pull_done;
    param.user_data      = desc;
    ucs_status_ptr_t req = am_rndv_recv(worker, rts, desc->data(), desc->length, &param);
    if (UCS_PTR_IS_ERR(req)) {
        ucs_error("worker '%s': cannot fetch a rendezvous active message: %s", worker->name.c_str(),
                  ucs_status_string(UCS_PTR_STATUS(req)));
        am_desc_free(desc);
        return;
    }
    ucp_request_free(req); /* the callback has the descriptor */
}

void legacy_pull_done(void *request, ucs_status_t status, size_t, void *user_data)
{
    auto *desc         = static_cast<am_desc *>(user_data);
    ucp_worker *worker = request::from_user(request)->worker;
    am_handler h;
    if (status != UCS_OK) {
        ucs_error("worker '%s': fetching a rendezvous active message failed: %s",
                  worker->name.c_str(), ucs_status_string(status));
    } else if (!find_handler(worker, desc->am_id, desc->send_flags, &h)) {
        warn_unknown_id(worker, desc->am_id, desc->send_flags);
    } else {
        ucp_ep *reply;
        resolve_reply(worker, desc->send_flags, desc->src_uuid, desc->ep_id, &reply);
        desc->state = am_desc_state::IN_HANDLER;
        status      = invoke(h, desc->header, desc->header_length, desc->data(), desc->length,
                             desc->send_flags, reply, UCP_AM_RECV_ATTR_FLAG_DATA);
        if ((status == UCS_INPROGRESS) && (desc->state != am_desc_state::CONSUMED)) {
            desc->state = am_desc_state::KEPT;
            return;
        }
    }
    am_desc_free(desc);
}

/* Runs the handler on a descriptor whose reply ep (if any) is known. */
void deliver_desc(ucp_worker *worker, am_desc *desc, ucp_ep *reply)
{
    am_handler h;
    if (!find_handler(worker, desc->am_id, desc->send_flags, &h)) {
        warn_unknown_id(worker, desc->am_id, desc->send_flags);
        drop_desc(worker, desc, UCS_ERR_INVALID_PARAM);
        return;
    }
    ucs_status_t status;
    if (desc->kind == am_desc_kind::EAGER) {
        desc->state = am_desc_state::IN_HANDLER;
        status      = invoke(h, desc->header, desc->header_length, desc->data(), desc->length,
                             desc->send_flags, reply, UCP_AM_RECV_ATTR_FLAG_DATA);
        if ((status == UCS_INPROGRESS) && (desc->state != am_desc_state::CONSUMED)) {
            desc->state = am_desc_state::KEPT;
        } else {
            am_desc_free(desc);
        }
        return;
    }

    if (h.legacy_cb != nullptr) {
        legacy_rndv_pull(worker, desc);
        return;
    }
    desc->state = am_desc_state::IN_HANDLER;
    status      = invoke(h, desc->header, desc->header_length, desc->data(), desc->length,
                         desc->send_flags, reply, UCP_AM_RECV_ATTR_FLAG_RNDV);
    if (desc->state == am_desc_state::CONSUMED) {
        am_desc_free(desc); /* received or released inside the handler */
    } else if (status == UCS_INPROGRESS) {
        desc->state = am_desc_state::KEPT;
    } else {
        /* Not wanted: the data is dropped and the sender completes. */
        drop_desc(worker, desc, status);
    }
}

/* A descriptor is complete: run its handler. */
void deliver(ucp_worker *worker, am_desc *desc)
{
    ucp_ep *reply;
    if (!resolve_reply(worker, desc->send_flags, desc->src_uuid, desc->ep_id, &reply)) {
        drop_desc(worker, desc, UCS_ERR_UNREACHABLE);
        return;
    }
    deliver_desc(worker, desc, reply);
}

bool misaligned(const ucp_worker *worker, const void *data)
{
    return (worker->am_alignment > 1) &&
           ((reinterpret_cast<uintptr_t>(data) & (worker->am_alignment - 1)) != 0);
}

} // namespace

ucs_status_t am_single_handler(void *arg, void *data, size_t length, unsigned)
{
    auto *worker = static_cast<ucp_worker *>(arg);
    ucs::wire_reader r(data, length);
    wire::am_hdr hdr;
    wire::am_reply_hdr reply_to{}; /* REPLY: the sender, our ep it names */
    const uint8_t *user_header;
    if (!r.get(&hdr) || ((hdr.flags & wire::am_hdr_flag::REPLY) && !r.get(&reply_to)) ||
        (hdr.header_length > max_am_header) || !r.bytes(hdr.header_length, &user_header)) {
        warn_malformed(worker, "active message", length);
        return UCS_OK;
    }
    /* The handler gets the transport's buffer, which is writable. */
    auto *p           = const_cast<uint8_t *>(r.pos());
    const size_t left = r.left();

    am_handler h;
    if (!find_handler(worker, hdr.am_id, hdr.flags, &h)) {
        warn_unknown_id(worker, hdr.am_id, hdr.flags);
        return UCS_OK;
    }
    ucp_ep *reply;
    if (!resolve_reply(worker, hdr.flags, reply_to.src_uuid, reply_to.ep_id, &reply)) {
        return UCS_OK;
    }
    if (!(h.flags & UCP_AM_FLAG_PERSISTENT_DATA) && !misaligned(worker, p)) {
        /* The common case: the handler reads the transport's buffer. */
        ucs_status_t status = invoke(h, user_header, hdr.header_length, p, left, hdr.flags, reply,
                                     0);
        if (status == UCS_INPROGRESS) {
            ucs_warn("worker '%s': the handler of active message %u kept data it was "
                     "not given to keep (no DATA flag); it is released now",
                     worker->name.c_str(), hdr.am_id);
        }
        return UCS_OK;
    }

    am_desc *desc = am_desc_alloc(worker, left, hdr.header_length);
    if (desc == nullptr) {
        ucs_error("worker '%s': no memory to keep a %zu-byte active message", worker->name.c_str(),
                  left);
        return UCS_OK;
    }
    desc->kind          = am_desc_kind::EAGER;
    desc->am_id         = hdr.am_id;
    desc->send_flags    = hdr.flags;
    desc->src_uuid      = reply_to.src_uuid;
    desc->ep_id         = reply_to.ep_id;
    desc->length        = left;
    desc->header_length = hdr.header_length;
    desc->header        = desc->data() + left;
    std::memcpy(desc->data(), p, left);
    std::memcpy(desc->header, user_header, hdr.header_length);
    deliver_desc(worker, desc, reply);
    return UCS_OK;
}

ucs_status_t am_first_handler(void *arg, void *data, size_t length, unsigned)
{
    auto *worker = static_cast<ucp_worker *>(arg);
    ucs::wire_reader r(data, length);
    wire::am_first_hdr hdr;
    const uint8_t *user_header;
    if (!r.get(&hdr) || (hdr.am.header_length > max_am_header) ||
        !r.bytes(hdr.am.header_length, &user_header)) {
        warn_malformed(worker, "active message fragment", length);
        return UCS_OK;
    }
    const uint8_t *payload = r.pos();
    const size_t frag      = r.left();
    if ((frag > hdr.total_length) || (hdr.total_length > wire::max_message_length)) {
        warn_malformed(worker, "active message fragment", length);
        return UCS_OK;
    }
    am_handler h;
    if (!find_handler(worker, hdr.am.am_id, hdr.am.flags, &h)) {
        warn_unknown_id(worker, hdr.am.am_id, hdr.am.flags); /* its other fragments find nothing */
        return UCS_OK;
    }
    am_worker *state = worker->am_state;
    const msg_key key{hdr.src_uuid, hdr.msg_id};
    if (state->partial.count(key)) {
        ucs_warn("worker '%s': duplicate active message id from a peer", worker->name.c_str());
        return UCS_OK;
    }
    am_desc *desc = am_desc_alloc(worker, hdr.total_length, hdr.am.header_length);
    if (desc == nullptr) {
        ucs_error("worker '%s': no memory for a %llu-byte active message", worker->name.c_str(),
                  static_cast<unsigned long long>(hdr.total_length));
        return UCS_OK;
    }
    desc->kind          = am_desc_kind::EAGER;
    desc->am_id         = hdr.am.am_id;
    desc->send_flags    = hdr.am.flags;
    desc->src_uuid      = hdr.src_uuid;
    desc->ep_id         = hdr.ep_id;
    desc->length        = hdr.total_length;
    desc->received      = frag;
    desc->header_length = hdr.am.header_length;
    desc->header        = desc->data() + desc->length;
    std::memcpy(desc->header, user_header, hdr.am.header_length);
    std::memcpy(desc->data(), payload, frag);
    if (frag == desc->length) {
        deliver(worker, desc);
        return UCS_OK;
    }
    try {
        state->partial.emplace(key, desc);
    } catch (const std::bad_alloc &) {
        ucs_error("worker '%s': no memory to reassemble an active message", worker->name.c_str());
        am_desc_free(desc);
    }
    return UCS_OK;
}

ucs_status_t am_middle_handler(void *arg, void *data, size_t length, unsigned)
{
    auto *worker = static_cast<ucp_worker *>(arg);
    ucs::wire_reader r(data, length);
    wire::eager_middle_hdr hdr;
    if (!r.get(&hdr)) {
        warn_malformed(worker, "active message fragment", length);
        return UCS_OK;
    }
    am_worker *state = worker->am_state;
    if (state == nullptr) {
        ucs_debug("worker '%s': fragment of an unknown active message", worker->name.c_str());
        return UCS_OK;
    }
    auto it = state->partial.find(msg_key{hdr.src_uuid, hdr.msg_id});
    if (it == state->partial.end()) {
        ucs_debug("worker '%s': fragment of an unknown active message", worker->name.c_str());
        return UCS_OK;
    }
    am_desc *desc     = it->second;
    const size_t frag = r.left();
    if (!ucs::range_inside(hdr.offset, frag, desc->length)) {
        warn_malformed(worker, "active message fragment", length);
        return UCS_OK;
    }
    std::memcpy(desc->data() + hdr.offset, r.pos(), frag);
    desc->received += frag;
    if (desc->received >= desc->length) {
        state->partial.erase(it);
        deliver(worker, desc);
    }
    return UCS_OK;
}

ucs_status_t am_rts_handler(void *arg, void *data, size_t length, unsigned)
{
    auto *worker = static_cast<ucp_worker *>(arg);
    ucs::wire_reader r(data, length);
    wire::am_rts_hdr rts;
    const uint8_t *user_header, *rkey;
    if (!r.get(&rts) || (rts.am.header_length > max_am_header) ||
        !r.bytes(rts.am.header_length, &user_header) || !r.bytes(rts.rkey_length, &rkey) ||
        (rts.md_name[sizeof(rts.md_name) - 1] != '\0') || (rts.length > wire::max_message_length)) {
        warn_malformed(worker, "rendezvous active message", length);
        return UCS_OK;
    }
    if (sender_ep(worker, rts.ep_id, rts.src_uuid) == nullptr) {
        return UCS_OK;
    }
    am_handler h;
    if (!find_handler(worker, rts.am.am_id, rts.am.flags, &h)) {
        warn_unknown_id(worker, rts.am.am_id, rts.am.flags);
        send_reply_to(worker, rts.ep_id, rts.src_uuid, wire::AM_RNDV_ATS, rts.sreq_id,
                      UCS_ERR_INVALID_PARAM);
        return UCS_OK;
    }
    am_desc *desc = am_desc_alloc(worker, 0, rts.am.header_length + rts.rkey_length);
    if (desc == nullptr) {
        ucs_error("worker '%s': no memory for a rendezvous active message", worker->name.c_str());
        send_reply_to(worker, rts.ep_id, rts.src_uuid, wire::AM_RNDV_ATS, rts.sreq_id,
                      UCS_ERR_NO_MEMORY);
        return UCS_OK;
    }
    desc->kind          = am_desc_kind::RNDV;
    desc->am_id         = rts.am.am_id;
    desc->send_flags    = rts.am.flags;
    desc->src_uuid      = rts.src_uuid;
    desc->ep_id         = rts.ep_id;
    desc->length        = rts.length;
    desc->header_length = rts.am.header_length;
    desc->header        = desc->data();
    desc->sreq_id       = rts.sreq_id;
    desc->address       = rts.address;
    desc->rndv_flags    = rts.flags;
    desc->rkey_length   = rts.rkey_length;
    desc->rkey          = desc->header + rts.am.header_length;
    static_assert(sizeof(desc->md_name) == sizeof(rts.md_name));
    std::memcpy(desc->md_name, rts.md_name, sizeof(rts.md_name));
    std::memcpy(desc->header, user_header, rts.am.header_length);
    std::memcpy(desc->rkey, rkey, rts.rkey_length);
    deliver(worker, desc);
    return UCS_OK;
}

void am_rndv_finish(ucp_worker *worker, const am_desc *desc, ucs_status_t status)
{
    send_reply_to(worker, desc->ep_id, desc->src_uuid, wire::AM_RNDV_ATS, desc->sreq_id, status);
}

} // namespace ucp
