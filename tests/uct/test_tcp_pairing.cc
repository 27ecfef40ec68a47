/*
 * tcp: eps of two ifaces that connect towards each other at the same time
 * end up on one connection (the handshakes pair them by serial number),
 * whichever side progresses first, with everything sent before the pairing
 * delivered in order; and an iface may connect to itself.
 */
#include <catch2/catch.hpp>

#include "two_process.h"
#include "uct_test_util.h"

#include <uct/tcp/tcp_iface.h>

#include <sys/prctl.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <vector>

namespace {

constexpr uct::am_id_t AM_ID = 3;

size_t connections(test::uct_entity &e)
{
    auto *iface = dynamic_cast<uct::tcp::tcp_iface*>(&e.iface());
    return (iface != nullptr) ? iface->num_connections() : SIZE_MAX;
}

uct::ep *make_raw_ep(test::uct_entity &from, const test::uct_addresses &to)
{
    uct::ep *ep = nullptr;
    if (from.iface().ep_create_connected(to.device.data(), to.device.size(),
                                         to.iface.data(), to.iface.size(), &ep) != UCS_OK) {
        return nullptr;
    }
    return ep;
}

std::unique_ptr<uct::ep> make_ep(test::uct_entity &from, test::uct_entity &to)
{
    return std::unique_ptr<uct::ep>(make_raw_ep(from, to.addresses()));
}

/* Messages carry (sender tag, sequence) in their 8-byte header; a receiver
 * checks each sender's sequence has no gap and no reordering. */
struct in_order_log {
    uint64_t next[4]   = {};
    uint64_t errors    = 0;
    uint64_t bytes_bad = 0;
};

ucs_status_t check_order(void *arg, void *data, size_t length, unsigned)
{
    auto *log = static_cast<in_order_log*>(arg);
    uint64_t hdr;
    if (length < sizeof(hdr)) {
        ++log->errors;
        return UCS_OK;
    }
    std::memcpy(&hdr, data, sizeof(hdr));
    unsigned sender = unsigned(hdr >> 56) & 3;
    uint64_t seq    = hdr & ((1ull << 56) - 1);
    if (seq != log->next[sender]) {
        ++log->errors;
    }
    log->next[sender] = seq + 1;
    /* Payload bytes after the header repeat the low byte of seq. */
    const auto *p = static_cast<const uint8_t*>(data);
    for (size_t i = sizeof(hdr); i < length; ++i) {
        if (p[i] != uint8_t(seq)) {
            ++log->bytes_bad;
            break;
        }
    }
    return UCS_OK;
}

uint64_t tagged(unsigned sender, uint64_t seq)
{
    return (uint64_t(sender) << 56) | seq;
}

struct counted_comp : uct::completion {
    int          fired = 0;
    ucs_status_t last  = UCS_OK;

    counted_comp()
    {
        func   = [](uct::completion *self) {
            auto *c = static_cast<counted_comp*>(self);
            ++c->fired;
            c->last = c->status;
        };
        count  = 1;
        status = UCS_OK;
    }
};

/* One sender's stream: short, bcopy and zcopy messages, in that order
 * repeated; a zcopy waits for its completion before the buffer is reused. */
class sender {
public:
    sender(uct::ep *ep, unsigned tag) : ep_(ep), tag_(tag), zbuf_(24 * 1024) {}

    /* Sends the next message unless the transport is out of room. */
    ucs_status_t send_next()
    {
        uint64_t hdr = tagged(tag_, seq_);
        ucs_status_t st;
        switch (seq_ % 3) {
        case 0: {
            uint8_t payload[40];
            std::memset(payload, uint8_t(seq_), sizeof(payload));
            st = ep_->am_short(AM_ID, hdr, payload, sizeof(payload));
            break;
        }
        case 1: {
            auto pack = [](void *dest, void *arg) -> size_t {
                auto *self = static_cast<sender*>(arg);
                uint64_t h = tagged(self->tag_, self->seq_);
                std::memcpy(dest, &h, sizeof(h));
                std::memset(static_cast<uint8_t*>(dest) + sizeof(h), uint8_t(self->seq_),
                            3000);
                return sizeof(h) + 3000;
            };
            ssize_t n = ep_->am_bcopy(AM_ID, pack, this, 0);
            st = (n < 0) ? ucs_status_t(n) : UCS_OK;
            break;
        }
        default:
            if (zcomp_.fired == 0 && zbusy_) {
                return UCS_ERR_NO_RESOURCE;   /* the previous zcopy is still queued */
            }
            std::memset(zbuf_.data(), uint8_t(seq_), zbuf_.size());
            zcomp_ = counted_comp();
            uct::iov v{zbuf_.data(), zbuf_.size(), uct::MEM_HANDLE_NULL};
            st = ep_->am_zcopy(AM_ID, &hdr, sizeof(hdr), &v, 1, 0, &zcomp_);
            if (st == UCS_INPROGRESS) {
                zbusy_ = true;
                st     = UCS_OK;
            } else if (st == UCS_OK) {
                zbusy_ = false;
            }
            break;
        }
        if (st == UCS_OK) {
            ++seq_;
        }
        return st;
    }

