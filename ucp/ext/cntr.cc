/*
 * ucp_cntr_*: completion counters (see cntr.h and ucp/api/ucp_ext.h).
 */
#include "cntr.h"
#include "event_set.h"
#include "mem_cntr.h"
#include "trigger.h"

#include <ucp/core/live_handles.h>
#include <ucp/core/ucp_guard.h>
#include <ucp/core/ucp_wakeup.h>
#include <ucp/core/ucp_worker.h>
#include <ucs/debug/log.h>

#include <chrono>
#include <memory>

#include <poll.h>
#include <sched.h>
#include <sys/epoll.h>
#include <unistd.h>

using live_cntrs = ucp::live_handles<ucp_cntr>;

ucp_cntr::~ucp_cntr()
{
    if (epfd >= 0) {
        ::close(epfd);
    }
}

namespace ucp {

namespace {

constexpr uint64_t known_param_fields = UCP_CNTR_PARAM_FIELD_FLAGS | UCP_CNTR_PARAM_FIELD_USER_DATA;
constexpr uint64_t known_attr_fields  = UCP_CNTR_ATTR_FIELD_FLAGS | UCP_CNTR_ATTR_FIELD_USER_DATA |
                                       UCP_CNTR_ATTR_FIELD_WORKER;
constexpr uint64_t known_flags = UCP_CNTR_FLAG_EVENTS_BYTES;

} // namespace

/* How long ucp_cntr_wait yields the core before it sleeps on the fd: a
 * wake-up through the fd costs tens of microseconds, a yield to a process
 * that answers at once a few. */
constexpr std::chrono::microseconds yield_before_sleep{50};

namespace {

bool has_wakeup(const ucp_worker &worker)
{
    return (worker.context.features & UCP_FEATURE_WAKEUP) && (worker.wakeup != nullptr);
}

ucs_status_t open_fds(ucp_cntr &c)
{
    ucs_status_t status = c.changed.open();
    if (status != UCS_OK) {
        return status;
    }
    c.epfd = epoll_create1(EPOLL_CLOEXEC);
    if (c.epfd < 0) {
        ucs_error("ucp_cntr_create: epoll_create1 failed: %m");
        return UCS_ERR_IO_ERROR;
    }
    status = epoll_add(c.epfd, c.changed.fd(), nullptr);
    if ((status == UCS_OK) && has_wakeup(*c.worker)) {
        status = epoll_add(c.epfd, c.worker->wakeup->epfd, nullptr);
    }
    return status;
}

/* Changes a value and wakes whoever sleeps on the counter's fd. */
template <typename Change>
ucs_status_t update(ucp_cntr *c, Change &&change)
{
    if (c == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    change(*c);
    c->changes.fetch_add(1, std::memory_order_seq_cst);
    /* Operations wait for it: the worker's progress looks for those due,
     * and a worker asleep in ucp_worker_wait must wake up to progress (an
     * update from another thread). The change and this load, and a first
     * post's store of has_triggers and its look at the value (trigger.cc,
     * arm), are all sequentially consistent: one of the two sees the other,
     * so no operation due stays unnoticed. */
    if (c->has_triggers.load(std::memory_order_seq_cst)) {
        ext::triggers_counter_changed(c);
        if (c->worker->wakeup != nullptr) {
            (void)c->worker->wakeup->signal.signal();
        }
    }
    /* A load first: the common update finds nobody armed and writes
     * nothing (both sequentially consistent, as arm's store and load). */
    if (!c->armed.load(std::memory_order_seq_cst) ||
        !c->armed.exchange(false, std::memory_order_seq_cst)) {
        return UCS_OK; /* nobody sleeps on the fd */
    }
    /* A saturated eventfd is already readable: signal() never fails then. */
    return c->changed.signal();
}

void destroy(ucp_cntr *c)
{
    ext::triggers_forget_cntr(c);
    ext::cntr_unbind_all(c);
    ext::member_gone({UCP_OBJECT_CNTR, c}, &c->event_sets);
    c->worker->counters.erase(c);
    live_cntrs::instance().remove(c);
    delete c;
}

} // namespace

void cntr_cleanup(ucp_worker *worker)
{
    if (!worker->counters.empty()) {
        ucs_warn("worker '%s' destroyed with %zu counters; destroying them too",
                 worker->name.c_str(), worker->counters.size());
    }
    while (!worker->counters.empty()) {
        destroy(*worker->counters.begin());
    }
}

} // namespace ucp

extern "C" {

ucs_status_t ucp_cntr_create(ucp_worker_h worker, const ucp_cntr_params_t *params,
                             ucp_cntr_h *cntr_p)
{
    if ((worker == nullptr) || (params == nullptr) || (cntr_p == nullptr) ||
        (params->field_mask & ~ucp::known_param_fields)) {
        return UCS_ERR_INVALID_PARAM;
    }
    const uint64_t flags = (params->field_mask & UCP_CNTR_PARAM_FIELD_FLAGS) ? params->flags : 0;
    if (flags & ~ucp::known_flags) {
        ucs_error("ucp_cntr_create: unknown flags 0x%llx",
                  static_cast<unsigned long long>(flags & ~ucp::known_flags));
        return UCS_ERR_INVALID_PARAM;
    }
    ucp::worker_guard guard(worker);
    return ucp::guarded("ucp_cntr_create", [&]() {
        auto c       = std::make_unique<ucp_cntr>();
        c->worker    = worker;
        c->flags     = flags;
        c->user_data = (params->field_mask & UCP_CNTR_PARAM_FIELD_USER_DATA) ? params->user_data :
                                                                               nullptr;
        ucs_status_t status = ucp::open_fds(*c);
        if (status != UCS_OK) {
            return status;
        }
        worker->counters.insert(c.get());
        live_cntrs::instance().add(c.get());
        *cntr_p = c.release();
        return UCS_OK;
    });
}

ucs_status_t ucp_cntr_destroy(ucp_cntr_h cntr)
{
    if ((cntr == nullptr) || !live_cntrs::instance().contains(cntr)) {
        ucs_error("ucp_cntr_destroy: %p is not a live counter", static_cast<void *>(cntr));
        return UCS_ERR_INVALID_PARAM;
    }
    ucp::worker_guard guard(cntr->worker);
    if (!cntr->event_sets.empty()) {
        ucs_error("ucp_cntr_destroy: counter %p is in %zu poll or wait sets",
                  static_cast<void *>(cntr), cntr->event_sets.size());
        return UCS_ERR_BUSY;
    }
    if (!cntr->bound_regions.empty()) {
        ucs_error("ucp_cntr_destroy: counter %p counts operations on %zu mapped regions "
                  "(ucp_mem_bind_cntr)",
                  static_cast<void *>(cntr), cntr->bound_regions.size());
        return UCS_ERR_BUSY;
    }
    if (cntr->pending_work != 0) {
        ucs_error("ucp_cntr_destroy: %u operations in flight or triggered still use counter %p",
                  cntr->pending_work, static_cast<void *>(cntr));
        return UCS_ERR_BUSY;
    }
    ucp::destroy(cntr);
    return UCS_OK;
}

ucs_status_t ucp_cntr_query(ucp_cntr_h cntr, ucp_cntr_attr_t *attr)
{
    if ((cntr == nullptr) || (attr == nullptr) || (attr->field_mask & ~ucp::known_attr_fields)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (attr->field_mask & UCP_CNTR_ATTR_FIELD_FLAGS) {
        attr->flags = cntr->flags;
    }
    if (attr->field_mask & UCP_CNTR_ATTR_FIELD_USER_DATA) {
        attr->user_data = cntr->user_data;
    }
    if (attr->field_mask & UCP_CNTR_ATTR_FIELD_WORKER) {
        attr->worker = cntr->worker;
    }
    return UCS_OK;
}

uint64_t ucp_cntr_read(ucp_cntr_h cntr)
{
    if (cntr == nullptr) {
        return 0;
    }
    ucp_worker_progress(cntr->worker);
    return cntr->value.load(std::memory_order_acquire);
}

uint64_t ucp_cntr_read_err(ucp_cntr_h cntr)
{
    return (cntr == nullptr) ? 0 : cntr->error.load(std::memory_order_acquire);
}

ucs_status_t ucp_cntr_add(ucp_cntr_h cntr, uint64_t value)
{
    return ucp::update(cntr, [value](ucp_cntr &c) {
        c.value.fetch_add(value, std::memory_order_seq_cst);
    });
}

ucs_status_t ucp_cntr_add_err(ucp_cntr_h cntr, uint64_t value)
{
    return ucp::update(cntr, [value](ucp_cntr &c) {
        c.error.fetch_add(value, std::memory_order_seq_cst);
    });
}

ucs_status_t ucp_cntr_set(ucp_cntr_h cntr, uint64_t value)
{
    return ucp::update(cntr,
                       [value](ucp_cntr &c) { c.value.store(value, std::memory_order_seq_cst); });
}

ucs_status_t ucp_cntr_set_err(ucp_cntr_h cntr, uint64_t value)
{
    return ucp::update(cntr,
                       [value](ucp_cntr &c) { c.error.store(value, std::memory_order_seq_cst); });
}

ucs_status_t ucp_cntr_get_fd(ucp_cntr_h cntr, int *fd_p)
{
    if ((cntr == nullptr) || (fd_p == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    *fd_p = cntr->epfd;
    return UCS_OK;
}

ucs_status_t ucp_cntr_arm(ucp_cntr_h cntr)
{
    if (cntr == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucp::worker_guard guard(cntr->worker);
    cntr->armed.store(true, std::memory_order_seq_cst);
    cntr->changed.drain(); /* signals of changes the check below sees */
    const uint64_t changes = cntr->changes.load(std::memory_order_seq_cst);
    if ((cntr->seen_changes.exchange(changes, std::memory_order_relaxed) != changes) ||
        ucp::ext::triggers_due(*cntr->worker)) {
        return UCS_ERR_BUSY;
    }
    return ucp::has_wakeup(*cntr->worker) ? ucp_worker_arm(cntr->worker) : UCS_OK;
}

ucs_status_t ucp_cntr_wait(ucp_cntr_h cntr, uint64_t threshold, int timeout_ms)
{
    if (cntr == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    using clock          = std::chrono::steady_clock;
    const auto deadline  = clock::now() + std::chrono::milliseconds(timeout_ms);
    const bool can_sleep = ucp::has_wakeup(*cntr->worker);
    const uint64_t error = cntr->error.load(std::memory_order_acquire);
    clock::time_point idle_since{}; /* progress has found nothing since */
    for (;;) {
        if (cntr->error.load(std::memory_order_acquire) != error) {
            return UCS_ERR_IO_ERROR;
        }
        if (cntr->value.load(std::memory_order_acquire) >= threshold) {
            return UCS_OK;
        }
        const unsigned progressed = ucp_worker_progress(cntr->worker);
        int left_ms               = -1;
        /* Checked on every round: a worker busy with other traffic must
         * not keep a wait past its timeout. */
        if (timeout_ms >= 0) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                                    clock::now());
            if (left.count() <= 0) {
                /* One last look: the progress above may have counted. */
                return (cntr->value.load(std::memory_order_acquire) >= threshold) ?
                           UCS_OK :
                           UCS_ERR_TIMED_OUT;
            }
            left_ms = int(left.count());
        }
        if (progressed != 0) {
            idle_since = clock::time_point{};
            continue;
        }
        if (!can_sleep) {
            continue;
        }
        /* Idle: yield the core for a while first (a peer sharing it may be
         * about to answer), then sleep until the fd says there is work. */
        const auto now = clock::now();
        if (idle_since == clock::time_point{}) {
            idle_since = now;
        }
        if (now - idle_since < ucp::yield_before_sleep) {
            sched_yield();
        } else if (ucp_cntr_arm(cntr) == UCS_OK) {
            pollfd pfd{cntr->epfd, POLLIN, 0};
            (void)::poll(&pfd, 1, left_ms);
            idle_since = clock::time_point{};
        }
    }
}

} // extern "C"
