/*
 * Glue between the protocols and the worker: the AM handlers every iface
 * gets, and the work the worker defers out of transport callbacks
 * (failed lanes, endpoints for peers that wired up to us, replies that
 * found their lane busy, flushes).
 */
#ifndef UCP_PROTO_AM_HANDLERS_H
#define UCP_PROTO_AM_HANDLERS_H

#include <ucp/core/ucp_request.h>
#include <uct/base/uct_iface.h>

struct ucp_worker;
struct ucp_ep;

namespace ucp {

/* Installs UCP's handlers for every wire::am_id on `iface`. */
ucs_status_t set_am_handlers(ucp_worker *worker, uct::iface *iface);

/* uct error handler of every iface: records the failed lane. */
ucs_status_t worker_lane_error(void *arg, uct::ep *failed, ucs_status_t status);

/* Runs the deferred work; returns how much was done. */
/* Registers the deferred work of ucp::deferred in the worker's progress_queue. */
void register_deferred_work(ucp_worker *worker);

/* Creates eps for peers whose wireup arrived (never inside a transport). */
unsigned process_pending_wireups(ucp_worker *worker);

/* The ep that answers a peer worker, or nullptr while there is none yet. */
ucp_ep *reply_ep(ucp_worker *worker, uint64_t uuid);

/* Sends (or queues) a reply to a peer worker, resolving its ep late. */
void send_reply_to(ucp_worker *worker, uint64_t uuid, uint8_t am_id, uint64_t req_id,
                   ucs_status_t status);

/* Restarts rendezvous receives that waited for an ep or resources. */
unsigned rndv_deferred_progress(ucp_worker *worker);

/* A request waiting for a peer whose ep failed or went away. */
void fail_waiting_request(request *req, ucs_status_t status);

/* Probes the peers of eps with peer error handling when the time comes. */
void worker_keepalive(ucp_worker *worker);

/* AM_EP_CLOSED: a peer closed its last ep to us. */
ucs_status_t ep_closed_handler(void *arg, void *data, size_t length, unsigned flags);

/* Advances flush and close requests. */
unsigned flush_progress(ucp_worker *worker);

/* Active messages held back until the ep answering their sender exists. */
unsigned am_deferred_progress(ucp_worker *worker);
bool am_deferred_left(const ucp_worker &worker);

/* Stream data that arrived before the ep answering its sender existed. */
unsigned stream_deferred_progress(ucp_worker *worker);

/* eps_by_uuid[uuid] changed to a new ep (from `previous`, or from none):
 * the stream data kept for that peer, and what `previous` holds, go to the
 * new one from the next progress on, in order. */
void stream_reply_ep_changed(ucp_worker *worker, uint64_t uuid, ucp_ep *previous);

/* The ep's stream receives complete with `status` (the ep failed). */
void stream_ep_fail(ucp_ep *ep, ucs_status_t status);

/* Frees the ep's stream state; its receives complete as canceled. */
void stream_ep_destroy(ucp_ep *ep);

/* Frees the worker's active-message and stream state. */
void am_cleanup(ucp_worker *worker);
void stream_cleanup(ucp_worker *worker);

} // namespace ucp

#endif