    uint64_t sent() const { return seq_; }
    bool zcopy_idle() const { return !zbusy_ || (zcomp_.fired > 0); }
    ucs_status_t zcopy_status() const { return zcomp_.last; }

private:
    uct::ep              *ep_;
    unsigned             tag_;
    uint64_t             seq_ = 0;
    std::vector<uint8_t> zbuf_;
    counted_comp         zcomp_;
    bool                 zbusy_ = false;
};

} // namespace

TEST_CASE("tcp eps connecting towards each other at once keep one connection", "[tcp]")
{
    test::uct_entity a("tcp", "lo"), b("tcp", "lo");
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    in_order_log at_a, at_b;
    REQUIRE(a.iface().set_am_handler(AM_ID, check_order, &at_a, 0) == UCS_OK);
    REQUIRE(b.iface().set_am_handler(AM_ID, check_order, &at_b, 0) == UCS_OK);

    /* Which side reads the other's handshake first decides which path runs
     * (adopting the peer's socket, or rejecting it); the result must not
     * depend on it. */
    int first = GENERATE(0, 1, 2);
    INFO("progress order " << first);

    auto ep_ab = make_ep(a, b);
    auto ep_ba = make_ep(b, a);
    REQUIRE(ep_ab);
    REQUIRE(ep_ba);

    /* Sent before either connection is settled: buffered, then delivered. */
    sender from_a(ep_ab.get(), 1), from_b(ep_ba.get(), 2);
    for (int i = 0; i < 2; ++i) {
        CHECK(from_a.send_next() == UCS_OK);   /* short, bcopy */
        CHECK(from_b.send_next() == UCS_OK);
    }
    CHECK(from_a.send_next() == UCS_OK);       /* zcopy, queued */
    CHECK(from_b.send_next() == UCS_OK);

    auto pump = [&] {
        if (first != 1) {
            a.progress();
        }
        if (first != 0) {
            b.progress();
        }
    };
    /* One side alone for a while, then both. */
    for (int i = 0; i < 200; ++i) {
        pump();
    }
    auto both = [&] {
        a.progress();
        b.progress();
    };

    constexpr uint64_t total = 300;
    REQUIRE(test::poll_until([&] {
        for (auto *s : {&from_a, &from_b}) {
            while (s->sent() < total) {
                if (s->send_next() != UCS_OK) {
                    break;
                }
            }
        }
        return (at_b.next[1] == total) && (at_a.next[2] == total) &&
               from_a.zcopy_idle() && from_b.zcopy_idle();
    }, both));
    CHECK(at_a.errors == 0);
    CHECK(at_b.errors == 0);
    CHECK(at_a.bytes_bad == 0);
    CHECK(at_b.bytes_bad == 0);
    CHECK(from_a.zcopy_status() == UCS_OK);
    CHECK(from_b.zcopy_status() == UCS_OK);

    /* The connection given up closes on both sides. */
    REQUIRE(test::poll_until([&] { return (connections(a) == 1) && (connections(b) == 1); },
                             both));

    /* A second pair of eps (serial number 1) gets a connection of its own. */
    auto ep_ab2 = make_ep(a, b);
    auto ep_ba2 = make_ep(b, a);
    REQUIRE(ep_ab2);
    REQUIRE(ep_ba2);
    REQUIRE(ep_ab2->am_short(AM_ID, tagged(3, 0), nullptr, 0) == UCS_OK);
    REQUIRE(ep_ba2->am_short(AM_ID, tagged(3, 0), nullptr, 0) == UCS_OK);
    REQUIRE(test::poll_until([&] { return (at_a.next[3] == 1) && (at_b.next[3] == 1); },
                             both));
    REQUIRE(test::poll_until([&] { return (connections(a) == 2) && (connections(b) == 2); },
                             both));

    /* Each pair closes its connection when both its eps are gone. */
    ep_ab.reset();
    ep_ba.reset();
    REQUIRE(test::poll_until([&] { return (connections(a) == 1) && (connections(b) == 1); },
                             both));
    REQUIRE(ep_ab2->am_short(AM_ID, tagged(3, 1), nullptr, 0) == UCS_OK);
    REQUIRE(test::poll_until([&] { return at_b.next[3] == 2; }, both));
    ep_ab2.reset();
    ep_ba2.reset();
    REQUIRE(test::poll_until([&] { return (connections(a) == 0) && (connections(b) == 0); },
                             both));
    CHECK(at_a.errors == 0);
    CHECK(at_b.errors == 0);
}

