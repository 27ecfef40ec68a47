/*
 * posix and sysv transports between two processes: message sizes and
 * contents, ordering, flow control with the pending queue, wakeup through
 * the event fd, a peer killed with SIGKILL, and what is left behind.
 */
#include <catch2/catch.hpp>

#include "test_mm_util.h"

#include <uct/sm/mm/mm_address.h>

#include "two_process.h"

#include <cstdio>
#include <cstring>

#include <poll.h>
#include <sched.h>
#include <unistd.h>

using namespace std::chrono_literals;

namespace {

constexpr uct::am_id_t AM_ID = 3;

uint8_t pattern(uint64_t message, size_t offset)
{
    return uint8_t(message * 31 + offset * 7 + 1);
}

void fill_pattern(void *buffer, uint64_t message, size_t length)
{
    auto *p = static_cast<uint8_t *>(buffer);
    for (size_t i = 0; i < length; ++i) {
        p[i] = pattern(message, i);
    }
}

/* Receiver side of a byte-exact check: message k must carry pattern(k). */
struct pattern_checker {
    std::vector<size_t> lengths;
    uint64_t received = 0;
    uint64_t bad      = 0;

    static ucs_status_t handler(void *arg, void *data, size_t length, unsigned)
    {
        auto *self = static_cast<pattern_checker *>(arg);
        auto *p    = static_cast<const uint8_t *>(data);
        uint64_t k = self->received++;
        if ((k >= self->lengths.size()) || (length != self->lengths[k])) {
            ++self->bad;
            return UCS_OK;
        }
        for (size_t i = 0; i < length; ++i) {
            if (p[i] != pattern(k, i)) {
                ++self->bad;
                break;
            }
        }
        return UCS_OK;
    }
};

struct pack_args {
    uint64_t message;
    size_t length;
};

size_t pack_pattern(void *dest, void *arg)
{
    auto *a = static_cast<pack_args *>(arg);
    fill_pattern(dest, a->message, a->length);
    return a->length;
}

/* The sizes both sides expect, as the handler sees them (header included). */
struct size_plan {
    std::vector<size_t> short_totals;
    std::vector<size_t> bcopy_lengths;

    explicit size_plan(const uct::iface_attr &attr)
    {
        short_totals  = {8, 9, attr.am.max_short};
        bcopy_lengths = {0, 1, attr.am.max_short + 1, attr.am.max_bcopy};
    }

