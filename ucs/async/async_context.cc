#include <ucs/async/async_context.h>

#include <ucs/debug/log.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <unordered_map>

namespace ucs {

namespace asio = boost::asio;

namespace {

constexpr unsigned fd_event_mask = async_event::read | async_event::write;

/* Bounds one progress() call, so that a level-triggered fd whose callback
 * never drains it cannot keep the owner inside progress() forever. */
constexpr unsigned max_handlers_per_progress = 256;

/* Unlocks at scope exit a lock that the scope's owner already holds. */
class lock_release {
public:
    explicit lock_release(recursive_lock &lock) : m_lock(lock) {}
    ~lock_release() { m_lock.unlock(); }
    lock_release(const lock_release &)            = delete;
    lock_release &operator=(const lock_release &) = delete;

private:
    recursive_lock &m_lock;
};

/* Callbacks run on the loop thread or inside progress(): nothing may escape. */
template <typename Callback, typename... Args>
void invoke_callback(const char *what, Callback &callback, Args... args)
{
    try {
        callback(args...);
    } catch (const std::exception &e) {
        ucs_error("async %s callback threw: %s", what, e.what());
    } catch (...) {
        ucs_error("async %s callback threw an unknown exception", what);
    }
}

} // namespace

const char *async_mode_name(async_mode mode)
{
    switch (mode) {
    case async_mode::thread:
        return "thread";
    case async_mode::poll:
        return "poll";
    }
    return "unknown";
}

struct fd_entry {
    async_handler_id id;
    int fd;
    unsigned events;
    unsigned generation   = 0; /* bumped to disown pending waits */
    bool removed          = false;
    bool running          = false; /* callback on the stack */
    bool restore_blocking = false; /* fd was blocking when added */
    async_fd_callback callback;
    std::optional<asio::posix::stream_descriptor> descriptor;
};

struct timer_entry {
    async_handler_id id;
    std::chrono::steady_clock::duration interval;
    timer_mode tmode;
    bool removed = false;
    bool running = false;
    async_timer_callback callback;
    std::optional<asio::steady_timer> timer;
};

/*
 * Every access to the maps and to the Asio I/O objects happens with `lock`
 * held, including the re-arming done by completion handlers; that is what
 * lets remove() run on any thread while the loop thread is inside run().
 */
class async_context::impl {
public:
    explicit impl(async_mode mode) : m_mode(mode), m_io(1)
    {
        m_work.emplace(asio::make_work_guard(m_io));
    }

    ~impl()
    {
        stop();
        if (m_wait_epfd >= 0) {
            ::close(m_wait_epfd);
        }
        if (m_wait_timerfd >= 0) {
            ::close(m_wait_timerfd);
        }
    }

    void start_thread()
    {
        m_thread = std::thread([this]() { loop(); });
    }

    async_mode mode() const { return m_mode; }

    recursive_lock &lock() { return m_lock; }

    bool on_loop_thread() const
    {
        return (m_mode == async_mode::thread) &&
               (m_loop_id.load(std::memory_order_acquire) == std::this_thread::get_id());
    }

    bool is_stopped() const { return m_stopping.load(std::memory_order_acquire); }

    ucs_status_t add(int fd, unsigned events, async_fd_callback callback, async_handler_id *id_p);
    ucs_status_t modify(async_handler_id id, unsigned events);
    ucs_status_t remove(async_handler_id id);
    ucs_status_t add_timer(std::chrono::nanoseconds interval, timer_mode tmode,
                           async_timer_callback callback, async_handler_id *id_p);
    ucs_status_t remove_timer(async_handler_id id);
    ucs_status_t post(std::function<void()> fn);
    ucs_status_t wait_fd(int *fd_p);
    unsigned progress();
    void stop();
    size_t handler_count();
    async_stats stats() const;

