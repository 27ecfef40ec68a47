/*
 * Completion counters (ucp/api/ucp_ext.h): values, wrap-around, wait with
 * its three outcomes, the fd and arm, destroy, and a counter bumped from an
 * active-message handler while ucp_cntr_wait progresses (and sleeps on)
 * the worker, with the messages coming from another process.
 */
#include "ucp_peer.h"

#include <ucp/api/ucp_ext.h>

#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

using namespace ucp_test;

namespace {

constexpr uint64_t wakeup_features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;

ucp_cntr_h make_cntr(ucp_worker_h worker, uint64_t flags = 0, void *user_data = nullptr)
{
    ucp_cntr_params_t params{};
    params.field_mask = UCP_CNTR_PARAM_FIELD_FLAGS | UCP_CNTR_PARAM_FIELD_USER_DATA;
    params.flags      = flags;
    params.user_data  = user_data;
    ucp_cntr_h cntr   = nullptr;
    REQUIRE(ucp_cntr_create(worker, &params, &cntr) == UCS_OK);
    REQUIRE(cntr != nullptr);
    return cntr;
}

} // namespace

TEST_CASE("counter values: add, set, errors apart, wrap modulo 2^64", "[ucp_cntr]")
{
    peer p;
    REQUIRE(p.init("self", UCP_FEATURE_AM) == UCS_OK);
    int marker;
    ucp_cntr_h c = make_cntr(p.worker, UCP_CNTR_FLAG_EVENTS_BYTES, &marker);

    ucp_cntr_attr_t attr{};
    attr.field_mask = UCP_CNTR_ATTR_FIELD_FLAGS | UCP_CNTR_ATTR_FIELD_USER_DATA |
                      UCP_CNTR_ATTR_FIELD_WORKER;
    REQUIRE(ucp_cntr_query(c, &attr) == UCS_OK);
    CHECK(attr.flags == UCP_CNTR_FLAG_EVENTS_BYTES);
    CHECK(attr.user_data == &marker);
    CHECK(attr.worker == p.worker);

    CHECK(ucp_cntr_read(c) == 0);
    CHECK(ucp_cntr_read_err(c) == 0);
    CHECK(ucp_cntr_add(c, 5) == UCS_OK);
    CHECK(ucp_cntr_add(c, 7) == UCS_OK);
    CHECK(ucp_cntr_read(c) == 12);
    CHECK(ucp_cntr_add_err(c, 2) == UCS_OK);
    CHECK(ucp_cntr_read_err(c) == 2);
    CHECK(ucp_cntr_read(c) == 12);       /* the two values are apart */
    CHECK(ucp_cntr_set(c, 3) == UCS_OK); /* lower than before: allowed */
    CHECK(ucp_cntr_read(c) == 3);
    CHECK(ucp_cntr_set_err(c, 0) == UCS_OK);
    CHECK(ucp_cntr_read_err(c) == 0);

    CHECK(ucp_cntr_set(c, UINT64_MAX - 1) == UCS_OK);
    CHECK(ucp_cntr_wait(c, UINT64_MAX, 0) == UCS_ERR_TIMED_OUT);
    CHECK(ucp_cntr_add(c, 1) == UCS_OK);
    CHECK(ucp_cntr_wait(c, UINT64_MAX, 0) == UCS_OK); /* the 2^64 - 1 edge */
    CHECK(ucp_cntr_add(c, 2) == UCS_OK);
    CHECK(ucp_cntr_read(c) == 1); /* wrapped */

    CHECK(ucp_cntr_destroy(c) == UCS_OK);
    p.close();
}

