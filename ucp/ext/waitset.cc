/*
 * ucp_waitset_* and ucp_trywait (ucp/api/ucp_ext.h, event_set.h).
 *
 * A wait set sleeps on its members' own fds: a worker's wakeup fd
 * (ucp_worker_get_efd) and a counter's fd (ucp_cntr_get_fd), plus an
 * eventfd of its own that ucp_waitset_signal writes. FD sets keep them in
 * one epoll set; POLLFD sets hand them out as an array with a change
 * index; YIELD sets use no fd and check the members between yields.
 *
 * No lost wake-up: every round of a wait first arms each member
 * (ucp_worker_arm, ucp_cntr_arm), which answers busy when work is already
 * there and otherwise makes the member's fd signal the next event; only
 * then does it sleep. An application sleeping on the set's fds itself does
 * the same with ucp_trywait.
 */
#include "event_set.h"

#include "cntr.h"

#include <ucp/core/live_handles.h>
#include <ucp/core/ucp_guard.h>
#include <ucp/core/ucp_wakeup.h>
#include <ucp/core/ucp_worker.h>
#include <ucs/async/event_fd.h>
#include <ucs/debug/log.h>
#include <ucs/type/c_enum.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>

#include <poll.h>
#include <sched.h>
#include <sys/epoll.h>
#include <unistd.h>

struct ucp_waitset final : public ucp::ext::event_set {
    ucp_waitset(ucp_context_h context, ucp_wait_obj_t wait_obj) : event_set(context), kind(wait_obj)
    {
    }

    ~ucp_waitset() override
    {
        if (epfd >= 0) {
            ::close(epfd);
        }
    }

    void forget(const ucp_object_t &object) override
    {
        std::lock_guard<std::mutex> guard(lock);
        remove_locked(object);
    }

    /* Under the lock. False if it was not a member. */
    bool remove_locked(const ucp_object_t &object)
    {
        auto it = std::find_if(members.begin(), members.end(), [&](const ucp_object_t &m) {
            return ucp::ext::same_object(m, object);
        });
        if (it == members.end()) {
            return false;
        }
        if (epfd >= 0) {
            epoll_ctl(epfd, EPOLL_CTL_DEL, fd_of(object), nullptr);
        }
        members.erase(it);
        ++change_index;
        return true;
    }

    static int fd_of(const ucp_object_t &object)
    {
        if (object.type == UCP_OBJECT_WORKER) {
            return static_cast<ucp_worker *>(object.handle)->wakeup->epfd;
        }
        return static_cast<ucp_cntr *>(object.handle)->epfd;
    }

    const ucp_wait_obj_t kind;
    std::mutex lock; /* members, change_index */
    std::vector<ucp_object_t> members;
    uint64_t change_index = 0;
    ucs::event_fd signal;               /* ucp_waitset_signal (FD, POLLFD) */
    std::atomic<bool> signalled{false}; /* ucp_waitset_signal (YIELD) */
    int epfd = -1;                      /* FD: members' fds and `signal` */
};

namespace ucp::ext {

namespace {

using live_waitsets = live_handles<ucp_waitset>;

ucs_status_t arm(const ucp_object_t &object)
{
    switch (object.type) {
    case UCP_OBJECT_WORKER:
        return ucp_worker_arm(static_cast<ucp_worker_h>(object.handle));
    case UCP_OBJECT_CNTR:
        return ucp_cntr_arm(static_cast<ucp_cntr_h>(object.handle));
    default:
        return UCS_ERR_INVALID_PARAM;
    }
}

/* ucp_trywait of one wait set: its signal, then its members. */
ucs_status_t waitset_trywait(ucp_waitset *set)
{
    bool signalled = set->signalled.exchange(false, std::memory_order_acq_rel);
    if (set->signal.is_open()) {
        signalled |= set->signal.drain_signalled();
    }
    if (signalled) {
        return UCS_ERR_BUSY;
    }
    std::vector<ucp_object_t> members;
    {
        std::lock_guard<std::mutex> guard(set->lock);
        members = set->members;
    }
    for (const ucp_object_t &m : members) {
        ucs_status_t status = arm(m);
        if (status != UCS_OK) {
            return status;
        }
    }
    return UCS_OK;
}

/* Sleeps on the set's native object; true when something may be ready. */
bool sleep_on(ucp_waitset *set, int timeout_ms)
{
    if (set->kind == UCP_WAIT_FD) {
        epoll_event events[8];
        return epoll_wait(set->epfd, events, 8, timeout_ms) > 0; /* EINTR: look again */
    }
    std::vector<pollfd> fds{{set->signal.fd(), POLLIN, 0}};
    {
        std::lock_guard<std::mutex> guard(set->lock);
        for (const ucp_object_t &m : set->members) {
            fds.push_back({ucp_waitset::fd_of(m), POLLIN, 0});
        }
    }
    return ::poll(fds.data(), fds.size(), timeout_ms) > 0;
}

} // namespace

} // namespace ucp::ext