    /* Detaches the loop thread; used when the owner dies on that thread. */
    void detach_thread() { m_thread.detach(); }

private:
    void loop();
    bool enter_handler();
    void arm_fd(const std::shared_ptr<fd_entry> &entry);
    void arm_fd_event(const std::shared_ptr<fd_entry> &entry, unsigned event);
    void on_fd_ready(const std::shared_ptr<fd_entry> &entry, unsigned generation, unsigned event,
                     const boost::system::error_code &ec);
    void arm_timer(const std::shared_ptr<timer_entry> &entry);
    void on_timer(const std::shared_ptr<timer_entry> &entry, const boost::system::error_code &ec);
    ucs_status_t mirror(int op, const fd_entry &entry);
    void update_wait_timer();
    void retire_fd(fd_entry &entry);
    void retire_timer(timer_entry &entry);
    void retire_all();
    uint64_t callbacks_run() const;

    const async_mode m_mode;
    recursive_lock m_lock;
    std::atomic<bool> m_stopping{false};
    std::mutex m_stop_mutex; /* serializes concurrent stop() calls */

    /* The I/O context outlives the maps: pending Asio handlers hold entries. */
    asio::io_context m_io;
    std::optional<asio::executor_work_guard<asio::io_context::executor_type>> m_work;

    std::unordered_map<async_handler_id, std::shared_ptr<fd_entry>> m_fds;
    std::unordered_map<async_handler_id, std::shared_ptr<timer_entry>> m_timers;
    async_handler_id m_next_id = 1;
    int m_wait_epfd            = -1; /* wait_fd(): mirrors the fd handlers */
    int m_wait_timerfd         = -1; /* in that set: due at the next timer */

    std::atomic<uint64_t> m_fd_events{0};
    std::atomic<uint64_t> m_timers_fired{0};
    std::atomic<uint64_t> m_posted_run{0};
    std::atomic<uint64_t> m_blocked_waits{0};