TEST_CASE("counter calls refuse bad arguments and a destroyed counter", "[ucp_cntr]")
{
    peer p;
    REQUIRE(p.init("self", UCP_FEATURE_AM) == UCS_OK);
    ucp_cntr_params_t params{};
    ucp_cntr_h c = nullptr;
    CHECK(ucp_cntr_create(nullptr, &params, &c) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_cntr_create(p.worker, nullptr, &c) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_cntr_create(p.worker, &params, nullptr) == UCS_ERR_INVALID_PARAM);
    params.field_mask = UCS_BIT(40);
    CHECK(ucp_cntr_create(p.worker, &params, &c) == UCS_ERR_INVALID_PARAM);
    params.field_mask = UCP_CNTR_PARAM_FIELD_FLAGS;
    params.flags      = UCS_BIT(9);
    CHECK(ucp_cntr_create(p.worker, &params, &c) == UCS_ERR_INVALID_PARAM);
    CHECK(c == nullptr);

    CHECK(ucp_cntr_add(nullptr, 1) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_cntr_set_err(nullptr, 1) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_cntr_wait(nullptr, 1, 0) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_cntr_arm(nullptr) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_cntr_read(nullptr) == 0);
    int fd;
    CHECK(ucp_cntr_get_fd(nullptr, &fd) == UCS_ERR_INVALID_PARAM);
    ucp_cntr_attr_t attr{};
    attr.field_mask = UCS_BIT(30);

    c = make_cntr(p.worker);
    CHECK(ucp_cntr_query(c, &attr) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_cntr_get_fd(c, nullptr) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_cntr_destroy(c) == UCS_OK);
    CHECK(ucp_cntr_destroy(c) == UCS_ERR_INVALID_PARAM); /* not live any more */
    CHECK(ucp_cntr_destroy(nullptr) == UCS_ERR_INVALID_PARAM);

    /* A counter left behind goes with its worker. */
    make_cntr(p.worker);
    p.close();
}

TEST_CASE("counter wait: met, timed out, error counted meanwhile", "[ucp_cntr]")
{
    for (uint64_t features : {uint64_t(UCP_FEATURE_AM), wakeup_features}) {
        INFO("wakeup " << ((features & UCP_FEATURE_WAKEUP) != 0));
        peer p;
        REQUIRE(p.init("self", features) == UCS_OK);
        ucp_cntr_h c = make_cntr(p.worker);
        CHECK(ucp_cntr_wait(c, 0, 0) == UCS_OK);
        CHECK(ucp_cntr_wait(c, 1, 0) == UCS_ERR_TIMED_OUT);
        CHECK(ucp_cntr_wait(c, 1, 20) == UCS_ERR_TIMED_OUT);

        /* Another thread counts up to the threshold while this one waits
         * without a time limit (and sleeps, with wakeup). */
        std::atomic<bool> waiting{false};
        std::thread adder([&] {
            while (!waiting.load()) {
                std::this_thread::yield();
            }
            for (int i = 0; i < 5; ++i) {
                ucp_cntr_add(c, 1);
            }
        });
        waiting = true;
        CHECK(ucp_cntr_wait(c, 5, -1) == UCS_OK);
        adder.join();
        CHECK(ucp_cntr_read(c) == 5);

        /* An error counted while waiting ends the wait with its own status.
         * Counted until the waiter returns: one before it started waiting
         * would not count as "while waiting". */
        std::atomic<bool> done{false};
        std::thread failer([&] {
            while (!done.load()) {
                ucp_cntr_add_err(c, 1);
                std::this_thread::yield();
            }
        });
        CHECK(ucp_cntr_wait(c, 100, -1) == UCS_ERR_IO_ERROR);
        done = true;
        failer.join();
        CHECK(ucp_cntr_read_err(c) > 0);
        CHECK(ucp_cntr_read(c) == 5);
        CHECK(ucp_cntr_destroy(c) == UCS_OK);
    }
}

namespace {

/* An AM handler that sends itself again: the worker always has work. */
ucs_status_t echo_forever(void *arg, const void *, size_t, void *, size_t,
                          const ucp_am_recv_param_t *)
{
    ucp_request_param_t param{};
    ucs_status_ptr_t r = ucp_am_send_nbx(static_cast<ucp_ep_h>(arg), 3, nullptr, 0, nullptr, 0,
                                         &param);
    if (UCS_PTR_IS_PTR(r)) {
        ucp_request_free(r);
    }
    return UCS_OK;
}

} // namespace

