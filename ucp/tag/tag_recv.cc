/*
 * Tagged receives: matching arriving messages against posted receives (in
 * post order, MPI semantics), storing the unexpected ones, and the public
 * ucp_tag_recv_* / probe / msg_recv / cancel calls.
 */
#include "tag_recv.h"

#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_guard.h>
#include <ucp/core/ucp_worker.h>
#include <ucp/dt/dt_memtype.h>
#include <ucp/ext/op_cntr.h>
#include <ucp/ext/trigger.h>
#include <ucp/proto/am_handlers.h>
#include <ucp/proto/send_common.h>
#include <ucp/tag/rndv.h>
#include <ucs/debug/log.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <unordered_set>
#include <vector>

namespace ucp {

namespace {

request *request_of_expected(tag::expected_entry *e)
{
    return reinterpret_cast<request *>(reinterpret_cast<char *>(e) -
                                       offsetof(request, u.recv.expected));
}

rx_message *message_of(tag::unexpected_entry *u)
{
    return reinterpret_cast<rx_message *>(reinterpret_cast<char *>(u) -
                                          offsetof(rx_message, entry));
}

/* A message descriptor with room for `data_length` bytes after it: small
 * ones (the common unexpected eager message) from the worker's pool. The
 * length comes from a peer: nullptr if no message can be that long. */
rx_message *message_alloc(ucp_worker *worker, ucp_tag_t tag, uint64_t data_length)
{
    size_t size;
    if (!ucs::alloc_size(sizeof(rx_message), data_length, wire::max_message_length, &size)) {
        return nullptr;
    }
    const bool pooled = (data_length <= rx_message_pooled_payload);
    void *mem         = pooled ? worker->rx_message_pool.get() : std::malloc(size);
    if (mem == nullptr) {
        return nullptr;
    }
    auto *msg        = new (mem) rx_message; /* not rx_message{}: see rx_message */
    msg->pooled      = pooled;
    msg->entry.tag   = tag;
    msg->data_length = data_length;
    msg->data        = reinterpret_cast<uint8_t *>(msg + 1);
    return msg;
}

void message_free(rx_message *msg)
{
    const bool pooled = msg->pooled;
    msg->~rx_message();
    if (pooled) {
        ucs::mpool::put(msg);
    } else {
        std::free(msg);
    }
}

/* Writes bytes of the message into the receive; keeps the first error. */
void recv_place(request *req, const void *data, size_t offset, size_t length)
{
    ucs_status_t status = req->u.recv.unpacker.unpack(data, offset, length);
    if ((status != UCS_OK) && (req->u.recv.data_status == UCS_OK)) {
        req->u.recv.data_status = status;
    }
}

/* The earliest posted receive for `tag`, taken out of the matcher. */
request *take_receive(ucp_worker *worker, ucp_tag_t tag)
{
    tag::expected_entry *e = worker->tag_matcher.take_expected(tag);
    if (e == nullptr) {
        return nullptr;
    }
    request *req = request_of_expected(e);
    req->flags &= ~request_flag::EXPECTED;
    return req;
}

void store_unexpected(ucp_worker *worker, rx_message *msg)
{
    worker->tag_matcher.add_unexpected(&msg->entry);
}

/* Eager message in one piece (`hdr_length` bytes of header before it). */
ucs_status_t eager_single(ucp_worker *worker, ucp_tag_t tag, const uint8_t *payload, size_t length,
                          bool sync, uint64_t src_uuid, const wire::request_hdr &rhdr)
{
    request *req = take_receive(worker, tag);
    if (req != nullptr) {
        req->u.recv.info.sender_tag = tag;
        req->u.recv.info.length     = length;
        recv_place(req, payload, 0, length);
        if (sync) {
            send_reply_to(worker, rhdr.ep_id, src_uuid, wire::AM_SYNC_ACK, rhdr.req_id, UCS_OK);
        }
        recv_finish(req, req->u.recv.data_status);
        return UCS_OK;
    }
    rx_message *msg = message_alloc(worker, tag, length);
    if (msg == nullptr) {
        ucs_error("worker '%s': no memory for an unexpected message of %zu bytes",
                  worker->name.c_str(), length);
        return UCS_OK;
    }
    msg->sync     = sync;
    msg->src_uuid = src_uuid;
    msg->sreq_id  = rhdr.req_id;
    msg->ep_id    = rhdr.ep_id;
    msg->total    = length;
    msg->received = length;
    std::memcpy(msg->data, payload, length);
    store_unexpected(worker, msg);
    return UCS_OK;
}

ucs_status_t eager_first(ucp_worker *worker, const void *data, size_t length, bool sync)
{
    ucs::wire_reader r(data, length);
    wire::eager_first_hdr hdr;
    wire::request_hdr rhdr{};
    if (!r.get(&hdr) || (sync && !r.get(&rhdr))) {
        ucs_warn("worker '%s': dropping a short eager fragment", worker->name.c_str());
        return UCS_OK;
    }
    if (sync && (sender_ep(worker, rhdr.ep_id, hdr.src_uuid) == nullptr)) {
        return UCS_OK;
    }
    const uint8_t *payload = r.pos();
    const size_t frag      = r.left();
    if ((frag > hdr.total_length) || (hdr.total_length > wire::max_message_length)) {
        ucs_warn("worker '%s': dropping an eager fragment of %zu bytes announcing a "
                 "message of %llu",
                 worker->name.c_str(), frag, static_cast<unsigned long long>(hdr.total_length));
        return UCS_OK;
    }
    const msg_key key{hdr.src_uuid, hdr.msg_id};
    if (worker->rx_expected.count(key) || worker->rx_unexpected.count(key)) {
        ucs_warn("worker '%s': duplicate message id from a peer", worker->name.c_str());
        return UCS_OK;
    }

    request *req = take_receive(worker, hdr.tag);
    if (req != nullptr) {
        req->u.recv.info.sender_tag = hdr.tag;
        req->u.recv.info.length     = hdr.total_length;
        recv_place(req, payload, 0, frag);
        req->u.recv.received = frag;
        if (sync) {
            send_reply_to(worker, rhdr.ep_id, hdr.src_uuid, wire::AM_SYNC_ACK, rhdr.req_id, UCS_OK);
        }
        if (frag == hdr.total_length) {
            recv_finish(req, req->u.recv.data_status);
        } else {
            worker->rx_expected.emplace(key, req);
        }
        return UCS_OK;
    }

    rx_message *msg = message_alloc(worker, hdr.tag, hdr.total_length);
    if (msg == nullptr) {
        ucs_error("worker '%s': no memory for an unexpected message of %llu bytes",
                  worker->name.c_str(), static_cast<unsigned long long>(hdr.total_length));
        return UCS_OK;
    }
    msg->sync     = sync;
    msg->src_uuid = hdr.src_uuid;
    msg->sreq_id  = rhdr.req_id;
    msg->ep_id    = rhdr.ep_id;
    msg->msg_id   = hdr.msg_id;
    msg->total    = hdr.total_length;
    msg->received = frag;
    std::memcpy(msg->data, payload, frag);
    if (frag < msg->total) {
        worker->rx_unexpected.emplace(key, msg);
    }
    store_unexpected(worker, msg);
    return UCS_OK;
}

/* Hands an unexpected message to a receive (recv, or msg_recv after probe). */
void deliver_unexpected(ucp_worker *worker, request *req, rx_message *msg)
{
    req->u.recv.info.sender_tag = msg->entry.tag;
    req->u.recv.info.length     = msg->total;
    if (msg->rndv) {
        rndv_recv_start(worker, req, msg->rts, msg->data, msg->data_length);
        message_free(msg);
        return;
    }
    if (msg->sync) {
        send_reply_to(worker, msg->ep_id, msg->src_uuid, wire::AM_SYNC_ACK, msg->sreq_id, UCS_OK);
    }
    recv_place(req, msg->data, 0, msg->received);
    req->u.recv.received = msg->received;
    if ((msg->received == msg->total) || (msg->lost != UCS_OK)) {
        const ucs_status_t status = (msg->received == msg->total) ? req->u.recv.data_status :
                                                                    msg->lost;
        message_free(msg);
        recv_finish(req, status);
        return;
    }
    /* The rest of its fragments go straight to the receive. */
    const msg_key key{msg->src_uuid, msg->msg_id};
    worker->rx_unexpected.erase(key);
    worker->rx_expected.emplace(key, req);
    message_free(msg);
}

} // namespace

void recv_finish(request *req, ucs_status_t status)
{
    req->u.recv.unpacker.finish();
    request_complete(req, status);
}

ucs_status_t eager_only_handler(void *arg, void *data, size_t length, unsigned)
{
    auto *worker = static_cast<ucp_worker *>(arg);
    ucs::wire_reader r(data, length);
    ucp_tag_t tag;
    if (!r.get(&tag)) {
        ucs_warn("worker '%s': dropping a short eager message", worker->name.c_str());
        return UCS_OK;
    }
    return eager_single(worker, tag, r.pos(), r.left(), false, 0, {});
}

ucs_status_t eager_sync_only_handler(void *arg, void *data, size_t length, unsigned)
{
    auto *worker = static_cast<ucp_worker *>(arg);
    ucs::wire_reader r(data, length);
    wire::eager_sync_hdr hdr;
    if (!r.get(&hdr)) {
        ucs_warn("worker '%s': dropping a short sync message", worker->name.c_str());
        return UCS_OK;
    }
    if (sender_ep(worker, hdr.req.ep_id, hdr.src_uuid) == nullptr) {
        return UCS_OK;
    }
    return eager_single(worker, hdr.tag, r.pos(), r.left(), true, hdr.src_uuid, hdr.req);
}

ucs_status_t eager_first_handler(void *arg, void *data, size_t length, unsigned)
{
    return eager_first(static_cast<ucp_worker *>(arg), data, length, false);
}

ucs_status_t eager_sync_first_handler(void *arg, void *data, size_t length, unsigned)
{
    return eager_first(static_cast<ucp_worker *>(arg), data, length, true);
}

ucs_status_t eager_middle_handler(void *arg, void *data, size_t length, unsigned)
{
    auto *worker = static_cast<ucp_worker *>(arg);
    ucs::wire_reader r(data, length);
    wire::eager_middle_hdr hdr;
    if (!r.get(&hdr)) {
        ucs_warn("worker '%s': dropping a short eager fragment", worker->name.c_str());
        return UCS_OK;
    }
    const uint8_t *payload = r.pos();
    const size_t frag      = r.left();
    const msg_key key{hdr.src_uuid, hdr.msg_id};

    if (auto it = worker->rx_expected.find(key); it != worker->rx_expected.end()) {
        request *req       = it->second;
        const size_t total = req->u.recv.info.length;
        if (!ucs::range_inside(hdr.offset, frag, total)) {
            ucs_warn("worker '%s': eager fragment outside its message", worker->name.c_str());
            return UCS_OK;
        }
        recv_place(req, payload, hdr.offset, frag);
        req->u.recv.received += frag;
        if (req->u.recv.received >= total) {
            worker->rx_expected.erase(it);
            recv_finish(req, req->u.recv.data_status);
        }
        return UCS_OK;
    }
    if (auto it = worker->rx_unexpected.find(key); it != worker->rx_unexpected.end()) {
        rx_message *msg = it->second;
        if (!ucs::range_inside(hdr.offset, frag, msg->total)) {
            ucs_warn("worker '%s': eager fragment outside its message", worker->name.c_str());
            return UCS_OK;
        }
        std::memcpy(msg->data + hdr.offset, payload, frag);
        msg->received += frag;
        if (msg->received >= msg->total) {
            worker->rx_unexpected.erase(it);
        }
        return UCS_OK;
    }
    ucs_debug("worker '%s': eager fragment of an unknown message", worker->name.c_str());
    return UCS_OK;
}

ucs_status_t rndv_rts_handler(void *arg, void *data, size_t length, unsigned)
{
    auto *worker = static_cast<ucp_worker *>(arg);
    wire::rts_hdr rts;
    const uint8_t *rkey;
    if (!rndv_read_rts(data, length, &rts, &rkey)) {
        ucs_warn("worker '%s': dropping a malformed rendezvous request", worker->name.c_str());
        return UCS_OK;
    }
    if (sender_ep(worker, rts.ep_id, rts.src_uuid) == nullptr) {
        return UCS_OK;
    }
    request *req = take_receive(worker, rts.tag);
    if (req != nullptr) {
        req->u.recv.info.sender_tag = rts.tag;
        req->u.recv.info.length     = rts.length;
        rndv_recv_start(worker, req, rts, rkey, rts.rkey_length);
        return UCS_OK;
    }
    rx_message *msg = message_alloc(worker, rts.tag, rts.rkey_length);
    if (msg == nullptr) {
        ucs_error("worker '%s': no memory for a rendezvous request", worker->name.c_str());
        return UCS_OK;
    }
    msg->rndv     = true;
    msg->src_uuid = rts.src_uuid;
    msg->sreq_id  = rts.sreq_id;
    msg->ep_id    = rts.ep_id;
    msg->total    = rts.length;
    msg->rts      = rts;
    std::memcpy(msg->data, rkey, rts.rkey_length);
    store_unexpected(worker, msg);
    return UCS_OK;
}

ucs_status_t reply_handler(void *arg, void *data, size_t length, unsigned)
{
    auto *worker = static_cast<ucp_worker *>(arg);
    ucs::wire_reader r(data, length);
    wire::reply_hdr hdr;
    if (!r.get(&hdr)) {
        ucs_warn("worker '%s': dropping a short reply", worker->name.c_str());
        return UCS_OK;
    }
    request *req = worker->lookup_request(hdr.req_id);
    if ((req == nullptr) || (req->flags & request_flag::RECV)) {
        ucs_debug("worker '%s': reply for an unknown request", worker->name.c_str());
        return UCS_OK;
    }
    const ucs_status_t status = wire::peer_status(hdr.status);
    reply_arrived(req, status);
    return UCS_OK;
}

void tag_recv_peer_lost(ucp_worker *worker, uint64_t uuid, ucs_status_t status)
{
    std::vector<request *> receives;
    for (auto it = worker->rx_expected.begin(); it != worker->rx_expected.end();) {
        if (it->first.uuid == uuid) {
            receives.push_back(it->second);
            it = worker->rx_expected.erase(it);
        } else {
            ++it;
        }
    }
    /* Unexpected ones stay queued (a probe may hold them) until received. */
    for (auto it = worker->rx_unexpected.begin(); it != worker->rx_unexpected.end();) {
        if (it->first.uuid == uuid) {
            it->second->lost = status;
            it               = worker->rx_unexpected.erase(it);
        } else {
            ++it;
        }
    }
    for (request *req : receives) {
        ucs_debug("worker '%s': a message from a lost peer stops at %zu of %zu bytes",
                  worker->name.c_str(), req->u.recv.received, size_t(req->u.recv.info.length));
        recv_finish(req, status); /* the callback may post more receives */
    }
}

void tag_recv_cleanup(ucp_worker *worker)
{
    std::unordered_set<rx_message *> messages;
    for (auto &entry : worker->rx_unexpected) {
        messages.insert(entry.second);
    }
    worker->rx_unexpected.clear();
    while (tag::unexpected_entry *u = worker->tag_matcher.find_unexpected(0, 0, true)) {
        messages.insert(message_of(u));
    }
    for (rx_message *msg : messages) {
        message_free(msg);
    }
}

namespace {

request *recv_request_get(ucp_worker *worker, const ucp_request_param_t *param)
{
    request *req = send_request_get(worker, param);
    if (req != nullptr) {
        req->flags |= request_flag::RECV;
    }
    return req;
}

ucs_status_ptr_t recv_common(ucp_worker *worker, void *buffer, size_t count, ucp_tag_t tag,
                             ucp_tag_t tag_mask, const ucp_request_param_t *param, rx_message *msg)
{
    const ucp_datatype_t dt = (param->op_attr_mask & UCP_OP_ATTR_FIELD_DATATYPE) ?
                                  param->datatype :
                                  ucp_dt_make_contig(1);
    request *req            = recv_request_get(worker, param);
    if (req == nullptr) {
        return UCS_STATUS_PTR((param->op_attr_mask & UCP_OP_ATTR_FIELD_REQUEST) ?
                                  UCS_ERR_INVALID_PARAM :
                                  UCS_ERR_NO_MEMORY);
    }
    recv_state &r       = req->u.recv;
    ucs_status_t status = dt::start_in_memory_type(r.unpacker, param, dt, buffer, count);
    if (status != UCS_OK) {
        request_put(req);
        return UCS_STATUS_PTR(status);
    }
    r.start({tag, 0});

    /* As for sends: no callback from inside the call unless asked. */
    const uint32_t cb_flag = req->flags & request_flag::CALLBACK;
    req->flags &= ~request_flag::CALLBACK;

    if (msg == nullptr) {
        tag::unexpected_entry *u = worker->tag_matcher.find_unexpected(tag, tag_mask, true);
        msg                      = (u != nullptr) ? message_of(u) : nullptr;
    }
    if (msg != nullptr) {
        deliver_unexpected(worker, req, msg);
    } else {
        r.expected.tag      = tag;
        r.expected.tag_mask = tag_mask;
        worker->tag_matcher.add_expected(&r.expected);
        req->flags |= request_flag::EXPECTED;
    }

    if (!(req->flags & request_flag::COMPLETED)) {
        req->flags |= cb_flag;
        return req->user_ptr();
    }
    if ((param->op_attr_mask & UCP_OP_ATTR_FIELD_RECV_INFO) &&
        (param->recv_info.tag_info != nullptr)) {
        *param->recv_info.tag_info = r.info;
    }
    return request_immediate_result(req, cb_flag, param);
}

ucs_status_ptr_t recv_checked(ucp_worker_h worker, void *buffer, size_t count, ucp_tag_t tag,
                              ucp_tag_t tag_mask, const ucp_request_param_t *param, rx_message *msg)
{
    if ((worker == nullptr) || (param == nullptr) || !ucp::buffer_valid(buffer, count, param)) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    ucp::worker_guard guard(worker);
    ucs_status_ptr_t result = nullptr;
    ucs_status_t status     = guarded("ucp_tag_recv", [&]() {
        result = recv_common(worker, buffer, count, tag, tag_mask, param, msg);
        return UCS_OK;
    });
    return (status == UCS_OK) ? result : UCS_STATUS_PTR(status);
}

ucp_request_param_t legacy_recv_param(ucp_datatype_t datatype, ucp_tag_recv_callback_t cb)
{
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FLAG_NO_IMM_CMPL | param_legacy_callback;
    param.datatype = datatype;
    param.cb.recv  = ucp::callback_cast<ucp_tag_recv_nbx_callback_t>(cb);
    return param;
}

} // namespace

} // namespace ucp

