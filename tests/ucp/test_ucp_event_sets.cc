/*
 * Poll sets, wait sets and ucp_trywait (ucp/api/ucp_ext.h): membership and
 * its errors; poll reporting workers with traffic and counters whose
 * success or error value moved, never losing one when `count` is small;
 * wait sets of every kind woken by counters, messages from another process
 * and signals, members added while a thread waits, the POLLFD change index
 * and a too-small array; the lost-wakeup race 100000 times between two
 * threads and between two processes; an idle waiter uses no CPU.
 */
#include "ext_test_util.h"
#include "ucp_peer.h"

#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

using namespace ucp_test;

namespace {

constexpr uint64_t features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;

ucp_object_t worker_object(ucp_worker_h worker)
{
    return {UCP_OBJECT_WORKER, worker};
}
ucp_object_t cntr_object(ucp_cntr_h cntr)
{
    return {UCP_OBJECT_CNTR, cntr};
}
ucp_object_t set_object(ucp_waitset_h set)
{
    return {UCP_OBJECT_WAITSET, set};
}

/* The user data a poll returns, as a vector. */
std::vector<void *> poll_all(ucp_pollset_h set, int count)
{
    std::vector<void *> found(size_t(std::max(count, 1)));
    const int n = ucp_pollset_poll(set, found.data(), count);
    found.resize((n > 0) ? size_t(n) : 0);
    return found;
}

double thread_cpu_seconds()
{
    rusage usage{};
    getrusage(RUSAGE_THREAD, &usage);
    return double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

} // namespace

TEST_CASE("poll sets: members, and what a poll reports", "[ucp_sets]")
{
    peer p;
    REQUIRE(p.init("self", features) == UCS_OK);
    REQUIRE(p.connect(p.address()) == UCS_OK);
    ucp_pollset_h set;
    REQUIRE(ucp_pollset_create(p.context, &set) == UCS_OK);
    ucp_cntr_h a = new_cntr(p.worker), b = new_cntr(p.worker), c = new_cntr(p.worker);
    REQUIRE(((a != nullptr) && (b != nullptr) && (c != nullptr)));
    int tag_a, tag_b, tag_c, tag_w;
    const ucp_object_t wo = worker_object(p.worker);
    REQUIRE(ucp_pollset_add(set, &wo, &tag_w) == UCS_OK);
    for (auto [cntr, tag] : {std::pair{a, &tag_a}, {b, &tag_b}, {c, &tag_c}}) {
        const ucp_object_t o = cntr_object(cntr);
        REQUIRE(ucp_pollset_add(set, &o, tag) == UCS_OK);
    }

    SECTION("membership errors") {
        const ucp_object_t o = cntr_object(a);
        CHECK(ucp_pollset_add(set, &o, nullptr) == UCS_ERR_ALREADY_EXISTS);
        CHECK(ucp_pollset_destroy(set) == UCS_ERR_BUSY);
        CHECK(ucp_cntr_destroy(a) == UCS_ERR_BUSY); /* in a set */
        ucp_cntr_h loose      = new_cntr(p.worker);
        const ucp_object_t lo = cntr_object(loose);
        CHECK(ucp_pollset_remove(set, &lo) == UCS_ERR_NO_ELEM);
        CHECK(ucp_cntr_destroy(loose) == UCS_OK);
        CHECK(ucp_pollset_add(set, &lo, nullptr) == UCS_ERR_INVALID_PARAM); /* dead */
        peer other;
        REQUIRE(other.init("self", features) == UCS_OK);
        const ucp_object_t foreign = worker_object(other.worker);
        CHECK(ucp_pollset_add(set, &foreign, nullptr) == UCS_ERR_INVALID_PARAM);
        const ucp_object_t bad{UCP_OBJECT_WAITSET, &tag_a};
        CHECK(ucp_pollset_add(set, &bad, nullptr) == UCS_ERR_INVALID_PARAM);
        CHECK(ucp_pollset_poll(set, nullptr, 1) == UCS_ERR_INVALID_PARAM);
        CHECK(ucp_pollset_poll(nullptr, nullptr, 0) == UCS_ERR_INVALID_PARAM);
    }

    SECTION("counters that moved, in the success or the error value only") {
        while (!poll_all(set, 8).empty()) { /* the worker's start-up work */
        }
        CHECK(ucp_cntr_add(a, 1) == UCS_OK);
        CHECK(ucp_cntr_add_err(c, 1) == UCS_OK);
        auto found = poll_all(set, 8);
        std::sort(found.begin(), found.end());
        std::vector<void *> expected{&tag_a, &tag_c};
        std::sort(expected.begin(), expected.end());
        CHECK(found == expected);
        CHECK(poll_all(set, 8).empty());     /* reported once */
        CHECK(ucp_cntr_set(b, 0) == UCS_OK); /* no change of value: no event */
        CHECK(poll_all(set, 8).empty());
    }

    SECTION("a worker with an incoming message") {
        /* Another worker sends over shared memory: the message waits in our
         * transport until the poll's progress takes it. */
        peer receiver, sender;
        REQUIRE(receiver.init("posix", features) == UCS_OK);
        REQUIRE(sender.init("posix", features) == UCS_OK);
        REQUIRE(sender.connect(receiver.address()) == UCS_OK);
        ucp_pollset_h rset;
        REQUIRE(ucp_pollset_create(receiver.context, &rset) == UCS_OK);
        const ucp_object_t ro = worker_object(receiver.worker);
        REQUIRE(ucp_pollset_add(rset, &ro, &tag_w) == UCS_OK);
        while (!poll_all(rset, 8).empty()) {
        }
        uint64_t value = 1;
        CHECK(sender.send(&value, sizeof(value), 1) == UCS_OK);
        bool seen = false;
        for (int i = 0; (i < 1000) && !seen; ++i) {
            seen = (poll_all(rset, 8) == std::vector<void *>{&tag_w});
            ucp_worker_progress(sender.worker);
        }
        CHECK(seen);
        ucp_tag_recv_info_t info{};
        CHECK(receiver.recv(&value, sizeof(value), 1, ~ucp_tag_t(0), &info) == UCS_OK);
        CHECK(ucp_pollset_remove(rset, &ro) == UCS_OK);
        CHECK(ucp_pollset_destroy(rset) == UCS_OK);
    }

    SECTION("fewer places than ready members: the rest come next, none is lost") {
        while (!poll_all(set, 8).empty()) {
        }
        for (ucp_cntr_h cntr : {a, b, c}) {
            CHECK(ucp_cntr_add(cntr, 1) == UCS_OK);
        }
        std::vector<void *> all;
        for (int i = 0; i < 3; ++i) {
            auto one = poll_all(set, 1);
            CHECK(one.size() == 1);
            all.insert(all.end(), one.begin(), one.end());
        }
        std::sort(all.begin(), all.end());
        std::vector<void *> expected{&tag_a, &tag_b, &tag_c};
        std::sort(expected.begin(), expected.end());
        CHECK(all == expected);
        CHECK(poll_all(set, 8).empty());
    }

    for (const ucp_object_t &o : {wo, cntr_object(a), cntr_object(b), cntr_object(c)}) {
        CHECK(ucp_pollset_remove(set, &o) == UCS_OK);
    }
    CHECK(ucp_pollset_destroy(set) == UCS_OK);
    CHECK(ucp_pollset_destroy(set) == UCS_ERR_INVALID_PARAM);
    for (ucp_cntr_h cntr : {a, b, c}) {
        CHECK(ucp_cntr_destroy(cntr) == UCS_OK);
    }
}

TEST_CASE("wait sets: every kind woken by counters, signals and new members", "[ucp_sets]")
{
    const ucp_wait_obj_t kind = GENERATE(UCP_WAIT_UNSPEC, UCP_WAIT_FD, UCP_WAIT_POLLFD,
                                         UCP_WAIT_YIELD);
    CAPTURE(int(kind));
    peer p;
    REQUIRE(p.init("self", features) == UCS_OK);
    ucp_waitset_h set;
    REQUIRE(ucp_waitset_create(p.context, kind, &set) == UCS_OK);
    ucp_cntr_h cntr = new_cntr(p.worker);
    REQUIRE(cntr != nullptr);
    const ucp_object_t co = cntr_object(cntr), wo = worker_object(p.worker);
    REQUIRE(ucp_waitset_add(set, &co) == UCS_OK);
    REQUIRE(ucp_waitset_add(set, &wo) == UCS_OK);
    CHECK(ucp_waitset_add(set, &co) == UCS_ERR_ALREADY_EXISTS);
    /* Drained: the adds signalled the set, the worker has start-up work. */
    auto drain = [&] {
        while (ucp_waitset_wait(set, 0) == UCS_OK) {
            while (ucp_worker_progress(p.worker) != 0) {
            }
        }
    };
    drain();
    CHECK(ucp_waitset_wait(set, 50) == UCS_ERR_TIMED_OUT);

    int fd = -1;
    CHECK(ucp_waitset_get_fd(set, &fd) ==
          (((kind == UCP_WAIT_FD) || (kind == UCP_WAIT_UNSPEC)) ? UCS_OK : UCS_ERR_UNSUPPORTED));

    SECTION("a counter changed by another thread") {
        std::thread adder([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            ucp_cntr_add(cntr, 1);
        });
        CHECK(ucp_waitset_wait(set, 10000) == UCS_OK);
        adder.join();
        CHECK(ucp_cntr_read(cntr) == 1);
    }

    SECTION("a signal from another thread") {
        std::thread signaller([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            ucp_waitset_signal(set);
        });
        CHECK(ucp_waitset_wait(set, 10000) == UCS_OK);
        signaller.join();
        drain();
    }

    SECTION("a member added while another thread waits, then its change") {
        ucp_cntr_h late = new_cntr(p.worker);
        REQUIRE(late != nullptr);
        const ucp_object_t lo = cntr_object(late);
        /* The waiter (the only thread progressing meanwhile) sleeps until
         * the new member changes: the add wakes it once, and its next
         * rounds must arm the new member too, or it sleeps past the change. */
        std::atomic<bool> saw{false}, timed_out{false};
        std::thread waiter([&] {
            while (!saw.load()) {
                if (ucp_waitset_wait(set, 10000) != UCS_OK) {
                    timed_out = true;
                    return;
                }
                saw = ucp_cntr_read(late) == 1;
            }
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        REQUIRE(ucp_waitset_add(set, &lo) == UCS_OK);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        CHECK(ucp_cntr_add(late, 1) == UCS_OK);
        waiter.join();
        CHECK(saw.load());
        CHECK_FALSE(timed_out.load());
        CHECK(ucp_waitset_remove(set, &lo) == UCS_OK);
        CHECK(ucp_waitset_remove(set, &lo) == UCS_ERR_NO_ELEM);
        CHECK(ucp_cntr_destroy(late) == UCS_OK);
    }

    SECTION("POLLFD: the fds, a change index that moves, a too-small array") {
        if (kind == UCP_WAIT_POLLFD) {
            ucp_waitset_pollfd_t pfd{};
            CHECK(ucp_waitset_get_pollfd(set, &pfd) == UCS_ERR_BUFFER_TOO_SMALL);
            CHECK(pfd.nfds == 3); /* signal, counter, worker */
            const uint64_t index = pfd.change_index;
            std::vector<pollfd> fds(pfd.nfds);
            pfd.fds = fds.data();
            CHECK(ucp_waitset_get_pollfd(set, &pfd) == UCS_OK);
            int cntr_fd, worker_fd;
            REQUIRE(ucp_cntr_get_fd(cntr, &cntr_fd) == UCS_OK);
            REQUIRE(ucp_worker_get_efd(p.worker, &worker_fd) == UCS_OK);
            CHECK(fds[1].fd == cntr_fd);
            CHECK(fds[2].fd == worker_fd);
            CHECK(ucp_waitset_remove(set, &co) == UCS_OK);
            pfd.nfds = 0;
            CHECK(ucp_waitset_get_pollfd(set, &pfd) == UCS_ERR_BUFFER_TOO_SMALL);
            CHECK(pfd.change_index != index);
            CHECK(pfd.nfds == 2);
            REQUIRE(ucp_waitset_add(set, &co) == UCS_OK);
            /* Sleeping on the array after trywait: a change wakes it. */
            drain();
            pfd.nfds = fds.size();
            REQUIRE(ucp_waitset_get_pollfd(set, &pfd) == UCS_OK);
            const ucp_object_t so = set_object(set);
            REQUIRE(ucp_trywait(&so, 1) == UCS_OK);
            std::thread adder([&] { ucp_cntr_add(cntr, 1); });
            CHECK(::poll(fds.data(), pfd.nfds, 10000) > 0);
            adder.join();
        } else {
            ucp_waitset_pollfd_t pfd{};
            CHECK(ucp_waitset_get_pollfd(set, &pfd) == UCS_ERR_UNSUPPORTED);
        }
    }

    CHECK(ucp_waitset_destroy(set) == UCS_ERR_BUSY);
    CHECK(ucp_waitset_remove(set, &co) == UCS_OK);
    CHECK(ucp_waitset_remove(set, &wo) == UCS_OK);
    CHECK(ucp_waitset_destroy(set) == UCS_OK);
    CHECK(ucp_cntr_destroy(cntr) == UCS_OK);
}

TEST_CASE("wait sets: bad arguments, trywait, a worker without wakeup, and members that go "
          "with their worker",
          "[ucp_sets]")
{
    peer p;
    REQUIRE(p.init("self", features) == UCS_OK);
    ucp_waitset_h set;
    CHECK(ucp_waitset_create(p.context, ucp_wait_obj_t(99), &set) == UCS_ERR_INVALID_PARAM);
    REQUIRE(ucp_waitset_create(p.context, UCP_WAIT_FD, &set) == UCS_OK);
    peer plain;
    REQUIRE(plain.init("self", UCP_FEATURE_TAG) == UCS_OK);
    const ucp_object_t no_wakeup = worker_object(plain.worker);
    ucp_waitset_h plain_set;
    REQUIRE(ucp_waitset_create(plain.context, UCP_WAIT_FD, &plain_set) == UCS_OK);
    CHECK(ucp_waitset_add(plain_set, &no_wakeup) == UCS_ERR_UNSUPPORTED);
    CHECK(ucp_waitset_destroy(plain_set) == UCS_OK);
    CHECK(ucp_trywait(nullptr, 1) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_trywait(nullptr, 0) == UCS_OK);

    ucp_cntr_h cntr       = new_cntr(p.worker);
    const ucp_object_t co = cntr_object(cntr), wo = worker_object(p.worker), so = set_object(set);
    REQUIRE(ucp_waitset_add(set, &co) == UCS_OK);
    REQUIRE(ucp_waitset_add(set, &wo) == UCS_OK);
    /* trywait over a counter, a worker and a set: busy until drained. */
    const ucp_object_t objects[] = {co, wo, so};
    int rounds                   = 0;
    while (ucp_trywait(objects, 3) == UCS_ERR_BUSY) {
        ucp_worker_progress(p.worker);
        REQUIRE(++rounds < 10000);
    }
    CHECK(ucp_cntr_add(cntr, 1) == UCS_OK);
    CHECK(ucp_trywait(&co, 1) == UCS_ERR_BUSY);
    CHECK(ucp_waitset_signal(set) == UCS_OK);
    CHECK(ucp_trywait(&so, 1) == UCS_ERR_BUSY);

    /* The worker goes with its counter while both are in the set: the set
     * forgets them (and can be destroyed empty). */
    p.close();
    CHECK(ucp_waitset_destroy(set) == UCS_OK);
}

namespace {

constexpr unsigned race_rounds = 100000;

} // namespace

TEST_CASE("wait sets: no lost wake-up, 100000 times between two threads", "[ucp_sets]")
{
    peer p;
    REQUIRE(p.init("self", features) == UCS_OK);
    ucp_waitset_h set;
    REQUIRE(ucp_waitset_create(p.context, UCP_WAIT_FD, &set) == UCS_OK);
    ucp_cntr_h cntr       = new_cntr(p.worker);
    const ucp_object_t co = cntr_object(cntr);
    REQUIRE(ucp_waitset_add(set, &co) == UCS_OK);
    /* The adder makes change i only once the waiter saw change i - 1, so
     * the waiter goes to sleep before most changes: a lost wake-up shows as
     * a wait that times out. */
    std::atomic<uint64_t> seen{0};
    unsigned timeouts = 0;
    std::thread adder([&] {
        for (uint64_t i = 1; i <= race_rounds; ++i) {
            ucp_cntr_add(cntr, 1);
            while (seen.load(std::memory_order_acquire) < i) {
            }
        }
    });
    while (seen.load() < race_rounds) {
        if (ucp_waitset_wait(set, 5000) == UCS_ERR_TIMED_OUT) {
            ++timeouts;
            break;
        }
        seen.store(ucp_cntr_read(cntr), std::memory_order_release);
    }
    if (timeouts != 0) {
        seen.store(race_rounds);
    }
    adder.join();
    CHECK(timeouts == 0);
    CHECK(ucp_waitset_remove(set, &co) == UCS_OK);
    CHECK(ucp_waitset_destroy(set) == UCS_OK);
    CHECK(ucp_cntr_destroy(cntr) == UCS_OK);
}

namespace {

/* Sends `race_rounds` messages, each after the answer to the last. */
int pinger(int fd, const char *tls)
{
    peer c;
    TEST_CHILD_CHECK(c.init(tls, UCP_FEATURE_TAG) == UCS_OK);
    TEST_CHILD_CHECK(c.connect_over(fd));
    uint32_t value = 0;
    for (uint32_t i = 0; i < race_rounds; ++i) {
        TEST_CHILD_CHECK(c.send(&i, sizeof(i), 1) == UCS_OK);
        ucp_tag_recv_info_t info{};
        TEST_CHILD_CHECK(c.recv(&value, sizeof(value), 2, ~ucp_tag_t(0), &info) == UCS_OK);
        TEST_CHILD_CHECK(value == i);
    }
    uint8_t done;
    TEST_CHILD_CHECK(c.recv_value_progress(fd, &done));
    return 0;
}

} // namespace

TEST_CASE("wait sets: no lost wake-up, 100000 messages from another process", "[ucp_sets]")
{
    const char *tls = "posix,self";
    peer p;
    REQUIRE(p.init(tls, features) == UCS_OK);
    test::child_process child([tls](int fd) { return pinger(fd, tls); });
    REQUIRE(p.connect_over(child.fd()));
    ucp_waitset_h set;
    REQUIRE(ucp_waitset_create(p.context, UCP_WAIT_FD, &set) == UCS_OK);
    const ucp_object_t wo = worker_object(p.worker);
    REQUIRE(ucp_waitset_add(set, &wo) == UCS_OK);
    /* Receive, answer, sleep: every message must wake us. */
    unsigned timeouts = 0, slept = 0;
    for (uint32_t i = 0; (i < race_rounds) && (timeouts == 0); ++i) {
        uint32_t value = ~0u;
        ucp_request_param_t param{};
        ucs_status_ptr_t r = ucp_tag_recv_nbx(p.worker, &value, sizeof(value), 1, ~ucp_tag_t(0),
                                              &param);
        REQUIRE(!UCS_PTR_IS_ERR(r));
        while ((r != nullptr) && (ucp_request_check_status(r) == UCS_INPROGRESS)) {
            if (ucp_worker_progress(p.worker) != 0) {
                continue;
            }
            ++slept;
            if (ucp_waitset_wait(set, 5000) == UCS_ERR_TIMED_OUT) {
                ++timeouts;
                break;
            }
        }
        if (r != nullptr) {
            ucp_request_free(r);
        }
        if (timeouts == 0) {
            REQUIRE(value == i);
            REQUIRE(p.send(&value, sizeof(value), 2) == UCS_OK);
        }
    }
    CHECK(timeouts == 0);
    INFO("waits that slept or armed: " << slept);
    CHECK(slept > 0);
    REQUIRE(test::send_value(child.fd(), uint8_t(1)));
    CHECK(child.wait() == 0);
    CHECK(ucp_waitset_remove(set, &wo) == UCS_OK);
    CHECK(ucp_waitset_destroy(set) == UCS_OK);
}

TEST_CASE("wait sets: a waiting thread uses no CPU", "[ucp_sets]")
{
    const char *tls = GENERATE("self", "posix,self", "tcp,self");
    CAPTURE(tls);
    peer p;
    REQUIRE(p.init(tls, features) == UCS_OK);
    ucp_waitset_h set;
    REQUIRE(ucp_waitset_create(p.context, UCP_WAIT_FD, &set) == UCS_OK);
    ucp_cntr_h cntr       = new_cntr(p.worker);
    const ucp_object_t co = cntr_object(cntr), wo = worker_object(p.worker);
    REQUIRE(ucp_waitset_add(set, &co) == UCS_OK);
    REQUIRE(ucp_waitset_add(set, &wo) == UCS_OK);
    while (ucp_waitset_wait(set, 0) == UCS_OK) {
        ucp_worker_progress(p.worker);
    }
    const double before = thread_cpu_seconds();
    CHECK(ucp_waitset_wait(set, 300) == UCS_ERR_TIMED_OUT);
    const double used = thread_cpu_seconds() - before;
    INFO("CPU seconds used in a 300 ms wait: " << used);
    CHECK(used < 0.03);
    CHECK(ucp_waitset_remove(set, &co) == UCS_OK);
    CHECK(ucp_waitset_remove(set, &wo) == UCS_OK);
    CHECK(ucp_waitset_destroy(set) == UCS_OK);
    CHECK(ucp_cntr_destroy(cntr) == UCS_OK);
}