TEST_CASE("counter wait keeps its timeout while the worker is busy with other work", "[ucp_cntr]")
{
    peer p;
    REQUIRE(p.init("self", UCP_FEATURE_AM) == UCS_OK);
    REQUIRE(p.connect(p.address()) == UCS_OK);
    REQUIRE(set_am_handler(p.worker, 3, echo_forever, p.ep) == UCS_OK);
    ucp_request_param_t param{};
    REQUIRE(p.wait(ucp_am_send_nbx(p.ep, 3, nullptr, 0, nullptr, 0, &param)) == UCS_OK);
    REQUIRE(ucp_worker_progress(p.worker) != 0); /* busy from now on */
    ucp_cntr_h c = make_cntr(p.worker);
    CHECK(ucp_cntr_wait(c, 1, 0) == UCS_ERR_TIMED_OUT);
    CHECK(ucp_cntr_wait(c, 1, 50) == UCS_ERR_TIMED_OUT);
    CHECK(ucp_cntr_destroy(c) == UCS_OK);
    REQUIRE(set_am_handler(p.worker, 3, nullptr, nullptr) == UCS_OK);
}

TEST_CASE("counter fd: readable on a change, arm busy until drained", "[ucp_cntr]")
{
    peer p;
    REQUIRE(p.init("self", wakeup_features) == UCS_OK);
    ucp_cntr_h c = make_cntr(p.worker);
    int fd       = -1;
    REQUIRE(ucp_cntr_get_fd(c, &fd) == UCS_OK);
    REQUIRE(fd >= 0);
    REQUIRE(test::poll_until([&] { return ucp_cntr_arm(c) == UCS_OK; },
                             [&] { ucp_worker_progress(p.worker); }));
    CHECK_FALSE(test::readable(fd));
    std::thread([&] { ucp_cntr_add(c, 1); }).join();
    CHECK(test::readable(fd));
    CHECK(ucp_cntr_arm(c) == UCS_ERR_BUSY); /* the change, consumed */
    CHECK(ucp_cntr_arm(c) == UCS_OK);
    CHECK_FALSE(test::readable(fd));
    CHECK(ucp_cntr_destroy(c) == UCS_OK);
}

namespace {

ucs_status_t count_message(void *arg, const void *, size_t, void *, size_t,
                           const ucp_am_recv_param_t *)
{
    ucp_cntr_add(static_cast<ucp_cntr_h>(arg), 1);
    return UCS_OK;
}

} // namespace

TEST_CASE("counter wait progresses the worker: messages from another process", "[ucp_cntr]")
{
    constexpr uint16_t am_id    = 3;
    constexpr uint64_t messages = 200;
    for (const char *tls : {"posix", "tcp"}) {
        for (uint64_t features : {uint64_t(UCP_FEATURE_AM), wakeup_features}) {
            INFO("UCX_TLS=" << tls << " wakeup " << ((features & UCP_FEATURE_WAKEUP) != 0));
            peer p;
            REQUIRE(p.init(tls, features) == UCS_OK);
            test::child_process child([tls](int fd) {
                peer c;
                TEST_CHILD_CHECK(c.init(tls, UCP_FEATURE_AM) == UCS_OK);
                TEST_CHILD_CHECK(c.connect_over(fd));
                uint8_t go;
                TEST_CHILD_CHECK(c.recv_value_progress(fd, &go));
                for (uint64_t i = 0; i < messages; ++i) {
                    ucp_request_param_t param{};
                    TEST_CHILD_CHECK(c.wait(ucp_am_send_nbx(c.ep, am_id, nullptr, 0, &i, sizeof(i),
                                                            &param)) == UCS_OK);
                }
                /* Sent is not delivered: flush before this side stops progressing. */
                ucp_request_param_t param{};
                TEST_CHILD_CHECK(c.wait(ucp_ep_flush_nbx(c.ep, &param)) == UCS_OK);
                TEST_CHILD_CHECK(test::sync_peer(fd));
                return 0;
            });
            REQUIRE(p.connect_over(child.fd()));
            ucp_cntr_h c = make_cntr(p.worker);
            REQUIRE(ucp_test::set_am_handler(p.worker, am_id, count_message, c) == UCS_OK);
            REQUIRE(test::send_value(child.fd(), uint8_t(1)));
            /* Nothing but the wait progresses this worker. */
            CHECK(ucp_cntr_wait(c, messages, 60000) == UCS_OK);
            CHECK(ucp_cntr_read(c) == messages);
            CHECK(ucp_cntr_read_err(c) == 0);
            REQUIRE(test::sync_peer(child.fd()));
            CHECK(child.wait() == 0);
            CHECK(ucp_cntr_destroy(c) == UCS_OK);
        }
    }
}
