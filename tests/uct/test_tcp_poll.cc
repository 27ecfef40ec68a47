/*
 * How a tcp iface with more connections than UCX_TCP_DIRECT_POLL_MAX looks
 * for data: epoll_wait in every progress call, except while every recent
 * reception came from one connection (a ping-pong on one ep of many). That
 * one is then read directly and epoll asked every UCX_TCP_EPOLL_PERIOD
 * calls, so a message on another connection waits at most that many calls,
 * and its arrival ends the direct reads.
 */
#include "tcp_test_util.h"
#include "two_process.h"

#include <uct/tcp/tcp_iface.h>

#include <catch2/catch.hpp>
#include <cstring>

#include <vector>

namespace {

constexpr uint8_t AM_ID         = 3;
constexpr unsigned NUM_EPS      = 4;
constexpr unsigned MAX_PROGRESS = 100000;

struct arrivals {
    unsigned per_ep[NUM_EPS] = {};
    unsigned bad             = 0;
};

/* The AM's header is the index of the ep it was sent on. */
ucs_status_t count_arrival(void *arg, void *data, size_t length, unsigned)
{
    auto *a = static_cast<arrivals *>(arg);
    uint64_t index;
    if (length != sizeof(index)) {
        ++a->bad;
        return UCS_OK;
    }
    std::memcpy(&index, data, sizeof(index));
    if (index >= NUM_EPS) {
        ++a->bad;
        return UCS_OK;
    }
    ++a->per_ep[index];
    return UCS_OK;
}

uint64_t epoll_waits(test::tuned_tcp &t)
{
    auto *iface = dynamic_cast<uct::tcp::tcp_iface *>(&t.iface());
    return (iface != nullptr) ? iface->epoll_waits() : 0;
}

} // namespace

TEST_CASE("tcp reads the one busy connection of many directly; another waits at most "
          "EPOLL_PERIOD progress calls",
          "[tcp]")
{
    auto cfg            = uct::tcp::default_tcp_config();
    cfg.direct_poll_max = 2;
    cfg.epoll_period    = 16;
    test::tuned_tcp sender("lo", cfg), receiver("lo", cfg);
    REQUIRE(sender.ok());
    REQUIRE(receiver.ok());
    arrivals a;
    REQUIRE(receiver.iface().set_am_handler(AM_ID, count_arrival, &a, 0) == UCS_OK);
    std::vector<uct::ep *> eps;
    for (unsigned i = 0; i < NUM_EPS; ++i) {
        eps.push_back(sender.connect(receiver.addresses()));
        REQUIRE(eps.back() != nullptr);
    }

    /* Sends one AM on eps[index]; the receiver's progress calls until it
     * arrived (the sender progresses alongside: connections being set up). */
    auto deliver = [&](unsigned index) {
        const unsigned before = a.per_ep[index];
        ucs_status_t status;
        unsigned calls = 0;
        while (((status = eps[index]->am_short(AM_ID, index, nullptr, 0)) == UCS_ERR_NO_RESOURCE) &&
               (calls++ < MAX_PROGRESS)) {
            sender.progress();
            receiver.progress();
        }
        REQUIRE(status == UCS_OK);
        calls = 0;
        while ((a.per_ep[index] == before) && (calls < MAX_PROGRESS)) {
            sender.progress();
            receiver.progress();
            ++calls;
        }
        REQUIRE(a.per_ep[index] == before + 1);
        return calls;
    };

    for (unsigned i = 0; i < NUM_EPS; ++i) {
        deliver(i); /* every connection is up at the receiver */
    }
    REQUIRE(dynamic_cast<uct::tcp::tcp_iface &>(receiver.iface()).num_connections() == NUM_EPS);

    /* A streak on eps[0]: after a few receptions through epoll, the
     * receiver reads that connection directly. */
    for (unsigned i = 0; i < 16; ++i) {
        deliver(0);
    }
    const uint64_t waits_before = epoll_waits(receiver);
    unsigned calls              = 0;
    for (unsigned i = 0; i < 200; ++i) {
        calls += deliver(0);
    }
    const uint64_t waits = epoll_waits(receiver) - waits_before;
    INFO("receiver progress calls " << calls << ", epoll_wait calls " << waits);
    CHECK(calls >= 200);
    CHECK(waits <= calls / cfg.epoll_period + 1); /* was one per call */

    /* A message on another connection meanwhile: epoll finds it within the
     * period, and the receiver asks epoll on every call again. */
    CHECK(deliver(1) <= cfg.epoll_period);
    const uint64_t after_switch = epoll_waits(receiver);
    for (unsigned i = 0; i < 5; ++i) {
        receiver.progress();
    }
    CHECK(epoll_waits(receiver) - after_switch == 5);

    /* Alternating connections never streak: every call asks epoll. */
    const uint64_t alternating_before = epoll_waits(receiver);
    calls                             = 0;
    for (unsigned i = 0; i < 40; ++i) {
        calls += deliver(2 + (i % 2));
    }
    CHECK(epoll_waits(receiver) - alternating_before == calls);
    CHECK(a.bad == 0);
    for (uct::ep *ep : eps) {
        CHECK(test::poll_until([&] { return ep->flush(0, nullptr) == UCS_OK; },
                               [&] {
            sender.progress();
            receiver.progress();
        }));
    }
}
