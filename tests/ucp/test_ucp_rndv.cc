/*
 * Rendezvous schemes between two processes: the receiver pulling
 * everything (get_zcopy), the sender pushing everything (put_zcopy), and
 * the split where both copy half (auto on shared memory). Every byte is
 * checked, and the receiver's log shows which scheme really ran.
 */
#include "scoped_env.h"
#include "ucp_peer.h"
#include "ucp_test_util.h"

#include <ucp/core/ucp_ep.h>
#include <ucp/proto/wire.h>
#include <ucp/tag/rndv.h>
#include <ucp/tag/tag_recv.h>
#include <ucs/debug/log.h>

#include <catch2/catch.hpp>

#include <dirent.h>
#include <fstream>
#include <functional>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sstream>
#include <sys/socket.h>
#include <unistd.h>

using namespace ucp_test;
using test::scoped_env;

namespace {

constexpr ucp_tag_t full_mask = ~ucp_tag_t(0);

/* Sizes around the split threshold (64k) and page-unaligned halves. */
const size_t rndv_sizes[] = {65535, 65536, 65536 + 4097, 300001, (1u << 20) + 7, (3u << 20) + 4095};

/* Receiver's debug log in a file, read back as text. */
class captured_log {
public:
    captured_log() : path_("/tmp/ucp_rndv_log." + std::to_string(::getpid()))
    {
        ucs::log_set_file(path_.c_str());
        ucs::log_set_level(UCS_LOG_LEVEL_DEBUG);
    }
    ~captured_log()
    {
        ucs::log_set_level(UCS_LOG_LEVEL_WARN);
        ucs::log_set_file("stderr");
        ::unlink(path_.c_str());
    }
    std::string text() const
    {
        std::fflush(ucs::log_stream());
        std::ifstream in(path_);
        std::stringstream out;
        out << in.rdbuf();
        return out.str();
    }

private:
    std::string path_;
};

size_t count_of(const std::string &text, const std::string &what)
{
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
        ++n;
    }
    return n;
}

int send_sizes_child(int fd, const char *tls)
{
    peer p;
    TEST_CHILD_CHECK(p.init(tls) == UCS_OK);
    TEST_CHILD_CHECK(p.connect_over(fd));
    std::vector<uint8_t> buffer;
    for (size_t i = 0; i < std::size(rndv_sizes); ++i) {
        buffer.resize(rndv_sizes[i]);
        fill_pattern(buffer.data(), buffer.size(), i + 1);
        TEST_CHILD_CHECK(p.send(buffer.data(), buffer.size(), 100 + i) == UCS_OK);
    }
    /* A truncated receive: the last message again, to a smaller buffer. */
    TEST_CHILD_CHECK(p.send(buffer.data(), buffer.size(), 99) == UCS_OK);
    TEST_CHILD_CHECK(test::sync_peer(fd));
    return 0;
}

/* Receives every size (expected or not) and the truncated one; returns the
 * receiver's log. `before_close` runs while the eps are still up. */
std::string receive_sizes(const char *tls, bool unexpected,
                          const std::function<void()> &before_close = {})
{
    /* Rendezvous from 64k over tcp (65535 eager), from 16k on a node: the
     * models put tcp's far above these sizes. */
    scoped_env thresh("UCX_RNDV_THRESH", (std::string(tls) == "tcp") ? "65536" : "16384");
    captured_log log;
    peer p;
    REQUIRE(p.init(tls) == UCS_OK);
    test::child_process child([tls](int fd) { return send_sizes_child(fd, tls); });
    REQUIRE(p.connect_over(child.fd()));
    if (unexpected) {
        /* Every offer queued before the first receive is posted. */
        REQUIRE(p.wait_unexpected(100));
    }
    std::vector<uint8_t> buffer;
    for (size_t i = 0; i < std::size(rndv_sizes); ++i) {
        const size_t size = rndv_sizes[i];
        INFO("size " << size);
        buffer.assign(size + 64, 0xee);
        ucp_tag_recv_info_t info{};
        REQUIRE(p.recv(buffer.data(), size + 64, 100 + i, full_mask, &info) == UCS_OK);
        CHECK(info.length == size);
        CHECK(check_pattern(buffer.data(), size, i + 1));
        CHECK(buffer[size] == 0xee);
    }
    const size_t last = rndv_sizes[std::size(rndv_sizes) - 1];
    const size_t room = last / 3;
    buffer.assign(room + 64, 0xee);
    ucp_tag_recv_info_t info{};
    CHECK(p.recv(buffer.data(), room, 99, full_mask, &info) == UCS_ERR_MESSAGE_TRUNCATED);
    CHECK(buffer[room] == 0xee); /* nothing past the receive buffer */
    if (before_close) {
        before_close();
    }
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(child.wait() == 0);
    return log.text();
}

