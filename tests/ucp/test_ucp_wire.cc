/*
 * Peer bytes that announce impossible sizes (issue 16, defect 1): an eager
 * first fragment whose total length is near 2^64 made the unexpected
 * message allocation `sizeof(header) + total` wrap to a small block that
 * the fragment, and later middle fragments at offsets the sender chose,
 * wrote past. Every announced size must be refused before it sizes an
 * allocation, and the worker must go on receiving well-formed messages.
 */
#include "ucp_peer.h"
#include "ucp_test_util.h"

#include <ucp/am/am.h>
#include <ucp/core/ucp_ep.h>
#include <ucp/proto/am_handlers.h>
#include <ucp/core/ucp_address.h>
#include <ucp/core/ucp_worker.h>
#include <ucp/proto/wire.h>
#include <ucp/tag/tag_recv.h>
#include <uct/tcp/tcp_wire.h>

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <vector>

using namespace ucp_test;

namespace {

constexpr ucp_tag_t forged_tag = 0xbad;
constexpr ucp_tag_t good_tag   = 0x600d;

/* A worker on self with an ep to itself (tag and AM). */
void self_loopback(peer &p)
{
    REQUIRE(p.init("self", UCP_FEATURE_TAG | UCP_FEATURE_AM) == UCS_OK);
    REQUIRE(p.connect(p.address()) == UCS_OK);
}

/* Header + `payload` bytes of pattern, as the transport would deliver them. */
template <typename Header>
std::vector<uint8_t> frame(const Header &hdr, size_t payload, size_t extra_before = 0)
{
    std::vector<uint8_t> bytes(sizeof(hdr) + extra_before + payload);
    std::memcpy(bytes.data(), &hdr, sizeof(hdr));
    for (size_t i = sizeof(hdr); i < bytes.size(); ++i) {
        bytes[i] = uint8_t(i * 7);
    }
    return bytes;
}

bool probe_finds(peer &p, ucp_tag_t tag, size_t *length = nullptr)
{
    ucp_tag_recv_info_t info{};
    for (int i = 0; i < 10; ++i) {
        ucp_worker_progress(p.worker);
    }
    ucp_tag_message_h msg = ucp_tag_probe_nb(p.worker, tag, ~ucp_tag_t(0), 0, &info);
    if ((msg != nullptr) && (length != nullptr)) {
        *length = info.length;
    }
    return msg != nullptr;
}

/* A real message still gets through after the forged ones. */
void check_still_receives(peer &p)
{
    std::vector<uint8_t> out(3000), in(3000);
    fill_pattern(out.data(), out.size(), 7);
    ucp_request_param_t param{};
    ucs_status_ptr_t rreq = ucp_tag_recv_nbx(p.worker, in.data(), in.size(), good_tag,
                                             ~ucp_tag_t(0), &param);
    ucs_status_ptr_t sreq = ucp_tag_send_nbx(p.ep, out.data(), out.size(), good_tag, &param);
    CHECK(p.wait(sreq) == UCS_OK);
    CHECK(p.wait(rreq) == UCS_OK);
    CHECK(in == out);
}

} // namespace

TEST_CASE("an eager message announcing a total near 2^64 is refused, not allocated", "[ucp_wire]")
{
    peer p;
    self_loopback(p);
    log_capture capture;

    for (const bool sync : {false, true}) {
        for (const uint64_t total :
             {~uint64_t(0), ~uint64_t(0) - 100, ~uint64_t(0) - sizeof(ucp::rx_message) + 8,
              ucp::wire::max_message_length + 1}) {
            CAPTURE(sync, total);
            ucp::wire::eager_first_hdr first{forged_tag, 77, sync ? 1u : 0u, total};
            const size_t sreq         = sync ? sizeof(uint64_t) : 0;
            auto bytes                = frame(first, 200, sreq);
            const ucs_status_t status = sync ? ucp::eager_sync_first_handler(p.worker, bytes.data(),
                                                                             bytes.size(), 0) :
                                               ucp::eager_first_handler(p.worker, bytes.data(),
                                                                        bytes.size(), 0);
            CHECK(status == UCS_OK);
            /* Middles at offsets the sender chose must land nowhere. */
            ucp::wire::eager_middle_hdr middle{77, sync ? 1u : 0u, 1u << 20};
            auto mbytes = frame(middle, 4096);
            CHECK(ucp::eager_middle_handler(p.worker, mbytes.data(), mbytes.size(), 0) == UCS_OK);
            CHECK_FALSE(probe_finds(p, forged_tag));
        }
    }
    CHECK(capture.text().find("announcing a message of") != std::string::npos);
    check_still_receives(p);
}