    std::vector<size_t> all() const
    {
        std::vector<size_t> v = short_totals;
        v.insert(v.end(), bcopy_lengths.begin(), bcopy_lengths.end());
        return v;
    }
};

/* Spinning processes share two cores with builds: give the CPU away when
 * there is nothing to do, or a full FIFO waits for a whole time slice. */
void progress_or_yield(test::mm_entity &e)
{
    if (e.progress() == 0) {
        sched_yield();
    }
}

/* Retries a send while the FIFO is full, progressing our own worker. */
template <typename Send>
ucs_status_t send_retry(test::mm_entity &e, Send &&send)
{
    ucs_status_t status = UCS_ERR_NO_RESOURCE;
    test::poll_until([&] { return (status = send()) != UCS_ERR_NO_RESOURCE; },
                     [&] { progress_or_yield(e); }, 30s);
    return status;
}

bool receive_address(int fd, test::uct_addresses *addr)
{
    std::vector<uint8_t> blob;
    return test::recv_blob(fd, &blob) && test::uct_addresses::deserialize(blob, addr);
}

/* -------------------------------------------------------------------------- */

void am_sizes(const char *tl)
{
    test::child_process child([tl](int fd) {
        test::mm_entity e(tl);
        TEST_CHILD_CHECK(e.ok());
        pattern_checker checker;
        checker.lengths = size_plan(e.attr()).all();
        TEST_CHILD_CHECK(e.iface().set_am_handler(AM_ID, pattern_checker::handler, &checker, 0) ==
                         UCS_OK);
        TEST_CHILD_CHECK(test::send_blob(fd, e.addresses().serialize()));
        TEST_CHILD_CHECK(
            test::poll_until([&] { return checker.received >= checker.lengths.size(); },
                             [&] { progress_or_yield(e); }));
        /* Nothing more arrives (the rejected sends never left). */
        TEST_CHILD_CHECK(test::sync_peer(fd));
        e.progress();
        TEST_CHILD_CHECK(checker.received == checker.lengths.size());
        TEST_CHILD_CHECK(checker.bad == 0);
        return 0;
    });

    test::mm_entity e(tl);
    REQUIRE(e.ok());
    test::uct_addresses peer;
    REQUIRE(receive_address(child.fd(), &peer));
    ucs_status_t status;
    uct::ep *ep = e.connect(peer, &status);
    REQUIRE(ep != nullptr);

    const size_t max_short = e.attr().am.max_short;
    CHECK(max_short == uct::mm::default_mm_config().fifo_elem_size - 8);
    CHECK(e.attr().am.max_bcopy == uct::mm::default_mm_config().seg_size);

    size_plan plan(e.attr());
    uint64_t k = 0;
    std::vector<uint8_t> buf(max_short + 64);
    for (size_t total : plan.short_totals) {
        fill_pattern(buf.data(), k, total);
        uint64_t header;
        std::memcpy(&header, buf.data(), sizeof(header));
        CHECK(send_retry(e, [&] {
                  return ep->am_short(AM_ID, header, buf.data() + 8, unsigned(total - 8));
              }) == UCS_OK);
        ++k;
    }
    /* Documented: a short AM over max_short (header included) is refused
     * with INVALID_PARAM and nothing is sent; the caller picks bcopy. */
    CHECK(ep->am_short(AM_ID, 0, buf.data(), unsigned(max_short - 8 + 1)) == UCS_ERR_INVALID_PARAM);
    CHECK(ep->am_short(uct::AM_ID_MAX, 0, nullptr, 0) == UCS_ERR_INVALID_PARAM);

    for (size_t length : plan.bcopy_lengths) {
        pack_args args{k, length};
        ssize_t sent = -1;
        CHECK(send_retry(e, [&] {
                  sent = ep->am_bcopy(AM_ID, pack_pattern, &args, 0);
                  return (sent >= 0) ? UCS_OK : ucs_status_t(sent);
              }) == UCS_OK);
        CHECK(sent == ssize_t(length));
        ++k;
    }
    CHECK(ep->flush(0, nullptr) == UCS_OK);
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(child.wait() == 0);
}

MM_TEST_CASE("AM short and bcopy at the size limits arrive byte-exact", am_sizes)

/* -------------------------------------------------------------------------- */

constexpr uint64_t ORDER_COUNT      = 100000;
constexpr size_t ORDER_BCOPY_LENGTH = 300;

struct order_checker {
    uint64_t expected = 0;
    uint64_t bad      = 0;

    static ucs_status_t handler(void *arg, void *data, size_t length, unsigned)
    {
        auto *self = static_cast<order_checker *>(arg);
        uint64_t seq;
        std::memcpy(&seq, data, sizeof(seq));
        bool ok = (seq == self->expected) && (length == ((seq % 5 == 4) ? ORDER_BCOPY_LENGTH : 16));
        if (ok && (length == ORDER_BCOPY_LENGTH)) {
            auto *p = static_cast<const uint8_t *>(data);
            for (size_t i = sizeof(seq); ok && (i < length); ++i) {
                ok = p[i] == pattern(seq, i);
            }
        }
        self->bad += !ok;
        self->expected = seq + 1;
        return UCS_OK;
    }
};

struct order_pack {
    uint64_t seq;
};

size_t pack_ordered(void *dest, void *arg)
{
    uint64_t seq = static_cast<order_pack *>(arg)->seq;
    fill_pattern(dest, seq, ORDER_BCOPY_LENGTH);
    std::memcpy(dest, &seq, sizeof(seq));
    return ORDER_BCOPY_LENGTH;
}

void am_ordering(const char *tl)
{
    test::child_process child([tl](int fd) {
        test::mm_entity e(tl);
        TEST_CHILD_CHECK(e.ok());
        order_checker checker;
        TEST_CHILD_CHECK(e.iface().set_am_handler(AM_ID, order_checker::handler, &checker, 0) ==
                         UCS_OK);
        TEST_CHILD_CHECK(test::send_blob(fd, e.addresses().serialize()));
        TEST_CHILD_CHECK(test::poll_until([&] { return checker.expected >= ORDER_COUNT; },
                                          [&] { progress_or_yield(e); }, 60s));
        TEST_CHILD_CHECK(checker.expected == ORDER_COUNT);
        TEST_CHILD_CHECK(checker.bad == 0);
        return 0;
    });

    test::mm_entity e(tl);
    REQUIRE(e.ok());
    test::uct_addresses peer;
    REQUIRE(receive_address(child.fd(), &peer));
    uct::ep *ep = e.connect(peer);
    REQUIRE(ep != nullptr);

    /* Every fifth message goes bcopy: both kinds share one order. */
    uint64_t failures = 0;
    for (uint64_t seq = 0; seq < ORDER_COUNT; ++seq) {
        ucs_status_t status;
        if (seq % 5 == 4) {
            order_pack args{seq};
            status = send_retry(e, [&] {
                ssize_t n = ep->am_bcopy(AM_ID, pack_ordered, &args, 0);
                return (n >= 0) ? UCS_OK : ucs_status_t(n);
            });
        } else {
            uint64_t payload = ~seq;
            status           = send_retry(e, [&] {
                return ep->am_short(AM_ID, seq, &payload, sizeof(payload));
            });
        }
        failures += (status != UCS_OK);
    }
    CHECK(failures == 0);
    CHECK(child.wait(90s) == 0);
}

MM_TEST_CASE("100000 AMs, short and bcopy mixed, arrive in order", am_ordering)

/* -------------------------------------------------------------------------- */

struct seq_req : uct::pending_req {
    uct::ep *ep;
    uint64_t seq;
    std::vector<uint64_t> *completed;

