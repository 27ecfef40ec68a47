/*
 * tcp under failure: a peer killed with SIGKILL, a peer that stops reading
 * (not a failure), a refused connection, and
 * raw sockets sending garbage, oversized lengths or bad handshakes to an
 * iface. Each fault ends that one connection (and reports it to the ep's
 * owner), never the process, and never a hang.
 */
#include <catch2/catch.hpp>

#include "two_process.h"
#include "../ucs/config_test_util.h"
#include "tcp_test_util.h"
#include "uct_test_util.h"

#include <uct/tcp/tcp_iface.h>
#include <uct/tcp/tcp_wire.h>
#include <ucs/debug/log.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <sys/prctl.h>
#include <unistd.h>
#include <algorithm>
#include <fstream>
#include <functional>
#include <set>
#include <memory>
#include <string>
#include <vector>

namespace {

using test::counted_comp;
using test::die_with_parent;

constexpr uct::am_id_t AM_ID  = 3;
constexpr uct::am_id_t RAW_ID = 4;

struct error_record {
    int calls           = 0;
    uct::ep *ep         = nullptr;
    ucs_status_t status = UCS_OK;
    std::function<void(uct::ep *)> then; /* optional: run inside the handler */
};

ucs_status_t record_error(void *arg, uct::ep *ep, ucs_status_t status)
{
    auto *rec = static_cast<error_record *>(arg);
    ++rec->calls;
    rec->ep     = ep;
    rec->status = status;
    if (rec->then) {
        rec->then(ep);
    }
    return UCS_OK;
}

/* tcp on "lo" with an error handler (uct_entity sets none). */
class tcp_node {
public:
    explicit tcp_node(error_record *rec) :
        worker_(std::make_unique<uct::worker>(nullptr, UCS_THREAD_MODE_SINGLE))
    {
        for (uct::component *c : uct::components()) {
            if ((std::string(c->name()) == "tcp") && (c->md_open("tcp", &md_) == UCS_OK)) {
                break;
            }
        }
        if (md_ == nullptr) {
            return;
        }
        uct::iface_params params;
        params.tl_name         = "tcp";
        params.dev_name        = "lo";
        params.err_handler     = record_error;
        params.err_handler_arg = rec;
        if (md_->iface_open(*worker_, params, &iface_) != UCS_OK) {
            iface_ = nullptr;
        }
    }

    ~tcp_node()
    {
        for (uct::ep *ep : eps_) {
            delete ep;
        }
        delete iface_;
        delete md_;
    }

    bool ok() const { return iface_ != nullptr; }
    uct::iface &iface() { return *iface_; }
    void progress() { worker_->progress(); }

    test::uct_addresses addresses() const { return test::addresses_of(*iface_); }

    uct::ep *connect(const test::uct_addresses &peer)
    {
        return test::connect_to(*iface_, peer, &eps_);
    }

    void destroy(uct::ep *ep)
    {
        eps_.erase(std::remove(eps_.begin(), eps_.end(), ep), eps_.end());
        delete ep;
    }

private:
    std::unique_ptr<uct::worker> worker_;
    uct::md *md_       = nullptr;
    uct::iface *iface_ = nullptr;
    std::vector<uct::ep *> eps_;
};

struct retry_req {
    uct::pending_req req; /* first: the callback gets its address */
    uct::ep *ep            = nullptr;
    int calls              = 0;
    ucs_status_t op_status = UCS_OK;