const char split_line[] = "split rendezvous: the sender writes";
const char rails_line[] = "pulled over 2 lanes";

/* What this process's IPv4 tcp connections received, by the kernel's count
 * (TCP_INFO): the loopback ones' and the others' bytes. */
struct tcp_received {
    uint64_t loopback = 0;
    uint64_t other    = 0;
};

tcp_received tcp_bytes_received()
{
    tcp_received got;
    DIR *dir = ::opendir("/proc/self/fd");
    REQUIRE(dir != nullptr);
    while (const dirent *entry = ::readdir(dir)) {
        const int fd = std::atoi(entry->d_name);
        sockaddr_in local{};
        socklen_t length = sizeof(local);
        tcp_info info{};
        socklen_t info_length = sizeof(info);
        int type              = 0;
        socklen_t type_length = sizeof(type);
        if ((entry->d_name[0] < '0') || (entry->d_name[0] > '9') ||
            (::getsockname(fd, reinterpret_cast<sockaddr *>(&local), &length) != 0) ||
            (local.sin_family != AF_INET) ||
            (::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &type_length) != 0) ||
            (type != SOCK_STREAM) ||
            (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &info_length) != 0)) {
            continue;
        }
        const bool loopback = (ntohl(local.sin_addr.s_addr) >> 24) == 127;
        (loopback ? got.loopback : got.other) += info.tcpi_bytes_received;
    }
    ::closedir(dir);
    return got;
}

/* Whether UCX_TLS=tcp finds a device besides lo here. */
bool has_second_tcp_device()
{
    scoped_env tls("UCX_TLS", "tcp");
    context_holder ctx;
    REQUIRE(ctx.status == UCS_OK);
    return count_of(ctx.info(), ": tcp/") >= 2;
}

} // namespace

TEST_CASE("a rendezvous pull is shared among lanes by bandwidth", "[ucp_rndv]")
{
    size_t shares[8];
    const double equal[] = {1e9, 1e9};
    CHECK(ucp::rndv_split_shares(1u << 20, equal, 2, 16384, shares) == 2);
    CHECK(shares[0] == 512 * 1024);
    CHECK(shares[1] == 512 * 1024);

    /* 3:1, the first share whole pages, the last the rest. */
    const double three_to_one[] = {3e9, 1e9};
    CHECK(ucp::rndv_split_shares(1000003, three_to_one, 2, 16384, shares) == 2);
    CHECK(shares[0] % 4096 == 0);
    CHECK(shares[0] + shares[1] == 1000003);
    CHECK(shares[0] >= 749000);
    CHECK(shares[0] <= 750003);

    /* Too small for two shares of the least chunk: one lane. */
    CHECK(ucp::rndv_split_shares(30000, equal, 2, 16384, shares) == 1);
    CHECK(shares[0] == 30000);
    /* The slowest of three is left out where its share would be too small. */
    const double uneven[] = {8e9, 8e9, 1e9};
    CHECK(ucp::rndv_split_shares(200000, uneven, 3, 16384, shares) == 2);
    CHECK(shares[0] + shares[1] == 200000);
    CHECK(ucp::rndv_split_shares(1u << 22, uneven, 3, 16384, shares) == 3);
    CHECK(shares[0] + shares[1] + shares[2] == (1u << 22));
    /* inf: never split. */
    CHECK(ucp::rndv_split_shares(1u << 30, equal, 2, SIZE_MAX, shares) == 1);
    CHECK(ucp::rndv_split_shares(0, equal, 2, 0, shares) == 1);
}