    static ucs_status_t send(uct::pending_req *self)
    {
        auto *req           = static_cast<seq_req *>(self);
        ucs_status_t status = req->ep->am_short(AM_ID, req->seq, nullptr, 0);
        if (status == UCS_OK) {
            req->completed->push_back(req->seq);
        }
        return status;
    }
};

struct seq_checker {
    uint64_t expected = 0;
    uint64_t bad      = 0;

    static ucs_status_t handler(void *arg, void *data, size_t, unsigned)
    {
        auto *self = static_cast<seq_checker *>(arg);
        uint64_t seq;
        std::memcpy(&seq, data, sizeof(seq));
        self->bad += (seq != self->expected);
        self->expected = seq + 1;
        return UCS_OK;
    }
};

void pending_flow_control(const char *tl)
{
    test::child_process child([tl](int fd) {
        test::mm_entity e(tl);
        TEST_CHILD_CHECK(e.ok());
        seq_checker checker;
        TEST_CHILD_CHECK(e.iface().set_am_handler(AM_ID, seq_checker::handler, &checker, 0) ==
                         UCS_OK);
        TEST_CHILD_CHECK(test::send_blob(fd, e.addresses().serialize()));
        /* Consume nothing until the sender has filled the FIFO. */
        uint64_t total = 0;
        TEST_CHILD_CHECK(test::recv_value(fd, &total));
        TEST_CHILD_CHECK(test::poll_until([&] { return checker.expected >= total; },
                                          [&] { progress_or_yield(e); }));
        TEST_CHILD_CHECK(test::sync_peer(fd));
        e.progress();
        TEST_CHILD_CHECK(checker.expected == total);
        TEST_CHILD_CHECK(checker.bad == 0);
        return 0;
    });

    test::mm_entity e(tl);
    REQUIRE(e.ok());
    test::uct_addresses peer;
    REQUIRE(receive_address(child.fd(), &peer));
    uct::ep *ep = e.connect(peer);
    REQUIRE(ep != nullptr);

    /* Room for at most fifo_size messages, then NO_RESOURCE. */
    uint64_t seq = 0;
    ucs_status_t status;
    while ((status = ep->am_short(AM_ID, seq, nullptr, 0)) == UCS_OK) {
        ++seq;
        REQUIRE(seq <= uct::mm::default_mm_config().fifo_size);
    }
    CHECK(status == UCS_ERR_NO_RESOURCE);
    CHECK(seq == uct::mm::default_mm_config().fifo_size);
    const uint64_t sent_directly = seq;

    /* Queue more than a whole FIFO behind it. */
    constexpr size_t QUEUED = 500;
    std::vector<seq_req> reqs(QUEUED);
    std::vector<uint64_t> completed;
    for (auto &req : reqs) {
        req.func      = seq_req::send;
        req.ep        = ep;
        req.seq       = seq++;
        req.completed = &completed;
        REQUIRE(ep->pending_add(&req, 0) == UCS_OK);
    }
    CHECK(ep->flush(0, nullptr) == UCS_ERR_NO_RESOURCE);
    CHECK(e.iface().flush(0, nullptr) == UCS_ERR_NO_RESOURCE);
    e.progress();
    CHECK(completed.empty()); /* the receiver has not read anything */

    REQUIRE(test::send_value(child.fd(), uint64_t(sent_directly + QUEUED)));
    CHECK(test::poll_until([&] { return completed.size() == QUEUED; },
                           [&] { progress_or_yield(e); }));
    REQUIRE(completed.size() == QUEUED);
    for (size_t i = 0; i < QUEUED; ++i) {
        CHECK(completed[i] == sent_directly + i);
    }
    CHECK(ep->flush(0, nullptr) == UCS_OK);
    CHECK(e.iface().flush(0, nullptr) == UCS_OK);

    REQUIRE(test::sync_peer(child.fd()));
    /* The receiver drained everything: there is room, so no queueing. */
    seq_req extra;
    extra.func = seq_req::send;
    CHECK(test::poll_until([&] { return ep->pending_add(&extra, 0) == UCS_ERR_BUSY; },
                           [&] { progress_or_yield(e); }, 10s));
    CHECK(child.wait() == 0);
}

MM_TEST_CASE("a full FIFO says NO_RESOURCE and the pending queue drains in order",
             pending_flow_control)

/* -------------------------------------------------------------------------- */

constexpr int WAKEUP_ROUNDS = 1000;

bool fd_readable(int fd, int timeout_ms)
{
    struct pollfd pfd = {fd, POLLIN, 0};
    int n;
    do {
        n = poll(&pfd, 1, timeout_ms);
    } while ((n < 0) && (errno == EINTR));
    return (n == 1) && (pfd.revents & POLLIN);
}

struct last_value {
    uint64_t count = 0;
    uint64_t value = 0;

