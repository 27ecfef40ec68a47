/*
 * tcp: eps of two ifaces that connect towards each other at the same time
 * end up on one connection (the handshakes pair them by serial number),
 * whichever side progresses first, with everything sent before the pairing
 * delivered in order; an iface may connect to itself; and, against a peer
 * scripted over raw sockets, the wire side: rejection, a retry when the
 * peer's connection never comes, an ep destroyed in the middle.
 */
#include <catch2/catch.hpp>

#include "two_process.h"
#include "uct_test_util.h"

#include <uct/tcp/tcp_iface.h>
#include <uct/tcp/tcp_netif.h>
#include <uct/tcp/tcp_wire.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

namespace {

using test::counted_comp;
using test::die_with_parent;

constexpr uct::am_id_t AM_ID = 3;

size_t connections(test::uct_entity &e)
{
    auto *iface = dynamic_cast<uct::tcp::tcp_iface *>(&e.iface());
    return (iface != nullptr) ? iface->num_connections() : SIZE_MAX;
}

uct::ep *make_raw_ep(test::uct_entity &from, const test::uct_addresses &to)
{
    uct::ep *ep = nullptr;
    if (from.iface().ep_create_connected(to.device.data(), to.device.size(), to.iface.data(),
                                         to.iface.size(), &ep) != UCS_OK) {
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
    auto *log = static_cast<in_order_log *>(arg);
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
    const auto *p = static_cast<const uint8_t *>(data);
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
                auto *self = static_cast<sender *>(arg);
                uint64_t h = tagged(self->tag_, self->seq_);
                std::memcpy(dest, &h, sizeof(h));
                std::memset(static_cast<uint8_t *>(dest) + sizeof(h), uint8_t(self->seq_), 3000);
                return sizeof(h) + 3000;
            };
            ssize_t n = ep_->am_bcopy(AM_ID, pack, this, 0);
            st        = (n < 0) ? ucs_status_t(n) : UCS_OK;
            break;
        }
        default:
            if (zcomp_.fired == 0 && zbusy_) {
                return UCS_ERR_NO_RESOURCE; /* the previous zcopy is still queued */
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
    uct::ep *ep_;
    unsigned tag_;
    uint64_t seq_ = 0;
    std::vector<uint8_t> zbuf_;
    counted_comp zcomp_;
    bool zbusy_ = false;
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
        CHECK(from_a.send_next() == UCS_OK); /* short, bcopy */
        CHECK(from_b.send_next() == UCS_OK);
    }
    CHECK(from_a.send_next() == UCS_OK); /* zcopy, queued */
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
    REQUIRE(test::poll_until(
        [&] {
        for (auto *s : {&from_a, &from_b}) {
            while (s->sent() < total) {
                if (s->send_next() != UCS_OK) {
                    break;
                }
            }
        }
        return (at_b.next[1] == total) && (at_a.next[2] == total) && from_a.zcopy_idle() &&
               from_b.zcopy_idle();
        },
        both));
    CHECK(at_a.errors == 0);
    CHECK(at_b.errors == 0);
    CHECK(at_a.bytes_bad == 0);
    CHECK(at_b.bytes_bad == 0);
    CHECK(from_a.zcopy_status() == UCS_OK);
    CHECK(from_b.zcopy_status() == UCS_OK);

    /* The connection given up closes on both sides. */
    REQUIRE(test::poll_until([&] { return (connections(a) == 1) && (connections(b) == 1); }, both));

    /* A second pair of eps (serial number 1) gets a connection of its own. */
    auto ep_ab2 = make_ep(a, b);
    auto ep_ba2 = make_ep(b, a);
    REQUIRE(ep_ab2);
    REQUIRE(ep_ba2);
    REQUIRE(ep_ab2->am_short(AM_ID, tagged(3, 0), nullptr, 0) == UCS_OK);
    REQUIRE(ep_ba2->am_short(AM_ID, tagged(3, 0), nullptr, 0) == UCS_OK);
    REQUIRE(test::poll_until([&] { return (at_a.next[3] == 1) && (at_b.next[3] == 1); }, both));
    REQUIRE(test::poll_until([&] { return (connections(a) == 2) && (connections(b) == 2); }, both));

