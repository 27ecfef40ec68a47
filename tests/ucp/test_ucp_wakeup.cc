/*
 * Wakeup: ucp_worker_get_efd / arm / wait / signal on every transport.
 * The race between arming and a message arriving is run thousands of times
 * as a two-process ping-pong in which both sides sleep between messages.
 * Every wait is bounded: a lost wakeup fails the test instead of hanging it.
 */
#include "ucp_peer.h"
#include "ucp_test_util.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

using namespace ucp_test;

namespace {

const char *const transports[]     = {"posix,cma", "sysv", "tcp"};
constexpr ucp_tag_t full_mask      = ~ucp_tag_t(0);
constexpr uint64_t wakeup_features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;

using steady = std::chrono::steady_clock;

enum class wait_result { done, lost_wakeup, timed_out };

/*
 * Completes `request` the way an application that sleeps does: progress,
 * arm, sleep on the efd. A sleep that ends by timeout after which one
 * progress completes the request is a lost wakeup (the data was there but
 * the fd never said so).
 */
wait_result sleep_until_done(ucp_worker_h worker, int efd, void *request, unsigned *sleeps,
                             std::chrono::seconds limit = std::chrono::seconds(60))
{
    const auto deadline = steady::now() + limit;
    while (ucp_request_check_status(request) == UCS_INPROGRESS) {
        if (steady::now() > deadline) {
            return wait_result::timed_out;
        }
        if (ucp_worker_progress(worker) != 0) {
            continue;
        }
        if (ucp_request_check_status(request) != UCS_INPROGRESS) {
            break;
        }
        ucs_status_t status = ucp_worker_arm(worker);
        if (status == UCS_ERR_BUSY) {
            continue;
        }
        if (status != UCS_OK) {
            return wait_result::timed_out;
        }
        ++*sleeps;
        if (!test::readable(efd, 5000)) {
            ucp_worker_progress(worker);
            if (ucp_request_check_status(request) != UCS_INPROGRESS) {
                return wait_result::lost_wakeup;
            }
        }
    }
    return wait_result::done;
}

/* The same with ucp_worker_wait (unbounded: used where the parent bounds us). */
ucs_status_t wait_blocking(ucp_worker_h worker, void *request)
{
    while (ucp_request_check_status(request) == UCS_INPROGRESS) {
        if (ucp_worker_progress(worker) != 0) {
            continue;
        }
        if (ucp_request_check_status(request) != UCS_INPROGRESS) {
            break;
        }
        ucs_status_t status = ucp_worker_wait(worker);
        if (status != UCS_OK) {
            return status;
        }
    }
    return UCS_OK;
}

/* Busy-waits `us` microseconds: moves an arrival across the peer's arm. */
void spin_us(unsigned us)
{
    const auto until = steady::now() + std::chrono::microseconds(us);
    while (steady::now() < until) {
    }
}

/* Delay before answering message i: 0..40 us, a different spread per side. */
unsigned pingpong_delay(unsigned i, unsigned salt)
{
    return ((i + salt) * 2654435761u >> 16) % 41;
}

/* Message i of the ping-pong: mostly small, every 97th past rendezvous. */
size_t pingpong_size(unsigned i)
{
    return (i % 97 == 96) ? 100000 + i : (i % 5) * 8;
}

/* A posted receive: `request` is nullptr when it completed at once (the
 * message was already there); `info` is filled either way on completion. */
struct posted_recv {
    ucs_status_ptr_t request = nullptr;
    ucp_tag_recv_info_t info{};
    bool failed = false;