TEST_CASE("a well-formed multi-fragment message still reassembles", "[ucp_wire]")
{
    peer p;
    self_loopback(p);
    ucp::wire::eager_first_hdr first{forged_tag, 78, 5, 300};
    auto bytes = frame(first, 100);
    REQUIRE(ucp::eager_first_handler(p.worker, bytes.data(), bytes.size(), 0) == UCS_OK);
    size_t length = 0;
    REQUIRE(probe_finds(p, forged_tag, &length));
    CHECK(length == 300);
    for (uint64_t offset : {100u, 200u}) {
        ucp::wire::eager_middle_hdr middle{78, 5, offset};
        auto mbytes = frame(middle, 100);
        CHECK(ucp::eager_middle_handler(p.worker, mbytes.data(), mbytes.size(), 0) == UCS_OK);
    }
    std::vector<uint8_t> in(300), expected(300);
    for (size_t i = 0; i < expected.size(); ++i) {
        /* frame() numbers bytes from the start of the header it follows */
        const size_t hdr = (i < 100) ? sizeof(first) : sizeof(ucp::wire::eager_middle_hdr);
        expected[i]      = uint8_t((hdr + i % 100) * 7);
    }
    ucp_request_param_t param{};
    CHECK(p.wait(ucp_tag_recv_nbx(p.worker, in.data(), in.size(), forged_tag, ~ucp_tag_t(0),
                                  &param)) == UCS_OK);
    CHECK(in == expected);
}

TEST_CASE("active messages and rendezvous requests announcing impossible sizes are refused",
          "[ucp_wire]")
{
    peer p;
    self_loopback(p);
    log_capture capture;
    std::vector<size_t> delivered;
    const ucp_am_recv_callback_t record_length = [](void *arg, const void *, size_t, void *,
                                                    size_t length,
                                                    const ucp_am_recv_param_t *) -> ucs_status_t {
        static_cast<std::vector<size_t> *>(arg)->push_back(length);
        return UCS_OK;
    };
    REQUIRE(ucp_test::set_am_handler(p.worker, 5, record_length, &delivered) == UCS_OK);

    for (const uint64_t total :
         {~uint64_t(0), ~uint64_t(0) - 64, ucp::wire::max_message_length + 1}) {
        CAPTURE(total);
        ucp::wire::am_first_hdr first{{5, 0, 0, 0}, 99, 1, total, 0};
        auto bytes = frame(first, 100);
        CHECK(ucp::am_first_handler(p.worker, bytes.data(), bytes.size(), 0) == UCS_OK);
        ucp::wire::eager_middle_hdr middle{99, 1, 1u << 16};
        auto mbytes = frame(middle, 100);
        CHECK(ucp::am_middle_handler(p.worker, mbytes.data(), mbytes.size(), 0) == UCS_OK);

        ucp::wire::am_rts_hdr rts{};
        rts.am      = {5, 0, 0, 0};
        rts.length  = total;
        auto rbytes = frame(rts, 0);
        CHECK(ucp::am_rts_handler(p.worker, rbytes.data(), rbytes.size(), 0) == UCS_OK);

        ucp::wire::rts_hdr trts{};
        trts.tag    = forged_tag;
        trts.length = total;
        auto tbytes = frame(trts, 0);
        CHECK(ucp::rndv_rts_handler(p.worker, tbytes.data(), tbytes.size(), 0) == UCS_OK);
        CHECK_FALSE(probe_finds(p, forged_tag));
    }
    for (int i = 0; i < 50; ++i) {
        ucp_worker_progress(p.worker);
    }
    CHECK(delivered.empty());
    CHECK(capture.text().find("malformed") != std::string::npos);
    check_still_receives(p);
}