    static ucs_status_t run(uct::pending_req *self)
    {
        auto *r = reinterpret_cast<retry_req *>(self);
        ++r->calls;
        r->op_status = r->ep->am_short(AM_ID, 0, nullptr, 0);
        return r->op_status;
    }
};

ucs_status_t count_am(void *arg, void *, size_t, unsigned)
{
    ++*static_cast<uint64_t *>(arg);
    return UCS_OK;
}

bool recv_peer(int fd, test::uct_addresses *peer)
{
    std::vector<uint8_t> blob;
    return test::recv_blob(fd, &blob) && test::uct_addresses::deserialize(blob, peer);
}

template <typename Node>
bool flush_and_wait(Node &n, uct::ep *ep)
{
    counted_comp comp;
    ucs_status_t st = ep->flush(0, &comp);
    if (st == UCS_OK) {
        return true;
    }
    return (st == UCS_INPROGRESS) &&
           test::poll_until([&] { return comp.fired == 1; }, [&] { n.progress(); }) &&
           (comp.last == UCS_OK);
}

/* Connects to the child peer at the other end of `fd` (below) and has one
 * message (am_short's header alone) delivered and confirmed, so the child
 * has accepted the connection; nullptr if any step fails. */
uct::ep *connect_confirmed(tcp_node &n, int fd)
{
    test::uct_addresses peer;
    if (!recv_peer(fd, &peer)) {
        return nullptr;
    }
    uct::ep *ep = n.connect(peer);
    if ((ep == nullptr) || (ep->am_short(AM_ID, 1, nullptr, 0) != UCS_OK) ||
        !flush_and_wait(n, ep) || !test::sync_peer(fd)) {
        return nullptr;
    }
    return ep;
}

/* A child that receives on AM_ID, confirms the first message, then stalls
 * (never progresses again) until it is killed. */
int stalled_peer(int fd)
{
    die_with_parent();
    test::uct_entity e("tcp", "lo");
    TEST_CHILD_CHECK(e.ok());
    uint64_t count = 0;
    TEST_CHILD_CHECK(e.iface().set_am_handler(AM_ID, count_am, &count, 0) == UCS_OK);
    TEST_CHILD_CHECK(test::send_blob(fd, e.addresses().serialize()));
    TEST_CHILD_CHECK(test::poll_until([&] { return count > 0; }, [&] { e.progress(); }));
    TEST_CHILD_CHECK(test::sync_peer(fd));
    uint8_t never;
    test::recv_value(fd, &never);
    return 0;
}

} // namespace

namespace {

/* A child that receives on AM_ID, then stops reading until the parent says
 * so, then receives until it got `expected` bytes in all. */
int pausing_peer(int fd)
{
    die_with_parent();
    test::uct_entity e("tcp", "lo");
    TEST_CHILD_CHECK(e.ok());
    struct counter {
        uint64_t messages = 0, bytes = 0;
    } got;
    auto count = [](void *arg, void *, size_t length, unsigned) {
        auto *c = static_cast<counter *>(arg);
        ++c->messages;
        c->bytes += length;
        return UCS_OK;
    };
    TEST_CHILD_CHECK(e.iface().set_am_handler(AM_ID, count, &got, 0) == UCS_OK);
    TEST_CHILD_CHECK(test::send_blob(fd, e.addresses().serialize()));
    TEST_CHILD_CHECK(test::poll_until([&] { return got.messages > 0; }, [&] { e.progress(); }));
    TEST_CHILD_CHECK(test::sync_peer(fd));
    uint64_t expected = 0;
    TEST_CHILD_CHECK(test::recv_value(fd, &expected)); /* not reading meanwhile */
    TEST_CHILD_CHECK(test::poll_until([&] { return got.bytes >= expected; }, [&] { e.progress(); },
                                      std::chrono::seconds(60)));
    TEST_CHILD_CHECK(got.bytes == expected);
    TEST_CHILD_CHECK(test::sync_peer(fd));
    return 0;
}

} // namespace

TEST_CASE("tcp peer that stops reading for longer than the user timeout is not failed", "[tcp]")
{
    /* Its kernel answers with a closed window. Linux's TCP_USER_TIMEOUT would
     * end the connection after 200 ms of that; the ack watch must not. */
    config_test::env_guard env;
    env.set("UCX_TCP_USER_TIMEOUT", "200ms");
    test::child_process child(pausing_peer);
    error_record rec;
    tcp_node n(&rec);
    REQUIRE(n.ok());
    uct::ep *ep = connect_confirmed(n, child.fd());
    REQUIRE(ep != nullptr);

    /* More than both socket buffers hold: the rest waits for the window. */
    std::vector<uint8_t> big(64 << 20, 0x3c);
    uct::iov iov{big.data(), big.size(), nullptr};
    counted_comp zcomp;
    REQUIRE(ep->am_zcopy(AM_ID, nullptr, 0, &iov, 1, 0, &zcomp) == UCS_INPROGRESS);
    /* The scenario: five user timeouts in which the peer reads nothing. */
    const auto pause_end = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (std::chrono::steady_clock::now() < pause_end) {
        n.progress();
    }
    CHECK(rec.calls == 0);
    CHECK(zcomp.fired == 0); /* the window really stayed closed */

    /* The first message was am_short's 8-byte header alone. */
    REQUIRE(test::send_value(child.fd(), uint64_t(8 + big.size())));
    REQUIRE(test::poll_until([&] { return zcomp.fired > 0; }, [&] { n.progress(); },
                             std::chrono::seconds(60)));
    CHECK(zcomp.last == UCS_OK);
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(rec.calls == 0);
    CHECK(child.wait() == 0);
}