    ucs_status_t finish()
    {
        if (request == nullptr) {
            return UCS_OK;
        }
        ucs_status_t status = ucp_tag_recv_request_test(request, &info);
        ucp_request_free(request);
        return status;
    }
};

void post_recv(ucp_worker_h worker, void *buffer, size_t length, ucp_tag_t tag, posted_recv *r)
{
    ucp_request_param_t param{};
    param.op_attr_mask       = UCP_OP_ATTR_FIELD_RECV_INFO;
    param.recv_info.tag_info = &r->info;
    r->request               = ucp_tag_recv_nbx(worker, buffer, length, tag, full_mask, &param);
    r->failed                = UCS_PTR_IS_ERR(r->request);
}

ucs_status_ptr_t post_send(ucp_ep_h ep, const void *buffer, size_t length, ucp_tag_t tag)
{
    ucp_request_param_t param{};
    return ucp_tag_send_nbx(ep, buffer, length, tag, &param);
}

/* Child of the ping-pong: echoes every message, sleeping in ucp_worker_wait. */
int pingpong_child(int fd, const char *tls, unsigned rounds)
{
    peer p;
    TEST_CHILD_CHECK(p.init(tls, wakeup_features) == UCS_OK);
    TEST_CHILD_CHECK(p.connect_over(fd));
    std::vector<uint8_t> buffer(200000);
    for (unsigned i = 0; i < rounds; ++i) {
        const size_t size = pingpong_size(i);
        posted_recv r;
        post_recv(p.worker, buffer.data(), buffer.size(), i, &r);
        TEST_CHILD_CHECK(!r.failed);
        if (r.request != nullptr) {
            TEST_CHILD_CHECK(wait_blocking(p.worker, r.request) == UCS_OK);
        }
        TEST_CHILD_CHECK(r.finish() == UCS_OK);
        TEST_CHILD_CHECK(r.info.length == size);
        TEST_CHILD_CHECK(check_pattern(buffer.data(), size, i));
        spin_us(pingpong_delay(i, 1));
        ucs_status_ptr_t sreq = post_send(p.ep, buffer.data(), size, i);
        TEST_CHILD_CHECK(!UCS_PTR_IS_ERR(sreq));
        if (sreq != nullptr) {
            TEST_CHILD_CHECK(wait_blocking(p.worker, sreq) == UCS_OK);
            ucp_request_free(sreq);
        }
    }
    ucp_request_param_t flush_param{};
    TEST_CHILD_CHECK(p.wait(ucp_ep_flush_nbx(p.ep, &flush_param)) == UCS_OK);
    TEST_CHILD_CHECK(test::sync_peer(fd));
    return 0;
}

} // namespace

TEST_CASE("wakeup calls need UCP_FEATURE_WAKEUP and valid arguments", "[ucp_wakeup]")
{
    peer plain;
    REQUIRE(plain.init("posix,cma") == UCS_OK);
    int fd = -1;
    CHECK(ucp_worker_get_efd(plain.worker, &fd) == UCS_ERR_INVALID_PARAM);
    CHECK(fd == -1);
    CHECK(ucp_worker_arm(plain.worker) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_worker_wait(plain.worker) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_worker_signal(plain.worker) == UCS_ERR_INVALID_PARAM);

    /* An external event fd needs the feature too. */
    int epfd = epoll_create1(EPOLL_CLOEXEC);
    REQUIRE(epfd >= 0);
    ucp_worker_params_t wparams{};
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_EVENT_FD;
    wparams.event_fd    = epfd;
    ucp_worker_h worker = nullptr;
    CHECK(ucp_worker_create(plain.context, &wparams, &worker) == UCS_ERR_INVALID_PARAM);
    CHECK(worker == nullptr);

    peer p;
    REQUIRE(p.init("posix,cma", wakeup_features) == UCS_OK);
    CHECK(ucp_worker_get_efd(nullptr, &fd) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_worker_get_efd(p.worker, nullptr) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_worker_arm(nullptr) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_worker_wait(nullptr) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_worker_signal(nullptr) == UCS_ERR_INVALID_PARAM);
    REQUIRE(ucp_worker_get_efd(p.worker, &fd) == UCS_OK);
    CHECK(fd >= 0);

    /* A bad external fd is refused, not crashed on. */
    wparams.event_fd = -5;
    CHECK(ucp_worker_create(p.context, &wparams, &worker) == UCS_ERR_INVALID_PARAM);
    ::close(epfd);

    /* wait_mem returns (x86 has no store wait) without touching memory. */
    uint64_t word = 0x1234;
    ucp_worker_wait_mem(p.worker, &word);
    ucp_worker_wait_mem(p.worker, nullptr);
    CHECK(word == 0x1234);
}