TEST_CASE("forged or malformed close notices are dropped; a user's ep is never destroyed",
          "[ucp_wire]")
{
    peer p;
    self_loopback(p);
    log_capture capture;
    const uint64_t uuid       = p.worker->uuid;
    const uint64_t user_ep_id = p.ep->local_id;
    /* Wrong lengths, and an ep id of 0 in the per-ep form. */
    for (const std::vector<uint64_t> &words :
         std::vector<std::vector<uint64_t>>{{}, {uuid, 0}, {uuid, user_ep_id, 1}}) {
        const size_t length = words.size() * sizeof(uint64_t);
        std::vector<uint8_t> bytes(length + 1); /* never empty: data() is not null */
        if (length > 0) {
            std::memcpy(bytes.data(), words.data(), length);
        }
        CHECK(ucp::ep_closed_handler(p.worker, bytes.data(), length, 0) == UCS_OK);
    }
    uint8_t odd[12] = {};
    CHECK(ucp::ep_closed_handler(p.worker, odd, sizeof(odd), 0) == UCS_OK);
    CHECK(p.worker->closed_peers.empty());
    CHECK(capture.text().find("malformed close notice") != std::string::npos);
    /* Well formed, naming the user's own ep, or an id of another worker:
     * nothing is destroyed. */
    for (const uint64_t from : {uuid, uuid + 1}) {
        const uint64_t words[2] = {from, user_ep_id};
        CHECK(ucp::ep_closed_handler(p.worker, const_cast<uint64_t *>(words), sizeof(words), 0) ==
              UCS_OK);
    }
    for (int i = 0; i < 10; ++i) {
        ucp_worker_progress(p.worker);
    }
    CHECK(p.worker->ep_by_id(user_ep_id, uuid) == p.ep);
    check_still_receives(p);
}

/* ---- the same attack over a real tcp connection ---- */

namespace {

namespace tcpw = uct::tcp;

/* The port and key of the worker's tcp iface on `lo`, from its address, as
 * any peer holding the address can read them. */
bool tcp_target_of(const std::vector<uint8_t> &worker_address, tcpw::iface_addr *out)
{
    ucp::unpacked_address addr;
    if (ucp::unpack_address(worker_address.data(), worker_address.size(), &addr) != UCS_OK) {
        return false;
    }
    for (const ucp::address_entry &e : addr.entries) {
        if ((e.tl_name == "tcp") && (e.iface_addr.size() == sizeof(*out))) {
            std::memcpy(out, e.iface_addr.data(), sizeof(*out));
            return true;
        }
    }
    return false;
}

/* A raw connection speaking the tcp transport's wire format by hand. */
class raw_tcp_peer {
public:
    explicit raw_tcp_peer(uint16_t port)
    {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in sa{};
        sa.sin_family      = AF_INET;
        sa.sin_port        = htons(port);
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (::connect(fd_, reinterpret_cast<sockaddr *>(&sa), sizeof(sa)) != 0) {
            ::close(fd_);
            fd_ = -1;
        }
    }
    ~raw_tcp_peer()
    {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }

    bool ok() const { return fd_ >= 0; }

    bool send_handshake(const tcpw::iface_key &acceptor_key)
    {
        tcpw::handshake hs{};
        hs.magic        = tcpw::HANDSHAKE_MAGIC;
        hs.version      = tcpw::HANDSHAKE_VERSION;
        hs.family       = uint8_t(tcpw::addr_family::IPV4);
        hs.ip[0]        = 127;
        hs.ip[3]        = 1;
        hs.port         = 9;
        hs.acceptor_key = acceptor_key;
        return send(&hs, sizeof(hs));
    }

    /* A UCP active message (id, bytes) as one tcp frame. */
    bool send_am(uint8_t am_id, const std::vector<uint8_t> &payload)
    {
        tcpw::frame_hdr hdr{am_id, 0, 0, uint32_t(payload.size())};
        return send(&hdr, sizeof(hdr)) && send(payload.data(), payload.size());
    }

    /* The acceptor's answer (CONN_ACCEPT) or the end of the stream, while
     * `pump` runs: 1 accepted, 0 closed, -1 neither in time. */
    int answer(const std::function<void()> &pump)
    {
        int result = -1;
        test::poll_until(
            [&] {
            uint8_t buf[sizeof(tcpw::frame_hdr) + sizeof(tcpw::conn_reply)];
            ssize_t n = ::recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
            if ((n == 0) || ((n < 0) && (errno == ECONNRESET))) {
                result = 0;
            } else if (n > 0) {
                tcpw::frame_hdr hdr;
                std::memcpy(&hdr, buf, sizeof(hdr));
                result = (hdr.id == uint8_t(tcpw::internal_op::CONN_ACCEPT)) ? 1 : 0;
            }
            return result >= 0;
            },
            pump, std::chrono::seconds(10));
        return result;
    }

private:
    bool send(const void *data, size_t length)
    {
        return ::send(fd_, data, length, MSG_NOSIGNAL) == ssize_t(length);
    }