TEST_CASE("tcp peer killed with SIGKILL: the survivor's ep fails cleanly", "[tcp]")
{
    test::child_process child(stalled_peer);
    error_record rec;
    tcp_node n(&rec);
    REQUIRE(n.ok());
    uct::ep *ep = connect_confirmed(n, child.fd());
    REQUIRE(ep != nullptr);

    SECTION("with work in flight") {
        /* The stalled peer reads nothing: 64 MiB cannot leave at once. */
        std::vector<uint8_t> big(64 << 20, 0x3c);
        uct::iov iov{big.data(), big.size(), nullptr};
        counted_comp zcomp;
        REQUIRE(ep->am_zcopy(AM_ID, nullptr, 0, &iov, 1, 0, &zcomp) == UCS_INPROGRESS);
        ucs_status_t st;
        unsigned queued = 0;
        while ((st = ep->am_short(AM_ID, 2, nullptr, 0)) == UCS_OK) {
            ++queued;
            REQUIRE(queued < 1000000);
        }
        REQUIRE(st == UCS_ERR_NO_RESOURCE);
        retry_req req;
        req.ep       = ep;
        req.req.func = retry_req::run;
        REQUIRE(ep->pending_add(&req.req, 0) == UCS_OK);

        child.kill(SIGKILL);
        CHECK(child.wait() == 128 + SIGKILL);
        REQUIRE(test::poll_until([&] { return rec.calls > 0; }, [&] { n.progress(); },
                                 std::chrono::seconds(20)));
        CHECK(rec.calls == 1);
        CHECK(rec.ep == ep);
        CHECK(rec.status == UCS_ERR_CONNECTION_RESET);
        CHECK(zcomp.fired == 1);
        CHECK(zcomp.last == UCS_ERR_CONNECTION_RESET);
        /* The request the handler left queued ran once and saw the error. */
        CHECK(req.calls == 1);
        CHECK(req.op_status == UCS_ERR_CONNECTION_RESET);
    }

    SECTION("while idle") {
        child.kill(SIGKILL);
        CHECK(child.wait() == 128 + SIGKILL);
        /* Found by reading end-of-stream, or by the next write: either way
         * no SIGPIPE reaches the process. */
        REQUIRE(test::poll_until([&] { return rec.calls > 0; },
                                 [&] {
            n.progress();
            ep->am_short(AM_ID, 3, nullptr, 0);
        },
                                 std::chrono::seconds(20)));
        CHECK(rec.calls == 1);
        CHECK(rec.ep == ep);
        CHECK(rec.status == UCS_ERR_CONNECTION_RESET);
    }

    /* Later operations report the failure; the handler is not called again. */
    CHECK(ep->am_short(AM_ID, 4, nullptr, 0) == UCS_ERR_CONNECTION_RESET);
    uct::iov small{&rec, 8, nullptr};
    counted_comp late;
    CHECK(ep->am_zcopy(AM_ID, nullptr, 0, &small, 1, 0, &late) == UCS_ERR_CONNECTION_RESET);
    CHECK(ep->flush(0, nullptr) == UCS_ERR_CONNECTION_RESET);
    for (int i = 0; i < 1000; ++i) {
        n.progress();
    }
    CHECK(rec.calls == 1);
    CHECK(late.fired == 0);
    CHECK(n.iface().flush(0, nullptr) == UCS_OK); /* nothing left to wait for */
}