TEST_CASE("rendezvous pulls split over two tcp interfaces", "[ucp_rndv]")
{
    if (!has_second_tcp_device()) {
        WARN("skipped: this host has one tcp device (lo); splitting a pull needs a second "
             "network interface");
        return;
    }
    /* The models put lo at 8x eth0: past UCX_MULTI_LANE_MAX_RATIO's 4, so
     * both lanes only with a larger ratio. */
    scoped_env ratio("UCX_MULTI_LANE_MAX_RATIO", "100");
    scoped_env chunk("UCX_MIN_RNDV_CHUNK_SIZE", "4096");
    SECTION("split: every rendezvous over both, both connections carry data") {
        tcp_received got;
        std::string log = receive_sizes("tcp", false, [&]() { got = tcp_bytes_received(); });
        /* Every size but the eager 65535, and the truncated receive. */
        CHECK(count_of(log, rails_line) == std::size(rndv_sizes));
        size_t pulled = (3u << 20) / 3;
        for (size_t size : rndv_sizes) {
            pulled += (size > 65535) ? size : 0;
        }
        INFO("loopback " << got.loopback << ", other " << got.other << ", pulled " << pulled);
        CHECK(got.loopback >= pulled / 2);
        CHECK(got.other >= pulled / 20);
        CHECK(got.loopback + got.other < pulled + (1u << 20));
    }
    SECTION("ucp_ep_evaluate_perf counts both lanes' bandwidth") {
        auto estimate_64m = []() {
            peer p;
            REQUIRE(p.init("tcp") == UCS_OK);
            REQUIRE(p.connect(p.address()) == UCS_OK);
            ucp_ep_evaluate_perf_param_t param{};
            param.field_mask   = UCP_EP_PERF_PARAM_FIELD_MESSAGE_SIZE;
            param.message_size = size_t(64) << 20;
            ucp_ep_evaluate_perf_attr_t attr{};
            attr.field_mask = UCP_EP_PERF_ATTR_FIELD_ESTIMATED_TIME;
            REQUIRE(ucp_ep_evaluate_perf(p.ep, &param, &attr) == UCS_OK);
            return attr.estimated_time;
        };
        const double two = estimate_64m();
        scoped_env lanes("UCX_MAX_RNDV_LANES", "1");
        const double one = estimate_64m();
        CHECK(two < one * 0.99);
    }
    SECTION("UCX_MAX_RNDV_LANES=1: one lane") {
        scoped_env lanes("UCX_MAX_RNDV_LANES", "1");
        tcp_received got;
        std::string log = receive_sizes("tcp", true, [&]() { got = tcp_bytes_received(); });
        CHECK(count_of(log, "pulled over") == 0);
        CHECK(got.other == 0);
    }
}

TEST_CASE("bad multi-lane settings are refused by name", "[ucp_rndv]")
{
    for (const char *ratio : {"0.5", "0", "-2", "nan"}) {
        INFO("UCX_MULTI_LANE_MAX_RATIO=" << ratio);
        scoped_env bad("UCX_MULTI_LANE_MAX_RATIO", ratio);
        peer p;
        CHECK(p.init("tcp") != UCS_OK);
    }
    scoped_env bad("UCX_MIN_RNDV_CHUNK_SIZE", "auto");
    peer p;
    CHECK(p.init("tcp") != UCS_OK);
}

TEST_CASE("rendezvous split between two processes on shared memory", "[ucp_rndv]")
{
    for (const char *tls : {"posix,cma", "sysv,cma"}) {
        for (bool unexpected : {false, true}) {
            INFO("UCX_TLS=" << tls << (unexpected ? " unexpected" : " expected"));
            std::string log = receive_sizes(tls, unexpected);
            /* Every size from 64k up was split, the one below it was not;
             * the truncated receive is split over what fits. */
            CHECK(count_of(log, split_line) == std::size(rndv_sizes));
            CHECK(log.find("writes 32768 of 65536 bytes") != std::string::npos);
            CHECK(log.find("of 65535 bytes") == std::string::npos);
        }
    }
}