    /* Each pair closes its connection when both its eps are gone. */
    ep_ab.reset();
    ep_ba.reset();
    REQUIRE(test::poll_until([&] { return (connections(a) == 1) && (connections(b) == 1); }, both));
    REQUIRE(ep_ab2->am_short(AM_ID, tagged(3, 1), nullptr, 0) == UCS_OK);
    REQUIRE(test::poll_until([&] { return at_b.next[3] == 2; }, both));
    ep_ab2.reset();
    ep_ba2.reset();
    REQUIRE(test::poll_until([&] { return (connections(a) == 0) && (connections(b) == 0); }, both));
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
    auto step               = [&] {
        while ((out.sent() < PAIR_MESSAGES) && (out.send_next() == UCS_OK)) {
        }
        e.progress();
    };
    if (!test::poll_until(
            [&] {
        return (out.sent() == PAIR_MESSAGES) && out.zcopy_idle() &&
               (log.next[peer_tag] == PAIR_MESSAGES);
            },
            step)) {
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
    return test::recv_value(fd, other) &&
           test::poll_until([&] { return ep->flush(0, nullptr) == UCS_OK; }, [&] { e.progress(); });
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

/* ---- against a scripted peer: the wire side of pairing ---- */

namespace {

using namespace uct::tcp;

/* A peer iface played by hand: a listening socket with a tcp address, and
 * raw sockets that speak the wire format. */
class scripted_peer {
public:
    /* Listens on a port below (lower = true) or above `other_port`, which
     * decides whose connection a pair keeps. */
    scripted_peer(uint16_t other_port, bool lower)
    {
        listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        int step   = lower ? -1 : 1;
        for (int port = int(other_port) + step; (port > 1024) && (port < 65536); port += step) {
            sockaddr_in sa{};
            sa.sin_family      = AF_INET;
            sa.sin_port        = htons(uint16_t(port));
            sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            if (::bind(listen_fd_, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)) == 0) {
                port_ = uint16_t(port);
                break;
            }
        }
        if ((port_ == 0) || (::listen(listen_fd_, 8) != 0)) {
            port_ = 0;
        }
    }

    ~scripted_peer()
    {
        for (int fd : fds_) {
            ::close(fd);
        }
        ::close(listen_fd_);
    }

    bool ok() const { return port_ != 0; }
    uint16_t port() const { return port_; }
    const iface_key &key() const { return key_; }

    test::uct_addresses addresses() const
    {
        test::uct_addresses a;
        device_addr_hdr hdr{};
        hdr.family          = uint8_t(addr_family::IPV4);
        hdr.flags           = device_addr_flag::LOOPBACK;
        hdr.host_id         = local_host_id();
        const uint8_t ip[4] = {127, 0, 0, 1};
        a.device.resize(sizeof(hdr) + sizeof(ip));
        std::memcpy(a.device.data(), &hdr, sizeof(hdr));
        std::memcpy(a.device.data() + sizeof(hdr), ip, sizeof(ip));
        iface_addr ia{};
        ia.port = port_;
        ia.key  = key_;
        a.iface.resize(sizeof(ia));
        std::memcpy(a.iface.data(), &ia, sizeof(ia));
        return a;
    }

    /* Ours, towards the iface whose key is `acceptor_key`. */
    handshake my_handshake(uint32_t conn_sn, const iface_key &acceptor_key) const
    {
        handshake hs{};
        hs.acceptor_key  = acceptor_key;
        hs.initiator_key = key_;
        hs.magic         = HANDSHAKE_MAGIC;
        hs.version       = HANDSHAKE_VERSION;
        hs.family        = uint8_t(addr_family::IPV4);
        hs.ip[0]         = 127;
        hs.ip[3]         = 1;
        hs.port          = port_;
        hs.conn_sn       = conn_sn;
        return hs;
    }

    /* A connection to us, accepted while `pump` runs; -1 on timeout. */
    int accept_one(const std::function<void()> &pump)
    {
        int fd = -1;
        test::poll_until(
            [&] {
            pollfd pfd{listen_fd_, POLLIN, 0};
            if (::poll(&pfd, 1, 0) == 1) {
                fd = ::accept(listen_fd_, nullptr, nullptr);
            }
            return fd >= 0;
            },
            pump, std::chrono::seconds(10));
        if (fd >= 0) {
            fds_.push_back(fd);
        }
        return fd;
    }

    /* Our own connection to `port`. */
    int connect_to(uint16_t port)
    {
        int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in sa{};
        sa.sin_family      = AF_INET;
        sa.sin_port        = htons(port);
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)) != 0) {
            ::close(fd);
            return -1;
        }
        fds_.push_back(fd);
        return fd;
    }

    /* Exactly `length` bytes from `fd`, while `pump` runs; false on
     * timeout or end of stream. */
    static bool read(int fd, void *buf, size_t length, const std::function<void()> &pump)
    {
        size_t got = 0;
        bool eof   = false;
        test::poll_until(
            [&] {
            ssize_t n = ::recv(fd, static_cast<uint8_t *>(buf) + got, length - got, MSG_DONTWAIT);
            if (n > 0) {
                got += size_t(n);
            } else if (n == 0) {
                eof = true;
            }
            return (got == length) || eof;
            },
            pump, std::chrono::seconds(10));
        return got == length;
    }

    /* The peer closed `fd` (end of stream) while `pump` runs. */
    static bool closed(int fd, const std::function<void()> &pump)
    {
        bool eof = false;
        test::poll_until(
            [&] {
            uint8_t byte;
            ssize_t n = ::recv(fd, &byte, 1, MSG_DONTWAIT);
            eof       = (n == 0) || ((n < 0) && (errno == ECONNRESET));
            return eof;
            },
            pump, std::chrono::seconds(10));
        return eof;
    }

    static bool send_conn_reply(int fd, internal_op op, uint8_t flags)
    {
        frame_hdr hdr{uint8_t(op), frame_flag::INTERNAL, 0, uint32_t(sizeof(conn_reply))};
        conn_reply reply{};
        reply.flags = flags;
        uint8_t bytes[sizeof(hdr) + sizeof(reply)];
        std::memcpy(bytes, &hdr, sizeof(hdr));
        std::memcpy(bytes + sizeof(hdr), &reply, sizeof(reply));
        return ::send(fd, bytes, sizeof(bytes), MSG_NOSIGNAL) == ssize_t(sizeof(bytes));
    }

    static bool send_bytes(int fd, const void *data, size_t length)
    {
        return ::send(fd, data, length, MSG_NOSIGNAL) == ssize_t(length);
    }

