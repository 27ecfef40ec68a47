/*
 * UCP_FEATURE_WAKEUP: one epoll fd per worker aggregating every event
 * source that can make progress find work - the ifaces' event fds, the
 * client-server connection manager's fd and an eventfd that
 * ucp_worker_signal() writes from any thread.
 *
 * ucp_worker_arm() answers UCS_ERR_BUSY instead of arming when work is
 * already there (deferred worker work, a signal, an iface or the
 * connection manager with events ready); after UCS_OK, anything new makes
 * the fd readable. An iface that cannot arm (no wakeup support) makes arm
 * answer BUSY every time: the caller then never sleeps, but never misses
 * an event either.
 */
#ifndef UCP_CORE_UCP_WAKEUP_H
#define UCP_CORE_UCP_WAKEUP_H

#include <ucp/api/ucp.h>
#include <ucs/async/event_fd.h>

struct ucp_worker;

namespace ucp {

struct wakeup {
    int epfd = -1;              /* what ucp_worker_get_efd returns */
    ucs::event_fd signal;       /* ucp_worker_signal */
    int external_epfd     = -1; /* the application's set we joined */
    unsigned uct_events   = 0;  /* uct::event_flag bits to arm */
    bool warned_unarmable = false;
};

/* Adds `fd` to epoll set `epfd` for readability, `ptr` as its data
 * (logged; UCS_ERR_INVALID_PARAM for a bad fd). */
ucs_status_t epoll_add(int epfd, int fd, void *ptr);

/* Creates the worker's wakeup state (UCP_FEATURE_WAKEUP workers only). */
ucs_status_t worker_wakeup_init(ucp_worker *worker, const ucp_worker_params_t &params);
void worker_wakeup_cleanup(ucp_worker *worker);

/* Adds/removes an extra event source; no-op on a worker without wakeup. */
ucs_status_t worker_wakeup_add_fd(ucp_worker *worker, int fd);
void worker_wakeup_remove_fd(ucp_worker *worker, int fd);

} // namespace ucp

#endif