namespace {

/* A bound loopback port nobody listens on; returns the socket holding it. */
int unlistened_port(uint16_t *port)
{
    int s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family      = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len      = sizeof(sa);
    if ((s < 0) || (::bind(s, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)) != 0) ||
        (::getsockname(s, reinterpret_cast<sockaddr *>(&sa), &len) != 0)) {
        return -1;
    }
    *port = ntohs(sa.sin_port);
    return s;
}

} // namespace

TEST_CASE("tcp connection refused: the ep fails through the error handler", "[tcp]")
{
    error_record rec;
    tcp_node n(&rec);
    REQUIRE(n.ok());
    uint16_t port = 0;
    int s         = unlistened_port(&port);
    REQUIRE(s >= 0);

    test::uct_addresses peer = n.addresses();
    std::memcpy(peer.iface.data(), &port, sizeof(port));
    uct::ep *ep = n.connect(peer);
    REQUIRE(ep != nullptr); /* created without waiting for the peer */

    CHECK(ep->am_short(AM_ID, 1, nullptr, 0) == UCS_OK);
    uint64_t word = 7;
    uct::iov iov{&word, sizeof(word), nullptr};
    counted_comp zcomp;
    ucs_status_t st = ep->am_zcopy(AM_ID, nullptr, 0, &iov, 1, 0, &zcomp);
    CHECK(st == UCS_INPROGRESS);

    REQUIRE(test::poll_until([&] { return rec.calls > 0; }, [&] { n.progress(); }));
    CHECK(rec.calls == 1);
    CHECK(rec.ep == ep);
    CHECK(rec.status == UCS_ERR_CONNECTION_RESET);
    CHECK(zcomp.fired == 1);
    CHECK(zcomp.last == UCS_ERR_CONNECTION_RESET);
    CHECK(ep->am_short(AM_ID, 2, nullptr, 0) == UCS_ERR_CONNECTION_RESET);
    ::close(s);
}

TEST_CASE("tcp error handler may destroy the failed ep", "[tcp]")
{
    error_record rec;
    tcp_node n(&rec);
    REQUIRE(n.ok());
    uint16_t port = 0;
    int s         = unlistened_port(&port);
    REQUIRE(s >= 0);
    test::uct_addresses peer = n.addresses();
    std::memcpy(peer.iface.data(), &port, sizeof(port));

    std::set<uct::ep *> live, reported;
    for (int i = 0; i < 3; ++i) {
        uct::ep *ep = n.connect(peer);
        REQUIRE(ep != nullptr);
        live.insert(ep);
    }
    rec.then = [&](uct::ep *ep) {
        reported.insert(ep);
        n.destroy(ep);
    };
    REQUIRE(test::poll_until([&] { return rec.calls >= 3; }, [&] { n.progress(); }));
    for (int i = 0; i < 100; ++i) {
        n.progress();
    }
    CHECK(rec.calls == 3); /* each ep once, none skipped */
    CHECK(reported == live);
    ::close(s);
}

