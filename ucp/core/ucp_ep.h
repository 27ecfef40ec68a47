/*
 * A UCP endpoint: the lanes (uct endpoints) that reach one peer worker and
 * the configuration (ucp_ep_config.h) whose tables pick a protocol per
 * message size.
 *
 * Each ep is paired with one ep of the peer by the wireup handshake
 * (ucp/wireup/wireup.h): the REQUEST tells the peer our ep id and worker
 * address, its REPLY tells us its ep id (remote_id), which every message
 * expecting an answer names. Lanes of connect-to-iface transports work
 * from creation, so an ep of only such lanes sends at once; only a message
 * that names the peer's ep waits, with everything after it, for the REPLY.
 * Lanes of connect-to-ep transports (p2p) work only once both sides
 * connected their uct eps to each other's: until then the ep's sends queue
 * in its wireup proxy (ucp/wireup/proxy_ep.h), in order.
 */
#ifndef UCP_CORE_UCP_EP_H
#define UCP_CORE_UCP_EP_H

#include "ucp_ep_config.h"
#include "ucp_request.h"

#include <ucp/wireup/proxy_ep.h>
#include <uct/base/uct_iface.h>

#include <memory>
#include <new>
#include <string>
#include <vector>

#include <sys/socket.h>

namespace ucp {

struct lane {
    uct::ep *ep;
    /* 16 bits (max_resources, ucp_context.h) keep a lane at 16 bytes, eight
     * in every ep. */
    uint16_t iface_index; /* into ucp_worker::ifaces */
    uint16_t md_index;    /* into ucp_context::mds */
    /* A connect-to-ep lane: its uct ep connects to the peer's ep on the
     * peer's address entry `remote_entry`, in the wireup. */
    bool p2p;
    uint16_t remote_entry;
};

/*
 * An ep's lanes, as many as it has: mostly one (a peer reached over tcp or
 * shared memory alone), at most max_lanes. Room for max_lanes in every ep
 * would cost a worker with thousands of eps 100 bytes more for each.
 */
class lane_array {
public:
    lane &operator[](unsigned i) { return lanes_[i]; }
    const lane &operator[](unsigned i) const { return lanes_[i]; }
    /* Room for `count` (1..max_lanes) empty lanes instead of those held,
     * whose uct eps are gone; false, nothing changed, when out of memory. */
    bool resize(unsigned count)
    {
        ucs_assert((count > 0) && (count <= max_lanes));
        std::unique_ptr<lane[]> lanes(new (std::nothrow) lane[count]());
        if (lanes == nullptr) {
            return false;
        }
        lanes_ = std::move(lanes);
        return true;
    }

private:
    std::unique_ptr<lane[]> lanes_;
};

namespace ep_flag {
constexpr uint32_t USER         = 1u << 0; /* handed to the application */
constexpr uint32_t FAILED       = 1u << 1; /* a lane reported an error */
constexpr uint32_t CLOSED       = 1u << 2; /* ucp_ep_close* called */
constexpr uint32_t ERR_NOTIFIED = 1u << 3;
/* Client-server ep waiting for the server's address: its only lane is a
 * placeholder that queues every send (ucp/wireup/sockaddr_ep.cc). */
constexpr uint32_t CONNECTING = 1u << 8;
/* Wireup (ucp/wireup/wireup.h). */
constexpr uint32_t REQ_SENT        = 1u << 9;  /* our REQUEST is out */
constexpr uint32_t LOCAL_CONNECTED = 1u << 10; /* our p2p lanes are connected */
/* Every lane may be used: the peer's ep is known and its p2p lanes are
 * connected to ours. Until then sends that need the peer queue. */
constexpr uint32_t READY = 1u << 11;
/* An ep made for a peer's REQUEST, not the application's yet: a later
 * ucp_ep_create to that peer with the same conn_sn adopts it. */
constexpr uint32_t UNEXPECTED = 1u << 12;
/* Our REQUEST waits for the peer's REPLY, or a REQUEST of the peer's with
 * our conn_sn (both sides connecting at once). */
constexpr uint32_t EXPECTED = 1u << 13;
/* The client's ep of a client-server connection (sockaddr_ep.cc). */
constexpr uint32_t CLIENT = 1u << 14;
} // namespace ep_flag

} // namespace ucp