private:
    int listen_fd_ = -1;
    uint16_t port_ = 0;
    iface_key key_ = {{0x5c, 0x21, 0x9e, 0x07, 0x33, 0xd4, 0x6a, 0x18, 0xc5, 0x7f, 0x42, 0x90, 0x0b,
                       0xee, 0x61, 0x2d}};
    std::vector<int> fds_;
};

iface_addr address_of(test::uct_entity &e)
{
    auto a = e.addresses();
    iface_addr ia;
    std::memcpy(&ia, a.iface.data(), sizeof(ia));
    return ia;
}

uint16_t iface_port(test::uct_entity &e)
{
    return address_of(e).port;
}

} // namespace

TEST_CASE("tcp rejected connection waits for the peer's then connects again", "[tcp]")
{
    test::uct_entity a("tcp", "lo");
    REQUIRE(a.ok());
    scripted_peer b(iface_port(a), true); /* b's address is lower: its connection wins */
    REQUIRE(b.ok());
    auto pump = [&] { a.progress(); };

    std::unique_ptr<uct::ep> ep(make_raw_ep(a, b.addresses()));
    REQUIRE(ep);
    REQUIRE(ep->am_short(AM_ID, 0x1122334455667788ull, nullptr, 0) == UCS_OK);

    int first = b.accept_one(pump);
    REQUIRE(first >= 0);
    handshake hs;
    REQUIRE(scripted_peer::read(first, &hs, sizeof(hs), pump));
    CHECK(hs.magic == HANDSHAKE_MAGIC);
    CHECK(hs.conn_sn == 0);
    CHECK(hs.port == iface_port(a));
    /* It proves it holds b's address, and says who a is. */
    CHECK(std::memcmp(&hs.acceptor_key, &b.key(), sizeof(iface_key)) == 0);
    const iface_addr a_addr = address_of(a);
    CHECK(std::memcmp(&hs.initiator_key, &a_addr.key, sizeof(iface_key)) == 0);
    /* Nothing but the handshake before the answer. */
    uint8_t extra;
    CHECK(::recv(first, &extra, 1, MSG_DONTWAIT) < 0);

    /* "Use mine": a gives its connection up and waits for b's... */
    REQUIRE(scripted_peer::send_conn_reply(first, internal_op::CONN_REJECT, 0));
    CHECK(scripted_peer::closed(first, pump));
    /* ...which never comes: a connects again (after its wait). */
    int second = b.accept_one(pump);
    REQUIRE(second >= 0);
    REQUIRE(scripted_peer::read(second, &hs, sizeof(hs), pump));
    CHECK(hs.conn_sn == 0);
    REQUIRE(scripted_peer::send_conn_reply(second, internal_op::CONN_ACCEPT, 0));

    /* The message buffered all along arrives now, then the ep's DETACH. */
    uint8_t frame[sizeof(frame_hdr) + sizeof(uint64_t)];
    REQUIRE(scripted_peer::read(second, frame, sizeof(frame), pump));
    frame_hdr fh;
    std::memcpy(&fh, frame, sizeof(fh));
    uint64_t header;
    std::memcpy(&header, frame + sizeof(fh), sizeof(header));
    CHECK(fh.id == AM_ID);
    CHECK(fh.flags == 0);
    CHECK(fh.length == sizeof(uint64_t));
    CHECK(header == 0x1122334455667788ull);
    ep.reset();
    REQUIRE(scripted_peer::read(second, &fh, sizeof(fh), pump));
    CHECK(fh.id == uint8_t(internal_op::DETACH));
    CHECK(fh.flags == frame_flag::INTERNAL);
}

