/*
 * Endpoint life cycle: creation from a worker address (lanes, thresholds,
 * wireup message), the ordered send queue, replies, failure and
 * destruction.
 */
#include "ucp_ep.h"
#include "ucp_worker.h"
#include "ep_config_log.h"

#include <ucp/ext/pwc.h>
#include <ucp/ext/trigger.h>
#include <ucp/proto/am_handlers.h>
#include <ucp/proto/eager_zcopy.h>
#include <ucp/proto/send_common.h>
#include <ucp/proto/wire.h>
#include <ucp/rma/rma.h>
#include <ucp/tag/tag_recv.h>
#include <ucp/wireup/lane_select.h>
#include <ucs/config/parser.h>
#include <ucs/debug/assert.h>
#include <ucs/debug/log.h>
#include <ucs/sys/clock.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <iterator>

namespace ucp {

namespace {

ucs_status_t pending_dispatch(uct::pending_req *p)
{
    request *req        = request_of_pending(p);
    ucp_ep *ep          = req->u.send.ep;
    ucs_status_t status = req->u.send.step(req);
    if ((status == UCS_INPROGRESS) || (status == UCS_ERR_NO_RESOURCE)) {
        return status;
    }
    req->flags &= ~request_flag::PENDING;
    --ep->num_pending;
    if (status != UCS_OK) {
        request_complete(req, status);
    }
    return UCS_OK;
}

/* Why an ep's requests are purged. */
struct purge_reason {
    ucs_status_t status;
    bool lanes_gone; /* the lanes are destroyed next */
};

void settle_pending(uct::pending_req *p, const purge_reason &why)
{
    request *req = request_of_pending(p);
    req->flags &= ~request_flag::PENDING;
    --req->u.send.ep->num_pending;
    if (req->flags & request_flag::ZCOPY) {
        zcopy::abort(req, why.status, why.lanes_gone);
    } else if (!(req->flags & request_flag::HAS_ID)) {
        /* Its resources go too: a wireup's packed address, a bounce
         * buffer, a registration, a generic datatype's state. */
        send_request_finish(req, why.status);
    }
    /* A request with an id is failed with the ones awaiting replies. */
}

void pending_purge_cb(uct::pending_req *p, void *arg)
{
    settle_pending(p, *static_cast<const purge_reason *>(arg));
}

} // namespace

void ep_fail_pending(uct::pending_req *p, ucs_status_t status)
{
    settle_pending(p, purge_reason{status, false});
}

namespace {

/* Fails everything on the ep: queued sends and requests awaiting replies
 * or zero-copy completions. */
void purge_requests(ucp_ep *ep, ucs_status_t status, bool lanes_gone)
{
    purge_reason why{status, lanes_gone};
    ep_for_each_uct_ep(ep, [&](uct::ep *e) { e->pending_purge(pending_purge_cb, &why); });
    std::vector<request *> waiting;
    ep->worker->req_ids.for_each([&](unsigned, request *req) {
        ucp_ep *owner = (req->flags & request_flag::RECV) ? req->u.recv.ep : req->u.send.ep;
        if (owner == ep) {
            waiting.push_back(req);
        }
    });
    for (request *req : waiting) {
        if (req->flags & request_flag::ZCOPY) {
            zcopy::abort(req, status, lanes_gone);
        } else {
            fail_waiting_request(req, status);
        }
    }
}

} // namespace

namespace {

/* The lane array stays: a client ep puts its placeholder back in it when
 * connecting to the server's address failed. */
void destroy_lanes(ucp_ep *ep)
{
    for (uint8_t i = 0; i < ep->num_lanes; ++i) {
        delete ep->lanes[i].ep;
        ep->lanes[i].ep = nullptr;
    }
    ep->num_lanes = 0;
    delete ep->aux_ep;
    ep->aux_ep = nullptr;
    ep->p2p_dev_addrs.reset();
}

/* A lane that can carry the wireup: connects to an iface, has am_bcopy. */
bool carries_wireup(const ucp_worker *worker, const lane &l)
{
    return !l.p2p &&
           (worker->ifaces[l.iface_index].iface->attr().flags & uct::iface_flag::AM_BCOPY);
}

} // namespace

uct::ep *ep_wireup_lane(const ucp_ep *ep)
{
    if (ep->aux_ep != nullptr) {
        return ep->aux_ep;
    }
    if ((ep->am_lane < ep->num_lanes) && carries_wireup(ep->worker, ep->lanes[ep->am_lane])) {
        return ep->lanes[ep->am_lane].ep;
    }
    for (uint8_t i = 0; i < ep->num_lanes; ++i) {
        if (carries_wireup(ep->worker, ep->lanes[i])) {
            return ep->lanes[i].ep;
        }
    }
    return ep->am_ep; /* a client-server ep's placeholder: never sends */
}

ucs_status_t ep_connect_to_address(ucp_ep *ep, const void *address, size_t max_length)
{
    ucp_worker *worker = ep->worker;
    size_t total_length;
    ucs_status_t status = address_peek(address, std::min(max_length, address_header_size),
                                       &total_length, nullptr);
    if ((status == UCS_OK) && (total_length > max_length)) {
        status = UCS_ERR_INVALID_PARAM;
    }
    if (status != UCS_OK) {
        ucs_error("ucp_ep_create: not a worker address");
        return status;
    }
    unpacked_address remote;
    status = unpack_address(address, total_length, &remote);
    if (status != UCS_OK) {
        ucs_error("ucp_ep_create: malformed worker address");
        return status;
    }

    ep->net_only_address = remote.net_only;
    lane_plan plan;
    status = select_lanes(*worker, remote, &plan);
    if (status != UCS_OK) {
        ucs_error("ucp_ep_create: no transport of worker '%s' reaches '%s'", worker->name.c_str(),
                  remote.worker_name.c_str());
        return status;
    }

    if (!ep->lanes.resize(unsigned(plan.lanes.size()))) {
        return UCS_ERR_NO_MEMORY;
    }
    bool p2p = false;
    for (const lane_candidate &c : plan.lanes) {
        const address_entry &e = *c.entry;
        uct::iface *iface      = worker->ifaces[c.iface_index].iface;
        uct::ep *uct_ep        = nullptr;
        status                 = c.p2p ?
                                     iface->ep_create(&uct_ep) :
                                     iface->ep_create_connected(e.dev_addr.data(), e.dev_addr.size(),
                                                                e.iface_addr.data(), e.iface_addr.size(), &uct_ep);
        if (status != UCS_OK) {
            ucs_error("ucp_ep_create: %s lane to '%s' failed: %s", e.tl_name.c_str(),
                      remote.worker_name.c_str(), ucs_status_string(status));
            destroy_lanes(ep);
            return status;
        }
        unsigned tl = worker->ifaces[c.iface_index].tl_index;
        if (c.p2p) {
            if (ep->p2p_dev_addrs == nullptr) {
                ep->p2p_dev_addrs = std::make_unique<std::vector<std::vector<uint8_t>>>();
            }
            ep->p2p_dev_addrs->resize(ep->num_lanes + 1);
            (*ep->p2p_dev_addrs)[ep->num_lanes] = e.dev_addr;
            p2p                                 = true;
        }
        /* Both fit 16 bits: the context took at most max_resources of each. */
        ep->lanes[ep->num_lanes++] = {uct_ep, uint16_t(c.iface_index),
                                      uint16_t(worker->context.tls[tl].md_index), c.p2p,
                                      uint16_t(c.entry_index)};
    }

    /* Every lane connects to an ep: the wireup needs a lane of its own. */
    bool has_wireup_lane = !p2p;
    for (uint8_t i = 0; i < ep->num_lanes; ++i) {
        has_wireup_lane |= carries_wireup(worker, ep->lanes[i]);
    }
    if (!has_wireup_lane && (remote.worker_uuid != worker->uuid)) {
        lane_candidate aux;
        status = select_aux(*worker, remote, &aux);
        if (status != UCS_OK) {
            ucs_error("ucp_ep_create: the lanes of worker '%s' to '%s' connect to eps, and no "
                      "transport connecting to an iface reaches it to carry their wireup (allow "
                      "one in UCX_TLS: tcp, shared memory or self)",
                      worker->name.c_str(), remote.worker_name.c_str());
            destroy_lanes(ep);
            return status;
        }
        const address_entry &e = *aux.entry;
        status = worker->ifaces[aux.iface_index].iface->ep_create_connected(e.dev_addr.data(),
                                                                            e.dev_addr.size(),
                                                                            e.iface_addr.data(),
                                                                            e.iface_addr.size(),
                                                                            &ep->aux_ep);
        if (status != UCS_OK) {
            ucs_error("ucp_ep_create: %s wireup lane to '%s' failed: %s", e.tl_name.c_str(),
                      remote.worker_name.c_str(), ucs_status_string(status));
            ep->aux_ep = nullptr;
            destroy_lanes(ep);
            return status;
        }
        ep->aux_iface_index = aux.iface_index;
    }

    ep->remote_uuid = remote.worker_uuid;
    if (ep->peer_name.empty()) {
        ep->peer_name = remote.worker_name;
    }
    ep->am_lane          = plan.am;
    ep->rndv_lane        = plan.rndv;
    ep->extra_rndv_lanes = 0;
    for (uint8_t extra : plan.rndv_extra) {
        ep->extra_rndv_lanes |= uint8_t(1u << extra);
    }
    ep->rma_lane      = plan.rma;
    ep->mem_rndv_lane = plan.mem_rndv;
    ep->am_ep         = ep->lanes[plan.am].ep;
    ep_config_attach(ep);

    for (uint8_t i = 0; i < ep->num_lanes; ++i) {
        worker->activate_iface(ep->lanes[i].iface_index);
    }
    if (ep->aux_ep != nullptr) {
        worker->activate_iface(ep->aux_iface_index);
    }
    log_ep_lanes(ep);
    return UCS_OK;
}

ucs_status_t ep_create_to_address(ucp_worker *worker, const void *address, size_t max_length,
                                  uint32_t flags, ucp_ep **ep_p)
{
    auto ep             = std::make_unique<ucp_ep>();
    ep->worker          = worker;
    ep->flags           = flags;
    ucs_status_t status = worker->register_ep(ep.get());
    if (status != UCS_OK) {
        return status;
    }
    status = ep_connect_to_address(ep.get(), address, max_length);
    if (status != UCS_OK) {
        worker->ep_ids.remove(ep->id);
        return status;
    }

    ucp_ep *raw = ep.release();
    if (!(flags & ep_flag::USER)) {
        ++worker->num_peer_eps;
    }
    ucs_debug("worker '%s': ep %u to '%s': %u lanes, am lane %u, rndv lane %d%s",
              worker->name.c_str(), raw->id, raw->peer_name.c_str(), raw->num_lanes, raw->am_lane,
              raw->rndv_lane == no_lane ? -1 : int(raw->rndv_lane),
              (raw->aux_ep != nullptr) ? ", an aux lane for the wireup" : "");
    *ep_p = raw;
    return UCS_OK;
}

void ep_destroy(ucp_ep *ep)
{
    ucp_worker *worker = ep->worker;
    if (!(ep->flags & ep_flag::USER)) {
        --worker->num_peer_eps;
    }
    ext::triggers_ep_gone(ep, UCS_ERR_CANCELED);
    ext::pwc_ep_gone(ep, UCS_ERR_CANCELED);
    stream_ep_closing(ep);
    purge_requests(ep, UCS_ERR_CANCELED, true);
    ext::pwc_ep_destroyed(ep);
    stream_ep_destroy(ep);
    wireup::ep_forget(ep);
    worker->ep_ids.remove(ep->id);
    if (!ep_proxy_is_lane(ep)) {
        delete ep->proxy; /* a lane one goes with the lanes */
    }
    ep->proxy = nullptr;
    destroy_lanes(ep);
    delete ep;
}

namespace {

/* Whether some ep still reaches worker `uuid` (its messages may go on). */
bool peer_reachable(ucp_worker *worker, uint64_t uuid)
{
    bool reachable = false;
    worker->ep_ids.for_each([&](unsigned, ucp_ep *ep) {
        reachable |= (ep->remote_uuid == uuid) && ep->usable();
    });
    return reachable;
}

void set_failed(ucp_ep *ep, ucs_status_t status, bool quiet)
{
    if (ep->flags & ep_flag::FAILED) {
        return;
    }
    ep->flags |= ep_flag::FAILED;
    ep->status = status;
    wireup::ep_forget(ep);
    ext::triggers_ep_gone(ep, status);
    ext::pwc_ep_gone(ep, status);
    purge_requests(ep, status, false);
    stream_ep_fail(ep, status);
    if (!peer_reachable(ep->worker, ep->remote_uuid)) {
        tag_recv_peer_lost(ep->worker, ep->remote_uuid, status);
    }
    if (!(ep->flags & ep_flag::USER) || (ep->flags & ep_flag::CLOSED)) {
        return;
    }
    if ((ep->err_mode == UCP_ERR_HANDLING_MODE_PEER) && (ep->err_handler.cb != nullptr)) {
        ep->flags |= ep_flag::ERR_NOTIFIED;
        ep->err_handler.cb(ep->user_data, ep, status);
    } else if ((status != UCS_ERR_CANCELED) && !quiet) {
        ucs_error("worker '%s': connection to '%s' failed: %s", ep->worker->name.c_str(),
                  ep->peer_name.c_str(), ucs_status_string(status));
    }
}

} // namespace

void ep_set_failed(ucp_ep *ep, ucs_status_t status)
{
    set_failed(ep, status, false);
}

void ep_set_remote_closed(ucp_ep *ep)
{
    ucs_debug("worker '%s': '%s' closed its endpoint to us", ep->worker->name.c_str(),
              ep->peer_name.c_str());
    set_failed(ep, UCS_ERR_CONNECTION_RESET, true);
}

bool ep_notify_closed(ucp_ep *ep)
{
    ucp_worker *worker = ep->worker;
    if (!ep->usable() || (ep->am_ep == nullptr) || (ep->remote_uuid == worker->uuid) ||
        (ep->flags & ep_flag::CONNECTING)) {
        return true;
    }
    /* Not wired up: the proxy holds nothing (the flush emptied it), and the
     * notice goes out of the wireup lane. */
    uct::ep *lane = ep->held() ? ep_wireup_lane(ep) : ep->am_ep;
    /* The last ep to that worker: the peer fails all of its eps to us.
     * Otherwise the one paired with this ep: the peer drops it if it made
     * it for us (its user never sees it), with its connections. */
    bool other = false;
    worker->ep_ids.for_each([&](unsigned, ucp_ep *e) {
        other |= (e != ep) && (e->remote_uuid == ep->remote_uuid) && (e->flags & ep_flag::USER) &&
                 !(e->flags & ep_flag::CLOSED);
    });
    if (other && (ep->remote_id == 0)) {
        return true; /* its pair is not known to us: nothing to name */
    }
    /* The uuid, and the id of the peer's ep paired with this one when it
     * is not the last. */
    const uint64_t notice[2] = {worker->uuid, ep->remote_id};
    const size_t length      = other ? sizeof(notice) : sizeof(notice[0]);
    ucs_status_t status      = lane->am_short(wire::AM_EP_CLOSED, notice[0], &notice[1],
                                              unsigned(length - sizeof(notice[0])));
    if ((status == UCS_ERR_UNSUPPORTED) || (status == UCS_ERR_INVALID_PARAM)) {
        struct packed_notice {
            const uint64_t *words;
            size_t length;
        } arg{notice, length};
        ssize_t packed = lane->am_bcopy(
            wire::AM_EP_CLOSED,
            [](void *dest, void *a) -> size_t {
                auto *n = static_cast<packed_notice *>(a);
                std::memcpy(dest, n->words, n->length);
                return n->length;
            },
            &arg, 0);
        status = (packed >= 0) ? UCS_OK : ucs_status_t(packed);
    }
    return status != UCS_ERR_NO_RESOURCE;
}

ucs_status_t ep_closed_handler(void *arg, void *data, size_t length, unsigned)
{
    auto *worker = static_cast<ucp_worker *>(arg);
    ucs::wire_reader r(data, length);
    uint64_t uuid, ep_id = 0;
    if (((length != sizeof(uuid)) && (length != 2 * sizeof(uuid))) || !r.get(&uuid) ||
        ((length > sizeof(uuid)) && (!r.get(&ep_id) || (ep_id == 0)))) {
        ucs_warn("worker '%s': dropping a malformed close notice (%zu bytes)", worker->name.c_str(),
                 length);
        return UCS_OK;
    }
    worker->closed_peers.emplace_back(uuid, ep_id); /* acted on outside the transport */
    worker->schedule(deferred::CLOSED_PEERS);
    return UCS_OK;
}

namespace {

unsigned process_closed_peers(ucp_worker *worker)
{
    unsigned count = 0;
    while (!worker->closed_peers.empty()) {
        /* Plain copies: clang 14 cannot capture structured bindings. */
        const uint64_t uuid  = worker->closed_peers.back().first;
        const uint64_t ep_id = worker->closed_peers.back().second;
        worker->closed_peers.pop_back();
        if (ep_id != 0) {
            /* One ep of the peer went: ours paired with it goes too if the
             * wireup made it (a user's ep stays the user's to close). The id
             * came from the peer: ep_by_id checks it names an ep to it. */
            ucp_ep *ep = worker->ep_by_id(ep_id, uuid);
            if ((ep != nullptr) && !(ep->flags & ep_flag::USER)) {
                ep_destroy(ep);
                ++count;
            }
            continue;
        }
        std::vector<ucp_ep *> eps;
        worker->ep_ids.for_each([&](unsigned, ucp_ep *ep) {
            if ((ep->remote_uuid == uuid) && ep->usable()) {
                eps.push_back(ep);
            }
        });
        for (ucp_ep *ep : eps) {
            const bool internal = !(ep->flags & ep_flag::USER);
            ep_set_remote_closed(ep);
            if (internal) {
                ep_destroy(ep);
            }
            ++count;
        }
    }
    return count;
}

} // namespace

namespace {

/* Sends now when `try_now` and the lane takes it, else queues the request
 * on `lane` until it has resources. */
ucs_status_t send_or_pend(ucp_ep *ep, uct::ep *lane, request *req, bool try_now)
{
    if (try_now) {
        ucs_status_t status = req->u.send.step(req);
        if ((status != UCS_INPROGRESS) && (status != UCS_ERR_NO_RESOURCE)) {
            return status;
        }
    }
    req->u.send.pending.func = pending_dispatch;
    for (;;) {
        ucs_status_t status = lane->pending_add(&req->u.send.pending, 0);
        if (status == UCS_OK) {
            break;
        }
        if (status != UCS_ERR_BUSY) {
            return status;
        }
        /* Resources came back meanwhile: try again ourselves. */
        status = req->u.send.step(req);
        if ((status != UCS_INPROGRESS) && (status != UCS_ERR_NO_RESOURCE)) {
            return status;
        }
    }
    req->flags |= request_flag::PENDING;
    ++ep->num_pending;
    return UCS_INPROGRESS;
}

} // namespace

ucs_status_t ep_send_or_queue(ucp_ep *ep, request *req)
{
    if (ucs_unlikely(!ep->usable())) {
        return ep->status;
    }
    if (ucs_unlikely(!(ep->flags & ep_flag::READY)) && (req->flags & request_flag::NAMES_PEER_EP)) {
        ep_hold_sends(ep); /* until the REPLY tells us the peer's ep */
    }
    return send_or_pend(ep, ep->am_ep, req, (ep->num_pending == 0) && !ep->held());
}

ucs_status_t ep_send_wireup(ucp_ep *ep, request *req)
{
    if (ucs_unlikely(!ep->usable())) {
        return ep->status;
    }
    /* Ahead of the sends an ep holds until the wireup is done. */
    return send_or_pend(ep, ep_wireup_lane(ep), req, true);
}

namespace {

bool try_send_reply(ucp_ep *ep, uint8_t am_id, uint64_t req_id, int8_t status)
{
    if (!ep->usable()) {
        return true; /* dropped: the peer is gone */
    }
    wire::reply_hdr hdr{req_id, status, {}};
    ucs_status_t st = ep->am_ep->am_short(am_id, req_id, &hdr.status,
                                          sizeof(hdr) - sizeof(uint64_t));
    if (st == UCS_ERR_UNSUPPORTED || st == UCS_ERR_INVALID_PARAM) {
        ssize_t packed = ep->am_ep->am_bcopy(
            am_id,
            [](void *dest, void *arg) -> size_t {
                std::memcpy(dest, arg, sizeof(wire::reply_hdr));
                return sizeof(wire::reply_hdr);
            },
            &hdr, 0);
        st = (packed >= 0) ? UCS_OK : ucs_status_t(packed);
    }
    return st != UCS_ERR_NO_RESOURCE;
}

} // namespace

ucp_ep *sender_ep(ucp_worker *worker, uint64_t ep_id, uint64_t uuid)
{
    ucp_ep *ep = worker->ep_by_id(ep_id, uuid);
    if (ucs_likely(ep != nullptr)) {
        return ep;
    }
    if (worker->dropped_bad_ep_ids++ == 0) {
        ucs_warn("worker '%s': dropping a message of worker 0x%llx naming ep 0x%llx, which is "
                 "not an ep of ours to it (stale or forged)",
                 worker->name.c_str(), static_cast<unsigned long long>(uuid),
                 static_cast<unsigned long long>(ep_id));
    } else {
        ucs_debug("worker '%s': dropping a message naming unknown ep 0x%llx", worker->name.c_str(),
                  static_cast<unsigned long long>(ep_id));
    }
    return nullptr;
}

void send_reply_to(ucp_worker *worker, uint64_t ep_id, uint64_t uuid, uint8_t am_id,
                   uint64_t req_id, ucs_status_t status)
{
    if (worker->queued_replies.empty()) {
        ucp_ep *ep = worker->ep_by_id(ep_id, uuid);
        if (ep == nullptr) {
            ucs_debug("worker '%s': dropping a reply to a gone ep of worker 0x%llx",
                      worker->name.c_str(), static_cast<unsigned long long>(uuid));
            return;
        }
        if (try_send_reply(ep, am_id, req_id, int8_t(status))) {
            return;
        }
    }
    worker->queued_replies.push_back({ep_id, uuid, am_id, req_id, int8_t(status)});
    worker->schedule(deferred::REPLIES);
}

ucs_status_t worker_lane_error(void *arg, uct::ep *failed, ucs_status_t status)
{
    /* Called from inside a transport's progress: act later, outside it. */
    auto *worker = static_cast<ucp_worker *>(arg);
    worker->failed_lanes.emplace_back(failed, status);
    worker->schedule(deferred::FAILED_LANES);
    return UCS_OK;
}

namespace {

/* The status `e` failed with among `failed` (sorted), or UCS_OK. */
ucs_status_t lane_failure(const std::vector<std::pair<const uct::ep *, ucs_status_t>> &failed,
                          const uct::ep *e)
{
    auto it = std::lower_bound(failed.begin(), failed.end(), e,
                               [](const auto &f, const uct::ep *key) { return f.first < key; });
    return ((it != failed.end()) && (it->first == e)) ? it->second : UCS_OK;
}

/* What `ep`'s lanes failed with among `failed`, UCS_OK if none did. */
ucs_status_t ep_lane_failure(ucp_ep *ep,
                             const std::vector<std::pair<const uct::ep *, ucs_status_t>> &failed)
{
    ucs_status_t status = UCS_OK;
    ep_for_each_uct_ep(ep, [&](uct::ep *e) {
        if (status == UCS_OK) {
            status = lane_failure(failed, e);
        }
    });
    return status;
}

/*
 * Finds the eps of the lanes reported failed with one pass over all eps, as
 * UCX does: a map from lane to ep would cost every ep about 40 bytes for
 * this rare path, and a peer's death reports all its lanes at once.
 */
unsigned process_failed_lanes(ucp_worker *worker)
{
    if (worker->failed_lanes.empty()) {
        return 0;
    }
    std::vector<std::pair<const uct::ep *, ucs_status_t>> failed;
    failed.swap(worker->failed_lanes);
    std::sort(failed.begin(), failed.end(),
              [](const auto &a, const auto &b) { return a.first < b.first; });
    std::vector<uint64_t> hit_ids;
    worker->ep_ids.for_each([&](unsigned, ucp_ep *ep) {
        if (ep_lane_failure(ep, failed) != UCS_OK) {
            hit_ids.push_back(ep->local_id);
        }
    });

    unsigned count = 0;
    for (uint64_t id : hit_ids) {
        /* An error handler before may have destroyed it, or changed its lanes. */
        ucp_ep *ep = worker->ep_ids.lookup(uint32_t(id));
        if ((ep == nullptr) || (ep->local_id != id)) {
            continue;
        }
        ucs_status_t status = ep_lane_failure(ep, failed);
        if (status == UCS_OK) {
            continue;
        }
        /* The user's error handler may close (free) a user ep. */
        const bool internal = !(ep->flags & ep_flag::USER);
        ep_set_failed(ep, status);
        if (internal) {
            ep_destroy(ep); /* nobody holds an internal ep */
        }
        ++count;
    }
    return count;
}

unsigned process_queued_replies(ucp_worker *worker)
{
    unsigned count = 0;
    auto &q        = worker->queued_replies;
    while (!q.empty()) {
        queued_reply r = q.front();
        ucp_ep *ep     = worker->ep_by_id(r.ep_id, r.uuid);
        if (ep == nullptr) {
            ucs_debug("dropping a reply to a gone ep of worker 0x%llx",
                      static_cast<unsigned long long>(r.uuid));
        } else if (!try_send_reply(ep, r.am_id, r.req_id, r.status)) {
            break;
        }
        q.pop_front();
        ++count;
    }
    return count;
}

} // namespace

void worker_keepalive(ucp_worker *worker)
{
    const uint64_t now = ucs::sys::get_time();
    if (now < worker->keepalive_next) {
        return;
    }
    worker->keepalive_next = now + worker->keepalive_interval;
    worker->ep_ids.for_each([](unsigned, ucp_ep *ep) {
        if ((ep->err_mode != UCP_ERR_HANDLING_MODE_PEER) || !ep->usable()) {
            return;
        }
        for (uint8_t i = 0; i < ep->num_lanes; ++i) {
            const lane &l = ep->lanes[i];
            if (ep->worker->ifaces[l.iface_index].iface->attr().flags & uct::iface_flag::EP_CHECK) {
                l.ep->check(0, nullptr); /* a dead peer is reported as an error */
            }
        }
    });
}

namespace {

/* A slot's callback: the feature's deferred work, scheduled again while
 * some is left. */
template <unsigned (*Work)(ucp_worker *), deferred Slot, bool (*Left)(const ucp_worker &)>
unsigned run_deferred(void *arg)
{
    auto *worker         = static_cast<ucp_worker *>(arg);
    const unsigned count = Work(worker);
    if (Left(*worker)) {
        worker->schedule(Slot);
    }
    return count;
}

bool lanes_left(const ucp_worker &w)
{
    return !w.failed_lanes.empty();
}
bool peers_left(const ucp_worker &w)
{
    return !w.closed_peers.empty();
}
bool replies_left(const ucp_worker &w)
{
    return !w.queued_replies.empty();
}
bool rndv_left(const ucp_worker &w)
{
    return !w.rndv_deferred.empty();
}
bool rma_left(const ucp_worker &w)
{
    return !w.rma.deferred.empty();
}
bool flushes_left(const ucp_worker &w)
{
    return !w.flush_requests.empty();
}

} // namespace

void register_deferred_work(ucp_worker *worker)
{
    using callback_t         = ucs::callback_queue::callback_t;
    const callback_t slots[] = {
        run_deferred<process_failed_lanes, deferred::FAILED_LANES, lanes_left>,
        run_deferred<process_closed_peers, deferred::CLOSED_PEERS, peers_left>,
        run_deferred<wireup::progress, deferred::WIREUPS, wireup::messages_left>,
        run_deferred<process_queued_replies, deferred::REPLIES, replies_left>,
        run_deferred<rndv_deferred_progress, deferred::RNDV, rndv_left>,
        run_deferred<stream_deferred_progress, deferred::STREAM, stream_deferred_left>,
        run_deferred<rma_deferred_progress, deferred::RMA, rma_left>,
        run_deferred<flush_progress, deferred::FLUSH, flushes_left>,
    };
    static_assert(std::size(slots) == size_t(deferred::count), "one callback per slot");
    for (size_t i = 0; i < std::size(slots); ++i) {
        const unsigned id = worker->progress_queue.add(slots[i], worker);
        ucs_assert(id == i); /* schedule(deferred) names slots by index */
    }
}

} // namespace ucp