namespace ucp::ext {
struct pwc_peer;
}

namespace ucp {
/* A client-server ep's ends of its bootstrap connection. */
struct ep_sockaddrs {
    sockaddr_storage local{};
    sockaddr_storage remote{};
};
} // namespace ucp

static_assert(ucp::max_lanes <= 8, "ucp_ep::extra_rndv_lanes holds a bit per lane");

struct ucp_ep {
    /* Members are grouped by size to leave no padding: a worker may hold
     * thousands of eps. */
    ucp_worker *worker   = nullptr;
    uint64_t remote_uuid = 0;
    std::string peer_name;
    /* What the peer names us by (id and a generation, ucp_worker::ep_by_id),
     * and its ep paired with us; 0 until the wireup told it. */
    uint64_t local_id  = 0;
    uint64_t remote_id = 0;
    unsigned id        = 0; /* in worker->ep_ids */
    /* The n-th ep this worker made to the peer by address (ep matching). */
    uint32_t conn_sn                 = 0;
    uint32_t flags                   = 0;
    ucp_err_handling_mode_t err_mode = UCP_ERR_HANDLING_MODE_NONE;
    ucp_err_handler_t err_handler{nullptr, nullptr};
    void *user_data = nullptr;

    ucp::lane_array lanes; /* num_lanes of them, or room for more */
    /* The ep's wireup messages go out of a connect-to-iface lane, or of
     * this ep when every lane connects to an ep (not a lane: no role). */
    uct::ep *aux_ep = nullptr;
    /* Queues the ep's sends until it is READY (am_ep points to it then). */
    ucp::proxy_ep *proxy = nullptr;
    /* Until the p2p lanes are connected: the peer's device address of each
     * (by lane index), from its worker address; null for eps without p2p
     * lanes (most: tcp, shared memory), which keep 16 bytes. */
    std::unique_ptr<std::vector<std::vector<uint8_t>>> p2p_dev_addrs;

    /* The configuration shared with eps of the same lanes (protocol limits
     * and selection), and fast-path copies of the AM lane and its limits. */
    const ucp::ep_config *cfg = nullptr;
    uct::ep *am_ep            = nullptr;
    /* Stream receive state (operations issue). */
    void *stream = nullptr;
    /* Client-server eps: the bootstrap connection's addresses (ucp_ep_query);
     * null for other eps (256 bytes that most eps never need). */
    std::unique_ptr<ucp::ep_sockaddrs> sockaddrs;
    /* Put and get with completion ids (ucp/ext/pwc.h), made by the first. */
    ucp::ext::pwc_peer *pwc = nullptr;

    /* cfg->thresh.max_eager_short (-1: none), clamped to 32 bits. */
    int32_t max_eager_short  = -1;
    unsigned aux_iface_index = 0; /* aux_ep's */
    /* Sends queued behind a busy lane; while non-zero new sends queue too. */
    unsigned num_pending = 0;
    /* RMA and atomic requests not complete yet (ucp/rma): flush waits. */
    uint32_t rma_outstanding = 0;
    ucs_status_t status      = UCS_OK;
    uint8_t num_lanes        = 0;
    uint8_t am_lane          = ucp::no_lane;
    uint8_t rndv_lane        = ucp::no_lane; /* get_zcopy pull */
    /* Bit i: lane i is a further lane rendezvous pulls are split over. */
    uint8_t extra_rndv_lanes = 0;
    uint8_t rma_lane         = ucp::no_lane; /* put/get/atomics */
    /* Rendezvous of non-host memory (cuda_ipc); no_lane: it goes eagerly. */
    uint8_t mem_rndv_lane = ucp::no_lane;
    /* The peer's address we connected by listed only its network transports:
     * our wireup messages describe us by the same kind of address, so the
     * two sides' lanes and the entries they name agree. */
    bool net_only_address = false;

