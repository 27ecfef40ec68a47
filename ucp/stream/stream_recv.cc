/*
 * The receive side of streams: the AM_STREAM handler, placing arriving
 * bytes into posted receives or segments, data waiting for its ep, and the
 * ep and worker life-cycle hooks.
 */
#include "stream.h"

#include <ucp/core/ucp_ep.h>
#include <ucp/proto/am_handlers.h>
#include <ucp/proto/wire.h>
#include <ucs/debug/log.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

namespace ucp {

namespace {

/* Larger transport segments get malloc'ed stream segments instead. */
constexpr size_t pool_room_max = 64 * 1024;

request *request_of_link(ucs::list_link *link)
{
    return reinterpret_cast<request *>(reinterpret_cast<char *>(link) -
                                       offsetof(request, u.recv.expected.link));
}

} // namespace

stream_seg *stream_seg_alloc(stream_worker *sw, size_t length)
{
    void *mem;
    const bool pooled = (length <= sw->pool_room);
    if (pooled) {
        mem = sw->seg_pool.get();
    } else {
        mem = std::aligned_alloc(alignof(stream_seg),
                                 (sizeof(stream_seg) + length + alignof(stream_seg) - 1) &
                                     ~(alignof(stream_seg) - 1));
    }
    if (mem == nullptr) {
        return nullptr;
    }
    auto *seg   = new (mem) stream_seg{};
    seg->magic  = stream_seg_magic;
    seg->pooled = pooled;
    seg->length = length;
    seg->offset = 0;
    return seg;
}

namespace {

/*
 * Places bytes on the stream of `se`: into the posted receives in order,
 * the rest into a segment (`seg` itself when the bytes are already in one).
 * Receives that complete are called back last, so a callback that posts,
 * consumes or closes finds the stream consistent.
 */
void stream_deliver(stream_worker *sw, stream_ep *se, const uint8_t *data, size_t length,
                    stream_seg *seg)
{
    ucs::list_link done;
    ucs::list_ops::init_head(done);
    size_t offset = 0;
    while ((offset < length) && !ucs::list_ops::is_empty(se->recvs) && !stream_must_queue(se)) {
        request *req = request_of_link(se->recvs.next);
        offset += stream_recv_fill(req, data + offset, length - offset);
        if (!stream_recv_can_complete(req)) {
            break; /* it took every byte and wants more */
        }
        ucs::list_ops::unlink(&req->u.recv.expected.link);
        ucs::list_ops::insert_between(&req->u.recv.expected.link, done.prev, &done);
    }

    if (offset < length) {
        if (seg == nullptr) {
            seg = stream_seg_alloc(sw, length - offset);
            if (seg == nullptr) {
                ucs_error("stream: no memory for %zu received bytes; the stream of "
                          "ep to '%s' lost them",
                          length - offset, se->ep->peer_name.c_str());
            } else {
                std::memcpy(seg->data(), data + offset, length - offset);
            }
        } else {
            seg->offset += offset;
        }
        if (seg != nullptr) {
            se->segs.push_back(*seg);
            stream_ep_update_ready(sw, se);
        }
    } else if (seg != nullptr) {
        stream_seg_free(seg);
    }

    while (!ucs::list_ops::is_empty(done)) {
        request *req = request_of_link(done.next);
        ucs::list_ops::unlink(&req->u.recv.expected.link);
        stream_recv_complete(req, UCS_OK);
    }
}

/* Completes every posted receive of the ep with `status`. */
void fail_receives(stream_ep *se, ucs_status_t status)
{
    ucs::list_link failed;
    ucs::list_ops::init_head(failed);
    ucs::list_ops::splice_before(&failed, se->recvs);
    while (!ucs::list_ops::is_empty(failed)) {
        request *req = request_of_link(failed.next);
        ucs::list_ops::unlink(&req->u.recv.expected.link);
        stream_recv_complete(req, status);
    }
}

} // namespace

stream_worker *stream_worker_get(ucp_worker *worker)
{
    if (worker->stream_state != nullptr) {
        return worker->stream_state;
    }
    auto *sw = new (std::nothrow) stream_worker;
    if (sw == nullptr) {
        return nullptr;
    }
    /* Room for the largest fragment a peer sends: bcopy, or zcopy where
     * the lane has it (ep_thresholds::zcopy_frag stays below 64 KiB). Data
     * that arrives before its receive is copied into a segment: from the
     * pool, memory is reused instead of page-faulted in afresh. */
    size_t max_fragment = 0;
    for (const worker_iface &wi : worker->ifaces) {
        const uct::iface_attr &attr = wi.iface->attr();
        max_fragment                = std::max(max_fragment, attr.am.max_bcopy);
        if (attr.flags & uct::iface_flag::AM_ZCOPY) {
            max_fragment = std::max(max_fragment, attr.am.max_zcopy);
        }
    }
    sw->pool_room = std::min(max_fragment, pool_room_max);
    ucs::mpool_params params;
    params.name            = "ucp_stream_seg";
    params.elem_size       = sizeof(stream_seg) + sw->pool_room;
    params.alignment       = alignof(stream_seg);
    params.elems_per_chunk = 32;
    if (sw->seg_pool.init(params) != UCS_OK) {
        delete sw;
        return nullptr;
    }
    worker->stream_state = sw;
    return sw;
}

void stream_seg_free(stream_seg *seg)
{
    if (seg->remote && (remote_of(seg)->staged != nullptr)) {
        stream_seg_free(remote_of(seg)->staged);
    }
    const bool pooled = seg->pooled;
    seg->magic        = 0; /* a second release finds no segment */
    seg->~stream_seg();
    if (pooled) {
        ucs::mpool::put(seg);
    } else {
        std::free(seg);
    }
}

void stream_ep_update_ready(stream_worker *sw, stream_ep *se)
{
    const bool has_data = !se->segs.empty();
    if (has_data && !se->ready) {
        sw->ready.push_back(*se);
        se->ready = true;
    } else if (!has_data && se->ready) {
        sw->ready.remove(*se);
        se->ready = false;
    }
}

bool stream_recv_can_complete(const request *req)
{
    const recv_state &r = req->u.recv;
    if (r.received == r.unpacker.capacity()) {
        return true;
    }
    if ((req->flags & request_flag::WAITALL) || (r.received == 0)) {
        return false;
    }
    /* Only whole elements of the datatype are handed over. */
    return (r.received % r.elem_size) == 0;
}

size_t stream_recv_fill(request *req, const uint8_t *data, size_t length)
{
    recv_state &r  = req->u.recv;
    const size_t n = std::min(length, r.unpacker.capacity() - r.received);
    if (n == 0) {
        return 0;
    }
    ucs_status_t status = r.unpacker.unpack(data, r.received, n);
    if ((status != UCS_OK) && (r.data_status == UCS_OK)) {
        r.data_status = status;
    }
    r.received += n;
    return n;
}

void stream_recv_complete(request *req, ucs_status_t status)
{
    recv_state &r = req->u.recv;
    r.info.length = r.received;
    r.unpacker.finish();
    request_complete(req, (status != UCS_OK) ? status : r.data_status);
}

stream_ep *stream_ep_attach(ucp_worker *worker, ucp_ep *ep)
{
    stream_worker *sw = stream_worker_get(worker);
    if (sw == nullptr) {
        return nullptr;
    }
    auto *se = static_cast<stream_ep *>(ep->stream);
    if (se == nullptr) {
        se = new (std::nothrow) stream_ep;
        if (se == nullptr) {
            return nullptr;
        }
        se->ep = ep;
        ucs::list_ops::init_head(se->recvs);
        ep->stream = se;
    }
    return se;
}

ucs_status_t stream_am_handler(void *arg, void *data, size_t length, unsigned)
{
    auto *worker = static_cast<ucp_worker *>(arg);
    ucs::wire_reader r(data, length);
    wire::stream_hdr hdr;
    if (!r.get(&hdr)) {
        ucs_warn("worker '%s': dropping a malformed stream message (%zu bytes)",
                 worker->name.c_str(), length);
        return UCS_OK;
    }
    const uint8_t *payload = r.pos();
    const size_t size      = r.left();
    if (size == 0) {
        return UCS_OK;
    }
    ucp_ep *ep = sender_ep(worker, hdr.dst_ep_id, hdr.src_uuid);
    if (ep == nullptr) {
        return UCS_OK;
    }
    stream_worker *sw = stream_worker_get(worker);
    stream_ep *se     = stream_ep_attach(worker, ep);
    if (se == nullptr) {
        ucs_error("worker '%s': no memory for a stream of ep to '%s'", worker->name.c_str(),
                  ep->peer_name.c_str());
        return UCS_OK;
    }
    stream_deliver(sw, se, payload, size, nullptr);
    return UCS_OK;
}

void stream_ep_fail(ucp_ep *ep, ucs_status_t status)
{
    if (auto *se = static_cast<stream_ep *>(ep->stream)) {
        fail_receives(se, status);
    }
}

void stream_ep_closing(ucp_ep *ep)
{
    if (auto *se = static_cast<stream_ep *>(ep->stream)) {
        se->closing = true;
    }
}

void stream_ep_destroy(ucp_ep *ep)
{
    auto *se = static_cast<stream_ep *>(ep->stream);
    if (se == nullptr) {
        return;
    }
    fail_receives(se, UCS_ERR_CANCELED);
    stream_rndv_ep_gone(ep->worker->stream_state, se);
    while (stream_seg *seg = se->segs.pull_front()) {
        stream_seg_free(seg);
    }
    stream_ep_update_ready(ep->worker->stream_state, se);
    ep->stream = nullptr;
    delete se;
}

void stream_cleanup(ucp_worker *worker)
{
    stream_worker *sw = worker->stream_state;
    if (sw == nullptr) {
        return;
    }
    /* Segments the application still holds are reported by the pool. */
    delete sw;
    worker->stream_state = nullptr;
}

} // namespace ucp