    int fd_ = -1;
};

} // namespace

TEST_CASE("over tcp, a connection without the worker's key is closed unread; with it, "
          "the overflowing eager frame is refused",
          "[ucp_wire]")
{
    peer p;
    REQUIRE(p.init("tcp", UCP_FEATURE_TAG) == UCS_OK);
    tcpw::iface_addr target{};
    REQUIRE(tcp_target_of(p.address(), &target));
    auto pump = [&] { ucp_worker_progress(p.worker); };
    log_capture capture;

    ucp::wire::eager_first_hdr first{forged_tag, 5, 9, ~uint64_t(0) - 16};
    const auto attack = frame(first, 1000);
    ucp::wire::eager_middle_hdr middle{5, 9, 4096};
    const auto follow_up = frame(middle, 1000);

    /* A port scan, or anyone without the address: closed before any frame. */
    {
        raw_tcp_peer scan(target.port);
        REQUIRE(scan.ok());
        tcpw::iface_key guess{};
        REQUIRE(scan.send_handshake(guess));
        REQUIRE(scan.send_am(ucp::wire::AM_EAGER_FIRST, attack));
        CHECK(scan.answer(pump) == 0);
    }
    CHECK(capture.text().find("lacks this iface's key") != std::string::npos);
    CHECK(capture.text().find("announcing a message of") == std::string::npos);

    /* A peer holding the address: its frames reach UCP, which refuses the
     * size before allocating anything. */
    {
        raw_tcp_peer holder(target.port);
        REQUIRE(holder.ok());
        REQUIRE(holder.send_handshake(target.key));
        REQUIRE(holder.answer(pump) == 1);
        REQUIRE(holder.send_am(ucp::wire::AM_EAGER_FIRST, attack));
        REQUIRE(holder.send_am(ucp::wire::AM_EAGER_MIDDLE, follow_up));
        CHECK(test::poll_until(
            [&] { return capture.text().find("announcing a message of") != std::string::npos; },
            pump));
        CHECK_FALSE(probe_finds(p, forged_tag));
    }

    /* The worker still talks to a real peer over tcp. */
    REQUIRE(p.connect(p.address()) == UCS_OK);
    check_still_receives(p);
}

TEST_CASE("a worker makes at most UCX_MAX_PEER_EPS endpoints for peers that wire up to it",
          "[ucp_wire]")
{
    env_guard env;
    env.set("UCX_MAX_PEER_EPS", "3");
    peer target;
    REQUIRE(target.init("posix") == UCS_OK);
    const std::vector<uint8_t> address = target.address();
    log_capture log;
    std::vector<std::unique_ptr<peer>> others;
    for (int i = 0; i < 5; ++i) {
        others.push_back(std::make_unique<peer>());
        REQUIRE(others.back()->init("posix") == UCS_OK);
        REQUIRE(others.back()->connect(address) == UCS_OK); /* sends its wireup */
    }
    auto progress_all = [&] {
        ucp_worker_progress(target.worker);
        for (auto &o : others) {
            ucp_worker_progress(o->worker);
        }
    };
    CHECK(test::poll_until([&] { return target.worker->num_peer_eps == 3; }, progress_all));
    for (int i = 0; i < 200; ++i) {
        progress_all();
    }
    CHECK(target.worker->num_peer_eps == 3);
    CHECK(target.worker->dropped_wireups == 2);
    CHECK(log.text().find("UCX_MAX_PEER_EPS") != std::string::npos);

    /* Eps the application makes to the peers adopt the peer eps: none is
     * left over, whichever three peers had one. */
    for (auto &o : others) {
        ucp_ep_params_t params{};
        params.field_mask                 = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        const std::vector<uint8_t> remote = o->address();
        params.address                    = reinterpret_cast<const ucp_address_t *>(remote.data());
        ucp_ep_h ep;
        REQUIRE(ucp_ep_create(target.worker, &params, &ep) == UCS_OK);
    }
    CHECK(target.worker->num_peer_eps == 0);
}