    /* The rendezvous lane for data in memory of `type`. */
    uint8_t rndv_lane_for(ucs_memory_type_t type) const
    {
        return (type == UCS_MEMORY_TYPE_HOST) ? rndv_lane : mem_rndv_lane;
    }
    bool usable() const { return !(flags & (ucp::ep_flag::FAILED)); }
    /* Sends go to the proxy's queue: the ep is not READY yet. */
    bool held() const { return (proxy != nullptr) && (am_ep == proxy); }
};

namespace ucp {

/*
 * Creates an ep with lanes to the worker whose packed address is
 * `address`, of which at most `max_length` bytes are readable (SIZE_MAX:
 * the caller only has a pointer, as in ucp_ep_create; the header's length
 * is trusted then). Nothing is sent: ucp/wireup/wireup.h starts the
 * handshake (wireup::connect).
 */
ucs_status_t ep_create_to_address(ucp_worker *worker, const void *address, size_t max_length,
                                  uint32_t flags, ucp_ep **ep_p);

/*
 * Gives `ep`, which has no lanes yet, lanes to the worker at `address` (at
 * most `max_length` readable bytes): connect-to-iface lanes connected,
 * connect-to-ep ones created unconnected (and the proxy holding sends),
 * an aux ep for the wireup when no lane connects to an iface, the
 * thresholds, and the worker's lookup by lane. Nothing is sent. On failure
 * the ep is unchanged.
 */
ucs_status_t ep_connect_to_address(ucp_ep *ep, const void *address, size_t max_length);

/* Destroys the lanes and frees the ep; the ep must be idle or failed. */
void ep_destroy(ucp_ep *ep);

/*
 * Fails the ep: lanes are purged, requests waiting on the peer complete
 * with `status`, the user's error handler runs (PEER mode, user eps).
 */
void ep_set_failed(ucp_ep *ep, ucs_status_t status);

/* The peer closed its ep to us: like a failure, but no error is logged
 * (only a PEER-mode handler hears of it). */
void ep_set_remote_closed(ucp_ep *ep);

/* Tells the peer we closed our last ep to it; false when the lane is busy. */
bool ep_notify_closed(ucp_ep *ep);

/*
 * Sends on the AM lane, or queues `req` behind the ones already waiting
 * (order is kept). `req->u.send.step` is retried from the pending queue.
 * A request flagged NAMES_PEER_EP on an ep that does not know the peer's
 * ep yet holds the ep's sends (wireup proxy) until the REPLY.
 * Returns what the step returned, or UCS_INPROGRESS when queued.
 */
ucs_status_t ep_send_or_queue(ucp_ep *ep, request *req);

/* Settles a queued send that a lane refused to take (it failed): as a
 * purge does; a request awaiting a reply fails with the ep. */
void ep_fail_pending(uct::pending_req *p, ucs_status_t status);

/* Sends `req` (a wireup message) on the ep's wireup lane, ahead of the
 * sends the proxy holds; queued on that lane when it is busy. */
ucs_status_t ep_send_wireup(ucp_ep *ep, request *req);

/* The uct ep wireup messages go out of: the aux ep, or the AM lane. */
uct::ep *ep_wireup_lane(const ucp_ep *ep);

/* Whether the ep's proxy stands in its lanes (a client-server ep's only
 * lane before the server answered) rather than beside them. */
inline bool ep_proxy_is_lane(const ucp_ep *ep)
{
    for (uint8_t i = 0; i < ep->num_lanes; ++i) {
        if (ep->lanes[i].ep == ep->proxy) {
            return true;
        }
    }
    return false;
}

/* Every uct ep of the ep (lanes, aux ep, proxy), once each. */
template <typename Fn>
void ep_for_each_uct_ep(ucp_ep *ep, Fn &&fn)
{
    for (uint8_t i = 0; i < ep->num_lanes; ++i) {
        if (ep->lanes[i].ep != nullptr) {
            fn(ep->lanes[i].ep);
        }
    }
    if (ep->aux_ep != nullptr) {
        fn(ep->aux_ep);
    }
    if ((ep->proxy != nullptr) && !ep_proxy_is_lane(ep)) {
        fn(static_cast<uct::ep *>(ep->proxy));
    }
}


} // namespace ucp

#endif