TEST_CASE("an idle armed worker sleeps, and signal wakes it", "[ucp_wakeup]")
{
    for (const char *tls : {"posix,cma", "sysv", "tcp", "self"}) {
        INFO("UCX_TLS=" << tls);
        peer p;
        REQUIRE(p.init(tls, wakeup_features) == UCS_OK);
        int efd;
        REQUIRE(ucp_worker_get_efd(p.worker, &efd) == UCS_OK);
        /* Nothing happens: arm ends up OK and the fd stays quiet. */
        REQUIRE(test::poll_until([&] { return ucp_worker_arm(p.worker) == UCS_OK; },
                                 [&] { ucp_worker_progress(p.worker); }));
        CHECK_FALSE(test::readable(efd, 50));
        /* A signal makes it readable, and the next arm reports (consumes) it. */
        REQUIRE(ucp_worker_signal(p.worker) == UCS_OK);
        CHECK(test::readable(efd, 1000));
        CHECK(ucp_worker_arm(p.worker) == UCS_ERR_BUSY);
        CHECK(ucp_worker_arm(p.worker) == UCS_OK);
        CHECK_FALSE(test::readable(efd, 0));
        /* ucp_worker_wait returns at once when a signal is pending. */
        REQUIRE(ucp_worker_signal(p.worker) == UCS_OK);
        CHECK(ucp_worker_wait(p.worker) == UCS_OK);
    }
}

TEST_CASE("ucp_worker_signal from another thread wakes ucp_worker_wait", "[ucp_wakeup]")
{
    for (const char *tls : {"posix,cma", "tcp"}) {
        INFO("UCX_TLS=" << tls);
        peer p;
        REQUIRE(p.init(tls, wakeup_features) == UCS_OK);
        constexpr unsigned rounds = 3000;
        std::atomic<unsigned> sent{0};
        std::atomic<unsigned> seen{0};
        std::atomic<bool> stuck{false};
        std::thread signaller([&] {
            for (unsigned i = 1; i <= rounds; ++i) {
                /* Vary the moment against the waiter's arm. */
                for (unsigned spin = (i * 7919u) % 2000; spin > 0; --spin) {
                    __asm__ __volatile__("" ::: "memory");
                }
                sent.store(i);
                ucp_worker_signal(p.worker);
                const auto deadline = steady::now() + std::chrono::seconds(10);
                while (seen.load() < i) {
                    if (steady::now() > deadline) {
                        /* The waiter missed the signal: unblock it for good. */
                        stuck.store(true);
                        while (seen.load() < rounds) {
                            ucp_worker_signal(p.worker);
                            std::this_thread::sleep_for(std::chrono::milliseconds(1));
                        }
                        return;
                    }
                    std::this_thread::yield();
                }
            }
        });
        for (unsigned i = 1; i <= rounds; ++i) {
            while (sent.load() < i) {
                REQUIRE(ucp_worker_wait(p.worker) == UCS_OK);
            }
            seen.store(stuck.load() ? rounds : i);
            if (stuck.load()) {
                break;
            }
        }
        signaller.join();
        CHECK_FALSE(stuck.load());
    }
}

TEST_CASE("arm is busy while a message waits, and the efd fires for one", "[ucp_wakeup]")
{
    for (const char *tls : transports) {
        INFO("UCX_TLS=" << tls);
        peer p;
        REQUIRE(p.init(tls, wakeup_features) == UCS_OK);
        test::child_process child([tls](int fd) {
            peer c;
            TEST_CHILD_CHECK(c.init(tls, wakeup_features) == UCS_OK);
            TEST_CHILD_CHECK(c.connect_over(fd));
            for (uint64_t i = 0; i < 3; ++i) {
                uint8_t go;
                TEST_CHILD_CHECK(c.recv_value_progress(fd, &go));
                TEST_CHILD_CHECK(c.send(&i, sizeof(i), 5) == UCS_OK);
            }
            TEST_CHILD_CHECK(test::sync_peer(fd));
            return 0;
        });
        REQUIRE(p.connect_over(child.fd()));
        int efd;
        REQUIRE(ucp_worker_get_efd(p.worker, &efd) == UCS_OK);
        for (uint64_t i = 0; i < 3; ++i) {
            /* Settle: arm succeeds once the connection traffic is handled. */
            REQUIRE(test::poll_until([&] { return ucp_worker_arm(p.worker) == UCS_OK; },
                                     [&] { ucp_worker_progress(p.worker); }));
            REQUIRE(test::send_value(child.fd(), uint8_t(1)));
            REQUIRE(test::readable(efd, 10000));
            /* Not progressed yet: arm must refuse to sleep. */
            CHECK(ucp_worker_arm(p.worker) == UCS_ERR_BUSY);
            uint64_t value = ~0ull;
            ucp_tag_recv_info_t info{};
            REQUIRE(p.recv(&value, sizeof(value), 5, full_mask, &info) == UCS_OK);
            CHECK(value == i);
        }
        REQUIRE(test::sync_peer(child.fd()));
        CHECK(child.wait() == 0);
    }
}

