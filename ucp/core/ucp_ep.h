/*
 * A UCP endpoint: the lanes (uct endpoints) that reach one peer worker and
 * the configuration (ucp_ep_config.h) whose tables pick a protocol per
 * message size.
 *
 * Every transport we have connects to a peer's iface address, so an ep is
 * usable as soon as ucp_ep_create returns: creation never waits for the
 * peer. The first message on the AM lane is a wireup message carrying our
 * worker address, so the peer can reply (sync acks, rendezvous) through an
 * ep of its own; it reaches the peer before anything else we send because
 * the AM lane keeps order.
 */
#ifndef UCP_CORE_UCP_EP_H
#define UCP_CORE_UCP_EP_H

#include "ucp_ep_config.h"
#include "ucp_request.h"

#include <uct/base/uct_iface.h>

#include <string>
#include <vector>

#include <sys/socket.h>

namespace ucp {

struct lane {
    uct::ep  *ep;
    unsigned iface_index;   /* into ucp_worker::ifaces */
    unsigned md_index;      /* into ucp_context::mds */
};

namespace ep_flag {
constexpr uint32_t USER      = 1u << 0;  /* handed to the application */
constexpr uint32_t FAILED    = 1u << 1;  /* a lane reported an error */
constexpr uint32_t CLOSED    = 1u << 2;  /* ucp_ep_close* called */
constexpr uint32_t ERR_NOTIFIED = 1u << 3;
/* Client-server ep waiting for the server's address: its only lane is a
 * placeholder that queues every send (ucp/wireup/sockaddr_ep.cc). */
constexpr uint32_t CONNECTING   = 1u << 8;
} // namespace ep_flag

} // namespace ucp

struct ucp_ep {
    ucp_worker                *worker = nullptr;
    uint64_t                  remote_uuid = 0;
    std::string               peer_name;
    unsigned                  id = 0;               /* in worker->ep_ids */
    uint32_t                  flags = 0;
    ucs_status_t              status = UCS_OK;
    ucp_err_handling_mode_t   err_mode = UCP_ERR_HANDLING_MODE_NONE;
    ucp_err_handler_t         err_handler{nullptr, nullptr};
    void                      *user_data = nullptr;

    ucp::lane                 lanes[ucp::max_lanes] = {};
    uint8_t                   num_lanes = 0;
    uint8_t                   am_lane = ucp::no_lane;
    uint8_t                   rndv_lane = ucp::no_lane;  /* get_zcopy pull */
    uint8_t                   rma_lane = ucp::no_lane;   /* put/get/atomics */

    /* The configuration shared with eps of the same lanes (protocol limits
     * and selection), and fast-path copies of the AM lane and its limits. */
    const ucp::ep_config      *cfg = nullptr;
    uct::ep                   *am_ep = nullptr;
    ssize_t                   max_eager_short = -1;

    /* Sends queued behind a busy lane; while non-zero new sends queue too. */
    unsigned                  num_pending = 0;
    /* Stream receive state (operations issue). */
    void                      *stream = nullptr;
    /* Client-server eps: the bootstrap connection's addresses (ucp_ep_query);
     * ss_family AF_UNSPEC for other eps. */
    sockaddr_storage          local_sockaddr{};
    sockaddr_storage          remote_sockaddr{};
    /* RMA and atomic requests not complete yet (ucp/rma): flush waits. */
    uint32_t                  rma_outstanding = 0;

    bool usable() const { return !(flags & (ucp::ep_flag::FAILED)); }
};

namespace ucp {

/*
 * Creates an ep to the worker whose packed address is `address`, of which
 * at most `max_length` bytes are readable (SIZE_MAX: the caller only has a
 * pointer, as in ucp_ep_create; the header's length is trusted then).
 * A USER ep sends the peer our wireup; `client_port` != 0 marks it as the
 * answer to the client-server connection from that port of the peer.
 */
ucs_status_t ep_create_to_address(ucp_worker *worker, const void *address,
                                  size_t max_length, uint32_t flags, ucp_ep **ep_p,
                                  uint16_t client_port = 0);

/*
 * Gives `ep`, which has no lanes yet, lanes to the worker at `address` (at
 * most `max_length` readable bytes), its thresholds, and the worker's
 * lookups by lane and peer. Nothing is sent. On failure the ep is unchanged.
 *
 * One ep answers each peer worker (eps_by_uuid: replies, stream data, AM
 * reply eps): the first, except that a USER ep takes over from an ep our
 * wireup made for that peer, with the stream data that ep collected.
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
 * Returns what the step returned, or UCS_INPROGRESS when queued.
 */
ucs_status_t ep_send_or_queue(ucp_ep *ep, request *req);


} // namespace ucp

#endif