namespace {

enum command : uint8_t { CMD_RAW_COUNT = 'R', CMD_QUIT = 'Q' };

struct order_check {
    uint64_t next = 0;
    uint64_t bad  = 0;
};

ucs_status_t check_order(void *arg, void *data, size_t length, unsigned)
{
    auto *o = static_cast<order_check *>(arg);
    uint64_t seq;
    std::memcpy(&seq, data, sizeof(seq));
    o->bad += (length != 8) || (seq != o->next);
    ++o->next;
    return UCS_OK;
}

struct malformed_report {
    uint64_t legit;
    uint64_t legit_bad;
    uint64_t raw_delivered;
    uint64_t closed_logged;
    uint64_t refused_keys; /* handshakes without the iface key, closed unread */
};

int malformed_target(int fd)
{
    die_with_parent();
    /* Malformed input is logged as errors: keep them in a file to count. */
    std::string log_path = "/tmp/ucx-ng-tcp-malformed-" + std::to_string(getpid()) + ".log";
    TEST_CHILD_CHECK(ucs::log_set_file(log_path.c_str()) == UCS_OK);

    test::uct_entity e("tcp", "lo");
    TEST_CHILD_CHECK(e.ok());
    order_check order;
    uint64_t raw = 0;
    TEST_CHILD_CHECK(e.iface().set_am_handler(AM_ID, check_order, &order, 0) == UCS_OK);
    TEST_CHILD_CHECK(e.iface().set_am_handler(RAW_ID, count_am, &raw, 0) == UCS_OK);
    TEST_CHILD_CHECK(test::send_blob(fd, e.addresses().serialize()));

    for (;;) {
        e.progress();
        pollfd pfd{fd, POLLIN, 0};
        if (::poll(&pfd, 1, 0) != 1) {
            continue;
        }
        uint8_t cmd = 0;
        TEST_CHILD_CHECK(test::recv_value(fd, &cmd));
        if (cmd == CMD_RAW_COUNT) {
            TEST_CHILD_CHECK(test::send_value(fd, raw));
        } else {
            break;
        }
    }
    /* Flushing active messages completes locally: wait for the last ones. */
    uint64_t expected = 0;
    TEST_CHILD_CHECK(test::recv_value(fd, &expected));
    test::poll_until([&] { return order.next >= expected; }, [&] { e.progress(); });

    ucs::log_set_file("stdout");
    malformed_report rep{order.next, order.bad, raw, 0,
                         dynamic_cast<uct::tcp::tcp_iface &>(e.iface()).refused_handshakes()};
    std::ifstream in(log_path);
    for (std::string line; std::getline(in, line);) {
        rep.closed_logged += (line.find("closing it") != std::string::npos) ||
                             (line.find("truncated handshake") != std::string::npos) ||
                             (line.find("lacks this iface's key") != std::string::npos);
    }
    ::unlink(log_path.c_str());
    TEST_CHILD_CHECK(test::send_value(fd, rep));
    return 0;
}

int raw_connect(uint16_t port)
{
    int s = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family      = AF_INET;
    sa.sin_port        = htons(port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if ((s >= 0) && (::connect(s, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)) != 0)) {
        ::close(s);
        return -1;
    }
    return s;
}

bool raw_send(int s, const std::vector<uint8_t> &bytes)
{
    return ::send(s, bytes.data(), bytes.size(), MSG_NOSIGNAL) == ssize_t(bytes.size());
}

/* The peer closed this socket: EOF or reset within the deadline. */
bool closed_by_peer(int s)
{
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
        pollfd pfd{s, POLLIN, 0};
        if (::poll(&pfd, 1, 100) != 1) {
            continue; /* waiting for an event, bounded: not a sleep */
        }
        uint8_t byte;
        ssize_t n = ::recv(s, &byte, 1, MSG_DONTWAIT);
        if ((n == 0) || ((n < 0) && (errno == ECONNRESET))) {
            return true;
        }
    }
    return false;
}

template <typename T>
void append(std::vector<uint8_t> *out, const T &value)
{
    size_t old = out->size();
    out->resize(old + sizeof(value));
    std::memcpy(out->data() + old, &value, sizeof(value));
}

std::vector<uint8_t> frame(uint8_t id, uint8_t flags, uint16_t reserved, uint32_t length,
                           size_t payload_bytes)
{
    uct::tcp::frame_hdr hdr{id, flags, reserved, length};
    std::vector<uint8_t> out(sizeof(hdr) + payload_bytes, 0x42);
    std::memcpy(out.data(), &hdr, sizeof(hdr));
    return out;
}

std::vector<uint8_t> operator+(std::vector<uint8_t> a, const std::vector<uint8_t> &b)
{
    size_t old = a.size();
    a.resize(old + b.size());
    if (!b.empty()) {
        std::memcpy(a.data() + old, b.data(), b.size());
    }
    return a;
}

} // namespace