TEST_CASE("two processes ping-pong sleeping between messages: no lost wakeup", "[ucp_wakeup]")
{
    for (const char *tls : transports) {
        INFO("UCX_TLS=" << tls);
        constexpr unsigned rounds = 2000;
        peer p;
        REQUIRE(p.init(tls, wakeup_features) == UCS_OK);
        test::child_process child([tls](int fd) { return pingpong_child(fd, tls, rounds); });
        REQUIRE(p.connect_over(child.fd()));
        int efd;
        REQUIRE(ucp_worker_get_efd(p.worker, &efd) == UCS_OK);
        std::vector<uint8_t> out(200000), in(200000);
        unsigned lost = 0, sleeps = 0;
        for (unsigned i = 0; i < rounds; ++i) {
            const size_t size = pingpong_size(i);
            INFO("round " << i << " size " << size);
            fill_pattern(out.data(), size, i);
            posted_recv rr;
            post_recv(p.worker, in.data(), in.size(), i, &rr);
            REQUIRE_FALSE(rr.failed);
            spin_us(pingpong_delay(i, 0));
            ucs_status_ptr_t sreq = post_send(p.ep, out.data(), size, i);
            REQUIRE(!UCS_PTR_IS_ERR(sreq));
            if (sreq != nullptr) {
                wait_result r = sleep_until_done(p.worker, efd, sreq, &sleeps);
                lost += (r == wait_result::lost_wakeup);
                REQUIRE(r != wait_result::timed_out);
                CHECK(ucp_request_check_status(sreq) == UCS_OK);
                ucp_request_free(sreq);
            }
            if (rr.request != nullptr) {
                wait_result r = sleep_until_done(p.worker, efd, rr.request, &sleeps);
                lost += (r == wait_result::lost_wakeup);
                REQUIRE(r != wait_result::timed_out);
            }
            REQUIRE(rr.finish() == UCS_OK);
            REQUIRE(rr.info.length == size);
            REQUIRE(check_pattern(in.data(), size, i));
        }
        CHECK(lost == 0);
        /* The race was really run: most rounds went to sleep on the fd. */
        /* The race was really run: rounds armed and slept on the fd (how
         * many depends on how the two processes share the CPUs). */
        INFO("rounds that slept: " << sleeps);
        CHECK(sleeps > 0);
        REQUIRE(test::sync_peer(child.fd()));
        CHECK(child.wait() == 0);
    }
}