TEST_CASE("tcp ep destroyed while pairing keeps its connection for the peer", "[tcp]")
{
    test::uct_entity a("tcp", "lo");
    REQUIRE(a.ok());
    scripted_peer b(iface_port(a), false); /* a's address is lower: its connection wins */
    REQUIRE(b.ok());
    auto pump = [&] { a.progress(); };

    std::unique_ptr<uct::ep> ep(make_raw_ep(a, b.addresses()));
    REQUIRE(ep);
    int from_a = b.accept_one(pump);
    REQUIRE(from_a >= 0);
    handshake hs;
    REQUIRE(scripted_peer::read(from_a, &hs, sizeof(hs), pump));

    /* b's own ep connects towards a at the same time: a keeps its own
     * connection and tells b so. */
    int to_a = b.connect_to(iface_port(a));
    REQUIRE(to_a >= 0);
    handshake mine = b.my_handshake(0, address_of(a).key);
    REQUIRE(scripted_peer::send_bytes(to_a, &mine, sizeof(mine)));
    uint8_t answer[sizeof(frame_hdr) + sizeof(conn_reply)];
    REQUIRE(scripted_peer::read(to_a, answer, sizeof(answer), pump));
    frame_hdr fh;
    std::memcpy(&fh, answer, sizeof(fh));
    CHECK(fh.id == uint8_t(internal_op::CONN_REJECT));
    CHECK(scripted_peer::closed(to_a, pump));

    /* a's ep goes away before b took a's connection over: the connection
     * stays, so b's ep does not lose it, and a says its ep is gone. */
    ep.reset();
    for (int i = 0; i < 100; ++i) {
        pump();
    }
    REQUIRE(scripted_peer::send_conn_reply(from_a, internal_op::CONN_ACCEPT,
                                           conn_reply_flag::PAIRED));
    REQUIRE(scripted_peer::read(from_a, &fh, sizeof(fh), pump));
    CHECK(fh.id == uint8_t(internal_op::DETACH));

    /* b's ep still has a target: a serves an active message on it. */
    in_order_log log;
    REQUIRE(a.iface().set_am_handler(AM_ID, check_order, &log, 0) == UCS_OK);
    uint8_t msg[sizeof(frame_hdr) + sizeof(uint64_t)];
    frame_hdr am{AM_ID, 0, 0, sizeof(uint64_t)};
    uint64_t tag = tagged(1, 0);
    std::memcpy(msg, &am, sizeof(am));
    std::memcpy(msg + sizeof(am), &tag, sizeof(tag));
    REQUIRE(scripted_peer::send_bytes(from_a, msg, sizeof(msg)));
    REQUIRE(test::poll_until([&] { return log.next[1] == 1; }, pump));

    /* b's ep leaves too: a closes its end. */
    frame_hdr detach{uint8_t(internal_op::DETACH), frame_flag::INTERNAL, 0, 0};
    REQUIRE(scripted_peer::send_bytes(from_a, &detach, sizeof(detach)));
    CHECK(scripted_peer::closed(from_a, pump));
    REQUIRE(test::poll_until([&] { return connections(a) == 0; }, pump));
}
