/*
 * The wireup proxy (proxy_ep.h): holding an ep's sends and draining them
 * in order once it may send.
 */
#include "proxy_ep.h"

#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_worker.h>
#include <ucs/debug/log.h>

#include <vector>

namespace ucp {

namespace {

/*
 * Sends the queued requests on the real lane, in order: each runs at once
 * until one finds no resources; it and the rest then go to the lane's own
 * pending queue. The proxy stays the ep's am_ep meanwhile, so a send made
 * by a completion callback queues behind the ones not moved yet. Returns
 * false if a callback destroyed the ep.
 */
bool drain(proxy_ep *proxy, uct::ep *real)
{
    bool alive       = true;
    proxy->alive     = &alive;
    bool lane_queued = false;
    while (alive && !proxy->queue_empty()) {
        uct::pending_req *p = proxy->queue_pop();
        /* p->func is the core's dispatcher: it runs the send step and, once
         * the send is done (or failed), settles the ep's pending count. */
        if (!lane_queued && (p->func(p) == UCS_OK)) {
            continue;
        }
        while (alive) {
            ucs_status_t status = real->pending_add(p, 0);
            if (status == UCS_OK) {
                lane_queued = true;
                break;
            }
            if (status == UCS_ERR_BUSY) { /* room again: send it ourselves */
                if (p->func(p) == UCS_OK) {
                    break;
                }
                continue;
            }
            ep_fail_pending(p, status);
            break;
        }
    }
    if (alive) {
        proxy->alive = nullptr;
    }
    return alive;
}

struct moved_requests {
    proxy_ep *proxy;
    std::vector<uct::pending_req *> wireup;
};

void move_to_proxy(uct::pending_req *p, void *arg)
{
    auto *m = static_cast<moved_requests *>(arg);
    if (request_of_pending(p)->flags & request_flag::WIREUP) {
        m->wireup.push_back(p); /* goes out ahead of the held sends */
    } else {
        m->proxy->pending_add(p, 0);
    }
}

} // namespace

proxy_iface::proxy_iface(uct::md &md) : md_(md)
{
    attr_.flags = uct::iface_flag::AM_BCOPY | uct::iface_flag::PENDING;
    /* Smaller than any transport's bcopy limit: a protocol chosen while
     * connecting (eager fragments, read at send time) fits the real lane. */
    attr_.am.max_bcopy = 64;
}

proxy_ep::~proxy_ep()
{
    if (alive != nullptr) {
        *alive = false;
    }
    if (on_destroy) {
        on_destroy();
    }
}

ucs_status_t proxy_ep::pending_add(uct::pending_req *req, unsigned)
{
    queue_.push_back(req);
    return UCS_OK;
}

void proxy_ep::pending_purge(uct::pending_purge_callback_t cb, void *arg)
{
    std::deque<uct::pending_req *> queue;
    queue.swap(queue_);
    for (uct::pending_req *req : queue) {
        cb(req, arg);
    }
}

ucs_status_t proxy_ep::flush(unsigned flags, uct::completion *)
{
    if (flags & uct::flush_flag::CANCEL) {
        return UCS_OK;
    }
    return queue_.empty() ? UCS_OK : UCS_ERR_NO_RESOURCE;
}

uct::pending_req *proxy_ep::queue_pop()
{
    uct::pending_req *req = queue_.front();
    queue_.pop_front();
    return req;
}

void proxy_ep::take_queue(proxy_ep &other)
{
    while (!other.queue_.empty()) {
        queue_.push_back(other.queue_pop());
    }
}

void ep_hold_sends(ucp_ep *ep)
{
    if (ep->held() || (ep->am_ep == nullptr)) {
        return;
    }
    uct::ep *real = ep->am_ep;
    auto *proxy   = new proxy_ep(real->owner());
    ep->proxy     = proxy;
    ep->am_ep     = proxy;
    /* What waits on the real lane was sent before: it goes first. */
    moved_requests moved{proxy, {}};
    real->pending_purge(move_to_proxy, &moved);
    for (uct::pending_req *p : moved.wireup) {
        for (;;) {
            const ucs_status_t status = real->pending_add(p, 0);
            if ((status == UCS_OK) || ((status == UCS_ERR_BUSY) && (p->func(p) == UCS_OK))) {
                break;
            }
            if (status != UCS_ERR_BUSY) {
                ep_fail_pending(p, status); /* the lane failed meanwhile */
                break;
            }
        }
    }
    ucs_debug("worker '%s': ep %u holds its sends until the wireup is done",
              ep->worker->name.c_str(), ep->id);
}

bool ep_release_sends(ucp_ep *ep)
{
    if (!ep->held()) {
        return true;
    }
    proxy_ep *proxy = ep->proxy;
    uct::ep *real   = ep->lanes[ep->am_lane].ep;
    if (proxy->queue_empty()) {
        ep->am_ep = real;
        ep->proxy = nullptr;
        delete proxy;
        return true;
    }
    proxy->forward_to = real;
    if (!drain(proxy, real)) {
        return false; /* the ep was destroyed, and the proxy with it */
    }
    ep->am_ep = real;
    ep->proxy = nullptr;
    delete proxy;
    return true;
}

void ep_rehome_proxy(ucp_ep *ep)
{
    proxy_ep *old = ep->proxy;
    auto *proxy   = new proxy_ep(ep->lanes[ep->am_lane].ep->owner());
    proxy->take_queue(*old);
    old->on_destroy = nullptr;
    delete old;
    ep->proxy = proxy;
    ep->am_ep = proxy;
}

} // namespace ucp
