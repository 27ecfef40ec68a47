/*
 * Put and get with completion ids (ucp/api/ucp_pwc.h), inside the library.
 *
 * Initiator (pwc.cc): an operation is a pwc_op that runs in steps, each
 * started when the one before completes:
 *   packed put     one AM_PWC with the id and the data (small puts);
 *   put            ucp_put_nbx, then (with a remote id) a flush of the ep,
 *                  so the data is at the target, then an AM_PWC notification;
 *   get            ucp_get_nbx, then (with a remote id) the notification;
 *   notification   a put of 0 bytes: the AM_PWC alone.
 * The AM_PWC messages go through the ep's send requests (queued behind a
 * busy lane, failed with the ep). The operation's local completion is
 * queued when its last step is done.
 *
 * Flow control: an ep may send `credits` ids that the target queues; the
 * target's probe gives them back (AM_PWC_CREDIT) in batches of half a
 * window. Operations that need a credit when none is left wait on the ep,
 * in order.
 *
 * Target (pwc_probe.cc): AM_PWC writes the data (inside the regions the
 * key's secret opens), then queues the id, or bumps the bound counter.
 * ucp_pwc_probe takes local and remote completions from the worker's
 * queues.
 */
#ifndef UCP_EXT_PWC_H
#define UCP_EXT_PWC_H

#include <ucp/api/ucp_pwc.h>
#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_request.h>
#include <ucp/core/ucp_worker.h>
#include <ucs/datastruct/ring_fifo.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

struct ucp_cntr;

namespace ucp::ext {

struct pwc_op;

/* Completions waiting for the probe, oldest first. A remote id of bytes is
 * the queue's own copy (cid.data, from new[]) until the probe hands it out;
 * a local id is the caller's, as given. */
using pwc_queue = ucs::ring_fifo<ucp_pwc_completion_t>;

/* An ep's side of the flow control and its operations. */
struct pwc_peer {
    unsigned credits = 0;         /* remote ids we may still send */
    unsigned owed    = 0;         /* ids of this peer the application took, not given back */
    size_t pending   = 0;         /* our operations on the ep not completed */
    std::deque<pwc_op *> waiting; /* for credits, in posting order */
    bool granting = false;        /* an AM_PWC_CREDIT is on its way out */
};

struct pwc_state {
    pwc_queue local;
    pwc_queue remote;
    /* Id bytes of the remote completions the last probe returned (valid
     * until the next). */
    std::vector<std::unique_ptr<uint8_t[]>> handed_out;
    size_t pending        = 0;       /* our operations */
    ucp_cntr *remote_cntr = nullptr; /* ucp_pwc_bind_cntr */
    size_t max_id_size;
    unsigned window;      /* credits per ep */
    unsigned grant_batch; /* credits given back at once */
    size_t packed_max;

    ~pwc_state();
};

/* An AM of the ep with no data of its own: `step` packs and sends it (the
 * request's user data is the param's), queued behind a busy lane or an ep
 * not wired up yet. The nbx result of send_request_start. */
ucs_status_ptr_t pwc_send_request(ucp_ep *ep, uint8_t am_id, send_step_t step,
                                  const ucp_request_param_t *param);

/* The ep sends now: wired up, nothing queued before. */
bool lane_free(const ucp_ep *ep);

/* Sends the AM gathered from `parts` (`size` bytes) inline: UCS_OK when
 * sent, the lane's error (NO_RESOURCE: full), or UCS_ERR_UNSUPPORTED when
 * the lane takes no message of that size inline. */
ucs_status_t send_inline(ucp_ep *ep, uint8_t am_id, const uct::iov *parts, size_t count,
                         size_t size);

/* Make the states below on first use; nullptr when out of memory. */
pwc_state *pwc_state_make(ucp_worker *worker);
pwc_peer *pwc_peer_make(ucp_ep *ep);

/* The worker's state (every message and call looks it up). */
inline pwc_state *pwc_state_of(ucp_worker *worker)
{
    return (worker->pwc != nullptr) ? worker->pwc : pwc_state_make(worker);
}

/* The ep's flow-control state. */
inline pwc_peer *pwc_peer_of(ucp_ep *ep)
{
    return (ep->pwc != nullptr) ? ep->pwc : pwc_peer_make(ep);
}

/* The ep failed or closes: operations waiting for credits fail with
 * `status` (the running ones fail through their requests). */
void pwc_ep_gone(ucp_ep *ep, ucs_status_t status);

/* The ep is being destroyed: completions naming it say NULL. */
void pwc_ep_destroyed(ucp_ep *ep);

/* Worker destruction: what is left is dropped. */
void pwc_cleanup(ucp_worker *worker);

/* A completion for the probe (the worker's guard is held). */
void pwc_push_local(ucp_worker *worker, ucp_ep *ep, const ucp_cid_t &cid, unsigned flags,
                    ucs_status_t status);

/* Half a window of ids is owed to the peer of `ep`: gives them back unless
 * a grant is on its way or the ep failed. */
void pwc_grant_credits(ucp_ep *ep);

/* The target's probe took `count` ids from the peer of `ep`: credits go
 * back when half a window is owed. Inline: the probe calls it per id. */
inline void pwc_ids_taken(ucp_ep *ep, unsigned count)
{
    pwc_peer *peer = pwc_peer_of(ep);
    if (peer == nullptr) {
        return;
    }
    peer->owed += count;
    if (peer->owed >= ep->worker->pwc->grant_batch) {
        pwc_grant_credits(ep);
    }
}

/* Credits came back from the peer of `ep`: waiting operations start. */
void pwc_credits_returned(ucp_ep *ep, unsigned credits);

} // namespace ucp::ext

namespace ucp {

/* AM handlers (installed by set_am_handlers). */
ucs_status_t pwc_handler(void *arg, void *data, size_t length, unsigned flags);
ucs_status_t pwc_credit_handler(void *arg, void *data, size_t length, unsigned flags);

} // namespace ucp

#endif
