/*
 * The receiver's stream calls: ucp_stream_recv_nb(x) (without WAITALL a
 * receive completes with whatever is there, at least one whole element),
 * ucp_stream_recv_data_nb / ucp_stream_data_release (UCP's own buffer),
 * and ucp_stream_worker_poll.
 */
#include "stream.h"

#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_guard.h>
#include <ucp/dt/dt_memtype.h>
#include <ucp/ext/op_cntr.h>
#include <ucp/proto/send_common.h>
#include <ucs/debug/log.h>

#include <cstring>

namespace ucp {

namespace {

/* Takes queued bytes into a new receive while it has room, up to a
 * rendezvous (stream_drain pulls it once the receive is posted). */
void consume_segments(stream_worker *sw, stream_ep *se, request *req)
{
    const recv_state &r = req->u.recv;
    while ((r.received < r.unpacker.capacity()) && !se->segs.empty() && !se->segs.front()->remote) {
        stream_seg *seg = se->segs.front();
        seg->offset += stream_recv_fill(req, seg->data() + seg->offset, seg->left());
        if (seg->left() != 0) {
            break;
        }
        se->segs.pull_front();
        stream_seg_free(seg);
    }
    stream_ep_update_ready(sw, se);
}

void legacy_recv_callback(void *request, ucs_status_t status, size_t length, void *user_data)
{
    ucp_stream_recv_callback_t cb;
    static_assert(sizeof(cb) == sizeof(user_data));
    std::memcpy(&cb, &user_data, sizeof(cb));
    cb(request, status, length);
}

ucs_status_ptr_t recv_common(ucp_ep *ep, void *buffer, size_t count, size_t *length,
                             const ucp_request_param_t *param)
{
    ucp_worker *worker   = ep->worker;
    const uint32_t flags = (param->op_attr_mask & UCP_OP_ATTR_FIELD_FLAGS) ? param->flags : 0;
    if (flags & ~uint32_t(UCP_STREAM_RECV_FLAG_WAITALL)) {
        ucs_error("ucp_stream_recv: unknown flags 0x%x", flags);
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    const ucp_datatype_t dt = (param->op_attr_mask & UCP_OP_ATTR_FIELD_DATATYPE) ?
                                  param->datatype :
                                  ucp_dt_make_contig(1);
    stream_worker *sw       = stream_worker_get(worker);
    stream_ep *se           = (sw != nullptr) ? stream_ep_attach(worker, ep) : nullptr;
    if (se == nullptr) {
        return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    }
    request *req = send_request_get(worker, param);
    if (req == nullptr) {
        return UCS_STATUS_PTR((param->op_attr_mask & UCP_OP_ATTR_FIELD_REQUEST) ?
                                  UCS_ERR_INVALID_PARAM :
                                  UCS_ERR_NO_MEMORY);
    }
    req->flags &= ~request_flag::LEGACY_CB;
    req->flags |= request_flag::STREAM;
    if (flags & UCP_STREAM_RECV_FLAG_WAITALL) {
        req->flags |= request_flag::WAITALL;
    }
    if (param->op_attr_mask & UCP_OP_ATTR_FIELD_CALLBACK) {
        req->cb.stream = param->cb.recv_stream;
    }
    recv_state &r       = req->u.recv;
    ucs_status_t status = dt::start_in_memory_type(r.unpacker, param, dt, buffer, count);
    if (status != UCS_OK) {
        request_put(req);
        return UCS_STATUS_PTR(status);
    }
    r.start({0, 0});
    r.ep        = ep;
    r.elem_size = ((dt & UCP_DATATYPE_CLASS_MASK) == UCP_DATATYPE_CONTIG) ?
                      dt::contig_elem_size(dt) :
                      1;

    /* No callback from inside the call, unless a request was asked for. */
    const uint32_t cb_flag = req->flags & request_flag::CALLBACK;
    req->flags &= ~request_flag::CALLBACK;
    if (ucs::list_ops::is_empty(se->recvs)) {
        consume_segments(sw, se, req);
    }
    if ((r.unpacker.capacity() == 0) || stream_recv_can_complete(req)) {
        stream_recv_complete(req, UCS_OK);
    } else if (!ep->usable()) {
        stream_recv_complete(req, ep->status);
    } else {
        const bool first = ucs::list_ops::is_empty(se->recvs);
        ucs::list_ops::insert_between(&r.expected.link, se->recvs.prev, &se->recvs);
        if (first && stream_must_queue(se)) {
            stream_drain(sw, se, false); /* a rendezvous at the head: pull it */
        }
        if (!(req->flags & request_flag::COMPLETED)) {
            req->flags |= cb_flag;
            return req->user_ptr();
        }
    }

    if (length != nullptr) {
        *length = r.info.length;
    }
    return request_immediate_result(req, cb_flag, param);
}

ucs_status_ptr_t recv_checked(ucp_ep_h ep, void *buffer, size_t count, size_t *length,
                              const ucp_request_param_t *param)
{
    if ((ep == nullptr) || (param == nullptr) || !ucp::buffer_valid(buffer, count, param)) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    worker_guard guard(ep->worker);
    ucs_status_ptr_t result = nullptr;
    ucs_status_t status     = guarded("ucp_stream_recv", [&]() {
        result = recv_common(ep, buffer, count, length, param);
        return UCS_OK;
    });
    return (status == UCS_OK) ? result : UCS_STATUS_PTR(status);
}

/* The first segment, its unconsumed bytes moved to its start. */
ucs_status_ptr_t recv_data(ucp_ep *ep, size_t *length)
{
    stream_worker *sw = stream_worker_get(ep->worker);
    stream_ep *se     = (sw != nullptr) ? stream_ep_attach(ep->worker, ep) : nullptr;
    if (se == nullptr) {
        return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    }
    if (!se->segs.empty() && se->segs.front()->remote) {
        stream_drain(sw, se, true); /* stages it: done at once over shared memory */
    }
    stream_seg *seg = se->segs.empty() || se->segs.front()->remote ? nullptr :
                                                                     se->segs.pull_front();
    stream_ep_update_ready(sw, se);
    if (seg == nullptr) {
        return ep->usable() ? nullptr : UCS_STATUS_PTR(ep->status);
    }
    if (seg->offset != 0) {
        /* Rare: a receive took part of it. The pointer must lead back to it. */
        std::memmove(seg->data(), seg->data() + seg->offset, seg->left());
        seg->length = seg->left();
        seg->offset = 0;
    }
    if (length != nullptr) {
        *length = seg->length;
    }
    return seg->data();
}

} // namespace

} // namespace ucp

extern "C" {

ucs_status_ptr_t ucp_stream_recv_nbx(ucp_ep_h ep, void *buffer, size_t count, size_t *length,
                                     const ucp_request_param_t *param)
{
    if (ucs_unlikely(ucp::ext::wants_counting(param))) {
        /* Not triggered: the length output belongs to the call. */
        const ucp::ext::op_desc desc{ucp::ext::worker_of(ep),
                                     ucp::ext::op_kind::STREAM_RECV,
                                     buffer,
                                     count,
                                     ep,
                                     nullptr,
                                     length,
                                     false};
        return ucp::ext::counted(desc, param, [=](const ucp_request_param_t *base) {
            return ucp::recv_checked(ep, buffer, count, length, base);
        });
    }
    return ucp::recv_checked(ep, buffer, count, length, param);
}

ucs_status_ptr_t ucp_stream_recv_nb(ucp_ep_h ep, void *buffer, size_t count,
                                    ucp_datatype_t datatype, ucp_stream_recv_callback_t cb,
                                    size_t *length, unsigned flags)
{
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_FLAGS;
    param.datatype     = datatype;
    param.flags        = flags;
    if (cb != nullptr) {
        /* The old callback has no user_data: it travels in it instead. */
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
        param.cb.recv_stream = ucp::legacy_recv_callback;
        std::memcpy(&param.user_data, &cb, sizeof(cb));
    }
    return ucp::recv_checked(ep, buffer, count, length, &param);
}

ucs_status_ptr_t ucp_stream_recv_data_nb(ucp_ep_h ep, size_t *length)
{
    if (ep == nullptr) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    ucp::worker_guard guard(ep->worker);
    ucs_status_ptr_t result = nullptr;
    ucs_status_t status     = ucp::guarded("ucp_stream_recv_data_nb", [&]() {
        result = ucp::recv_data(ep, length);
        return UCS_OK;
    });
    return (status == UCS_OK) ? result : UCS_STATUS_PTR(status);
}

void ucp_stream_data_release(ucp_ep_h ep, void *data)
{
    if ((ep == nullptr) || (data == nullptr) ||
        (reinterpret_cast<uintptr_t>(data) % alignof(ucp::stream_seg) != 0)) {
        ucs_error("ucp_stream_data_release: %p is not stream data", data);
        return;
    }
    ucp::worker_guard guard(ep->worker);
    auto *seg = reinterpret_cast<ucp::stream_seg *>(data) - 1;
    if (seg->magic != ucp::stream_seg_magic) {
        ucs_error("ucp_stream_data_release: %p is not stream data", data);
        return;
    }
    ucp::stream_seg_free(seg);
}

ssize_t ucp_stream_worker_poll(ucp_worker_h worker, ucp_stream_poll_ep_t *poll_eps, size_t max_eps,
                               unsigned flags)
{
    (void)flags; /* reserved, as in UCX */
    if ((worker == nullptr) || ((poll_eps == nullptr) && (max_eps != 0))) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucp::worker_guard guard(worker);
    ucp::stream_worker *sw = worker->stream_state;
    if (sw == nullptr) {
        return 0;
    }
    size_t count = 0;
    for (ucp::stream_ep &se : sw->ready.safe()) {
        if (count == max_eps) {
            break;
        }
        /* An ep the application has not taken yet (made for a peer that
         * connected to us) shows up once it calls ucp_ep_create. */
        if (!(se.ep->flags & ucp::ep_flag::USER)) {
            continue;
        }
        sw->ready.remove(se);
        se.ready                  = false;
        poll_eps[count]           = {};
        poll_eps[count].ep        = se.ep;
        poll_eps[count].user_data = se.ep->user_data;
        ++count;
    }
    return ssize_t(count);
}

} // extern "C"
