/*
 * Glue between the protocols and the worker: the AM handlers every iface
 * gets, and the work the worker defers out of transport callbacks
 * (failed lanes, wireup messages, replies that found their lane busy,
 * flushes).
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

/*
 * The live ep of ours to worker `uuid` that `ep_id` names, from a message
 * of that worker that expects an answer (or carries data for an ep). If
 * there is none (stale or forged), the message is to be dropped: this
 * logs it, counts it in ucp_worker::dropped_bad_ep_ids and returns nullptr.
 */
ucp_ep *sender_ep(ucp_worker *worker, uint64_t ep_id, uint64_t uuid);

/*
 * Sends (or queues) a reply naming the peer's request `req_id` out of our
 * ep `ep_id`, the one the peer's message named, which must reach worker
 * `uuid`; resolved again when a queued reply goes out (a gone ep: dropped).
 */
void send_reply_to(ucp_worker *worker, uint64_t ep_id, uint64_t uuid, uint8_t am_id,
                   uint64_t req_id, ucs_status_t status);

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

/* The ep's stream receives complete with `status` (the ep failed). */
void stream_ep_fail(ucp_ep *ep, ucs_status_t status);

/* Frees the ep's stream state; its receives complete as canceled. */
void stream_ep_destroy(ucp_ep *ep);

/* Before an ep's requests are purged on its destruction: its stream starts
 * no rendezvous pull any more. */
void stream_ep_closing(ucp_ep *ep);

/* Stages rendezvous stream data no receive took (stream_rndv.cc). */
unsigned stream_deferred_progress(ucp_worker *worker);
bool stream_deferred_left(const ucp_worker &worker);

/* Frees the worker's active-message and stream state. */
void am_cleanup(ucp_worker *worker);
void stream_cleanup(ucp_worker *worker);

} // namespace ucp

#endif