extern "C" {

ucs_status_ptr_t ucp_tag_recv_nbx(ucp_worker_h worker, void *buffer, size_t count, ucp_tag_t tag,
                                  ucp_tag_t tag_mask, const ucp_request_param_t *param)
{
    if (ucs_unlikely(ucp::ext::wants_counting(param))) {
        return ucp::ext::counted({worker, ucp::ext::op_kind::TAG_RECV, buffer, count}, param,
                                 [=](const ucp_request_param_t *base) {
            return ucp::recv_checked(worker, buffer, count, tag, tag_mask, base, nullptr);
        });
    }
    return ucp::recv_checked(worker, buffer, count, tag, tag_mask, param, nullptr);
}

ucs_status_ptr_t ucp_tag_recv_nb(ucp_worker_h worker, void *buffer, size_t count,
                                 ucp_datatype_t datatype, ucp_tag_t tag, ucp_tag_t tag_mask,
                                 ucp_tag_recv_callback_t cb)
{
    ucp_request_param_t param = ucp::legacy_recv_param(datatype, cb);
    return ucp::recv_checked(worker, buffer, count, tag, tag_mask, &param, nullptr);
}

ucs_status_t ucp_tag_recv_nbr(ucp_worker_h worker, void *buffer, size_t count,
                              ucp_datatype_t datatype, ucp_tag_t tag, ucp_tag_t tag_mask, void *req)
{
    if (req == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REQUEST |
                         UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    param.datatype          = datatype;
    param.request           = req;
    ucs_status_ptr_t result = ucp::recv_checked(worker, buffer, count, tag, tag_mask, &param,
                                                nullptr);
    return UCS_PTR_IS_ERR(result) ? UCS_PTR_STATUS(result) : UCS_OK;
}

ucp_tag_message_h ucp_tag_probe_nb(ucp_worker_h worker, ucp_tag_t tag, ucp_tag_t tag_mask,
                                   int remove, ucp_tag_recv_info_t *info)
{
    if (worker == nullptr) {
        return nullptr;
    }
    ucp::worker_guard guard(worker);
    ucp::tag::unexpected_entry *u = worker->tag_matcher.find_unexpected(tag, tag_mask, remove != 0);
    if (u == nullptr) {
        return nullptr;
    }
    ucp::rx_message *msg = ucp::message_of(u);
    if (info != nullptr) {
        info->sender_tag = msg->entry.tag;
        info->length     = msg->total;
    }
    return reinterpret_cast<ucp_tag_message_h>(msg);
}

ucs_status_ptr_t ucp_tag_msg_recv_nbx(ucp_worker_h worker, void *buffer, size_t count,
                                      ucp_tag_message_h message, const ucp_request_param_t *param)
{
    if (message == nullptr) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    auto *msg = reinterpret_cast<ucp::rx_message *>(message);
    if (ucs_unlikely(ucp::ext::wants_counting(param))) {
        /* Not triggered: the message handle is valid only until received. */
        ucp::ext::op_desc desc{worker, ucp::ext::op_kind::TAG_RECV, buffer, count};
        desc.can_trigger = false;
        return ucp::ext::counted(desc, param, [=](const ucp_request_param_t *base) {
            return ucp::recv_checked(worker, buffer, count, msg->entry.tag, ~ucp_tag_t(0), base,
                                     msg);
        });
    }
    return ucp::recv_checked(worker, buffer, count, msg->entry.tag, ~ucp_tag_t(0), param, msg);
}

ucs_status_ptr_t ucp_tag_msg_recv_nb(ucp_worker_h worker, void *buffer, size_t count,
                                     ucp_datatype_t datatype, ucp_tag_message_h message,
                                     ucp_tag_recv_callback_t cb)
{
    if (message == nullptr) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    ucp_request_param_t param = ucp::legacy_recv_param(datatype, cb);
    auto *msg                 = reinterpret_cast<ucp::rx_message *>(message);
    return ucp::recv_checked(worker, buffer, count, msg->entry.tag, ~ucp_tag_t(0), &param, msg);
}

void ucp_request_cancel(ucp_worker_h worker, void *request)
{
    if ((worker == nullptr) || (request == nullptr)) {
        return;
    }
    ucp::worker_guard guard(worker);
    ucp::request *req = ucp::request::from_user(request);
    if (req->flags & ucp::request_flag::TRIGGERED) {
        ucp::ext::trigger_request_cancel(worker, req);
        return;
    }
    if ((req->flags & ucp::request_flag::EXPECTED) &&
        !(req->flags & ucp::request_flag::COMPLETED)) {
        worker->tag_matcher.remove_expected(&req->u.recv.expected);
        req->flags &= ~ucp::request_flag::EXPECTED;
        ucp::recv_finish(req, UCS_ERR_CANCELED);
    }
    /* Sends and matched receives run to completion, as in UCX. */
}

} // extern "C"
