/*
 * ucp_worker_callback_*: the worker's progress queue (ucs::callback_queue)
 * opened to libraries layered over UCP (ucp/api/ucp_ext.h). Only ids this
 * API gave may be scheduled or removed through it: the queue also holds the
 * worker's own callbacks (connection manager, triggered operations).
 */
#include <ucp/api/ucp_ext.h>
#include <ucp/core/ucp_guard.h>
#include <ucp/core/ucp_worker.h>

namespace {

/* One lookup: schedule runs for every collective that finishes in progress. */
bool given_by_api(const ucp_worker *worker, unsigned id)
{
    return (id < worker->api_callbacks.size()) && worker->api_callbacks[id];
}

} // namespace

extern "C" {

ucs_status_t ucp_worker_callback_add(ucp_worker_h worker, ucp_worker_callback_t cb, void *arg,
                                     unsigned *id_p)
{
    if ((worker == nullptr) || (cb == nullptr) || (id_p == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucp::worker_guard guard(worker);
    return ucp::guarded("ucp_worker_callback_add", [&]() {
        const unsigned id = worker->progress_queue.add(cb, arg);
        if (id >= worker->api_callbacks.size()) {
            try {
                worker->api_callbacks.resize(size_t(id) + 1, 0);
            } catch (...) {
                worker->progress_queue.remove(id); /* as if never added */
                throw;
            }
        }
        worker->api_callbacks[id] = 1;
        *id_p                     = id;
        return UCS_OK;
    });
}

ucs_status_t ucp_worker_callback_schedule(ucp_worker_h worker, unsigned id)
{
    if (worker == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucp::worker_guard guard(worker);
    if (!given_by_api(worker, id)) {
        return UCS_ERR_INVALID_PARAM;
    }
    worker->progress_queue.schedule(id);
    return UCS_OK;
}

ucs_status_t ucp_worker_callback_remove(ucp_worker_h worker, unsigned id)
{
    if (worker == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucp::worker_guard guard(worker);
    if (!given_by_api(worker, id)) {
        return UCS_ERR_INVALID_PARAM;
    }
    worker->api_callbacks[id] = 0;
    worker->progress_queue.remove(id);
    return UCS_OK;
}

} // extern "C"