TEST_CASE("tcp drops malformed connections and keeps serving the others", "[tcp]")
{
    using namespace uct::tcp;
    test::child_process child(malformed_target);

    test::uct_entity e("tcp", "lo");
    REQUIRE(e.ok());
    test::uct_addresses peer;
    REQUIRE(recv_peer(child.fd(), &peer));
    iface_addr target{};
    REQUIRE(peer.iface.size() == sizeof(target));
    std::memcpy(&target, peer.iface.data(), sizeof(target));
    const uint16_t port = target.port;
    uct::ep *ep         = e.connect(peer);
    REQUIRE(ep != nullptr);

    uint64_t seq    = 0;
    auto send_legit = [&](int n) {
        for (int i = 0; i < n; ++i, ++seq) {
            ucs_status_t st;
            while ((st = ep->am_short(AM_ID, seq, nullptr, 0)) == UCS_ERR_NO_RESOURCE) {
                e.progress();
            }
            REQUIRE(st == UCS_OK);
        }
        REQUIRE(flush_and_wait(e, ep));
    };
    send_legit(10);

    handshake good{};
    good.magic        = HANDSHAKE_MAGIC;
    good.version      = HANDSHAKE_VERSION;
    good.family       = uint8_t(addr_family::IPV4);
    good.port         = 1;
    good.acceptor_key = target.key; /* from the address: may connect */
    std::vector<uint8_t> hs;
    append(&hs, good);
    handshake bad_magic = good, bad_version = good, no_key = good, wrong_key = good;
    bad_magic.magic     = HANDSHAKE_MAGIC + 1;
    bad_version.version = 99;
    no_key.acceptor_key = {};
    wrong_key.acceptor_key.bytes[7] ^= 1;
    std::vector<uint8_t> hs_bad_magic, hs_bad_version, hs_no_key, hs_wrong_key;
    append(&hs_bad_magic, bad_magic);
    append(&hs_bad_version, bad_version);
    append(&hs_no_key, no_key);
    append(&hs_wrong_key, wrong_key);
    std::vector<uint8_t> garbage(64);
    for (size_t i = 0; i < garbage.size(); ++i) {
        garbage[i] = uint8_t(i * 151 + 7);
    }
    std::vector<uint8_t> bad_atomic = hs + frame(uint8_t(internal_op::ATOMIC_POST),
                                                 frame_flag::INTERNAL, 0, sizeof(atomic_req), 0);
    atomic_req areq{};
    areq.op   = 99;
    areq.size = 8;
    append(&bad_atomic, areq);

    const std::vector<std::vector<uint8_t>> malformed = {
        garbage, /* not a handshake */
        hs_bad_magic,
        hs_bad_version,
        hs_no_key + frame(RAW_ID, 0, 0, 8, 8),     /* a port scan's guess */
        hs_wrong_key + frame(RAW_ID, 0, 0, 8, 8),  /* one bit off */
        hs + frame(RAW_ID, 0, 0, 0xffffffffu, 16), /* length over the limit */
        hs + frame(200, 0, 0, 8, 8),               /* bad am id */
        hs + frame(RAW_ID, 0, 7, 8, 8),            /* reserved bits */
        hs + frame(RAW_ID, 0x80, 0, 8, 8),         /* unknown flag */
        hs + frame(uint8_t(internal_op::GET_REQ), frame_flag::INTERNAL, 0, 5, 5),
        hs + frame(uint8_t(internal_op::PUT), frame_flag::INTERNAL, 0, 4, 4),
        hs + frame(uint8_t(internal_op::GET_REPLY), frame_flag::INTERNAL, 0, sizeof(reply_hdr),
                   sizeof(reply_hdr)), /* a reply nobody asked */
        hs + frame(uint8_t(internal_op::LAST), frame_flag::INTERNAL, 0, 8, 8),
        bad_atomic,
    };

    /* All connected at once, next to the legitimate ep. */
    std::vector<int> socks;
    for (const auto &bytes : malformed) {
        int s = raw_connect(port);
        REQUIRE(s >= 0);
        REQUIRE(raw_send(s, bytes));
        socks.push_back(s);
    }
    int truncated = raw_connect(port);
    REQUIRE(truncated >= 0);
    std::vector<uint8_t> hs_head(hs);
    hs_head.resize(10);
    REQUIRE(raw_send(truncated, hs_head));
    ::shutdown(truncated, SHUT_WR);
    send_legit(10);

    for (size_t i = 0; i < socks.size(); ++i) {
        INFO("malformed input #" << i);
        CHECK(closed_by_peer(socks[i]));
        ::close(socks[i]);
    }
    CHECK(closed_by_peer(truncated));
    ::close(truncated);

    /* A well-formed raw connection is served and stays open; one that dies
     * in the middle of a large frame delivers nothing. */
    int good_sock = raw_connect(port);
    REQUIRE(good_sock >= 0);
    REQUIRE(raw_send(good_sock, hs + frame(RAW_ID, 0, 0, 8, 8)));
    int partial = raw_connect(port);
    REQUIRE(partial >= 0);
    REQUIRE(raw_send(partial, hs + frame(RAW_ID, 0, 0, 64 << 20, 100000)));
    ::close(partial);

    uint64_t raw_count = 0;
    REQUIRE(test::poll_until([&] { return raw_count == 1; },
                             [&] {
        REQUIRE(test::send_value(child.fd(), uint8_t(CMD_RAW_COUNT)));
        REQUIRE(test::recv_value(child.fd(), &raw_count));
    }));
    send_legit(10);
    /* Answered with a CONN_ACCEPT only, and not closed. */
    std::vector<uint8_t> answer(sizeof(frame_hdr) + sizeof(conn_reply) + 1);
    CHECK(::recv(good_sock, answer.data(), answer.size(), MSG_DONTWAIT) ==
          ssize_t(sizeof(frame_hdr) + sizeof(conn_reply)));
    frame_hdr accept_hdr;
    std::memcpy(&accept_hdr, answer.data(), sizeof(accept_hdr));
    CHECK(accept_hdr.id == uint8_t(internal_op::CONN_ACCEPT));
    CHECK(accept_hdr.flags == frame_flag::INTERNAL);
    CHECK(accept_hdr.length == sizeof(conn_reply));
    pollfd pfd{good_sock, POLLIN, 0};
    CHECK(::poll(&pfd, 1, 0) == 0); /* nothing more, not closed */
    ::close(good_sock);

    REQUIRE(test::send_value(child.fd(), uint8_t(CMD_QUIT)));
    REQUIRE(test::send_value(child.fd(), seq));
    malformed_report rep{};
    REQUIRE(test::recv_value(child.fd(), &rep));
    CHECK(rep.legit == seq);
    CHECK(rep.legit_bad == 0);
    CHECK(rep.raw_delivered == 1);
    CHECK(rep.refused_keys == 2);
    /* The first refused key is a warning, the second one only a diag line. */
    CHECK(rep.closed_logged >= malformed.size() + 1 - 1);
    CHECK(child.wait() == 0);
}

