#include <catch2/catch.hpp>

#include <ucs/async/async_context.h>
#include <ucs/async/event_fd.h>
#include <ucs/debug/log.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <memory>
#include <mutex>
#include <poll.h>
#include <sstream>
#include <stdexcept>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace std::chrono_literals;
using ucs::async_context;
using ucs::async_handler_id;
using ucs::async_mode;
namespace async_event = ucs::async_event;

namespace {

using steady = std::chrono::steady_clock;

constexpr auto wait_limit = 10s; /* generous: the build machine is shared */

std::unique_ptr<async_context> make_context(async_mode mode)
{
    std::unique_ptr<async_context> context;
    REQUIRE(async_context::create(mode, &context) == UCS_OK);
    REQUIRE(context != nullptr);
    return context;
}

/* Polls `done` until it holds or the deadline passes; in POLL mode it also
 * drives the context, since nothing else would run its handlers. */
template <typename Predicate>
bool wait_for(async_context &context, Predicate done, std::chrono::milliseconds limit = wait_limit)
{
    const auto deadline = steady::now() + limit;
    while (!done()) {
        if (steady::now() > deadline) {
            return false;
        }
        if (context.mode() == async_mode::poll) {
            context.progress();
        } else {
            std::this_thread::yield();
        }
    }
    return true;
}

template <typename Predicate>
bool wait_for(Predicate done, std::chrono::milliseconds limit = wait_limit)
{
    const auto deadline = steady::now() + limit;
    while (!done()) {
        if (steady::now() > deadline) {
            return false;
        }
        std::this_thread::yield();
    }
    return true;
}

/* Posts a marker and waits for it: every handler that was already ready
 * has had its chance to run by then (the loop is FIFO). */
bool round_trip(async_context &context)
{
    std::atomic<bool> reached{false};
    if (context.post([&reached]() { reached = true; }) != UCS_OK) {
        return false;
    }
    return wait_for(context, [&reached]() { return reached.load(); });
}

bool fd_is_open(int fd)
{
    return ::fcntl(fd, F_GETFD) != -1;
}

bool fd_is_nonblocking(int fd)
{
    return (::fcntl(fd, F_GETFL) & O_NONBLOCK) != 0;
}

bool fd_is_readable(int fd)
{
    struct pollfd pfd = {fd, POLLIN, 0};
    return (::poll(&pfd, 1, 0) == 1) && (pfd.revents & POLLIN);
}

struct pipe_fds {
    int read_end  = -1;
    int write_end = -1;

    pipe_fds()
    {
        int fds[2];
        REQUIRE(::pipe(fds) == 0);
        read_end  = fds[0];
        write_end = fds[1];
    }