TEST_CASE("an external epoll set reports the worker's events with its user data", "[ucp_wakeup]")
{
    const char *tls = "posix,cma";
    int epfd        = epoll_create1(EPOLL_CLOEXEC);
    REQUIRE(epfd >= 0);
    int marker = 0;

    ucp_config_t *config;
    REQUIRE(ucp_config_read(nullptr, nullptr, &config) == UCS_OK);
    REQUIRE(ucp_config_modify(config, "TLS", tls) == UCS_OK);
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = wakeup_features;
    peer p;
    REQUIRE(ucp_init(&params, config, &p.context) == UCS_OK);
    ucp_config_release(config);
    ucp_worker_params_t wparams{};
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_EVENT_FD | UCP_WORKER_PARAM_FIELD_USER_DATA;
    wparams.event_fd   = epfd;
    wparams.user_data  = &marker;
    REQUIRE(ucp_worker_create(p.context, &wparams, &p.worker) == UCS_OK);
    int fd;
    CHECK(ucp_worker_get_efd(p.worker, &fd) == UCS_ERR_UNSUPPORTED);

    test::child_process child([tls](int sock) {
        peer c;
        TEST_CHILD_CHECK(c.init(tls, wakeup_features) == UCS_OK);
        TEST_CHILD_CHECK(c.connect_over(sock));
        uint8_t go;
        TEST_CHILD_CHECK(c.recv_value_progress(sock, &go));
        uint64_t value = 77;
        TEST_CHILD_CHECK(c.send(&value, sizeof(value), 9) == UCS_OK);
        TEST_CHILD_CHECK(test::sync_peer(sock));
        return 0;
    });
    REQUIRE(p.connect_over(child.fd()));
    /* Armed and nothing sent: the set is quiet. Wireup traffic still on its
     * way (a loaded machine) may wake it once first; then progress and arm
     * again. */
    epoll_event ev{};
    REQUIRE(test::poll_until(
        [&] { return (ucp_worker_arm(p.worker) == UCS_OK) && (epoll_wait(epfd, &ev, 1, 0) == 0); },
        [&] { ucp_worker_progress(p.worker); }));
    REQUIRE(test::send_value(child.fd(), uint8_t(1)));
    REQUIRE(epoll_wait(epfd, &ev, 1, 10000) == 1);
    /* epoll_event is packed: copy the pointer out before Catch takes a
     * reference to it (a misaligned one otherwise). */
    void *const woken = ev.data.ptr;
    CHECK(woken == &marker);
    uint64_t value = 0;
    ucp_tag_recv_info_t info{};
    REQUIRE(p.recv(&value, sizeof(value), 9, full_mask, &info) == UCS_OK);
    CHECK(value == 77);
    /* ucp_worker_wait still works: it sleeps on the worker's own set. */
    REQUIRE(ucp_worker_signal(p.worker) == UCS_OK);
    CHECK(ucp_worker_wait(p.worker) == UCS_OK);
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(child.wait() == 0);

    /* Destroying the worker takes its fd out of the application's set. */
    REQUIRE(ucp_worker_signal(p.worker) == UCS_OK);
    p.close();
    CHECK(epoll_wait(epfd, &ev, 1, 0) == 0);
    ::close(epfd);
}

TEST_CASE("a multi-threaded worker: wait in one thread, progress and signal in another",
          "[ucp_wakeup]")
{
    peer p;
    REQUIRE(p.init("posix,cma", wakeup_features) == UCS_OK);
    ucp_worker_params_t wparams{};
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_MULTI;
    ucp_worker_h worker;
    REQUIRE(ucp_worker_create(p.context, &wparams, &worker) == UCS_OK);
    constexpr unsigned rounds = 2000;
    std::atomic<unsigned> sent{0};
    std::atomic<bool> done{false};
    std::atomic<bool> stuck{false};
    std::thread other([&] {
        for (unsigned i = 1; i <= rounds; ++i) {
            ucp_worker_progress(worker); /* takes the lock the waiter's arm takes */
            sent.store(i);
            ucp_worker_signal(worker);
        }
        /* The last signal must wake the waiter; if it does not, say so and
         * unblock it. */
        const auto deadline = steady::now() + std::chrono::seconds(10);
        while (!done.load() && (steady::now() < deadline)) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        stuck.store(!done.load());
        while (!done.load()) {
            ucp_worker_signal(worker);
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    });
    /* At least one wait, even if the other thread finished all its rounds
     * before this one got here (it then signals until `done`). */
    const auto deadline = steady::now() + std::chrono::seconds(60);
    do {
        REQUIRE(ucp_worker_wait(worker) == UCS_OK);
    } while ((sent.load() < rounds) && (steady::now() < deadline));
    const bool all = (sent.load() == rounds);
    done.store(true);
    other.join();
    CHECK(all);
    CHECK_FALSE(stuck.load());
    ucp_worker_destroy(worker);
}