using ucp::ext::live_waitsets;

extern "C" {

ucs_status_t ucp_waitset_create(ucp_context_h context, ucp_wait_obj_t wait_obj,
                                ucp_waitset_h *set_p)
{
    const int kind = ucs::raw_enum(wait_obj); /* a C caller may pass any int */
    if ((context == nullptr) || (set_p == nullptr) || (kind < UCP_WAIT_UNSPEC) ||
        (kind > UCP_WAIT_YIELD)) {
        return UCS_ERR_INVALID_PARAM;
    }
    return ucp::guarded("ucp_waitset_create", [&]() {
        const auto resolved = (kind == UCP_WAIT_UNSPEC) ? UCP_WAIT_FD : ucp_wait_obj_t(kind);
        auto set            = std::make_unique<ucp_waitset>(context, resolved);
        if (resolved != UCP_WAIT_YIELD) {
            ucs_status_t status = set->signal.open();
            if (status != UCS_OK) {
                return status;
            }
        }
        if (resolved == UCP_WAIT_FD) {
            set->epfd = epoll_create1(EPOLL_CLOEXEC);
            if (set->epfd < 0) {
                ucs_error("ucp_waitset_create: epoll_create1 failed: %m");
                return UCS_ERR_IO_ERROR;
            }
            ucs_status_t status = ucp::epoll_add(set->epfd, set->signal.fd(), nullptr);
            if (status != UCS_OK) {
                return status;
            }
        }
        live_waitsets::instance().add(set.get());
        *set_p = set.release();
        return UCS_OK;
    });
}

ucs_status_t ucp_waitset_destroy(ucp_waitset_h set)
{
    if ((set == nullptr) || !live_waitsets::instance().contains(set)) {
        ucs_error("ucp_waitset_destroy: %p is not a live wait set", static_cast<void *>(set));
        return UCS_ERR_INVALID_PARAM;
    }
    {
        std::lock_guard<std::mutex> guard(set->lock);
        if (!set->members.empty()) {
            ucs_error("ucp_waitset_destroy: the set still has %zu members", set->members.size());
            return UCS_ERR_BUSY;
        }
    }
    live_waitsets::instance().remove(set);
    delete set;
    return UCS_OK;
}

ucs_status_t ucp_waitset_add(ucp_waitset_h set, const ucp_object_t *object)
{
    if (set == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucs_status_t status = ucp::ext::check_member(set->context(), object, true);
    if (status != UCS_OK) {
        return status;
    }
    status = ucp::guarded("ucp_waitset_add", [&]() {
        std::lock_guard<std::mutex> guard(set->lock);
        for (const ucp_object_t &m : set->members) {
            if (ucp::ext::same_object(m, *object)) {
                return UCS_ERR_ALREADY_EXISTS;
            }
        }
        if (set->epfd >= 0) {
            ucs_status_t added = ucp::epoll_add(set->epfd, ucp_waitset::fd_of(*object), nullptr);
            if (added != UCS_OK) {
                return added;
            }
        }
        set->members.push_back(*object);
        ++set->change_index;
        ucp::ext::member_joined(*object, set);
        return UCS_OK;
    });
    if (status == UCS_OK) {
        ucp_waitset_signal(set); /* a waiter arms the new member too */
    }
    return status;
}

ucs_status_t ucp_waitset_remove(ucp_waitset_h set, const ucp_object_t *object)
{
    if ((set == nullptr) || (object == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    {
        std::lock_guard<std::mutex> guard(set->lock);
        if (!set->remove_locked(*object)) {
            return UCS_ERR_NO_ELEM;
        }
        ucp::ext::member_left(*object, set);
    }
    ucp_waitset_signal(set); /* a POLLFD waiter drops its fd */
    return UCS_OK;
}

ucs_status_t ucp_waitset_signal(ucp_waitset_h set)
{
    if (set == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    set->signalled.store(true, std::memory_order_release);
    return set->signal.is_open() ? set->signal.signal() : UCS_OK;
}

ucs_status_t ucp_waitset_wait(ucp_waitset_h set, int timeout_ms)
{
    if (set == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    using clock         = std::chrono::steady_clock;
    const auto deadline = clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
        ucs_status_t status = ucp::ext::waitset_trywait(set);
        if (status == UCS_ERR_BUSY) {
            return UCS_OK; /* work, or a signal: the caller progresses */
        }
        if (status != UCS_OK) {
            return status;
        }
        int left_ms = -1;
        if (timeout_ms >= 0) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                                    clock::now());
            if (left.count() < 0) {
                return UCS_ERR_TIMED_OUT;
            }
            left_ms = int(left.count());
        }
        if (set->kind == UCP_WAIT_YIELD) {
            if (timeout_ms == 0) {
                return UCS_ERR_TIMED_OUT;
            }
            sched_yield();
        } else if (ucp::ext::sleep_on(set, left_ms)) {
            return UCS_OK;
        } else if (timeout_ms == 0) {
            return UCS_ERR_TIMED_OUT;
        }
    }
}

ucs_status_t ucp_waitset_get_fd(ucp_waitset_h set, int *fd_p)
{
    if ((set == nullptr) || (fd_p == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (set->kind != UCP_WAIT_FD) {
        return UCS_ERR_UNSUPPORTED;
    }
    *fd_p = set->epfd;
    return UCS_OK;
}

ucs_status_t ucp_waitset_get_pollfd(ucp_waitset_h set, ucp_waitset_pollfd_t *pollfd_set)
{
    if ((set == nullptr) || (pollfd_set == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (set->kind != UCP_WAIT_POLLFD) {
        return UCS_ERR_UNSUPPORTED;
    }
    std::lock_guard<std::mutex> guard(set->lock);
    const size_t needed      = set->members.size() + 1;
    pollfd_set->change_index = set->change_index;
    if ((pollfd_set->nfds < needed) || (pollfd_set->fds == nullptr)) {
        pollfd_set->nfds = needed;
        return UCS_ERR_BUFFER_TOO_SMALL;
    }
    pollfd_set->fds[0] = {set->signal.fd(), POLLIN, 0};
    for (size_t i = 0; i < set->members.size(); ++i) {
        pollfd_set->fds[i + 1] = {ucp_waitset::fd_of(set->members[i]), POLLIN, 0};
    }
    pollfd_set->nfds = needed;
    return UCS_OK;
}

ucs_status_t ucp_trywait(const ucp_object_t *objects, size_t count)
{
    if ((objects == nullptr) && (count != 0)) {
        return UCS_ERR_INVALID_PARAM;
    }
    for (size_t i = 0; i < count; ++i) {
        const ucp_object_t &object = objects[i];
        if (object.handle == nullptr) {
            return UCS_ERR_INVALID_PARAM;
        }
        ucs_status_t status =
            (object.type == UCP_OBJECT_WAITSET) ?
                ucp::ext::waitset_trywait(static_cast<ucp_waitset *>(object.handle)) :
                ucp::ext::arm(object);
        if (status != UCS_OK) {
            return status;
        }
    }
    return UCS_OK;
}

} // extern "C"