TEST_CASE("tcp iface connects to itself", "[tcp]")
{
    test::uct_entity a("tcp", "lo");
    REQUIRE(a.ok());
    in_order_log log;
    REQUIRE(a.iface().set_am_handler(AM_ID, check_order, &log, 0) == UCS_OK);
    auto ep1 = make_ep(a, a);
    auto ep2 = make_ep(a, a);
    REQUIRE(ep1);
    REQUIRE(ep2);
    REQUIRE(ep1->am_short(AM_ID, tagged(0, 0), nullptr, 0) == UCS_OK);
    REQUIRE(ep2->am_short(AM_ID, tagged(1, 0), nullptr, 0) == UCS_OK);
    REQUIRE(ep1->am_short(AM_ID, tagged(0, 1), nullptr, 0) == UCS_OK);
    auto pump = [&] { a.progress(); };
    REQUIRE(test::poll_until([&] { return (log.next[0] == 2) && (log.next[1] == 1); }, pump));
    CHECK(log.errors == 0);
    /* Each ep's connection, seen from both of its ends. */
    CHECK(connections(a) == 4);
    ep1.reset();
    ep2.reset();
    REQUIRE(test::poll_until([&] { return connections(a) == 0; }, pump));
}

namespace {

void die_with_parent()
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() == 1) {
        _exit(1);
    }
}

struct pair_report {
    uint64_t received;
    uint64_t errors;
    uint64_t connections;
};

constexpr uint64_t PAIR_MESSAGES = 3000;

/* Both processes: exchange addresses, create the ep at the same moment,
 * stream PAIR_MESSAGES to the peer while receiving its stream. */
bool run_paired_side(int fd, unsigned tag, pair_report *rep, pair_report *other)
{
    test::uct_entity e("tcp", "lo");
    if (!e.ok()) {
        return false;
    }
    in_order_log log;
    if (e.iface().set_am_handler(AM_ID, check_order, &log, 0) != UCS_OK) {
        return false;
    }
    std::vector<uint8_t> peer_blob;
    if (!test::send_blob(fd, e.addresses().serialize()) || !test::recv_blob(fd, &peer_blob)) {
        return false;
    }
    test::uct_addresses peer;
    if (!test::uct_addresses::deserialize(peer_blob, &peer) || !test::sync_peer(fd)) {
        return false;
    }
    std::unique_ptr<uct::ep> ep(make_raw_ep(e, peer));
    if (!ep) {
        return false;
    }
    sender out(ep.get(), tag);
    const unsigned peer_tag = tag ^ 3;
    auto step = [&] {
        while ((out.sent() < PAIR_MESSAGES) && (out.send_next() == UCS_OK)) {
        }
        e.progress();
    };
    if (!test::poll_until([&] {
            return (out.sent() == PAIR_MESSAGES) && out.zcopy_idle() &&
                   (log.next[peer_tag] == PAIR_MESSAGES);
        }, step)) {
        return false;
    }
    /* The peer's extra connection may take a moment to close. */
    test::poll_until([&] { return connections(e) == 1; }, [&] { e.progress(); },
                     std::chrono::seconds(5));
    rep->received    = log.next[peer_tag];
    rep->errors      = log.errors + log.bytes_bad + (out.zcopy_status() != UCS_OK);
    rep->connections = connections(e);
    /* Neither side leaves before both are done. */
    if (!test::send_value(fd, *rep)) {
        return false;
    }
    return test::recv_value(fd, other) && test::poll_until([&] {
        return ep->flush(0, nullptr) == UCS_OK;
    }, [&] { e.progress(); });
}

int paired_child(int fd)
{
    die_with_parent();
    pair_report rep{}, other{};
    TEST_CHILD_CHECK(run_paired_side(fd, 2, &rep, &other));
    return 0;
}

} // namespace

TEST_CASE("tcp processes connecting towards each other share one connection", "[tcp]")
{
    test::child_process child(paired_child);
    pair_report mine{}, theirs{};
    REQUIRE(run_paired_side(child.fd(), 1, &mine, &theirs));
    CHECK(mine.received == PAIR_MESSAGES);
    CHECK(theirs.received == PAIR_MESSAGES);
    CHECK(mine.errors == 0);
    CHECK(theirs.errors == 0);
    CHECK(mine.connections == 1);
    CHECK(theirs.connections == 1);
    CHECK(child.wait() == 0);
}