TEST_CASE("tcp closes an accepted connection that shows no handshake in time", "[tcp]")
{
    using namespace uct::tcp;
    auto cfg = default_tcp_config();
    CHECK(cfg.handshake_timeout == 10.0); /* the default */
    cfg.handshake_timeout = 0.3;
    test::tuned_tcp e("lo", cfg);
    REQUIRE(e.ok());
    const test::uct_addresses addr = e.addresses();
    iface_addr target{};
    REQUIRE(addr.iface.size() == sizeof(target));
    std::memcpy(&target, addr.iface.data(), sizeof(target));

    const auto start = std::chrono::steady_clock::now();
    int silent       = raw_connect(target.port); /* holds a socket, says nothing */
    int proven       = raw_connect(target.port); /* shows the key at once */
    REQUIRE(silent >= 0);
    REQUIRE(proven >= 0);
    handshake hs{};
    hs.magic        = HANDSHAKE_MAGIC;
    hs.version      = HANDSHAKE_VERSION;
    hs.family       = uint8_t(addr_family::IPV4);
    hs.port         = 1;
    hs.acceptor_key = target.key;
    std::vector<uint8_t> bytes(sizeof(hs));
    std::memcpy(bytes.data(), &hs, sizeof(hs));
    REQUIRE(raw_send(proven, bytes));

    auto eof = [](int s) {
        uint8_t buf[64];
        ssize_t n = ::recv(s, buf, sizeof(buf), MSG_DONTWAIT);
        return (n == 0) || ((n < 0) && (errno == ECONNRESET));
    };
    REQUIRE(test::poll_until([&] { return eof(silent); }, [&] { e.progress(); },
                             std::chrono::seconds(10)));
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(waited >= 0.3);
    CHECK_FALSE(eof(proven)); /* accepted, still open */
    ::close(silent);
    ::close(proven);
}
