/*
 * Completion counters (ucp/api/ucp_ext.h): two 64-bit values and an
 * eventfd signalled on every change, so that a thread sleeping on the
 * counter's fd wakes up when another thread adds to it. The fd handed out
 * is an epoll set of that eventfd and, on a UCP_FEATURE_WAKEUP worker, the
 * worker's own wakeup fd.
 */
#ifndef UCP_EXT_CNTR_H
#define UCP_EXT_CNTR_H

#include <ucp/api/ucp_ext.h>
#include <ucs/async/event_fd.h>

#include <atomic>
#include <cstdint>

struct ucp_cntr {
    ucp_worker            *worker = nullptr;
    uint64_t              flags = 0;
    void                  *user_data = nullptr;
    std::atomic<uint64_t> value{0};
    std::atomic<uint64_t> error{0};
    ucs::event_fd         changed;          /* signalled by add and set */
    int                   epfd = -1;        /* ucp_cntr_get_fd */
    unsigned              pending_work = 0; /* operations in flight counting on it */

    ~ucp_cntr();
};

namespace ucp {

/* Destroys the counters an application left on `worker` (warns). */
void cntr_cleanup(ucp_worker *worker);

} // namespace ucp

#endif