TEST_CASE("rendezvous schemes get_zcopy and put_zcopy", "[ucp_rndv]")
{
    for (const char *tls : {"posix,cma", "tcp"}) {
        SECTION(std::string("get_zcopy ") + tls) {
            scoped_env scheme("UCX_RNDV_SCHEME", "get_zcopy");
            std::string log = receive_sizes(tls, false);
            CHECK(count_of(log, split_line) == 0);
        }
        SECTION(std::string("put_zcopy ") + tls) {
            scoped_env scheme("UCX_RNDV_SCHEME", "put_zcopy");
            const bool tcp  = (std::string(tls) == "tcp");
            std::string log = receive_sizes(tls, true);
            /* The sender writes all of every rendezvous message (and all
             * that fits); 65535 is eager over tcp. */
            const size_t eager = tcp ? 1 : 0;
            CHECK(count_of(log, split_line) == std::size(rndv_sizes) + 1 - eager);
            CHECK(log.find("writes 65536 of 65536 bytes") != std::string::npos);
        }
    }
    SECTION("split turned off") {
        scoped_env thresh("UCX_RNDV_SPLIT_THRESH", "inf");
        std::string log = receive_sizes("posix,cma", false);
        CHECK(count_of(log, split_line) == 0);
    }
    SECTION("tcp does not split by default") {
        std::string log = receive_sizes("tcp", false);
        CHECK(count_of(log, split_line) == 0);
    }
}

TEST_CASE("malformed rendezvous push messages are refused", "[ucp_rndv]")
{
    peer p;
    REQUIRE(p.init("posix,cma") == UCS_OK);
    REQUIRE(p.connect(p.address()) == UCS_OK);
    ucp_worker *worker = p.worker;

    ucp::wire::rtr_hdr rtr{};
    rtr.sreq_id  = 12345; /* no such request */
    rtr.rreq_id  = 777;
    rtr.src_uuid = 1; /* no such worker */
    rtr.address  = 0x1000;
    rtr.length   = 1u << 20;
    std::vector<uint8_t> bytes(sizeof(rtr) + 8, 0x5a);
    std::memcpy(bytes.data(), &rtr, sizeof(rtr));
    /* Short header, key longer than the message, unknown request. */
    CHECK(ucp::rndv_rtr_handler(worker, bytes.data(), sizeof(rtr) - 1, 0) == UCS_OK);
    rtr.rkey_length = 9;
    std::memcpy(bytes.data(), &rtr, sizeof(rtr));
    CHECK(ucp::rndv_rtr_handler(worker, bytes.data(), bytes.size(), 0) == UCS_OK);
    rtr.rkey_length = 8;
    std::memcpy(bytes.data(), &rtr, sizeof(rtr));
    CHECK(ucp::rndv_rtr_handler(worker, bytes.data(), bytes.size(), 0) == UCS_OK);

    /* ATPs: short, unknown request, and a status that is no status. */
    ucp::wire::reply_hdr atp{};
    atp.req_id = 4242;
    atp.status = 100;
    CHECK(ucp::rndv_atp_handler(worker, &atp, sizeof(atp) - 1, 0) == UCS_OK);
    CHECK(ucp::rndv_atp_handler(worker, &atp, sizeof(atp), 0) == UCS_OK);

    /* The worker still moves a split rendezvous message to itself. */
    std::vector<uint8_t> out(1u << 20), in(1u << 20, 0);
    fill_pattern(out.data(), out.size(), 9);
    ucp_request_param_t param{};
    ucs_status_ptr_t rreq = ucp_tag_recv_nbx(worker, in.data(), in.size(), 5, full_mask, &param);
    REQUIRE(!UCS_PTR_IS_ERR(rreq));
    CHECK(p.wait(ucp_tag_send_nbx(p.ep, out.data(), out.size(), 5, &param)) == UCS_OK);
    CHECK(p.wait(rreq) == UCS_OK);
    CHECK(in == out);
}

TEST_CASE("ucp_ep_print_info shows the rendezvous scheme per size", "[ucp_rndv]")
{
    scoped_env thresh("UCX_RNDV_THRESH", "16384"); /* the get below the split */
    auto info_of = [](const char *tls) {
        peer p;
        REQUIRE(p.init(tls) == UCS_OK);
        REQUIRE(p.connect(p.address()) == UCS_OK);
        char *text   = nullptr;
        size_t size  = 0;
        FILE *stream = open_memstream(&text, &size);
        REQUIRE(stream != nullptr);
        ucp_ep_print_info(p.ep, stream);
        std::fclose(stream);
        std::string out(text, size);
        std::free(text);
        return out;
    };
    {
        std::string out = info_of("posix,cma");
        CHECK(out.find("65535      rendezvous, receiver gets (get_zcopy) on cma") !=
              std::string::npos);
        CHECK(out.find("65536 .. inf        rendezvous split") != std::string::npos);
    }
    {
        scoped_env scheme("UCX_RNDV_SCHEME", "put_zcopy");
        std::string out = info_of("posix,cma");
        CHECK(out.find("sender puts (put_zcopy) on cma") != std::string::npos);
        CHECK(out.find("receiver gets") == std::string::npos);
    }
    CHECK(info_of("tcp").find("split") == std::string::npos);
}