    ~pipe_fds()
    {
        ::close(read_end);
        ::close(write_end);
    }
};

ucs::event_fd make_event_fd()
{
    ucs::event_fd efd;
    REQUIRE(efd.open() == UCS_OK);
    return efd;
}

std::string read_text_file(const std::string &path)
{
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

} // namespace

TEST_CASE("event_fd signals and drains", "[async]")
{
    ucs::event_fd efd;
    CHECK_FALSE(efd.is_open());
    CHECK(efd.fd() == -1);
    CHECK(efd.signal() == UCS_ERR_INVALID_PARAM);
    CHECK(efd.drain() == 0);

    REQUIRE(efd.open() == UCS_OK);
    CHECK(efd.open() == UCS_ERR_ALREADY_EXISTS);
    CHECK(efd.fd() >= 0);
    CHECK(fd_is_nonblocking(efd.fd()));
    CHECK((::fcntl(efd.fd(), F_GETFD) & FD_CLOEXEC) != 0);

    CHECK_FALSE(fd_is_readable(efd.fd()));
    CHECK(efd.signal() == UCS_OK);
    CHECK(efd.signal() == UCS_OK);
    CHECK(efd.signal() == UCS_OK);
    CHECK(fd_is_readable(efd.fd()));
    CHECK(efd.drain() == 3);
    CHECK_FALSE(fd_is_readable(efd.fd()));
    CHECK(efd.drain() == 0);

    /* drain_signalled: only after a signal, and then it drains. */
    CHECK(efd.drain_signalled()); /* the signals above, already read */
    CHECK_FALSE(efd.drain_signalled());
    CHECK(efd.signal() == UCS_OK);
    CHECK(efd.signal() == UCS_OK);
    CHECK(efd.drain_signalled());
    CHECK_FALSE(fd_is_readable(efd.fd()));
    CHECK_FALSE(efd.drain_signalled());

    const int fd        = efd.fd();
    ucs::event_fd moved = std::move(efd);
    CHECK(moved.fd() == fd);
    CHECK_FALSE(efd.is_open());
    moved.close();
    CHECK_FALSE(moved.is_open());
    CHECK_FALSE(fd_is_open(fd));
}

TEST_CASE("async context rejects bad arguments", "[async]")
{
    CHECK(async_context::create(async_mode::poll, nullptr) == UCS_ERR_INVALID_PARAM);
    CHECK(async_context::create(static_cast<async_mode>(42), nullptr) == UCS_ERR_INVALID_PARAM);

    const auto mode = GENERATE(async_mode::thread, async_mode::poll);
    auto context    = make_context(mode);
    CHECK(context->mode() == mode);
    auto efd            = make_event_fd();
    auto noop           = [](async_handler_id, int, unsigned) {};
    async_handler_id id = 0;

    CHECK(context->add(-1, async_event::read, noop, &id) == UCS_ERR_INVALID_PARAM);
    CHECK(context->add(efd.fd(), async_event::read, nullptr, &id) == UCS_ERR_INVALID_PARAM);
    CHECK(context->add(efd.fd(), 0, noop, &id) == UCS_ERR_INVALID_PARAM);
    CHECK(context->add(efd.fd(), async_event::error, noop, &id) == UCS_ERR_INVALID_PARAM);
    CHECK(context->add(efd.fd(), 0x80, noop, &id) == UCS_ERR_INVALID_PARAM);
    CHECK(context->add(efd.fd(), async_event::read, noop, nullptr) == UCS_ERR_INVALID_PARAM);

    /* A closed fd number. */
    ucs::event_fd closed = make_event_fd();
    const int closed_fd  = closed.fd();
    closed.close();
    CHECK(context->add(closed_fd, async_event::read, noop, &id) == UCS_ERR_INVALID_PARAM);

    /* epoll cannot wait on a regular file. */
    char path[]       = "/tmp/ucs_test_async_XXXXXX";
    const int file_fd = ::mkstemp(path);
    REQUIRE(file_fd >= 0);
    ::unlink(path);
    CHECK(context->add(file_fd, async_event::read, noop, &id) == UCS_ERR_UNSUPPORTED);
    ::close(file_fd);

    REQUIRE(context->add(efd.fd(), async_event::read, noop, &id) == UCS_OK);
    CHECK(id != 0);
    async_handler_id other = 0;
    CHECK(context->add(efd.fd(), async_event::write, noop, &other) == UCS_ERR_ALREADY_EXISTS);
    CHECK(context->modify(id, 0x80) == UCS_ERR_INVALID_PARAM);
    CHECK(context->modify(id + 1000, async_event::read) == UCS_ERR_NO_ELEM);
    CHECK(context->remove(id + 1000) == UCS_ERR_NO_ELEM);
    CHECK(context->remove_timer(id) == UCS_ERR_NO_ELEM); /* not a timer */
    CHECK(context->handler_count() == 1);
    CHECK(context->remove(id) == UCS_OK);
    CHECK(context->remove(id) == UCS_ERR_NO_ELEM);
    CHECK(context->handler_count() == 0);

    auto tick = [](async_handler_id) {};
    CHECK(context->add_timer(0ns, ucs::timer_mode::periodic, tick, &id) == UCS_ERR_INVALID_PARAM);
    CHECK(context->add_timer(-5ms, ucs::timer_mode::one_shot, tick, &id) == UCS_ERR_INVALID_PARAM);
    CHECK(context->add_timer(1ms, ucs::timer_mode::periodic, nullptr, &id) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(context->add_timer(1ms, ucs::timer_mode::periodic, tick, nullptr) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(context->add_timer(1ms, static_cast<ucs::timer_mode>(9), tick, &id) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(context->post(nullptr) == UCS_ERR_INVALID_PARAM);
    CHECK(context->handler_count() == 0);
}

TEST_CASE("fd handler fires when an eventfd becomes readable", "[async]")
{
    const auto mode = GENERATE(async_mode::thread, async_mode::poll);
    auto context    = make_context(mode);
    auto efd        = make_event_fd();

    std::atomic<int> calls{0};
    std::atomic<int> bad_args{0};
    std::atomic<bool> on_loop_thread{true};
    std::thread::id caller_thread;
    async_handler_id id = 0;
    auto callback       = [&](async_handler_id cb_id, int fd, unsigned events) {
        if ((cb_id != id) || (fd != efd.fd()) || (events != async_event::read)) {
            ++bad_args;
        }
        if (context->on_loop_thread() != (mode == async_mode::thread)) {
            on_loop_thread = false;
        }
        caller_thread = std::this_thread::get_id();
        efd.drain();
        ++calls;
    };

    /* Hold the context while adding, so `id` is set before any call. */
    {
        ucs::async_block_guard guard(*context);
        REQUIRE(context->add(efd.fd(), async_event::read, callback, &id) == UCS_OK);
    }

    CHECK(round_trip(*context));
    CHECK(calls == 0); /* nothing signalled yet */

    for (int i = 1; i <= 3; ++i) {
        REQUIRE(efd.signal() == UCS_OK);
        REQUIRE(wait_for(*context, [&]() { return calls.load() >= i; }));
    }
    CHECK(round_trip(*context));
    CHECK(calls == 3);
    CHECK(bad_args == 0);
    CHECK(on_loop_thread);
    CHECK(context->stats().fd_events == 3);
    if (mode == async_mode::thread) {
        CHECK(caller_thread != std::this_thread::get_id());
    } else {
        CHECK(caller_thread == std::this_thread::get_id());
    }
    CHECK(context->remove(id) == UCS_OK);
}

TEST_CASE("fd handler reads a pipe; write events and modify()", "[async]")
{
    const auto mode = GENERATE(async_mode::thread, async_mode::poll);
    auto context    = make_context(mode);
    pipe_fds pipe;

    std::mutex lock;
    std::string received;
    async_handler_id read_id = 0;
    REQUIRE(context->add(
                pipe.read_end, async_event::read,
                [&](async_handler_id, int fd, unsigned) {
        char buf[64];
        const ssize_t n = ::read(fd, buf, sizeof(buf));
        if (n > 0) {
            std::lock_guard<std::mutex> g(lock);
            received.append(buf, size_t(n));
        }
                },
                &read_id) == UCS_OK);

    REQUIRE(::write(pipe.write_end, "hello", 5) == 5);
    REQUIRE(wait_for(*context, [&]() {
        std::lock_guard<std::mutex> g(lock);
        return received == "hello";
    }));

    /* The write end of an empty pipe is always writable. */
    std::atomic<int> writable{0};
    std::atomic<unsigned> seen_events{0};
    async_handler_id write_id = 0;
    REQUIRE(context->add(
                pipe.write_end, async_event::write,
                [&](async_handler_id id, int, unsigned events) {
        seen_events |= events;
        ++writable;
        context->modify(id, 0); /* pause after one */
                },
                &write_id) == UCS_OK);
    REQUIRE(wait_for(*context, [&]() { return writable.load() >= 1; }));
    CHECK(seen_events == async_event::write);

    /* Paused: no wait is armed, so two full loop turns must not call it. */
    CHECK(round_trip(*context));
    CHECK(round_trip(*context));
    CHECK(writable == 1);

    REQUIRE(context->modify(write_id, async_event::write) == UCS_OK);
    REQUIRE(wait_for(*context, [&]() { return writable.load() >= 2; }));

    CHECK(context->remove(write_id) == UCS_OK);
    CHECK(context->remove(read_id) == UCS_OK);
}

TEST_CASE("fd handler with read and write events reports each", "[async]")
{
    const auto mode = GENERATE(async_mode::thread, async_mode::poll);
    auto context    = make_context(mode);
    int sv[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);

    std::atomic<unsigned> seen{0};
    std::atomic<int> calls{0};
    async_handler_id id = 0;
    REQUIRE(context->add(
                sv[0], async_event::read | async_event::write,
                [&](async_handler_id cb_id, int fd, unsigned events) {
        seen |= events;
        ++calls;
        if (events & async_event::read) {
            char c;
            (void)::read(fd, &c, 1);
        }
        if ((seen & async_event::write) && (seen & async_event::read)) {
            context->modify(cb_id, 0);
        } else if (events & async_event::write) {
            context->modify(cb_id, async_event::read);
        }
                },
                &id) == UCS_OK);
    REQUIRE(::write(sv[1], "x", 1) == 1);
    REQUIRE(wait_for(*context,
                     [&]() { return seen.load() == (async_event::read | async_event::write); }));
    CHECK(calls >= 2);
    CHECK(context->remove(id) == UCS_OK);
    ::close(sv[0]);
    ::close(sv[1]);
}

TEST_CASE("remove() from inside the handler", "[async]")
{
    const auto mode = GENERATE(async_mode::thread, async_mode::poll);
    auto context    = make_context(mode);
    auto efd        = make_event_fd();

    std::atomic<int> calls{0};
    std::atomic<int> remove_status{1};
    async_handler_id id = 0;
    REQUIRE(context->add(
                efd.fd(), async_event::read,
                [&](async_handler_id cb_id, int, unsigned) {
        ++calls;
        remove_status = context->remove(cb_id);
        /* Level-triggered: undrained, it would fire
                              * again if the removal did not hold. */
                },
                &id) == UCS_OK);

    REQUIRE(efd.signal() == UCS_OK);
    REQUIRE(wait_for(*context, [&]() { return calls.load() >= 1; }));
    CHECK(round_trip(*context));
    CHECK(round_trip(*context));
    CHECK(remove_status == UCS_OK);
    CHECK(calls == 1);
    CHECK(context->handler_count() == 0);
    CHECK(context->remove(id) == UCS_ERR_NO_ELEM);
    CHECK(fd_is_open(efd.fd()));
    CHECK(efd.drain() == 1);

    /* The same fd may be added again once removed. */
    async_handler_id again = 0;
    std::atomic<int> again_calls{0};
    REQUIRE(context->add(
                efd.fd(), async_event::read,
                [&](async_handler_id, int, unsigned) {
        efd.drain();
        ++again_calls;
                },
                &again) == UCS_OK);
    CHECK(again != id);
    REQUIRE(efd.signal() == UCS_OK);
    REQUIRE(wait_for(*context, [&]() { return again_calls.load() >= 1; }));
    CHECK(calls == 1);
    CHECK(context->remove(again) == UCS_OK);
}

TEST_CASE("remove() racing the loop thread never lets the handler run later", "[async]")
{
    auto context = make_context(async_mode::thread);
    auto efd     = make_event_fd();

    constexpr int iterations = 1000;
    std::atomic<int> removed_upto{0}; /* iterations whose remove() returned */
    std::atomic<int> late_calls{0};
    std::atomic<int> calls{0};
    std::atomic<int> last_called{0};

    for (int i = 1; i <= iterations; ++i) {
        async_handler_id id = 0;
        REQUIRE(context->add(
                    efd.fd(), async_event::read,
                    [&, i](async_handler_id, int, unsigned) {
            if (removed_upto.load() >= i) {
                ++late_calls;
            }
            efd.drain();
            ++calls;
            last_called = i;
                    },
                    &id) == UCS_OK);
        REQUIRE(efd.signal() == UCS_OK);
        if (i % 2 == 0) {
            /* Half the time let the handler start first, so the removal
             * sometimes lands while the loop thread is inside it. */
            REQUIRE(wait_for([&]() { return last_called.load() == i; }));
        }
        REQUIRE(context->remove(id) == UCS_OK);
        removed_upto = i;
        efd.drain();
    }

    CHECK(round_trip(*context));
    CHECK(late_calls == 0);
    CHECK(calls >= iterations / 2);
    CHECK(context->handler_count() == 0);
}

TEST_CASE("remove() of a handler already waiting for the block (thread mode)", "[async]")
{
    auto context = make_context(async_mode::thread);
    auto efd     = make_event_fd();

    std::atomic<int> fd_calls{0}, timer_calls{0};
    async_handler_id fd_id = 0, timer_id = 0;
    REQUIRE(context->add(
                efd.fd(), async_event::read, [&](async_handler_id, int, unsigned) { ++fd_calls; },
                &fd_id) == UCS_OK);

    /* The loop thread takes the ready event and then has to wait for us:
     * the handler is dispatched but must not run once removed. */
    context->block();
    REQUIRE(efd.signal() == UCS_OK);
    REQUIRE(wait_for([&]() { return context->stats().blocked_waits >= 1; }));
    CHECK(context->remove(fd_id) == UCS_OK);
    context->unblock();
    CHECK(round_trip(*context));
    CHECK(fd_calls == 0);

    /* The same for an expired timer. */
    REQUIRE(context->add_timer(
                1ms, ucs::timer_mode::periodic, [&](async_handler_id) { ++timer_calls; },
                &timer_id) == UCS_OK);
    context->block();
    const auto waits = context->stats().blocked_waits;
    REQUIRE(wait_for([&]() { return context->stats().blocked_waits > waits; }));
    CHECK(context->remove_timer(timer_id) == UCS_OK);
    context->unblock();
    CHECK(round_trip(*context));
    CHECK(timer_calls == 0);

    /* And for a wait made stale by modify(). */
    CHECK(efd.drain() == 1);
    std::atomic<unsigned> events_seen{0};
    REQUIRE(context->add(
                efd.fd(), async_event::read,
                [&](async_handler_id, int, unsigned events) { events_seen |= events; },
                &fd_id) == UCS_OK);
    context->block();
    const auto waits2 = context->stats().blocked_waits;
    REQUIRE(efd.signal() == UCS_OK);
    REQUIRE(wait_for([&]() { return context->stats().blocked_waits > waits2; }));
    CHECK(context->modify(fd_id, 0) == UCS_OK);
    context->unblock();
    CHECK(round_trip(*context));
    CHECK(events_seen == 0);
    CHECK(context->remove(fd_id) == UCS_OK);
}

TEST_CASE("remove() waits for the handler running on the loop thread", "[async]")
{
    auto context = make_context(async_mode::thread);
    auto efd     = make_event_fd();

    std::atomic<bool> in_handler{false};
    std::atomic<bool> remover_started{false};
    std::atomic<bool> remove_returned{false};
    std::atomic<bool> overlap{false};
    std::atomic<bool> handler_done{false};
    async_handler_id id = 0;
    REQUIRE(context->add(
                efd.fd(), async_event::read,
                [&](async_handler_id, int, unsigned) {
        efd.drain();
        in_handler = true;
        wait_for([&]() { return remover_started.load(); });
        /* Stay inside a while: remove() must wait. */
        const auto until = steady::now() + 20ms;
        while (steady::now() < until) {
            if (remove_returned) {
                overlap = true;
            }
        }
        handler_done = true;
                },
                &id) == UCS_OK);
    REQUIRE(efd.signal() == UCS_OK);
    REQUIRE(wait_for([&]() { return in_handler.load(); }));

    std::atomic<bool> done_when_returned{false};
    std::atomic<int> remove_status{1};
    std::thread remover([&]() {
        remover_started    = true;
        remove_status      = context->remove(id);
        done_when_returned = handler_done.load();
        remove_returned    = true;
    });
    remover.join();

    CHECK(remove_status == UCS_OK);
    CHECK(done_when_returned);
    CHECK_FALSE(overlap);
}

TEST_CASE("periodic timers fire no earlier than their interval", "[async]")
{
    const auto mode = GENERATE(async_mode::thread, async_mode::poll);
    auto context    = make_context(mode);

    constexpr auto interval = 10ms;
    constexpr int wanted    = 5;
    std::mutex lock;
    std::vector<steady::time_point> fired;
    std::vector<async_handler_id> ids;
    async_handler_id id = 0;

    const auto start = steady::now();
    REQUIRE(context->add_timer(
                interval, ucs::timer_mode::periodic,
                [&](async_handler_id cb_id) {
        std::lock_guard<std::mutex> g(lock);
        ids.push_back(cb_id);
        fired.push_back(steady::now());
                },
                &id) == UCS_OK);
    REQUIRE(wait_for(*context, [&]() {
        std::lock_guard<std::mutex> g(lock);
        return fired.size() >= wanted;
    }));
    REQUIRE(context->remove_timer(id) == UCS_OK);

    CHECK(context->stats().timers_fired >= wanted);
    CHECK(context->remove_timer(id) == UCS_ERR_NO_ELEM);
    std::lock_guard<std::mutex> g(lock);
    for (size_t k = 0; k < wanted; ++k) {
        CHECK(fired[k] - start >= interval * (k + 1));
        CHECK(ids[k] == id);
    }
}

TEST_CASE("a one-shot timer fires once and unregisters itself", "[async]")
{
    const auto mode = GENERATE(async_mode::thread, async_mode::poll);
    auto context    = make_context(mode);

    std::atomic<int> once{0};
    std::atomic<int> ticks{0};
    async_handler_id once_id = 0, tick_id = 0;
    const auto start = steady::now();
    std::atomic<int64_t> once_delay_ns{0};
    REQUIRE(context->add_timer(
                5ms, ucs::timer_mode::one_shot,
                [&](async_handler_id) {
        once_delay_ns = (steady::now() - start).count();
        ++once;
                },
                &once_id) == UCS_OK);
    REQUIRE(context->add_timer(
                5ms, ucs::timer_mode::periodic, [&](async_handler_id) { ++ticks; }, &tick_id) ==
            UCS_OK);
    CHECK(context->handler_count() == 2);

    /* Long past the one-shot's expiry, four periods later. */
    REQUIRE(wait_for(*context, [&]() { return ticks.load() >= 4; }));
    CHECK(once == 1);
    CHECK(std::chrono::nanoseconds(once_delay_ns.load()) >= 5ms);
    CHECK(context->remove_timer(once_id) == UCS_ERR_NO_ELEM);
    CHECK(context->handler_count() == 1);
    CHECK(context->remove_timer(tick_id) == UCS_OK);
    CHECK(context->handler_count() == 0);
}

TEST_CASE("a periodic timer can remove itself", "[async]")
{
    const auto mode = GENERATE(async_mode::thread, async_mode::poll);
    auto context    = make_context(mode);

    std::atomic<int> calls{0};
    std::atomic<int> reference_ticks{0};
    std::atomic<int> remove_status{1};
    async_handler_id id = 0, reference = 0;
    REQUIRE(context->add_timer(
                2ms, ucs::timer_mode::periodic,
                [&](async_handler_id cb_id) {
        if (++calls == 3) {
            remove_status = context->remove_timer(cb_id);
        }
                },
                &id) == UCS_OK);
    REQUIRE(wait_for(*context, [&]() { return calls.load() >= 3; }));

    REQUIRE(context->add_timer(
                2ms, ucs::timer_mode::periodic, [&](async_handler_id) { ++reference_ticks; },
                &reference) == UCS_OK);
    REQUIRE(wait_for(*context, [&]() { return reference_ticks.load() >= 5; }));
    CHECK(calls == 3);
    CHECK(remove_status == UCS_OK);
    CHECK(context->remove_timer(id) == UCS_ERR_NO_ELEM);
    CHECK(context->remove_timer(reference) == UCS_OK);
}

TEST_CASE("post() runs functions in order on the loop", "[async]")
{
    const auto mode = GENERATE(async_mode::thread, async_mode::poll);
    auto context    = make_context(mode);

    constexpr int count = 200;
    std::vector<int> order; /* touched only by the loop */
    std::atomic<bool> done{false};
    std::atomic<int> wrong_thread{0};
    for (int i = 0; i < count; ++i) {
        REQUIRE(context->post([&, i]() {
            if (context->on_loop_thread() != (mode == async_mode::thread)) {
                ++wrong_thread;
            }
            order.push_back(i);
        }) == UCS_OK);
    }
    REQUIRE(context->post([&]() { done = true; }) == UCS_OK);
    if (mode == async_mode::poll) {
        CHECK(order.empty()); /* nothing runs before progress() */
    }
    REQUIRE(wait_for(*context, [&]() { return done.load(); }));

    REQUIRE(order.size() == count);
    for (int i = 0; i < count; ++i) {
        CHECK(order[i] == i);
    }
    CHECK(wrong_thread == 0);
    CHECK(context->stats().posted_run >= count + 1);
}

TEST_CASE("block() holds handlers back until unblock() (thread mode)", "[async]")
{
    auto context = make_context(async_mode::thread);
    auto efd     = make_event_fd();

    std::atomic<int> calls{0};
    async_handler_id id = 0;
    REQUIRE(context->add(
                efd.fd(), async_event::read,
                [&](async_handler_id, int, unsigned) {
        efd.drain();
        ++calls;
                },
                &id) == UCS_OK);

    for (int depth = 1; depth <= 2; ++depth) {
        const int calls_before  = calls;
        const auto waits_before = context->stats().blocked_waits;
        for (int i = 0; i < depth; ++i) {
            context->block(); /* recursive */
        }
        CHECK(context->is_blocked_by_me());
        REQUIRE(efd.signal() == UCS_OK);

        /* The loop thread reaches the handler and has to wait for us. */
        REQUIRE(wait_for([&]() { return context->stats().blocked_waits > waits_before; }));
        CHECK(calls == calls_before);

        for (int i = 0; i < depth - 1; ++i) {
            context->unblock();
        }
        CHECK(context->is_blocked_by_me()); /* still held once */
        CHECK(calls == calls_before);
        context->unblock();
        CHECK_FALSE(context->is_blocked_by_me());

        REQUIRE(wait_for([&]() { return calls.load() == calls_before + 1; }));
    }

    /* Timers and posted functions wait as well. */
    std::atomic<int> posted{0};
    context->block();
    const auto waits_before = context->stats().blocked_waits;
    REQUIRE(context->post([&]() { ++posted; }) == UCS_OK);
    REQUIRE(wait_for([&]() { return context->stats().blocked_waits > waits_before; }));
    CHECK(posted == 0);
    context->unblock();
    REQUIRE(wait_for([&]() { return posted.load() == 1; }));

    CHECK(context->remove(id) == UCS_OK);
}

TEST_CASE("block() holds handlers back until unblock() (poll mode)", "[async]")
{
    auto context = make_context(async_mode::poll);
    auto efd     = make_event_fd();

    std::atomic<int> calls{0};
    async_handler_id id = 0;
    REQUIRE(context->add(
                efd.fd(), async_event::read,
                [&](async_handler_id, int, unsigned) {
        efd.drain();
        ++calls;
                },
                &id) == UCS_OK);
    REQUIRE(efd.signal() == UCS_OK);

    context->block();
    for (int i = 0; i < 10; ++i) {
        CHECK(context->progress() == 0);
    }
    /* Another thread cannot progress either while we hold the block. */
    unsigned other_progress = 1;
    std::thread other([&]() { other_progress = context->progress(); });
    other.join();
    CHECK(other_progress == 0);
    CHECK(calls == 0);
    CHECK(fd_is_readable(efd.fd())); /* the event is still pending */
    context->unblock();

    REQUIRE(wait_for(*context, [&]() { return calls.load() == 1; }));
    CHECK_FALSE(fd_is_readable(efd.fd()));
    CHECK(context->remove(id) == UCS_OK);
}

TEST_CASE("handlers may block the context and add handlers themselves", "[async]")
{
    const auto mode = GENERATE(async_mode::thread, async_mode::poll);
    auto context    = make_context(mode);

    std::atomic<int> nested{0};
    std::atomic<int> added_status{1};
    std::atomic<int> progress_inside{-1};
    REQUIRE(context->post([&]() {
        context->block();
        async_handler_id timer_id = 0;
        added_status              = context->add_timer(
                         1ms, ucs::timer_mode::one_shot, [&](async_handler_id) { ++nested; }, &timer_id);
        /* Re-entering progress() from a handler is refused, not recursive. */
        progress_inside = static_cast<int>(context->progress());
        context->unblock();
    }) == UCS_OK);

    REQUIRE(wait_for(*context, [&]() { return nested.load() == 1; }));
    CHECK(added_status == UCS_OK);
    CHECK(progress_inside == 0);
}

TEST_CASE("a throwing callback is logged and the loop goes on", "[async]")
{
    const auto mode  = GENERATE(async_mode::thread, async_mode::poll);
    char path[]      = "/tmp/ucs_test_async_log_XXXXXX";
    const int tmp_fd = ::mkstemp(path);
    REQUIRE(tmp_fd >= 0);
    ::close(tmp_fd);
    REQUIRE(ucs::log_set_file(path) == UCS_OK);

    {
        auto context = make_context(mode);
        std::atomic<int> calls{0};
        for (int i = 0; i < 2; ++i) {
            REQUIRE(context->post([&]() {
                if (++calls == 1) {
                    throw std::runtime_error("test failure 1234");
                }
            }) == UCS_OK);
        }
        REQUIRE(wait_for(*context, [&]() { return calls.load() == 2; }));
    }

    ucs::log_set_file("stdout");
    const std::string log = read_text_file(path);
    ::unlink(path);
    CHECK(log.find("test failure 1234") != std::string::npos);
}

TEST_CASE("poll mode progress() is bounded for an fd nobody drains", "[async]")
{
    auto context = make_context(async_mode::poll);
    auto efd     = make_event_fd();

    std::atomic<int> calls{0};
    async_handler_id id = 0;
    REQUIRE(context->add(
                efd.fd(), async_event::read, [&](async_handler_id, int, unsigned) { ++calls; },
                &id) == UCS_OK);
    REQUIRE(efd.signal() == UCS_OK);

    unsigned ran = 0;
    REQUIRE(wait_for([&]() {
        ran = context->progress();
        return ran > 0;
    }));
    /* Level-triggered: called repeatedly, but progress() still returns. */
    CHECK(ran > 1);
    CHECK(ran <= 256);
    CHECK(calls == static_cast<int>(ran));
    CHECK(context->remove(id) == UCS_OK);
    CHECK(context->progress() == 0);
}

TEST_CASE("stop() with handlers registered", "[async]")
{
    const auto mode = GENERATE(async_mode::thread, async_mode::poll);
    auto context    = make_context(mode);
    pipe_fds pipe;
    auto efd = make_event_fd();
    REQUIRE_FALSE(fd_is_nonblocking(pipe.read_end));

    std::atomic<int> calls{0};
    async_handler_id pipe_id = 0, efd_id = 0, timer_id = 0;
    auto count = [&](async_handler_id, int, unsigned) { ++calls; };
    REQUIRE(context->add(pipe.read_end, async_event::read, count, &pipe_id) == UCS_OK);
    REQUIRE(context->add(efd.fd(), async_event::read, count, &efd_id) == UCS_OK);
    REQUIRE(context->add_timer(
                1ms, ucs::timer_mode::periodic, [&](async_handler_id) { ++calls; }, &timer_id) ==
            UCS_OK);
    CHECK(context->handler_count() == 3);

    context->stop();
    CHECK(context->is_stopped());
    const int calls_at_stop = calls;
    CHECK(context->handler_count() == 0);

    /* Nothing runs any more, whatever happens to the fds. */
    REQUIRE(efd.signal() == UCS_OK);
    REQUIRE(::write(pipe.write_end, "z", 1) == 1);
    CHECK(context->progress() == 0);
    CHECK(context->stats().fd_events + context->stats().timers_fired ==
          static_cast<uint64_t>(calls_at_stop));
    CHECK(calls == calls_at_stop);

    /* The fds are still the caller's: open, and the pipe blocking again. */
    CHECK(fd_is_open(pipe.read_end));
    CHECK(fd_is_open(efd.fd()));
    CHECK_FALSE(fd_is_nonblocking(pipe.read_end));
    char c = 0;
    CHECK(::read(pipe.read_end, &c, 1) == 1);
    CHECK(c == 'z');
    CHECK(efd.drain() == 1);

    async_handler_id id = 0;
    CHECK(context->add(efd.fd(), async_event::read, count, &id) == UCS_ERR_CANCELED);
    CHECK(context->add_timer(
              1ms, ucs::timer_mode::one_shot, [](async_handler_id) {}, &id) == UCS_ERR_CANCELED);
    CHECK(context->post([]() {}) == UCS_ERR_CANCELED);
    CHECK(context->remove(pipe_id) == UCS_ERR_NO_ELEM);

    context->stop(); /* twice is fine */
    CHECK(context->is_stopped());
    context.reset();
    CHECK(fd_is_open(efd.fd()));
}

TEST_CASE("destroying a context with live handlers leaves the fds open", "[async]")
{
    const auto mode = GENERATE(async_mode::thread, async_mode::poll);
    auto efd        = make_event_fd();
    std::atomic<int> calls{0};
    {
        auto context        = make_context(mode);
        async_handler_id id = 0;
        REQUIRE(context->add(
                    efd.fd(), async_event::read,
                    [&](async_handler_id, int, unsigned) {
            efd.drain();
            ++calls;
                    },
                    &id) == UCS_OK);
        REQUIRE(efd.signal() == UCS_OK);
        REQUIRE(wait_for(*context, [&]() { return calls.load() == 1; }));
        REQUIRE(efd.signal() == UCS_OK); /* pending at destruction */
    }
    CHECK(fd_is_open(efd.fd()));
    CHECK(fd_is_nonblocking(efd.fd())); /* was non-blocking before: kept */
    CHECK(calls <= 2);
}

TEST_CASE("remove() restores the blocking mode of the caller's fd", "[async]")
{
    const auto mode = GENERATE(async_mode::thread, async_mode::poll);
    auto context    = make_context(mode);
    pipe_fds pipe;
    REQUIRE_FALSE(fd_is_nonblocking(pipe.read_end));

    async_handler_id id = 0;
    REQUIRE(context->add(
                pipe.read_end, async_event::read, [](async_handler_id, int, unsigned) {}, &id) ==
            UCS_OK);
    REQUIRE(context->remove(id) == UCS_OK);
    CHECK_FALSE(fd_is_nonblocking(pipe.read_end));

    auto efd = make_event_fd();
    REQUIRE(context->add(
                efd.fd(), async_event::read, [](async_handler_id, int, unsigned) {}, &id) ==
            UCS_OK);
    REQUIRE(context->remove(id) == UCS_OK);
    CHECK(fd_is_nonblocking(efd.fd()));
}

TEST_CASE("stop() from inside a handler, then from the owner", "[async]")
{
    auto context = make_context(async_mode::thread);
    auto efd     = make_event_fd();

    std::atomic<int> calls{0};
    async_handler_id id = 0;
    REQUIRE(context->add(
                efd.fd(), async_event::read,
                [&](async_handler_id, int, unsigned) {
        ++calls;
        context->stop(); /* cannot join itself */
                },
                &id) == UCS_OK);
    REQUIRE(efd.signal() == UCS_OK);
    REQUIRE(wait_for([&]() { return context->is_stopped(); }));
    context->stop(); /* joins */
    CHECK(calls == 1);
    CHECK(context->handler_count() == 0);
    CHECK(fd_is_open(efd.fd()));
}

TEST_CASE("stop() while the caller holds block() does not deadlock", "[async]")
{
    auto context = make_context(async_mode::thread);
    auto efd     = make_event_fd();

    std::atomic<int> calls{0};
    async_handler_id id = 0;
    REQUIRE(context->add(
                efd.fd(), async_event::read, [&](async_handler_id, int, unsigned) { ++calls; },
                &id) == UCS_OK);

    context->block();
    REQUIRE(efd.signal() == UCS_OK);
    REQUIRE(wait_for([&]() { return context->stats().blocked_waits > 0; }));
    context->stop(); /* the waiting loop thread gives up */
    context->unblock();
    CHECK(calls == 0);
    CHECK(context->is_stopped());
}

TEST_CASE("async mode names", "[async]")
{
    CHECK(std::string(ucs::async_mode_name(async_mode::thread)) == "thread");
    CHECK(std::string(ucs::async_mode_name(async_mode::poll)) == "poll");
}

TEST_CASE("wait_fd() is readable exactly while a POLL-mode fd handler has work", "[async]")
{
    auto thread_context = make_context(async_mode::thread);
    int wfd             = -1;
    CHECK(thread_context->wait_fd(&wfd) == UCS_ERR_UNSUPPORTED);

    auto context = make_context(async_mode::poll);
    CHECK(context->wait_fd(nullptr) == UCS_ERR_INVALID_PARAM);

    /* A handler added before the first wait_fd() call is mirrored too. */
    auto before                = make_event_fd();
    async_handler_id before_id = 0;
    REQUIRE(context->add(
                before.fd(), async_event::read,
                [&](async_handler_id, int, unsigned) { before.drain(); }, &before_id) == UCS_OK);
    REQUIRE(context->wait_fd(&wfd) == UCS_OK);
    REQUIRE(wfd >= 0);
    int again = -1;
    CHECK(context->wait_fd(&again) == UCS_OK);
    CHECK(again == wfd);
    CHECK_FALSE(fd_is_readable(wfd));

    REQUIRE(before.signal() == UCS_OK);
    CHECK(fd_is_readable(wfd));
    REQUIRE(wait_for(*context, [&]() { return !fd_is_readable(wfd); }));

    /* Added after: a sleeper blocked in poll() wakes when another thread
     * makes the fd ready. */
    pipe_fds pipe;
    std::atomic<int> reads{0};
    async_handler_id pipe_id = 0;
    REQUIRE(context->add(
                pipe.read_end, async_event::read,
                [&](async_handler_id, int fd, unsigned) {
        char c;
        if (::read(fd, &c, 1) == 1) {
            ++reads;
        }
                },
                &pipe_id) == UCS_OK);
    CHECK_FALSE(fd_is_readable(wfd));
    std::atomic<bool> written{false};
    std::thread writer([&]() {
        /* Only makes it likely that the sleeper is inside poll() already;
         * the test holds either way. */
        std::this_thread::sleep_for(50ms);
        written = (::write(pipe.write_end, "x", 1) == 1);
    });
    struct pollfd pfd = {wfd, POLLIN, 0};
    const int ready   = ::poll(&pfd, 1, 10000);
    writer.join();
    REQUIRE(written);
    CHECK(ready == 1);
    REQUIRE(wait_for(*context, [&]() { return reads.load() == 1; }));
    CHECK_FALSE(fd_is_readable(wfd));

    /* Paused (modify to 0) and removed handlers no longer wake it. */
    REQUIRE(context->modify(pipe_id, 0) == UCS_OK);
    REQUIRE(::write(pipe.write_end, "y", 1) == 1);
    CHECK_FALSE(fd_is_readable(wfd));
    REQUIRE(context->modify(pipe_id, async_event::read) == UCS_OK);
    CHECK(fd_is_readable(wfd));
    REQUIRE(context->remove(pipe_id) == UCS_OK);
    CHECK_FALSE(fd_is_readable(wfd));

    /* Write interest maps to writability. */
    async_handler_id write_id = 0;
    REQUIRE(context->add(
                pipe.write_end, async_event::write, [](async_handler_id, int, unsigned) {},
                &write_id) == UCS_OK);
    CHECK(fd_is_readable(wfd));
    REQUIRE(context->remove(write_id) == UCS_OK);
    CHECK_FALSE(fd_is_readable(wfd));
    CHECK(context->remove(before_id) == UCS_OK);
}

TEST_CASE("wait_fd() turns readable when a POLL-mode timer is due, and only then", "[async]")
{
    auto context = make_context(async_mode::poll);
    int wfd      = -1;
    REQUIRE(context->wait_fd(&wfd) == UCS_OK);
    CHECK_FALSE(fd_is_readable(wfd)); /* no timer: nothing to wake for */

    std::atomic<int> shots{0}, ticks{0};
    async_handler_id shot_id = 0, tick_id = 0;
    REQUIRE(context->add_timer(
                120ms, ucs::timer_mode::one_shot, [&](async_handler_id) { ++shots; }, &shot_id) ==
            UCS_OK);
    CHECK_FALSE(fd_is_readable(wfd));

    /* A sleeper in poll() wakes at the deadline, not before, with nothing
     * else happening. */
    const auto start  = steady::now();
    struct pollfd pfd = {wfd, POLLIN, 0};
    CHECK(::poll(&pfd, 1, 5000) == 1);
    const auto slept = steady::now() - start;
    CHECK(slept >= 100ms);
    CHECK(slept < 3s);
    CHECK(shots == 0); /* it runs from progress, as always */
    REQUIRE(wait_for(*context, [&]() { return shots.load() == 1; }));
    CHECK_FALSE(fd_is_readable(wfd)); /* consumed; no timer left */

    /* A periodic timer wakes the sleeper at every tick; a removed one no
     * more. */
    REQUIRE(context->add_timer(
                30ms, ucs::timer_mode::periodic, [&](async_handler_id) { ++ticks; }, &tick_id) ==
            UCS_OK);
    for (int expected = 1; expected <= 3; ++expected) {
        pfd.revents = 0;
        CHECK(::poll(&pfd, 1, 5000) == 1);
        REQUIRE(wait_for(*context, [&]() { return ticks.load() >= expected; }));
    }
    REQUIRE(context->remove_timer(tick_id) == UCS_OK);
    CHECK_FALSE(fd_is_readable(wfd));
    pfd.revents = 0;
    CHECK(::poll(&pfd, 1, 100) == 0);
    CHECK(shots == 1);
}