    std::atomic<std::thread::id> m_loop_id{};
    std::thread m_thread;
};

void async_context::impl::loop()
{
    m_loop_id.store(std::this_thread::get_id(), std::memory_order_release);
    for (;;) {
        try {
            m_io.run();
            return; /* only stop() makes run() return: the work guard holds it */
        } catch (const std::exception &e) {
            ucs_error("async loop: %s", e.what());
        } catch (...) {
            ucs_error("async loop: unknown exception");
        }
        if (is_stopped()) {
            return;
        }
    }
}

/*
 * Takes the owner's lock before a handler runs. A blocked context makes the
 * loop thread wait here until it is unblocked, or until stop() (which lets
 * go of the caller's block while it joins) lets it through to give up.
 */
bool async_context::impl::enter_handler()
{
    if (!m_lock.try_lock()) {
        m_blocked_waits.fetch_add(1, std::memory_order_relaxed);
        m_lock.lock();
    }
    if (is_stopped()) {
        m_lock.unlock();
        return false;
    }
    return true;
}

void async_context::impl::arm_fd_event(const std::shared_ptr<fd_entry> &entry, unsigned event)
{
    const auto wait_type = (event == async_event::read) ? asio::posix::descriptor_base::wait_read :
                                                          asio::posix::descriptor_base::wait_write;
    const unsigned generation = entry->generation;
    entry->descriptor->async_wait(wait_type, [this, entry, generation,
                                              event](const boost::system::error_code &ec) {
        on_fd_ready(entry, generation, event, ec);
    });
}

void async_context::impl::arm_fd(const std::shared_ptr<fd_entry> &entry)
{
    if (entry->events & async_event::read) {
        arm_fd_event(entry, async_event::read);
    }
    if (entry->events & async_event::write) {
        arm_fd_event(entry, async_event::write);
    }
}

void async_context::impl::on_fd_ready(const std::shared_ptr<fd_entry> &entry, unsigned generation,
                                      unsigned event, const boost::system::error_code &ec)
{
    if (ec == asio::error::operation_aborted) {
        return; /* cancelled by modify(), remove() or stop() */
    }
    if (!enter_handler()) {
        return;
    }

    lock_release unlock_at_exit(m_lock);
    if (entry->removed || (entry->generation != generation)) {
        return; /* a stale wait from before modify() */
    }

    unsigned fired = event;
    if (ec) {
        /* Not re-armed: an fd in error would otherwise spin the loop. */
        ucs_error("async: waiting on fd %d failed: %s", entry->fd, ec.message().c_str());
        fired = async_event::error;
    }

    entry->running = true;
    invoke_callback("fd", entry->callback, entry->id, entry->fd, fired);
    entry->running = false;
    m_fd_events.fetch_add(1, std::memory_order_relaxed);

    if (entry->removed) {
        entry->callback = nullptr; /* removed by its own callback */
        return;
    }
    if (!ec && (entry->generation == generation) && !is_stopped()) {
        try {
            arm_fd_event(entry, event);
        } catch (const std::exception &e) {
            ucs_error("async: cannot re-arm fd %d: %s", entry->fd, e.what());
        }
    }
}

void async_context::impl::arm_timer(const std::shared_ptr<timer_entry> &entry)
{
    entry->timer->async_wait([this, entry](const boost::system::error_code &ec) {
        on_timer(entry, ec);
    });
}

void async_context::impl::on_timer(const std::shared_ptr<timer_entry> &entry,
                                   const boost::system::error_code &ec)
{
    if (ec == asio::error::operation_aborted) {
        return;
    }
    if (!enter_handler()) {
        return;
    }

    lock_release unlock_at_exit(m_lock);
    if (entry->removed) {
        return;
    }
    if (ec) {
        ucs_error("async: timer %lu failed: %s", (unsigned long)entry->id, ec.message().c_str());
        return;
    }

    const bool periodic = (entry->tmode == timer_mode::periodic);
    if (!periodic) {
        /* Unregistered before it runs: a one-shot is gone once it fires. */
        m_timers.erase(entry->id);
        entry->removed = true;
    }

    entry->running = true;
    invoke_callback("timer", entry->callback, entry->id);
    entry->running = false;
    m_timers_fired.fetch_add(1, std::memory_order_relaxed);

    if (entry->removed) {
        retire_timer(*entry);
        return;
    }
    if (is_stopped()) {
        return;
    }

    /* Fixed rate, but after a long stall (blocked context) skip the missed
     * ticks instead of firing them back to back. */
    auto next      = entry->timer->expiry() + entry->interval;
    const auto now = std::chrono::steady_clock::now();
    if (next < now) {
        next = now + entry->interval;
    }
    try {
        entry->timer->expires_at(next);
        arm_timer(entry);
    } catch (const std::exception &e) {
        ucs_error("async: cannot re-arm timer %lu: %s", (unsigned long)entry->id, e.what());
    }
}

/* Called with the lock held: keeps the wait_fd() set in step with `entry`
 * (EPOLL_CTL_ADD/MOD, or DEL when it watches nothing). */
ucs_status_t async_context::impl::mirror(int op, const fd_entry &entry)
{
    if (m_wait_epfd < 0) {
        return UCS_OK;
    }
    if (entry.events == 0) {
        (void)::epoll_ctl(m_wait_epfd, EPOLL_CTL_DEL, entry.fd, nullptr);
        return UCS_OK;
    }
    epoll_event ev{};
    ev.events = ((entry.events & async_event::read) ? EPOLLIN : 0u) |
                ((entry.events & async_event::write) ? EPOLLOUT : 0u);
    ev.data.fd = entry.fd;
    int ret    = ::epoll_ctl(m_wait_epfd, op, entry.fd, &ev);
    if ((ret != 0) && (op == EPOLL_CTL_MOD) && (errno == ENOENT)) {
        ret = ::epoll_ctl(m_wait_epfd, EPOLL_CTL_ADD, entry.fd, &ev); /* was paused */
    }
    if (ret != 0) {
        ucs_error("async: cannot add fd %d to the wait set: %m", entry.fd);
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

ucs_status_t async_context::impl::wait_fd(int *fd_p)
{
    if (fd_p == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (m_mode != async_mode::poll) {
        return UCS_ERR_UNSUPPORTED;
    }

    std::lock_guard<recursive_lock> guard(m_lock);
    if (m_wait_epfd < 0) {
        m_wait_epfd = ::epoll_create1(EPOLL_CLOEXEC);
        if (m_wait_epfd < 0) {
            ucs_error("async: epoll_create1 failed: %m");
            return UCS_ERR_IO_ERROR;
        }
        for (const auto &[id, entry] : m_fds) {
            ucs_status_t status = mirror(EPOLL_CTL_ADD, *entry);
            if (status != UCS_OK) {
                ::close(m_wait_epfd);
                m_wait_epfd = -1;
                return status;
            }
        }
        /* Timers too must wake a sleeper: a timerfd set to the earliest. */
        m_wait_timerfd = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        epoll_event ev{};
        ev.events  = EPOLLIN;
        ev.data.fd = m_wait_timerfd;
        if ((m_wait_timerfd < 0) ||
            (::epoll_ctl(m_wait_epfd, EPOLL_CTL_ADD, m_wait_timerfd, &ev) != 0)) {
            ucs_error("async: cannot add a timer to the wait set: %m");
            if (m_wait_timerfd >= 0) {
                ::close(m_wait_timerfd);
                m_wait_timerfd = -1;
            }
            ::close(m_wait_epfd);
            m_wait_epfd = -1;
            return UCS_ERR_IO_ERROR;
        }
        update_wait_timer();
    }
    *fd_p = m_wait_epfd;
    return UCS_OK;
}

/* Called with the lock held: the wait set's timerfd, consumed, then set to
 * the earliest pending timer (steady_clock is CLOCK_MONOTONIC here). */
void async_context::impl::update_wait_timer()
{
    if (m_wait_timerfd < 0) {
        return;
    }
    uint64_t expirations;
    (void)!::read(m_wait_timerfd, &expirations, sizeof(expirations));
    std::optional<std::chrono::steady_clock::time_point> earliest;
    for (const auto &[id, entry] : m_timers) {
        if (!entry->removed && entry->timer &&
            (!earliest || (entry->timer->expiry() < *earliest))) {
            earliest = entry->timer->expiry();
        }
    }
    itimerspec spec{};
    if (earliest) {
        /* A deadline already passed still needs a non-zero value to fire. */
        const int64_t ns = std::max<int64_t>(
            1, std::chrono::duration_cast<std::chrono::nanoseconds>(earliest->time_since_epoch())
                   .count());
        spec.it_value.tv_sec  = time_t(ns / 1000000000);
        spec.it_value.tv_nsec = long(ns % 1000000000);
    }
    if (::timerfd_settime(m_wait_timerfd, TFD_TIMER_ABSTIME, &spec, nullptr) != 0) {
        ucs_error("async: timerfd_settime failed: %m");
    }
}

/* Called with the lock held. Unregisters the fd from epoll synchronously, so
 * the caller may close (and the system reuse) the fd number right after. */
void async_context::impl::retire_fd(fd_entry &entry)
{
    entry.removed = true;
    if (m_wait_epfd >= 0) {
        (void)::epoll_ctl(m_wait_epfd, EPOLL_CTL_DEL, entry.fd, nullptr);
    }
    if (entry.descriptor) {
        entry.descriptor->release(); /* cancels the waits; never closes fd */
        entry.descriptor.reset();
        if (entry.restore_blocking) {
            const int flags = ::fcntl(entry.fd, F_GETFL);
            if (flags >= 0) {
                (void)::fcntl(entry.fd, F_SETFL, flags & ~O_NONBLOCK);
            }
        }
    }
    if (!entry.running) {
        entry.callback = nullptr; /* free what it captured now, not later */
    }
}

void async_context::impl::retire_timer(timer_entry &entry)
{
    entry.removed = true;
    if (entry.timer) {
        boost::system::error_code ec;
        entry.timer->cancel(ec);
        entry.timer.reset();
    }
    if (!entry.running) {
        entry.callback = nullptr;
    }
}

void async_context::impl::retire_all()
{
    for (auto &[id, entry] : m_fds) {
        retire_fd(*entry);
    }
    m_fds.clear();
    for (auto &[id, entry] : m_timers) {
        retire_timer(*entry);
    }
    m_timers.clear();
}

ucs_status_t async_context::impl::add(int fd, unsigned events, async_fd_callback callback,
                                      async_handler_id *id_p)
{
    if ((fd < 0) || !callback || (id_p == nullptr) || (events == 0) || (events & ~fd_event_mask)) {
        return UCS_ERR_INVALID_PARAM;
    }

    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0) {
        ucs_debug("async: fd %d is not open: %m", fd);
        return UCS_ERR_INVALID_PARAM;
    }

    struct stat st;
    if (::fstat(fd, &st) != 0) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) {
        ucs_debug("async: fd %d is a regular file or directory", fd);
        return UCS_ERR_UNSUPPORTED;
    }

    std::lock_guard<recursive_lock> guard(m_lock);
    if (is_stopped()) {
        return UCS_ERR_CANCELED;
    }
    for (const auto &[id, entry] : m_fds) {
        if (entry->fd == fd) {
            return UCS_ERR_ALREADY_EXISTS;
        }
    }

    std::shared_ptr<fd_entry> entry;
    try {
        entry                   = std::make_shared<fd_entry>();
        entry->id               = m_next_id;
        entry->fd               = fd;
        entry->events           = events;
        entry->restore_blocking = !(flags & O_NONBLOCK);
        entry->callback         = std::move(callback);
        entry->descriptor.emplace(m_io);

        boost::system::error_code ec;
        entry->descriptor->assign(fd, ec);
        if (ec) {
            ucs_error("async: cannot watch fd %d: %s", fd, ec.message().c_str());
            entry->descriptor.reset(); /* assign failed: nothing to release */
            return (ec == boost::system::errc::file_exists) ? UCS_ERR_ALREADY_EXISTS :
                                                              UCS_ERR_IO_ERROR;
        }
        arm_fd(entry);
        const ucs_status_t status = mirror(EPOLL_CTL_ADD, *entry);
        if (status != UCS_OK) {
            retire_fd(*entry);
            return status;
        }
        m_fds.emplace(entry->id, entry);
    } catch (const std::bad_alloc &) {
        if (entry) {
            retire_fd(*entry);
        }
        return UCS_ERR_NO_MEMORY;
    } catch (const std::exception &e) {
        ucs_error("async: cannot add fd %d: %s", fd, e.what());
        if (entry) {
            retire_fd(*entry);
        }
        return UCS_ERR_IO_ERROR;
    }

    *id_p = m_next_id++;
    ucs_debug("async: added fd %d events 0x%x as handler %lu", fd, events, (unsigned long)*id_p);
    return UCS_OK;
}

ucs_status_t async_context::impl::modify(async_handler_id id, unsigned events)
{
    if (events & ~fd_event_mask) {
        return UCS_ERR_INVALID_PARAM;
    }

    std::lock_guard<recursive_lock> guard(m_lock);
    auto it = m_fds.find(id);
    if (it == m_fds.end()) {
        return UCS_ERR_NO_ELEM;
    }

    auto &entry = it->second;
    if (entry->events == events) {
        return UCS_OK;
    }

    entry->events = events;
    ++entry->generation; /* waits armed before this point are ignored */
    boost::system::error_code ec;
    entry->descriptor->cancel(ec);
    try {
        arm_fd(entry);
    } catch (const std::exception &e) {
        ucs_error("async: cannot re-arm fd %d: %s", entry->fd, e.what());
        return UCS_ERR_NO_MEMORY;
    }
    return mirror(EPOLL_CTL_MOD, *entry);
}

ucs_status_t async_context::impl::remove(async_handler_id id)
{
    /* Holding the lock means no handler of this context is running, except
     * the caller's own if remove() comes from inside a callback. */
    std::lock_guard<recursive_lock> guard(m_lock);
    auto it = m_fds.find(id);
    if (it == m_fds.end()) {
        return UCS_ERR_NO_ELEM;
    }

    auto entry = std::move(it->second);
    m_fds.erase(it);
    retire_fd(*entry);
    ucs_debug("async: removed fd %d handler %lu", entry->fd, (unsigned long)id);
    return UCS_OK;
}

ucs_status_t async_context::impl::add_timer(std::chrono::nanoseconds interval, timer_mode tmode,
                                            async_timer_callback callback, async_handler_id *id_p)
{
    if ((interval.count() <= 0) || !callback || (id_p == nullptr) ||
        ((tmode != timer_mode::periodic) && (tmode != timer_mode::one_shot))) {
        return UCS_ERR_INVALID_PARAM;
    }

    std::lock_guard<recursive_lock> guard(m_lock);
    if (is_stopped()) {
        return UCS_ERR_CANCELED;
    }

    std::shared_ptr<timer_entry> entry;
    try {
        entry           = std::make_shared<timer_entry>();
        entry->id       = m_next_id;
        entry->interval = std::chrono::duration_cast<std::chrono::steady_clock::duration>(interval);
        entry->tmode    = tmode;
        entry->callback = std::move(callback);
        entry->timer.emplace(m_io);
        entry->timer->expires_after(entry->interval);
        arm_timer(entry);
        m_timers.emplace(entry->id, entry);
        update_wait_timer();
    } catch (const std::bad_alloc &) {
        if (entry) {
            retire_timer(*entry);
        }
        return UCS_ERR_NO_MEMORY;
    } catch (const std::exception &e) {
        ucs_error("async: cannot add timer: %s", e.what());
        if (entry) {
            retire_timer(*entry);
        }
        return UCS_ERR_IO_ERROR;
    }

    *id_p = m_next_id++;
    return UCS_OK;
}

ucs_status_t async_context::impl::remove_timer(async_handler_id id)
{
    std::lock_guard<recursive_lock> guard(m_lock);
    auto it = m_timers.find(id);
    if (it == m_timers.end()) {
        return UCS_ERR_NO_ELEM;
    }

    auto entry = std::move(it->second);
    m_timers.erase(it);
    retire_timer(*entry);
    update_wait_timer();
    return UCS_OK;
}

ucs_status_t async_context::impl::post(std::function<void()> fn)
{
    if (!fn) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (is_stopped()) {
        return UCS_ERR_CANCELED;
    }

    try {
        asio::post(m_io, [this, fn = std::move(fn)]() mutable {
            if (!enter_handler()) {
                return;
            }
            lock_release unlock_at_exit(m_lock);
            invoke_callback("posted", fn);
            m_posted_run.fetch_add(1, std::memory_order_relaxed);
        });
    } catch (const std::bad_alloc &) {
        return UCS_ERR_NO_MEMORY;
    }
    return UCS_OK;
}

uint64_t async_context::impl::callbacks_run() const
{
    return m_fd_events.load(std::memory_order_relaxed) +
           m_timers_fired.load(std::memory_order_relaxed) +
           m_posted_run.load(std::memory_order_relaxed);
}

unsigned async_context::impl::progress()
{
    if ((m_mode != async_mode::poll) || is_stopped()) {
        return 0;
    }
    if (!m_lock.try_lock()) {
        return 0; /* blocked by another thread, or another thread progresses */
    }

    lock_release unlock_at_exit(m_lock);
    if (m_lock.depth_by_me() > 1) {
        return 0; /* blocked by the caller, or called from inside a handler */
    }

    const uint64_t before        = callbacks_run();
    const uint64_t timers_before = m_timers_fired.load(std::memory_order_relaxed);
    try {
        for (unsigned i = 0; (i < max_handlers_per_progress) && !is_stopped(); ++i) {
            if (m_io.poll_one() == 0) {
                break;
            }
        }
    } catch (const std::exception &e) {
        ucs_error("async progress: %s", e.what());
    }
    /* A timer fired (then was re-armed or removed): the wait set's timerfd
     * moves on. Nothing else changes it here, and this runs on every
     * progress of a client-server worker: no system call otherwise. */
    if ((m_wait_timerfd >= 0) &&
        (m_timers_fired.load(std::memory_order_relaxed) != timers_before)) {
        update_wait_timer();
    }
    return static_cast<unsigned>(callbacks_run() - before);
}

void async_context::impl::stop()
{
    if (on_loop_thread()) {
        /* Inside a handler: the thread cannot join itself. Stop dispatching
         * and drop the handlers; whoever calls stop() next joins. */
        m_stopping.store(true, std::memory_order_release);
        m_io.stop();
        std::lock_guard<recursive_lock> guard(m_lock);
        retire_all();
        return;
    }

    /* Handlers that start from now on give up at once. */
    m_stopping.store(true, std::memory_order_release);
    m_io.stop();

    /* The loop thread may be waiting for the caller's own block(): let go of
     * it while joining, and never wait for m_stop_mutex while holding it.
     * (In poll mode there is no thread, and the caller may be a handler.) */
    const unsigned held = (m_mode == async_mode::thread) ? m_lock.unlock_all() : 0;
    {
        std::lock_guard<std::mutex> stop_guard(m_stop_mutex);
        m_work.reset();
        if (m_thread.joinable()) {
            m_thread.join();
        }
    }
    m_lock.relock(held);

    std::lock_guard<recursive_lock> guard(m_lock);
    retire_all();
}

size_t async_context::impl::handler_count()
{
    std::lock_guard<recursive_lock> guard(m_lock);
    return m_fds.size() + m_timers.size();
}

async_stats async_context::impl::stats() const
{
    return {m_fd_events.load(std::memory_order_relaxed),
            m_timers_fired.load(std::memory_order_relaxed),
            m_posted_run.load(std::memory_order_relaxed),
            m_blocked_waits.load(std::memory_order_relaxed)};
}

/* ---- public wrapper ---- */

ucs_status_t async_context::create(async_mode mode, std::unique_ptr<async_context> *context_p)
{
    if ((context_p == nullptr) || ((mode != async_mode::thread) && (mode != async_mode::poll))) {
        return UCS_ERR_INVALID_PARAM;
    }

    try {
        auto state = std::make_unique<impl>(mode);
        if (mode == async_mode::thread) {
            state->start_thread();
        }
        context_p->reset(new async_context(std::move(state)));
    } catch (const std::bad_alloc &) {
        return UCS_ERR_NO_MEMORY;
    } catch (const std::exception &e) {
        ucs_error("cannot create %s async context: %s", async_mode_name(mode), e.what());
        return UCS_ERR_NO_RESOURCE;
    }
    return UCS_OK;
}

async_context::async_context(std::unique_ptr<impl> state) :
    m_impl(std::move(state)), m_lock(&m_impl->lock())
{
}

async_context::~async_context()
{
    if (m_impl->on_loop_thread()) {
        /* The loop thread is inside io_context::run() right now, so its
         * state cannot be destroyed: stop it, let the thread finish alone,
         * and leak the state rather than free it under the running loop. */
        ucs_error("async context destroyed from its own handler; its state "
                  "is leaked");
        m_impl->stop();
        m_impl->detach_thread();
        (void)m_impl.release();
        return;
    }
    m_impl->stop();
}

async_mode async_context::mode() const
{
    return m_impl->mode();
}

ucs_status_t async_context::add(int fd, unsigned events, async_fd_callback callback,
                                async_handler_id *id_p)
{
    return m_impl->add(fd, events, std::move(callback), id_p);
}

ucs_status_t async_context::modify(async_handler_id id, unsigned events)
{
    return m_impl->modify(id, events);
}

ucs_status_t async_context::remove(async_handler_id id)
{
    return m_impl->remove(id);
}

ucs_status_t async_context::add_timer(std::chrono::nanoseconds interval, timer_mode tmode,
                                      async_timer_callback callback, async_handler_id *id_p)
{
    return m_impl->add_timer(interval, tmode, std::move(callback), id_p);
}

ucs_status_t async_context::remove_timer(async_handler_id id)
{
    return m_impl->remove_timer(id);
}

ucs_status_t async_context::post(std::function<void()> fn)
{
    return m_impl->post(std::move(fn));
}

ucs_status_t async_context::wait_fd(int *fd_p)
{
    return m_impl->wait_fd(fd_p);
}

unsigned async_context::progress()
{
    return m_impl->progress();
}

bool async_context::on_loop_thread() const
{
    return m_impl->on_loop_thread();
}

void async_context::stop()
{
    m_impl->stop();
}

bool async_context::is_stopped() const
{
    return m_impl->is_stopped();
}

size_t async_context::handler_count() const
{
    return m_impl->handler_count();
}

async_stats async_context::stats() const
{
    return m_impl->stats();
}

} // namespace ucs
