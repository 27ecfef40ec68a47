/*
 * One event loop per owner (a UCP context or worker): fd readiness handlers,
 * timers and posted functions, all run under the owner's critical section.
 *
 * THREAD mode: the context runs its own loop thread; handlers run there.
 * POLL mode:   no thread; handlers run inside progress(), called by the owner.
 *
 * Guarantees:
 *  - while any thread holds block(), no handler of this context runs
 *    (thread mode: ready handlers wait and run after unblock(); poll mode:
 *    progress() does nothing and the events are picked up by a later call);
 *  - after remove()/remove_timer() returns, that handler is not running and
 *    never runs again; both may be called from inside the handler itself;
 *  - after stop() returns, no handler runs and the loop thread is joined.
 *
 * fd handlers are level-triggered: a callback that leaves its fd readable
 * (including at end-of-file or hang-up) is called again. Callbacks must
 * tolerate spurious calls. The fd stays owned by the caller: it is never
 * closed here, and a handler must be removed before its fd is closed.
 * Waiting makes Asio set O_NONBLOCK on the fd; remove() clears it again if
 * the fd was blocking when it was added.
 *
 * Handlers run with the context blocked, so a handler must not wait for a
 * thread that is itself waiting in block(). A context must not be destroyed
 * from inside one of its own POLL-mode handlers; in THREAD mode doing so
 * stops it and leaks its state (logged as an error).
 */
#ifndef UCS_ASYNC_ASYNC_CONTEXT_H
#define UCS_ASYNC_ASYNC_CONTEXT_H

#include <ucs/async/recursive_lock.h>
#include <ucs/type/status.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

namespace ucs {

enum class async_mode {
    thread, /* own event-loop thread */
    poll    /* the owner calls progress() */
};

const char *async_mode_name(async_mode mode);

/* Event bits for fd handlers. `error` is only ever delivered, never asked for. */
namespace async_event {
inline constexpr unsigned read  = UCS_BIT(0);
inline constexpr unsigned write = UCS_BIT(1);
inline constexpr unsigned error = UCS_BIT(2);
} // namespace async_event

enum class timer_mode {
    periodic, /* fires every interval until removed */
    one_shot  /* fires once, then is removed by itself */
};

/* Identifies a handler; never reused within a context. 0 is never valid. */
using async_handler_id = uint64_t;

using async_fd_callback    = std::function<void(async_handler_id id, int fd, unsigned events)>;
using async_timer_callback = std::function<void(async_handler_id id)>;

struct async_stats {
    uint64_t fd_events;     /* fd callbacks run */
    uint64_t timers_fired;  /* timer callbacks run */
    uint64_t posted_run;    /* posted functions run */
    uint64_t blocked_waits; /* times a ready handler found the context blocked */
};

class async_context {
public:
    /* Builds a context; THREAD mode also starts its loop thread. */
    static ucs_status_t create(async_mode mode, std::unique_ptr<async_context> *context_p);

    ~async_context();

    async_context(const async_context &)            = delete;
    async_context &operator=(const async_context &) = delete;

    async_mode mode() const;

    /*
     * Calls `callback` whenever `fd` is ready for `events` (read, write or
     * both). Fails with UCS_ERR_INVALID_PARAM for a bad fd, callback or event
     * mask, UCS_ERR_UNSUPPORTED for files epoll cannot wait on (regular files,
     * directories), UCS_ERR_ALREADY_EXISTS if fd already has a handler here,
     * UCS_ERR_CANCELED after stop().
     */
    ucs_status_t add(int fd, unsigned events, async_fd_callback callback, async_handler_id *id_p);

    /* Changes the events of a handler; 0 pauses it until the next modify(). */
    ucs_status_t modify(async_handler_id id, unsigned events);

    /* UCS_ERR_NO_ELEM if `id` is not a registered fd handler. */
    ucs_status_t remove(async_handler_id id);

    /* `interval` must be positive. */
    ucs_status_t add_timer(std::chrono::nanoseconds interval, timer_mode tmode,
                           async_timer_callback callback, async_handler_id *id_p);

    /* UCS_ERR_NO_ELEM if `id` is not a registered timer (a fired one-shot). */
    ucs_status_t remove_timer(async_handler_id id);

    /* Runs `fn` once on the loop, in post order; UCS_ERR_CANCELED after stop(). */
    ucs_status_t post(std::function<void()> fn);

    /*
     * POLL mode: runs ready handlers without blocking and returns how many
     * callbacks ran. Returns 0 at once in THREAD mode, while the context is
     * blocked (by any thread), or when called from inside a handler.
     */
    unsigned progress();

    /* The owner's critical section; recursive, cheap when uncontended. */
    void block() { m_lock->lock(); }

    void unblock() { m_lock->unlock(); }

    bool is_blocked_by_me() const { return m_lock->owned_by_me(); }

    /* True on this context's loop thread (THREAD mode, inside a handler). */
    bool on_loop_thread() const;

    /*
     * Stops the loop: no handler runs after it returns, the loop thread is
     * joined and every handler is dropped (their fds stay open). Idempotent.
     * Called from inside a handler it cannot join; it stops everything else
     * and a later stop() or the destructor finishes the job.
     */
    void stop();

    bool is_stopped() const;

    /*
     * POLL mode: an fd for the owner to sleep on (poll/epoll for reading):
     * it is readable whenever an fd handler's fd is ready for the events it
     * watches (or in error), so a sleeper wakes when progress() has fd work.
     * Timers and posted functions do not make it readable. It is an epoll
     * set of the context's own, created on the first call and closed with
     * the context; never read from it or change it. UCS_ERR_UNSUPPORTED in
     * THREAD mode (the loop thread is the sleeper there).
     */
    ucs_status_t wait_fd(int *fd_p);

    /* Number of registered fd handlers and timers. */
    size_t handler_count() const;

    async_stats stats() const;

private:
    class impl;

    explicit async_context(std::unique_ptr<impl> impl);

    std::unique_ptr<impl> m_impl;
    recursive_lock *m_lock; /* inside m_impl; inline block()/unblock() */
};

/* Holds an async context blocked for the lifetime of a scope. */
class async_block_guard {
public:
    explicit async_block_guard(async_context &context) : m_context(context) { m_context.block(); }

    ~async_block_guard() { m_context.unblock(); }

    async_block_guard(const async_block_guard &)            = delete;
    async_block_guard &operator=(const async_block_guard &) = delete;

private:
    async_context &m_context;
};

} // namespace ucs

#endif