namespace {

/* Every size pulled over two rc_verbs lanes of the emulated device, laid
 * out by `emu_var`=2 (both processes: the emulator reads it when asked for
 * the device list); `second_lane`: how the ep print names the second. */
void check_verbs_rails(const char *emu_var, const char *second_lane, bool unexpected)
{
    UCP_TEST_SKIP_WITHOUT_RC_VERBS();
    scoped_env layout(emu_var, "2");
    scoped_env chunk("UCX_MIN_RNDV_CHUNK_SIZE", "4096");
    std::string log = receive_sizes("rc_verbs,tcp", unexpected);
    /* Every size (from 16k on, rendezvous here) and the truncated receive. */
    CHECK(count_of(log, rails_line) == std::size(rndv_sizes) + 1);
    CHECK(log.find(second_lane) != std::string::npos);
}

} // namespace

/* One adapter, two ports, one md: the sender's key serves either port. */
TEST_CASE("rendezvous pulls split over two ports of a verbs adapter", "[ucp_rc_verbs]")
{
    check_verbs_rails("VERBS_EMU_PORTS", "lane[1] rc_verbs/emu0:2", false);
}

/* Two adapters, two mds: the sender registers on both and its RTS carries
 * both keys. */
TEST_CASE("rendezvous pulls split over two verbs adapters, a key of each", "[ucp_rc_verbs]")
{
    check_verbs_rails("VERBS_EMU_DEVICES", "lane[1] rc_verbs/emu1:1", true);
}

namespace {

/* An RTS key list: entries of (md name, key bytes). */
std::vector<uint8_t> key_list(const std::vector<std::pair<std::string, std::vector<uint8_t>>> &keys)
{
    std::vector<uint8_t> out;
    for (const auto &k : keys) {
        ucp::wire::rts_key entry{};
        std::snprintf(entry.md_name, sizeof(entry.md_name), "%s", k.first.c_str());
        entry.length  = uint32_t(k.second.size());
        const auto *p = reinterpret_cast<const uint8_t *>(&entry);
        out.insert(out.end(), p, p + sizeof(entry));
        out.insert(out.end(), k.second.begin(), k.second.end());
    }
    return out;
}

ucp::wire::rts_hdr list_rts(const char *md_name)
{
    ucp::wire::rts_hdr rts{};
    std::snprintf(rts.md_name, sizeof(rts.md_name), "%s", md_name);
    rts.flags = ucp::wire::rts_flag::KEY_LIST;
    return rts;
}

} // namespace

