/*
 * Triggered operations and the worker's deferred work queue
 * (UCP_EXT_PARAM_FIELD_TRIGGER, ucp_cntr_op_nbx, ucp_dwq_cancel/flush in
 * ucp/api/ucp_ext.h).
 *
 * A triggered operation is its nbx call kept by value (op_cntr.h's
 * start_fn) with the caller's parameters, in a record from the worker's
 * pool, queued on its trigger counter in an intrusive list kept in
 * threshold order (equal thresholds stay in posting order). The
 * caller holds an "outer" request of ours. A persistent callback in the
 * worker's progress queue, registered while some counter has queued
 * operations, starts those whose threshold the counter reached: through
 * counted(), so the completion counters count as for any operation, with a
 * callback of ours that completes the outer request. Counters that
 * operations wait for, count on or update are held (pending_work) so they
 * cannot be destroyed under them.
 */
#ifndef UCP_EXT_TRIGGER_H
#define UCP_EXT_TRIGGER_H

#include <ucp/api/ucp_ext.h>

struct ucp_ep;
struct ucp_cntr;

namespace ucp {
struct request;
}

namespace ucp::ext {

struct trigger_op;
struct trigger_state;

/* `cntr`, which has operations queued (has_triggers), changed: any thread.
 * The worker's next progress looks for operations due. */
void triggers_counter_changed(ucp_cntr *cntr);

/* Some counter of `worker` has reached the threshold of an operation still
 * queued: ucp_worker_arm must not let the caller sleep. */
bool triggers_due(const ucp_worker &worker);

/* The ep is closed, destroyed or failed: its queued operations complete
 * with `status` (counted as failures). */
void triggers_ep_gone(ucp_ep *ep, ucs_status_t status);

/* A counter is being destroyed (it has no queued operations). */
void triggers_forget_cntr(ucp_cntr *cntr);

/* ucp_request_cancel of a triggered operation's request: a queued one is
 * cancelled, a started one passes the cancel on. */
void trigger_request_cancel(ucp_worker_h worker, request *req);

/* Worker destruction: what is still queued is dropped without callbacks. */
void triggers_cleanup(ucp_worker *worker);

} // namespace ucp::ext

#endif
