/*
 * ucp_worker_get_efd, ucp_worker_arm, ucp_worker_wait, ucp_worker_signal
 * and ucp_worker_wait_mem.
 */
#include "ucp_wakeup.h"
#include "ucp_guard.h"
#include "ucp_worker.h"

#include <ucp/ext/trigger.h>
#include <ucp/wireup/sockaddr.h>
#include <ucs/debug/log.h>

#include <cerrno>
#include <memory>
#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

namespace ucp {

namespace {

/*
 * The uct events to arm for the worker's `events` mask. Receive events are
 * always armed: completions of sync sends, rendezvous and emulated RMA all
 * arrive as messages from the peer. An empty mask means every event.
 */
unsigned uct_events_of(unsigned events)
{
    constexpr unsigned tx = UCP_WAKEUP_RMA | UCP_WAKEUP_AMO | UCP_WAKEUP_TAG_SEND | UCP_WAKEUP_TX;
    unsigned uct_events   = uct::event_flag::RECV | uct::event_flag::RECV_SIG;
    if ((events == 0) || (events & tx)) {
        uct_events |= uct::event_flag::SEND_COMP;
    }
    return uct_events;
}

/* The wakeup state, or nullptr (with UCX's error) without UCP_FEATURE_WAKEUP. */
wakeup *wakeup_of(ucp_worker *worker, const char *what)
{
    if (!(worker->context.features & UCP_FEATURE_WAKEUP) || (worker->wakeup == nullptr)) {
        ucs_error("%s: UCP_FEATURE_WAKEUP was not requested in ucp_init()", what);
        return nullptr;
    }
    return worker->wakeup;
}

ucs_status_t arm_locked(ucp_worker *worker, wakeup *w)
{
    if (worker->progress_queue.scheduled() || ext::triggers_due(*worker)) {
        return UCS_ERR_BUSY;
    }
    /* A signal is consumed here, and counts as an event. */
    if (w->signal.drain_signalled()) {
        return UCS_ERR_BUSY;
    }
    /* Every iface, progressed on each call or not: a peer may reach us
     * through any of them. */
    for (unsigned i = 0; i < worker->ifaces.size(); ++i) {
        const worker_iface &wi = worker->ifaces[i];
        ucs_status_t status    = wi.iface->event_arm(w->uct_events);
        if (status == UCS_OK) {
            continue;
        }
        if (status == UCS_ERR_BUSY) {
            /* Work there: the progress the caller makes next must see it. */
            worker->activate_iface(i);
            return UCS_ERR_BUSY;
        }
        if (status == UCS_ERR_UNSUPPORTED) {
            if (!w->warned_unarmable) {
                w->warned_unarmable = true;
                ucs_diag("worker '%s': %s cannot arm for wakeup; ucp_worker_arm "
                         "will always answer busy",
                         worker->name.c_str(), worker->context.tls[wi.tl_index].resource.tl_name);
            }
            return UCS_ERR_BUSY;
        }
        return status; /* UCS_ERR_BUSY or a failure */
    }
    return sockaddr_arm(worker);
}

} // namespace

ucs_status_t epoll_add(int epfd, int fd, void *ptr)
{
    epoll_event ev{};
    ev.events   = EPOLLIN;
    ev.data.ptr = ptr;
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        ucs_error("wakeup: cannot add fd %d to epoll set %d: %m", fd, epfd);
        return (errno == EBADF || errno == EINVAL) ? UCS_ERR_INVALID_PARAM : UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

ucs_status_t worker_wakeup_init(ucp_worker *worker, const ucp_worker_params_t &params)
{
    auto w        = std::make_unique<wakeup>();
    w->uct_events = uct_events_of(worker->events);
    w->epfd       = epoll_create1(EPOLL_CLOEXEC);
    if (w->epfd < 0) {
        ucs_error("wakeup: epoll_create1 failed: %m");
        return UCS_ERR_IO_ERROR;
    }
    /* From here on the worker owns it: cleanup closes what was opened. */
    worker->wakeup      = w.release();
    wakeup &wk          = *worker->wakeup;
    ucs_status_t status = wk.signal.open();
    if (status == UCS_OK) {
        status = epoll_add(wk.epfd, wk.signal.fd(), nullptr);
    }
    for (const worker_iface &wi : worker->ifaces) {
        if ((status != UCS_OK) || !(wi.iface->attr().event_flags & uct::event_flag::FD)) {
            continue;
        }
        int fd = -1;
        status = wi.iface->event_fd_get(&fd);
        if (status == UCS_OK) {
            status = epoll_add(wk.epfd, fd, nullptr);
        }
    }
    if ((status == UCS_OK) && (params.field_mask & UCP_WORKER_PARAM_FIELD_EVENT_FD)) {
        status = epoll_add(params.event_fd, wk.epfd, worker->user_data);
        if (status == UCS_OK) {
            wk.external_epfd = params.event_fd;
        }
    }
    return status;
}

void worker_wakeup_cleanup(ucp_worker *worker)
{
    wakeup *w = worker->wakeup;
    if (w == nullptr) {
        return;
    }
    if (w->external_epfd >= 0) {
        /* The application may have closed its set already: nothing to undo then. */
        (void)epoll_ctl(w->external_epfd, EPOLL_CTL_DEL, w->epfd, nullptr);
    }
    if (w->epfd >= 0) {
        ::close(w->epfd);
    }
    delete w;
    worker->wakeup = nullptr;
}

ucs_status_t worker_wakeup_add_fd(ucp_worker *worker, int fd)
{
    return (worker->wakeup == nullptr) ? UCS_OK : epoll_add(worker->wakeup->epfd, fd, nullptr);
}

void worker_wakeup_remove_fd(ucp_worker *worker, int fd)
{
    if (worker->wakeup != nullptr) {
        (void)epoll_ctl(worker->wakeup->epfd, EPOLL_CTL_DEL, fd, nullptr);
    }
}

} // namespace ucp

extern "C" {

ucs_status_t ucp_worker_get_efd(ucp_worker_h worker, int *fd)
{
    if ((worker == nullptr) || (fd == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucp::wakeup *w = ucp::wakeup_of(worker, "ucp_worker_get_efd");
    if (w == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (w->external_epfd >= 0) {
        return UCS_ERR_UNSUPPORTED; /* events go to the application's set */
    }
    *fd = w->epfd;
    return UCS_OK;
}

ucs_status_t ucp_worker_arm(ucp_worker_h worker)
{
    if (worker == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucp::wakeup *w = ucp::wakeup_of(worker, "ucp_worker_arm");
    if (w == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucp::worker_guard guard(worker);
    return ucp::guarded("ucp_worker_arm", [&]() { return ucp::arm_locked(worker, w); });
}

ucs_status_t ucp_worker_wait(ucp_worker_h worker)
{
    if (worker == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucp::wakeup *w = ucp::wakeup_of(worker, "ucp_worker_wait");
    if (w == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucs_status_t status = ucp_worker_arm(worker);
    if (status == UCS_ERR_BUSY) {
        return UCS_OK; /* events are there: the caller progresses */
    }
    if (status != UCS_OK) {
        return status;
    }
    /* Not under the worker lock: other threads keep using the worker. */
    pollfd pfd{w->epfd, POLLIN, 0};
    if ((::poll(&pfd, 1, -1) < 0) && (errno != EINTR)) {
        ucs_error("ucp_worker_wait: poll failed: %m");
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

ucs_status_t ucp_worker_signal(ucp_worker_h worker)
{
    if (worker == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucp::wakeup *w = ucp::wakeup_of(worker, "ucp_worker_signal");
    if (w == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    return w->signal.signal(); /* an eventfd write: safe from any thread */
}

void ucp_worker_wait_mem(ucp_worker_h, void *address)
{
    if (address == nullptr) {
        return;
    }
    /* x86 has no instruction that sleeps until a store to `address`: pause
     * briefly (the sibling hyperthread runs) and let the caller re-read. */
    for (int i = 0; i < 16; ++i) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ __volatile__("yield" ::: "memory");
#endif
    }
}

} // extern "C"