    static ucs_status_t handler(void *arg, void *data, size_t, unsigned)
    {
        auto *self = static_cast<last_value *>(arg);
        std::memcpy(&self->value, data, sizeof(self->value));
        ++self->count;
        return UCS_OK;
    }
};

void event_wakeup(const char *tl)
{
    test::child_process child([tl](int fd) {
        test::mm_entity e(tl);
        TEST_CHILD_CHECK(e.ok());
        TEST_CHILD_CHECK(e.attr().event_flags & uct::event_flag::FD);
        int efd = -1;
        TEST_CHILD_CHECK(e.iface().event_fd_get(&efd) == UCS_OK);
        last_value rx;
        TEST_CHILD_CHECK(e.iface().set_am_handler(AM_ID, last_value::handler, &rx, 0) == UCS_OK);
        TEST_CHILD_CHECK(test::send_blob(fd, e.addresses().serialize()));

        /* A message already waiting: arming must say BUSY. */
        TEST_CHILD_CHECK(test::sync_peer(fd));
        TEST_CHILD_CHECK(e.iface().event_arm(uct::event_flag::RECV) == UCS_ERR_BUSY);
        TEST_CHILD_CHECK(test::poll_until([&] { return rx.count == 1; },
                                          [&] { progress_or_yield(e); }));

        for (int round = 0; round < WAKEUP_ROUNDS; ++round) {
            TEST_CHILD_CHECK(e.iface().event_arm(uct::event_flag::RECV) == UCS_OK);
            TEST_CHILD_CHECK(!fd_readable(efd, 0));
            TEST_CHILD_CHECK(test::send_value(fd, round));
            TEST_CHILD_CHECK(fd_readable(efd, 10000));
            TEST_CHILD_CHECK(test::poll_until([&] { return rx.count == uint64_t(round) + 2; },
                                              [&] { progress_or_yield(e); }));
            TEST_CHILD_CHECK(rx.value == uint64_t(round) + 1000);
        }
        return 0;
    });

    test::mm_entity e(tl);
    REQUIRE(e.ok());
    test::uct_addresses peer;
    REQUIRE(receive_address(child.fd(), &peer));
    uct::ep *ep = e.connect(peer);
    REQUIRE(ep != nullptr);

    REQUIRE(ep->am_short(AM_ID, 1, nullptr, 0) == UCS_OK);
    REQUIRE(test::sync_peer(child.fd()));
    int failures = 0;
    for (int round = 0; round < WAKEUP_ROUNDS; ++round) {
        int armed = -1;
        if (!test::recv_value(child.fd(), &armed) || (armed != round)) {
            ++failures;
            break;
        }
        failures += ep->am_short(AM_ID, uint64_t(round) + 1000, nullptr, 0) != UCS_OK;
    }
    CHECK(failures == 0);
    CHECK(child.wait() == 0);
}

MM_TEST_CASE("event_arm: BUSY with a message waiting, fd readable on arrival", event_wakeup)

/* -------------------------------------------------------------------------- */

void count_purged(uct::pending_req *, void *arg)
{
    ++*static_cast<int *>(arg);
}

/* A child that publishes its address and then waits to be killed. */
int idle_receiver(const char *tl, int fd)
{
    test::mm_entity e(tl);
    TEST_CHILD_CHECK(e.ok());
    TEST_CHILD_CHECK(test::send_blob(fd, e.addresses().serialize()));
    uint8_t never;
    test::recv_value(fd, &never);
    return 0;
}

void killed_peer(const char *tl)
{
    const auto shm_before = test::dev_shm_entries();
    std::set<pid_t> pids  = {getpid()};
    {
        test::mm_entity e(tl);
        REQUIRE(e.ok());

        /* 1. Full FIFO with a queued request: progress notices the death. */
        {
            test::child_process child([tl](int fd) { return idle_receiver(tl, fd); });
            pids.insert(child.pid());
            test::uct_addresses peer;
            REQUIRE(receive_address(child.fd(), &peer));
            uct::ep *ep = e.connect(peer);
            REQUIRE(ep != nullptr);

            while (ep->am_short(AM_ID, 0, nullptr, 0) == UCS_OK) {
            }
            seq_req req;
            req.func = seq_req::send;
            REQUIRE(ep->pending_add(&req, 0) == UCS_OK);

            child.kill(SIGKILL); /* not reaped yet: a zombie still counts as dead */
            CHECK(test::poll_until([&] { return !e.failures().empty(); },
                                   [&] { progress_or_yield(e); }, 10s));
            REQUIRE(e.failures().size() == 1);
            CHECK(e.failures()[0].ep == ep);
            CHECK(e.failures()[0].status == UCS_ERR_CONNECTION_RESET);

            CHECK(ep->am_short(AM_ID, 0, nullptr, 0) == UCS_ERR_CONNECTION_RESET);
            seq_req late;
            late.func = seq_req::send;
            CHECK(ep->pending_add(&late, 0) == UCS_ERR_CONNECTION_RESET);
            CHECK(ep->flush(0, nullptr) == UCS_ERR_CONNECTION_RESET);
            int purged = 0;
            ep->pending_purge(count_purged, &purged);
            CHECK(purged == 1);
            CHECK(child.wait() == 128 + SIGKILL);
            e.destroy_ep(ep);
        }

        /* 2. Idle connection: ep::check() finds out, the handler reports it. */
        {
            test::child_process child([tl](int fd) { return idle_receiver(tl, fd); });
            pids.insert(child.pid());
            test::uct_addresses peer;
            REQUIRE(receive_address(child.fd(), &peer));
            uct::ep *ep = e.connect(peer);
            REQUIRE(ep != nullptr);
            CHECK(ep->check(0, nullptr) == UCS_OK);
            e.progress();
            CHECK(e.failures().size() == 1); /* still alive: nothing new */

            child.kill(SIGKILL);
            CHECK(child.wait() == 128 + SIGKILL);
            CHECK(ep->check(0, nullptr) == UCS_OK);
            CHECK(test::poll_until([&] { return e.failures().size() == 2; },
                                   [&] { progress_or_yield(e); }, 10s));
            REQUIRE(e.failures().size() == 2);
            CHECK(e.failures()[1].ep == ep);
            CHECK(e.failures()[1].status == UCS_ERR_CONNECTION_RESET);
            e.destroy_ep(ep);
        }
        /* 3. Idle, and nobody calls check(): the iface's event fd wakes a
         *    sleeper when the peer dies, and check_peers() reports it. */
        {
            test::child_process child([tl](int fd) { return idle_receiver(tl, fd); });
            pids.insert(child.pid());
            test::uct_addresses peer;
            REQUIRE(receive_address(child.fd(), &peer));
            uct::ep *ep = e.connect(peer);
            REQUIRE(ep != nullptr);
            int efd = -1;
            REQUIRE(e.iface().event_fd_get(&efd) == UCS_OK);
            CHECK(e.iface().check_peers() == 0);
            CHECK(e.iface().event_arm(uct::event_flag::RECV) == UCS_OK);
            CHECK(!fd_readable(efd, 0));

            child.kill(SIGKILL); /* a zombie from here on */
            CHECK(fd_readable(efd, 10000));
            CHECK(e.iface().check_peers() == 1);
            REQUIRE(e.failures().size() == 3);
            CHECK(e.failures()[2].ep == ep);
            CHECK(e.failures()[2].status == UCS_ERR_CONNECTION_RESET);
            /* Once: the dead peer left the set, a sleeper sleeps again. */
            CHECK(e.iface().check_peers() == 0);
            CHECK(e.iface().event_arm(uct::event_flag::RECV) == UCS_OK);
            CHECK(!fd_readable(efd, 0));
            CHECK(ep->am_short(AM_ID, 0, nullptr, 0) == UCS_ERR_CONNECTION_RESET);
            CHECK(child.wait() == 128 + SIGKILL);
            e.destroy_ep(ep);
        }

        /* 4. A peer that died before the worker went to sleep: arming says
         *    BUSY and the next progress() reports it. */
        {
            test::child_process child([tl](int fd) { return idle_receiver(tl, fd); });
            pids.insert(child.pid());
            test::uct_addresses peer;
            REQUIRE(receive_address(child.fd(), &peer));
            uct::ep *ep = e.connect(peer);
            REQUIRE(ep != nullptr);
            child.kill(SIGKILL);
            CHECK(child.wait() == 128 + SIGKILL);
            CHECK(e.iface().event_arm(uct::event_flag::RECV) == UCS_ERR_BUSY);
            e.progress();
            REQUIRE(e.failures().size() == 4);
            CHECK(e.failures()[3].ep == ep);
            e.destroy_ep(ep);
        }

        /* 5. What the peer published before it died is delivered before its
         *    ep is reported failed. */
        {
            test::child_process child([tl](int fd) {
                test::mm_entity c(tl);
                TEST_CHILD_CHECK(c.ok());
                TEST_CHILD_CHECK(test::send_blob(fd, c.addresses().serialize()));
                test::uct_addresses parent;
                TEST_CHILD_CHECK(receive_address(fd, &parent));
                uct::ep *to_parent = c.connect(parent);
                TEST_CHILD_CHECK(to_parent != nullptr);
                for (uint64_t i = 0; i < 10; ++i) {
                    TEST_CHILD_CHECK(to_parent->am_short(AM_ID, i, nullptr, 0) == UCS_OK);
                }
                TEST_CHILD_CHECK(test::sync_peer(fd));
                uint8_t never;
                test::recv_value(fd, &never);
                return 0;
            });
            pids.insert(child.pid());
            test::uct_addresses peer;
            REQUIRE(receive_address(child.fd(), &peer));
            uct::ep *ep = e.connect(peer);
            REQUIRE(ep != nullptr);
            REQUIRE(test::send_blob(child.fd(), e.addresses().serialize()));
            struct delivery_order {
                test::mm_entity *e;
                uint64_t count     = 0;
                bool after_failure = false;
                static ucs_status_t handler(void *arg, void *, size_t, unsigned)
                {
                    auto *self = static_cast<delivery_order *>(arg);
                    ++self->count;
                    self->after_failure |= (self->e->failures().size() > 4);
                    return UCS_OK;
                }
            } order{&e};
            REQUIRE(e.iface().set_am_handler(AM_ID, delivery_order::handler, &order, 0) == UCS_OK);
            REQUIRE(test::sync_peer(child.fd())); /* all 10 in our FIFO */
            child.kill(SIGKILL);
            CHECK(child.wait() == 128 + SIGKILL);
            CHECK(e.iface().check_peers() == 11); /* 10 messages, 1 failure */
            CHECK(order.count == 10);
            CHECK(!order.after_failure);
            REQUIRE(e.failures().size() == 5);
            CHECK(e.failures()[4].ep == ep);
            e.destroy_ep(ep);
        }

        /* The dead children's segments went with our last mapping. */
        std::set<pid_t> children(pids);
        children.erase(getpid());
        CHECK(test::sysv_segments_of(children).empty());
    }
    CHECK(test::dev_shm_entries() == shm_before);
    CHECK(test::sysv_segments_of(pids).empty());
}

MM_TEST_CASE("a peer killed with SIGKILL is reported, nothing hangs or leaks", killed_peer)

/* -------------------------------------------------------------------------- */

/* Lines of /proc/self/maps: each mapping of a peer's segment is one. */
size_t mapping_count()
{
    FILE *maps   = std::fopen("/proc/self/maps", "r");
    size_t lines = 0;
    for (int c; (maps != nullptr) && ((c = std::fgetc(maps)) != EOF);) {
        lines += (c == '\n');
    }
    if (maps != nullptr) {
        std::fclose(maps);
    }
    return lines;
}

void shared_remote(const char *tl)
{
    constexpr uint64_t EPS = 64;
    test::child_process child([tl](int fd) {
        test::mm_entity e(tl);
        TEST_CHILD_CHECK(e.ok());
        /* Message k carries k in its header: each ep sends its own index. */
        struct counter {
            std::vector<uint64_t> seen;
            static ucs_status_t handler(void *arg, void *data, size_t, unsigned)
            {
                uint64_t k;
                std::memcpy(&k, data, sizeof(k));
                static_cast<counter *>(arg)->seen.push_back(k);
                return UCS_OK;
            }
        } got;
        TEST_CHILD_CHECK(e.iface().set_am_handler(AM_ID, counter::handler, &got, 0) == UCS_OK);
        TEST_CHILD_CHECK(test::send_blob(fd, e.addresses().serialize()));
        TEST_CHILD_CHECK(test::poll_until([&] { return got.seen.size() >= EPS + 1; },
                                          [&] { progress_or_yield(e); }));
        std::vector<uint64_t> expected(EPS);
        for (uint64_t k = 0; k < EPS; ++k) {
            expected[k] = k;
        }
        expected.push_back(EPS - 1); /* from the one ep left */
        TEST_CHILD_CHECK(got.seen == expected);
        TEST_CHILD_CHECK(test::sync_peer(fd));
        uint8_t never;
        test::recv_value(fd, &never); /* killed here */
        return 0;
    });

    test::mm_entity e(tl);
    REQUIRE(e.ok());
    test::uct_addresses peer;
    REQUIRE(receive_address(child.fd(), &peer));
    const size_t maps_before = mapping_count(), fds_before = test::open_fd_count();
    std::vector<uct::ep *> eps;
    for (uint64_t k = 0; k < EPS; ++k) {
        uct::ep *ep = e.connect(peer);
        REQUIRE(ep != nullptr);
        eps.push_back(ep);
    }
    /* One mapping of the peer's segment and one descriptor for its process,
     * however many eps reach it. */
    CHECK(mapping_count() <= maps_before + 1);
    CHECK(test::open_fd_count() <= fds_before + 1);
    for (uint64_t k = 0; k < EPS; ++k) {
        REQUIRE(send_retry(e, [&] { return eps[k]->am_short(AM_ID, k, nullptr, 0); }) == UCS_OK);
    }
    /* The others closed, the last one still reaches the peer. */
    for (uint64_t k = 0; k + 1 < EPS; ++k) {
        e.destroy_ep(eps[k]);
    }
    REQUIRE(send_retry(e, [&] { return eps.back()->am_short(AM_ID, EPS - 1, nullptr, 0); }) ==
            UCS_OK);
    REQUIRE(test::sync_peer(child.fd()));

    /* A second ep joins the shared remote, then the peer dies: both fail. */
    uct::ep *second = e.connect(peer);
    REQUIRE(second != nullptr);
    CHECK(mapping_count() <= maps_before + 1);
    child.kill(SIGKILL);
    CHECK(child.wait() == 128 + SIGKILL);
    CHECK(test::poll_until([&] { return e.failures().size() >= 2; },
                           [&] {
        e.iface().check_peers();
        e.progress();
    }));
    REQUIRE(e.failures().size() == 2);
    CHECK(((e.failures()[0].ep == eps.back()) || (e.failures()[1].ep == eps.back())));
    CHECK(((e.failures()[0].ep == second) || (e.failures()[1].ep == second)));
    /* A dead peer's remote takes no new ep. */
    ucs_status_t status = UCS_OK;
    CHECK(e.connect(peer, &status) == nullptr);
    CHECK(status != UCS_OK);
    e.destroy_ep(second);
    e.destroy_ep(eps.back());
    CHECK(mapping_count() == maps_before);
    CHECK(test::open_fd_count() == fds_before);
}

MM_TEST_CASE("eps to one peer share its mapping and pidfd; its death fails them all", shared_remote)

/* -------------------------------------------------------------------------- */

/* The peer replaces its iface; the new segment gets the old one's id (the
 * lowest free fd) while our ep to the old one is still open. */
void replaced_iface(const char *tl)
{
    test::child_process child([tl](int fd) {
        struct counter {
            unsigned got = 0;
            static ucs_status_t handler(void *arg, void *, size_t, unsigned)
            {
                ++static_cast<counter *>(arg)->got;
                return UCS_OK;
            }
        };
        counter first, second;
        {
            test::mm_entity a(tl);
            TEST_CHILD_CHECK(a.ok());
            TEST_CHILD_CHECK(a.iface().set_am_handler(AM_ID, counter::handler, &first, 0) ==
                             UCS_OK);
            TEST_CHILD_CHECK(test::send_blob(fd, a.addresses().serialize()));
            TEST_CHILD_CHECK(test::poll_until([&] { return first.got == 1; },
                                              [&] { progress_or_yield(a); }));
        }
        test::mm_entity b(tl);
        TEST_CHILD_CHECK(b.ok());
        TEST_CHILD_CHECK(b.iface().set_am_handler(AM_ID, counter::handler, &second, 0) == UCS_OK);
        TEST_CHILD_CHECK(test::send_blob(fd, b.addresses().serialize()));
        TEST_CHILD_CHECK(test::poll_until([&] { return second.got == 1; },
                                          [&] { progress_or_yield(b); }));
        return 0;
    });

    test::mm_entity e(tl);
    REQUIRE(e.ok());
    test::uct_addresses first, second;
    REQUIRE(receive_address(child.fd(), &first));
    uct::ep *old_ep = e.connect(first);
    REQUIRE(old_ep != nullptr);
    REQUIRE(send_retry(e, [&] { return old_ep->am_short(AM_ID, 1, nullptr, 0); }) == UCS_OK);
    REQUIRE(receive_address(child.fd(), &second));
    uct::mm::iface_address a, b;
    REQUIRE(first.iface.size() == sizeof(a));
    REQUIRE(second.iface.size() == sizeof(b));
    std::memcpy(&a, first.iface.data(), sizeof(a));
    std::memcpy(&b, second.iface.data(), sizeof(b));
    INFO("segment ids " << a.segment_id << " and " << b.segment_id);
    if (std::string(tl) == "posix") {
        CHECK(a.segment_id == b.segment_id); /* the fd number came back */
    }
    /* The old ep is still open: the new iface is reached all the same. */
    ucs_status_t status = UCS_OK;
    uct::ep *new_ep     = e.connect(second, &status);
    INFO(ucs_status_string(status));
    REQUIRE(new_ep != nullptr);
    REQUIRE(send_retry(e, [&] { return new_ep->am_short(AM_ID, 2, nullptr, 0); }) == UCS_OK);
    CHECK(child.wait() == 0);
    e.destroy_ep(old_ep);
    e.destroy_ep(new_ep);
}

MM_TEST_CASE("a peer's new iface with its old segment's id is reached while the old ep lives",
             replaced_iface)

/* -------------------------------------------------------------------------- */

void no_leftovers(const char *tl)
{
    const auto shm_before = test::dev_shm_entries();
    std::set<pid_t> pids  = {getpid()};
    {
        test::child_process child([tl](int fd) {
            test::mm_entity e(tl);
            TEST_CHILD_CHECK(e.ok());
            size_t length   = 10000;
            void *address   = nullptr;
            uct::mem_h memh = nullptr;
            TEST_CHILD_CHECK(e.md().mem_alloc(&length, &address, 0, &memh) == UCS_OK);
            TEST_CHILD_CHECK(test::send_blob(fd, e.addresses().serialize()));
            test::uct_addresses peer;
            TEST_CHILD_CHECK(receive_address(fd, &peer));
            TEST_CHILD_CHECK(e.connect(peer) != nullptr);
            TEST_CHILD_CHECK(test::sync_peer(fd)); /* all open */
            TEST_CHILD_CHECK(test::sync_peer(fd)); /* parent has looked */
            TEST_CHILD_CHECK(e.md().mem_free(memh) == UCS_OK);
            return 0;
        });
        pids.insert(child.pid());

        test::mm_entity e(tl);
        REQUIRE(e.ok());
        test::uct_addresses peer;
        REQUIRE(receive_address(child.fd(), &peer));
        REQUIRE(e.connect(peer) != nullptr);
        REQUIRE(test::send_blob(child.fd(), e.addresses().serialize()));
        REQUIRE(test::sync_peer(child.fd()));

        /* While everything is open: no names anywhere, sysv already removed. */
        CHECK(test::dev_shm_entries() == shm_before);
        if (std::string(tl) == "posix") {
            auto links = test::posix_segment_links();
            CHECK(links.size() == 1); /* our FIFO */
            for (const auto &link : links) {
                INFO(link);
                CHECK(link.find("(deleted)") != std::string::npos);
            }
        }
        auto segments = test::sysv_segments_of(pids);
        if (std::string(tl) == "sysv") {
            CHECK(segments.size() == 3); /* two FIFOs and the allocation */
        }
        for (const auto &seg : segments) {
            CHECK((seg.mode & 0777) == 0600);
            CHECK((seg.mode & 01000) != 0); /* SHM_DEST */
        }
        REQUIRE(test::sync_peer(child.fd()));
        CHECK(child.wait() == 0);
    }
    CHECK(test::dev_shm_entries() == shm_before);
    CHECK(test::sysv_segments_of(pids).empty());
}

MM_TEST_CASE("segments are 0600 and leave nothing in /dev/shm or the IPC table", no_leftovers)

} // namespace