TEST_CASE("an RTS key list is read with every length checked", "[ucp_rndv]")
{
    const std::vector<uint8_t> k1(24, 0x11), k2(10, 0x22);
    ucp::rts_keys keys;
    const ucp::wire::rts_hdr rts = list_rts("mlx5_0");

    /* The header's md first or not, the others kept in order. */
    std::vector<uint8_t> bytes = key_list({{"mlx5_1", k2}, {"mlx5_0", k1}, {"mlx5_2", {}}});
    REQUIRE(ucp::rndv_read_keys(rts, bytes.data(), bytes.size(), &keys));
    CHECK(keys.length == k1.size());
    CHECK(std::equal(k1.begin(), k1.end(), keys.key));
    REQUIRE(keys.num_others == 2);
    CHECK(std::string(keys.others[0].md_name) == "mlx5_1");
    CHECK(keys.others[0].length == k2.size());
    CHECK(std::string(keys.others[1].md_name) == "mlx5_2");
    CHECK(keys.others[1].length == 0);

    /* Without KEY_LIST the bytes are the header md's key. */
    ucp::wire::rts_hdr plain = rts;
    plain.flags              = 0;
    REQUIRE(ucp::rndv_read_keys(plain, k1.data(), k1.size(), &keys));
    CHECK(keys.key == k1.data());
    CHECK(keys.num_others == 0);

    /* Malformed: cut anywhere, a length past the end, no entry for the
     * header's md, a name without its end, more entries than lanes. */
    bytes = key_list({{"mlx5_0", k1}, {"mlx5_1", k2}});
    for (size_t cut = 1; cut < bytes.size(); ++cut) {
        INFO("cut at " << cut);
        const bool whole_entries = (cut == sizeof(ucp::wire::rts_key) + k1.size());
        CHECK(ucp::rndv_read_keys(rts, bytes.data(), cut, &keys) == whole_entries);
    }
    std::vector<uint8_t> longer = bytes;
    longer[offsetof(ucp::wire::rts_key, length)] += 1;
    CHECK_FALSE(ucp::rndv_read_keys(rts, longer.data(), longer.size(), &keys));
    bytes = key_list({{"mlx5_1", k2}});
    CHECK_FALSE(ucp::rndv_read_keys(rts, bytes.data(), bytes.size(), &keys));
    bytes = key_list({{"mlx5_0", k1}});
    std::memset(bytes.data(), 'x', ucp::wire::rts_md_name_max);
    CHECK_FALSE(ucp::rndv_read_keys(list_rts("xxxxxxxxxxxxxxx"), bytes.data(), bytes.size(),
                                    &keys));
    std::vector<std::pair<std::string, std::vector<uint8_t>>> many{{"mlx5_0", k1}};
    for (unsigned i = 0; i <= ucp::max_lanes; ++i) {
        many.push_back({"md" + std::to_string(i), k2});
    }
    bytes = key_list(many);
    CHECK_FALSE(ucp::rndv_read_keys(rts, bytes.data(), bytes.size(), &keys));
}

TEST_CASE("a rendezvous offer with a malformed key list fails its receive", "[ucp_rndv]")
{
    peer p;
    REQUIRE(p.init("tcp") == UCS_OK);
    REQUIRE(p.connect(p.address()) == UCS_OK);
    ucp_worker *worker = p.worker;
    std::vector<uint8_t> in(1u << 20, 0xee);
    ucp_request_param_t param{};
    auto offer = [&](const std::vector<uint8_t> &keys) {
        ucp::wire::rts_hdr rts = list_rts("tcp");
        rts.tag                = 7;
        rts.src_uuid           = worker->uuid;
        rts.sreq_id            = 4242; /* no such request: the ATS is dropped */
        rts.address            = 0x1000;
        rts.length             = in.size();
        rts.rkey_length        = uint32_t(keys.size());
        rts.ep_id              = p.ep->remote_id;
        std::vector<uint8_t> bytes(sizeof(rts));
        std::memcpy(bytes.data(), &rts, sizeof(rts));
        bytes.insert(bytes.end(), keys.begin(), keys.end());
        return ucp::rndv_rts_handler(worker, bytes.data(), bytes.size(), 0);
    };
    const std::vector<uint8_t> junk(16, 0x5a);
    for (const auto &keys : {key_list({{"cma", junk}}), key_list({{"tcp", junk}, {"cma", junk}})}) {
        ucs_status_ptr_t rreq = ucp_tag_recv_nbx(worker, in.data(), in.size(), 7, full_mask,
                                                 &param);
        REQUIRE(!UCS_PTR_IS_ERR(rreq));
        CHECK(offer(keys) == UCS_OK);
        /* No tcp key, or one tcp cannot unpack: the receive fails, nothing
         * lands in its buffer. */
        CHECK(p.wait(rreq) != UCS_OK);
        CHECK(std::all_of(in.begin(), in.end(), [](uint8_t b) { return b == 0xee; }));
    }
    /* The worker still moves a rendezvous message (1 MiB: from 512k over
     * tcp) to itself. */
    std::vector<uint8_t> out(in.size());
    fill_pattern(out.data(), out.size(), 3);
    ucs_status_ptr_t rreq = ucp_tag_recv_nbx(worker, in.data(), in.size(), 5, full_mask, &param);
    REQUIRE(!UCS_PTR_IS_ERR(rreq));
    CHECK(p.wait(ucp_tag_send_nbx(p.ep, out.data(), out.size(), 5, &param)) == UCS_OK);
    CHECK(p.wait(rreq) == UCS_OK);
    CHECK(in == out);
}
