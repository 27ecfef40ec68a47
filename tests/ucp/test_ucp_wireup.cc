/*
 * UCP's wireup over connect-to-ep lanes (ucp/wireup/wireup.h), between
 * real processes on the test transport ucp_test_rc (rc_transport.h): its
 * eps are RC queue pairs, so every lane must be connected to the peer's ep
 * before anything is sent on it, and tcp only carries the handshake.
 *  - tag (short, bcopy, multi-fragment, rendezvous, sync), stream, active
 *    messages with a reply ep, put/get/atomics all go over the rc lanes,
 *    whether the peer makes its ep before or after our first message, or
 *    both sides connect at once;
 *  - no message ever reaches an rc ep not connected to its sender
 *    (rc_dropped_unconnected stays 0: the passive side waits for the ACK);
 *  - several eps from each side to the other pair in creation order;
 *  - an ep to its own worker pairs with itself.
 */
#include "rc_transport.h"
#include "rma_test_util.h"
#include "ucp_peer.h"
#include "ucp_test_util.h"

#include <catch2/catch.hpp>
#include <uct/base/uct_md.h>

#include <csignal>
#include <cstring>
#include <string>
#include <vector>

namespace {

using ucp_test::check_pattern;
using ucp_test::fill_pattern;
using ucp_test::peer;
using ucp_test::rc_enable_guard;

constexpr const char *tls = "ucp_test_rc,tcp";

/* The connect-to-ep transport a traffic run goes over: the test transport
 * (whose counters say what reached its eps), or rc_verbs on a verbs device
 * (the emulated one on CI: meson test ucp_rc_verbs). */
struct rc_kind {
    const char *tls;
    const char *tl_name;
    bool counted;
    bool net_only = false; /* both sides connect by NET_ONLY addresses */
};
constexpr rc_kind test_rc{tls, ucp_test::rc_tl, true};
constexpr rc_kind rc_verbs{"rc_verbs,tcp", "rc_verbs", false};
/* ud_verbs connects to an iface, as tcp: the same traffic over its
 * datagrams, RMA emulated over its active messages. */
constexpr rc_kind ud_verbs{"ud_verbs,tcp", "ud_verbs", false};
/* UCX_TLS=rc alone, as UCX users write it: ud_verbs carries the wireup. */
constexpr rc_kind rc_alias{"rc", "rc_verbs", false};
constexpr rc_kind rc_verbs_net_only{"posix,rc_verbs,tcp", "rc_verbs", false, true};
/* Shared memory is there, but each side reaches the other by its NET_ONLY
 * address: the eps of both sides must agree on the network lanes. */
constexpr rc_kind net_only_rc{"posix,ucp_test_rc,tcp", ucp_test::rc_tl, true, true};
constexpr uint64_t features = UCP_FEATURE_TAG | UCP_FEATURE_STREAM | UCP_FEATURE_AM |
                              UCP_FEATURE_RMA | UCP_FEATURE_AMO64;
/* Short, single bcopy, several fragments, rendezvous (over rc zcopy). */
const size_t tag_sizes[]      = {8, 1000, 20000, 200000};
constexpr size_t stream_size  = 30000;
const size_t am_sizes[]       = {100, 20000};
constexpr uint16_t am_request = 7, am_answer = 8;
constexpr size_t region_size = 65536;

/* What a process reports at the end: the rc transport's counters. */
struct rc_counters {
    unsigned long connected;
    unsigned long delivered;
    unsigned long dropped;
};

rc_counters counters_now()
{
    return {ucp_test::rc_eps_connected.load(), ucp_test::rc_delivered_am.load(),
            ucp_test::rc_dropped_unconnected.load()};
}

/* What happened since `before` (a forked child inherits its parent's counts). */
rc_counters counters_since(const rc_counters &before)
{
    const rc_counters now = counters_now();
    return {now.connected - before.connected, now.delivered - before.delivered,
            now.dropped - before.dropped};
}

ucp_tag_t tag_of(size_t i, bool sync)
{
    return (i << 1) | (sync ? 1 : 0);
}

ucs_status_t tag_send(peer &p, ucp_ep_h ep, const void *buffer, size_t length, ucp_tag_t tag,
                      bool sync)
{
    ucp_request_param_t param{};
    return p.wait(sync ? ucp_tag_send_sync_nbx(ep, buffer, length, tag, &param) :
                         ucp_tag_send_nbx(ep, buffer, length, tag, &param));
}

/* Receives every tag size (and its sync twin) and checks the bytes. */
bool recv_tags(peer &p, uint64_t seed)
{
    for (size_t i = 0; i < std::size(tag_sizes); ++i) {
        for (bool sync : {false, true}) {
            std::vector<uint8_t> buffer(tag_sizes[i]);
            ucp_tag_recv_info_t info{};
            if ((p.recv(buffer.data(), buffer.size(), tag_of(i, sync), ~ucp_tag_t(0), &info) !=
                 UCS_OK) ||
                (info.length != tag_sizes[i]) ||
                !check_pattern(buffer.data(), buffer.size(), seed + i)) {
                return false;
            }
        }
    }
    return true;
}

bool send_tags(peer &p, uint64_t seed)
{
    for (size_t i = 0; i < std::size(tag_sizes); ++i) {
        std::vector<uint8_t> buffer(tag_sizes[i]);
        fill_pattern(buffer.data(), buffer.size(), seed + i);
        for (bool sync : {false, true}) {
            if (tag_send(p, p.ep, buffer.data(), buffer.size(), tag_of(i, sync), sync) != UCS_OK) {
                return false;
            }
        }
    }
    return true;
}

ucs_status_t stream_send(peer &p, ucp_ep_h ep, const void *buffer, size_t length)
{
    ucp_request_param_t param{};
    return p.wait(ucp_stream_send_nbx(ep, buffer, length, &param));
}

/* Receives exactly `length` stream bytes of `ep`. */
ucs_status_t stream_recv(peer &p, ucp_ep_h ep, void *buffer, size_t length)
{
    ucp_request_param_t param{};
    param.op_attr_mask   = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags          = UCP_STREAM_RECV_FLAG_WAITALL;
    size_t received      = 0;
    ucs_status_ptr_t req = ucp_stream_recv_nbx(ep, buffer, length, &received, &param);
    return (req == nullptr) ? UCS_OK : p.wait(req);
}

/* Active messages: the target answers every request on its reply ep with
 * the same bytes; the initiator collects the answers. */
struct am_state {
    std::vector<std::vector<uint8_t>> answers;
    unsigned requests = 0;
    bool failed       = false;
};

ucs_status_t on_am_request(void *arg, const void *, size_t, void *data, size_t length,
                           const ucp_am_recv_param_t *param)
{
    auto *st = static_cast<am_state *>(arg);
    ++st->requests;
    if (!(param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) ||
        (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
        st->failed = true;
        return UCS_OK;
    }
    /* The answer is sent from the handler, as applications do: eager
     * (it is copied before returning) or failed. */
    ucp_request_param_t sp{};
    sp.op_attr_mask      = UCP_OP_ATTR_FIELD_FLAGS;
    sp.flags             = UCP_AM_SEND_FLAG_EAGER;
    ucs_status_ptr_t req = ucp_am_send_nbx(param->reply_ep, am_answer, nullptr, 0, data, length,
                                           &sp);
    if (UCS_PTR_IS_ERR(req)) {
        st->failed = true;
    } else if (req != nullptr) {
        ucp_request_free(req); /* completes by itself: the data is copied or held */
    }
    return UCS_OK;
}

ucs_status_t on_am_answer(void *arg, const void *, size_t, void *data, size_t length,
                          const ucp_am_recv_param_t *param)
{
    auto *st = static_cast<am_state *>(arg);
    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        st->failed = true;
        return UCS_OK;
    }
    const auto *p = static_cast<const uint8_t *>(data);
    st->answers.emplace_back(p, p + length);
    return UCS_OK;
}

std::string lanes_of(ucp_ep_h ep)
{
    return ucp_test::print_to_string([&](FILE *f) { ucp_ep_print_info(ep, f); });
}

enum class when { after_first_message, at_once };

/*
 * The child: exposes a region, makes its ep to the parent (after the
 * parent's first message arrived, or at once), then answers the parent's
 * traffic of every kind; its counters go back at the end.
 */
int traffic_child(int fd, when connect_when, const rc_kind &kind)
{
    const rc_counters start = counters_now();
    rc_enable_guard rc;
    peer c;
    TEST_CHILD_CHECK(c.init_with(kind.tls, features, {}) == UCS_OK);
    rma_test::region region;
    TEST_CHILD_CHECK(region.map(c.context, rma_test::memory::registered, region_size) == UCS_OK);
    am_state am;
    TEST_CHILD_CHECK(ucp_test::set_am_handler(c.worker, am_request, on_am_request, &am) == UCS_OK);
    std::vector<uint8_t> remote;
    TEST_CHILD_CHECK(test::send_blob(fd, c.address(kind.net_only)) && test::recv_blob(fd, &remote));
    TEST_CHILD_CHECK(test::send_blob(fd, region.key()) && test::send_value(fd, region.address()));
    if (connect_when == when::after_first_message) {
        TEST_CHILD_CHECK(c.wait_unexpected(tag_of(0, false)));
    }
    TEST_CHILD_CHECK(c.connect(remote) == UCS_OK);
    TEST_CHILD_CHECK(recv_tags(c, 100));
    TEST_CHILD_CHECK(send_tags(c, 200));

    std::vector<uint8_t> bytes(stream_size);
    TEST_CHILD_CHECK(stream_recv(c, c.ep, bytes.data(), bytes.size()) == UCS_OK);
    TEST_CHILD_CHECK(check_pattern(bytes.data(), bytes.size(), 300));
    fill_pattern(bytes.data(), bytes.size(), 400);
    TEST_CHILD_CHECK(stream_send(c, c.ep, bytes.data(), bytes.size()) == UCS_OK);

    /* The parent's AMs and RMA need our progress until it says done. */
    uint32_t done = 0;
    TEST_CHILD_CHECK(c.recv_value_progress(fd, &done));
    TEST_CHILD_CHECK(!am.failed && (am.requests == std::size(am_sizes)));
    TEST_CHILD_CHECK(check_pattern(region.data(), region_size / 2, 500));
    TEST_CHILD_CHECK(test::send_value(fd, counters_since(start)));
    TEST_CHILD_CHECK(test::sync_peer(fd));
    return 0;
}

void run_traffic(when connect_when, const rc_kind &kind = test_rc)
{
    const rc_counters start = counters_now();
    rc_enable_guard rc;
    peer p;
    REQUIRE(p.init_with(kind.tls, features, {}) == UCS_OK);
    am_state am;
    REQUIRE(ucp_test::set_am_handler(p.worker, am_answer, on_am_answer, &am) == UCS_OK);
    test::child_process child([connect_when, &kind](int fd) {
        return traffic_child(fd, connect_when, kind);
    });
    std::vector<uint8_t> remote, key;
    uint64_t remote_address = 0;
    REQUIRE(test::send_blob(child.fd(), p.address(kind.net_only)));
    REQUIRE(test::recv_blob(child.fd(), &remote));
    REQUIRE(test::recv_blob(child.fd(), &key));
    REQUIRE(test::recv_value(child.fd(), &remote_address));
    REQUIRE(p.connect(remote) == UCS_OK);

    const std::string lanes = lanes_of(p.ep);
    INFO(lanes);
    CHECK(lanes.find(kind.tl_name) != std::string::npos);
    if (kind.net_only) {
        CHECK(lanes.find("posix") == std::string::npos);
    }

    REQUIRE(send_tags(p, 100));
    REQUIRE(recv_tags(p, 200));

    std::vector<uint8_t> bytes(stream_size);
    fill_pattern(bytes.data(), bytes.size(), 300);
    REQUIRE(stream_send(p, p.ep, bytes.data(), bytes.size()) == UCS_OK);
    REQUIRE(stream_recv(p, p.ep, bytes.data(), bytes.size()) == UCS_OK);
    CHECK(check_pattern(bytes.data(), bytes.size(), 400));

    for (size_t i = 0; i < std::size(am_sizes); ++i) {
        std::vector<uint8_t> data(am_sizes[i]);
        fill_pattern(data.data(), data.size(), 600 + i);
        ucp_request_param_t param{};
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags        = UCP_AM_SEND_FLAG_REPLY | UCP_AM_SEND_FLAG_EAGER;
        REQUIRE(p.wait(ucp_am_send_nbx(p.ep, am_request, nullptr, 0, data.data(), data.size(),
                                       &param)) == UCS_OK);
    }
    REQUIRE(test::poll_until([&] { return am.failed || (am.answers.size() == 2); },
                             [&] { ucp_worker_progress(p.worker); }));
    REQUIRE(!am.failed);
    for (size_t i = 0; i < std::size(am_sizes); ++i) {
        CHECK(am.answers[i].size() == am_sizes[i]);
        CHECK(check_pattern(am.answers[i].data(), am.answers[i].size(), 600 + i));
    }

    ucp_rkey_h rkey;
    REQUIRE(ucp_ep_rkey_unpack(p.ep, key.data(), &rkey) == UCS_OK);
    std::vector<uint8_t> out(region_size / 2), in(region_size / 2);
    fill_pattern(out.data(), out.size(), 500);
    ucp_request_param_t param{};
    CHECK(p.wait(ucp_put_nbx(p.ep, out.data(), out.size(), remote_address, rkey, &param)) ==
          UCS_OK);
    CHECK(p.wait(ucp_ep_flush_nbx(p.ep, &param)) == UCS_OK);
    CHECK(p.wait(ucp_get_nbx(p.ep, in.data(), in.size(), remote_address, rkey, &param)) == UCS_OK);
    CHECK(in == out);
    uint64_t add = 5, before = 0;
    const uint64_t word_address = remote_address + region_size - sizeof(uint64_t);
    ucp_request_param_t amo{};
    amo.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    amo.datatype     = ucp_dt_make_contig(sizeof(uint64_t));
    amo.reply_buffer = &before;
    for (uint64_t i = 0; i < 3; ++i) {
        CHECK(p.wait(ucp_atomic_op_nbx(p.ep, UCP_ATOMIC_OP_ADD, &add, 1, word_address, rkey,
                                       &amo)) == UCS_OK);
        CHECK(before == 5 * i);
    }
    ucp_rkey_destroy(rkey);

    REQUIRE(test::send_value(child.fd(), uint32_t(1)));
    rc_counters theirs{};
    REQUIRE(p.recv_value_progress(child.fd(), &theirs));
    const rc_counters ours = counters_since(start);
    if (!kind.counted) {
        REQUIRE(test::sync_peer(child.fd()));
        CHECK(child.wait() == 0);
        return;
    }
    /* Our ep and theirs each connected their rc lanes, and carried the
     * traffic over them; nothing reached an rc ep before it was connected. */
    CHECK(ours.connected >= 1);
    CHECK(theirs.connected >= 1);
    CHECK(ours.delivered > std::size(tag_sizes));
    CHECK(theirs.delivered > std::size(tag_sizes));
    CHECK(ours.dropped == 0);
    CHECK(theirs.dropped == 0);
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(child.wait() == 0);
}

} // namespace

TEST_CASE("wireup over connect-to-ep lanes: the peer connects after our first message",
          "[ucp_wireup]")
{
    run_traffic(when::after_first_message);
}

TEST_CASE("wireup over connect-to-ep lanes: both sides connect at once", "[ucp_wireup]")
{
    run_traffic(when::at_once);
}

TEST_CASE("wireup over connect-to-ep lanes: both sides reach each other by NET_ONLY addresses",
          "[ucp_wireup]")
{
    SECTION("the peer connects after our first message") {
        run_traffic(when::after_first_message, net_only_rc);
    }
    SECTION("both sides connect at once") {
        run_traffic(when::at_once, net_only_rc);
    }
}

/* UCX_ATOMIC_MODE=device over rc_verbs: the NIC's 64-bit fetch-add and
 * compare-swap, from both processes at once on one word, come out exact;
 * what the device lacks is refused, never done by a CPU beside it. */
int device_atomics_child(int fd)
{
    rc_enable_guard rc;
    peer c;
    TEST_CHILD_CHECK(c.init_with(rc_verbs.tls, UCP_FEATURE_AMO64 | UCP_FEATURE_TAG,
                                 {{"ATOMIC_MODE", "device"}}) == UCS_OK);
    std::vector<uint8_t> remote, key;
    uint64_t address = 0;
    TEST_CHILD_CHECK(test::recv_blob(fd, &remote) && test::recv_blob(fd, &key) &&
                     test::recv_value(fd, &address));
    TEST_CHILD_CHECK(c.connect(remote) == UCS_OK);
    ucp_rkey_h rkey;
    TEST_CHILD_CHECK(ucp_ep_rkey_unpack(c.ep, key.data(), &rkey) == UCS_OK);
    uint64_t one = 1, old = 0;
    ucp_request_param_t amo{};
    amo.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    amo.datatype     = ucp_dt_make_contig(sizeof(uint64_t));
    amo.reply_buffer = &old;
    for (int i = 0; i < 300; ++i) {
        TEST_CHILD_CHECK(c.wait(ucp_atomic_op_nbx(c.ep, UCP_ATOMIC_OP_ADD, &one, 1, address, rkey,
                                                  &amo)) == UCS_OK);
    }
    ucp_rkey_destroy(rkey);
    TEST_CHILD_CHECK(test::send_value(fd, uint32_t(1)));
    uint32_t done = 0;
    TEST_CHILD_CHECK(c.recv_value_progress(fd, &done));
    return 0;
}

TEST_CASE("ucp over rc_verbs: device atomics are the NIC's, exact under contention",
          "[ucp_rc_verbs]")
{
    UCP_TEST_SKIP_WITHOUT_RC_VERBS();
    rc_enable_guard rc;
    peer p;
    REQUIRE(p.init_with(rc_verbs.tls, UCP_FEATURE_AMO64 | UCP_FEATURE_AMO32 | UCP_FEATURE_TAG,
                        {{"ATOMIC_MODE", "device"}}) == UCS_OK);
    rma_test::region region;
    REQUIRE(region.map(p.context, rma_test::memory::registered, 4096) == UCS_OK);
    std::memset(region.data(), 0, 4096);
    test::child_process child([](int fd) { return device_atomics_child(fd); });
    REQUIRE(test::send_blob(child.fd(), p.address()));
    REQUIRE(test::send_blob(child.fd(), region.key()));
    REQUIRE(test::send_value(child.fd(), region.address()));
    /* Our own atomics on our memory go through the NIC too: an ep to
     * ourselves (a QP connected to a QP of this worker). */
    REQUIRE(p.connect(p.address()) == UCS_OK);
    ucp_rkey_h rkey;
    REQUIRE(ucp_ep_rkey_unpack(p.ep, region.key().data(), &rkey) == UCS_OK);

    /* Our adds and the child's go to one word; compare-swaps to the next. */
    uint64_t one = 1, old = 0;
    ucp_request_param_t amo{};
    amo.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    amo.datatype     = ucp_dt_make_contig(sizeof(uint64_t));
    amo.reply_buffer = &old;
    for (int i = 0; i < 300; ++i) {
        REQUIRE(p.wait(ucp_atomic_op_nbx(p.ep, UCP_ATOMIC_OP_ADD, &one, 1, region.address(), rkey,
                                         &amo)) == UCS_OK);
    }
    for (uint64_t expect = 0; expect < 50; ++expect) {
        uint64_t compare = expect, swapped = expect + 1;
        amo.reply_buffer = &swapped;
        REQUIRE(p.wait(ucp_atomic_op_nbx(p.ep, UCP_ATOMIC_OP_CSWAP, &compare, 1,
                                         region.address() + 8, rkey, &amo)) == UCS_OK);
        CHECK(swapped == expect);
    }
    uint32_t child_done = 0;
    REQUIRE(p.recv_value_progress(child.fd(), &child_done));
    uint64_t words[2];
    std::memcpy(words, region.data(), sizeof(words));
    CHECK(words[0] == 600);
    CHECK(words[1] == 50);

    /* No device XOR, no 32-bit atomics: refused in device mode. */
    ucp_request_param_t post{};
    post.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    post.datatype     = ucp_dt_make_contig(sizeof(uint64_t));
    uint64_t bits     = 3;
    CHECK(p.wait(ucp_atomic_op_nbx(p.ep, UCP_ATOMIC_OP_XOR, &bits, 1, region.address(), rkey,
                                   &post)) == UCS_ERR_UNSUPPORTED);
    uint32_t small = 1;
    post.datatype  = ucp_dt_make_contig(sizeof(uint32_t));
    CHECK(p.wait(ucp_atomic_op_nbx(p.ep, UCP_ATOMIC_OP_ADD, &small, 1, region.address() + 16, rkey,
                                   &post)) == UCS_ERR_UNSUPPORTED);
    std::memcpy(words, region.data(), sizeof(words));
    CHECK(words[0] == 600);
    ucp_rkey_destroy(rkey);
    REQUIRE(test::send_value(child.fd(), uint32_t(1)));
    CHECK(child.wait() == 0);
}

/* The same traffic over rc_verbs queue pairs (tcp carries the wireup). */
TEST_CASE("ucp over rc_verbs and ud_verbs: tag, stream, AM, RMA and atomics between processes",
          "[ucp_rc_verbs]")
{
    UCP_TEST_SKIP_WITHOUT_RC_VERBS();
    SECTION("the peer connects after our first message") {
        run_traffic(when::after_first_message, rc_verbs);
    }
    SECTION("both sides connect at once") {
        run_traffic(when::at_once, rc_verbs);
    }
    SECTION("over ud_verbs") {
        run_traffic(when::at_once, ud_verbs);
    }
    SECTION("UCX_TLS=rc: ud_verbs carries the wireup") {
        run_traffic(when::after_first_message, rc_alias);
    }
    SECTION("by NET_ONLY addresses, shared memory available") {
        run_traffic(when::after_first_message, rc_verbs_net_only);
    }
}

/* ---- several eps to one peer ------------------------------------------- */

namespace {

constexpr unsigned num_eps = 3;

/* Makes num_eps eps to `remote`, at once, before any progress. */
bool connect_several(peer &p, const std::vector<uint8_t> &remote, std::vector<ucp_ep_h> *eps)
{
    for (unsigned i = 0; i < num_eps; ++i) {
        ucp_ep_params_t params{};
        params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        params.address    = reinterpret_cast<const ucp_address_t *>(remote.data());
        ucp_ep_h ep;
        if (ucp_ep_create(p.worker, &params, &ep) != UCS_OK) {
            return false;
        }
        eps->push_back(ep);
    }
    return true;
}

void close_all(peer &p, std::vector<ucp_ep_h> &eps)
{
    for (ucp_ep_h ep : eps) {
        ucp_request_param_t param{};
        p.wait(ucp_ep_close_nbx(ep, &param));
    }
    eps.clear();
}

/* Each side sends its ep index on the stream of each of its eps, and reads
 * the peer's on each: the i-th eps of the two sides are a pair. */
bool exchange_indices(peer &p, const std::vector<ucp_ep_h> &eps, uint32_t offset)
{
    for (uint32_t i = 0; i < eps.size(); ++i) {
        const uint32_t value = offset + i;
        if (stream_send(p, eps[i], &value, sizeof(value)) != UCS_OK) {
            return false;
        }
    }
    for (uint32_t i = 0; i < eps.size(); ++i) {
        uint32_t value = 0;
        if ((stream_recv(p, eps[i], &value, sizeof(value)) != UCS_OK) ||
            (value != (offset ^ 0x100) + i)) {
            return false;
        }
    }
    return true;
}

int several_child(int fd)
{
    const rc_counters start = counters_now();
    rc_enable_guard rc;
    peer c;
    TEST_CHILD_CHECK(c.init_with(tls, UCP_FEATURE_STREAM, {}) == UCS_OK);
    std::vector<uint8_t> remote;
    TEST_CHILD_CHECK(test::send_blob(fd, c.address()) && test::recv_blob(fd, &remote));
    std::vector<ucp_ep_h> eps;
    TEST_CHILD_CHECK(connect_several(c, remote, &eps));
    TEST_CHILD_CHECK(exchange_indices(c, eps, 0x100));
    uint32_t done;
    TEST_CHILD_CHECK(c.recv_value_progress(fd, &done));
    TEST_CHILD_CHECK(test::send_value(fd, counters_since(start)));
    close_all(c, eps);
    return 0;
}

} // namespace

TEST_CASE("wireup over connect-to-ep lanes: several eps to one peer pair in creation order",
          "[ucp_wireup]")
{
    const rc_counters start = counters_now();
    rc_enable_guard rc;
    peer p;
    REQUIRE(p.init_with(tls, UCP_FEATURE_STREAM, {}) == UCS_OK);
    test::child_process child(several_child);
    std::vector<uint8_t> remote;
    REQUIRE(test::send_blob(child.fd(), p.address()));
    REQUIRE(test::recv_blob(child.fd(), &remote));
    std::vector<ucp_ep_h> eps;
    REQUIRE(connect_several(p, remote, &eps));
    CHECK(exchange_indices(p, eps, 0));
    REQUIRE(test::send_value(child.fd(), uint32_t(1)));
    rc_counters theirs{};
    REQUIRE(p.recv_value_progress(child.fd(), &theirs));
    /* One rc connection per pair on each side, no more (a simultaneous
     * connect makes no extra pair), and nothing refused. */
    const rc_counters ours = counters_since(start);
    CHECK(ours.connected == num_eps);
    CHECK(theirs.connected == num_eps);
    CHECK(ours.dropped == 0);
    CHECK(theirs.dropped == 0);
    close_all(p, eps);
    CHECK(child.wait() == 0);
}

/* ---- closing some of several eps to one peer ------------------------------ */

namespace {

constexpr unsigned extra_eps = 8;

/* Receives a sync message per ep, reports its descriptors, then waits for
 * the parent's closes to free as many, and says whether they did. */
int closing_child(int fd)
{
    peer c;
    TEST_CHILD_CHECK(c.init("tcp,self") == UCS_OK);
    std::vector<uint8_t> remote;
    TEST_CHILD_CHECK(test::send_blob(fd, c.address()) && test::recv_blob(fd, &remote));
    uint64_t value;
    ucp_tag_recv_info_t info{};
    TEST_CHILD_CHECK(c.recv(&value, sizeof(value), 1, ~ucp_tag_t(0), &info) == UCS_OK);
    const uint64_t before = test::open_fd_count();
    TEST_CHILD_CHECK(test::send_value(fd, before));
    for (unsigned i = 0; i < extra_eps; ++i) {
        TEST_CHILD_CHECK(c.recv(&value, sizeof(value), 2, ~ucp_tag_t(0), &info) == UCS_OK);
    }
    TEST_CHILD_CHECK(test::send_value(fd, uint64_t(test::open_fd_count())));
    uint8_t closed;
    TEST_CHILD_CHECK(c.recv_value_progress(fd, &closed));
    const bool freed = test::poll_until([&] { return test::open_fd_count() <= before; },
                                        [&] { ucp_worker_progress(c.worker); },
                                        std::chrono::seconds(10));
    TEST_CHILD_CHECK(test::send_value(fd, uint8_t(freed)));
    /* The first ep still works. */
    TEST_CHILD_CHECK(c.recv(&value, sizeof(value), 3, ~ucp_tag_t(0), &info) == UCS_OK);
    return 0;
}

} // namespace

TEST_CASE("closing some of several eps to one peer frees their connections on both sides",
          "[ucp_wireup]")
{
    peer p;
    REQUIRE(p.init("tcp,self") == UCS_OK);
    test::child_process child(closing_child);
    std::vector<uint8_t> remote;
    REQUIRE(test::send_blob(child.fd(), p.address()));
    REQUIRE(test::recv_blob(child.fd(), &remote));
    REQUIRE(p.connect(remote) == UCS_OK);
    const uint64_t value = 42;
    REQUIRE(tag_send(p, p.ep, &value, sizeof(value), 1, true) == UCS_OK);
    uint64_t child_before = 0, child_grown = 0;
    REQUIRE(p.recv_value_progress(child.fd(), &child_before));
    const size_t before = test::open_fd_count();

    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    params.address    = reinterpret_cast<const ucp_address_t *>(remote.data());
    std::vector<ucp_ep_h> eps(extra_eps);
    for (ucp_ep_h &ep : eps) {
        REQUIRE(ucp_ep_create(p.worker, &params, &ep) == UCS_OK);
        REQUIRE(tag_send(p, ep, &value, sizeof(value), 2, true) == UCS_OK);
    }
    REQUIRE(p.recv_value_progress(child.fd(), &child_grown));
    /* A connection per ep on each side. */
    CHECK(test::open_fd_count() >= before + extra_eps);
    CHECK(child_grown >= child_before + extra_eps);

    ucp_request_param_t close_param{}; /* flush mode */
    for (ucp_ep_h ep : eps) {
        REQUIRE(p.wait(ucp_ep_close_nbx(ep, &close_param)) == UCS_OK);
    }
    REQUIRE(test::send_value(child.fd(), uint8_t(1)));
    /* Both sides give the closed eps' connections back, at once. */
    CHECK(test::poll_until([&] { return test::open_fd_count() <= before; },
                           [&] { ucp_worker_progress(p.worker); }, std::chrono::seconds(10)));
    uint8_t child_freed = 0;
    REQUIRE(p.recv_value_progress(child.fd(), &child_freed));
    CHECK(child_freed == 1);
    REQUIRE(tag_send(p, p.ep, &value, sizeof(value), 3, false) == UCS_OK);
    CHECK(child.wait() == 0);
}

TEST_CASE("wireup over connect-to-ep lanes: an ep to our own worker pairs with itself",
          "[ucp_wireup]")
{
    rc_enable_guard rc;
    peer p;
    REQUIRE(p.init_with(tls, features, {}) == UCS_OK);
    const rc_counters start = counters_now();
    REQUIRE(p.connect(p.address()) == UCS_OK);
    for (size_t i = 0; i < std::size(tag_sizes); ++i) {
        std::vector<uint8_t> out(tag_sizes[i]), in(tag_sizes[i]);
        fill_pattern(out.data(), out.size(), i);
        ucp_request_param_t param{};
        ucs_status_ptr_t sreq = ucp_tag_send_nbx(p.ep, out.data(), out.size(), tag_of(i, false),
                                                 &param);
        ucp_tag_recv_info_t info{};
        REQUIRE(p.recv(in.data(), in.size(), tag_of(i, false), ~ucp_tag_t(0), &info) == UCS_OK);
        REQUIRE(p.wait(sreq) == UCS_OK);
        CHECK(in == out);
    }
    INFO(lanes_of(p.ep));
    CHECK(counters_since(start).connected >= 1);
    CHECK(counters_since(start).dropped == 0);
}

/* ---- peer failure on rc lanes ------------------------------------------ */

namespace {

/* Connects, answers one message, then waits to be killed. */
int doomed_child(int fd)
{
    rc_enable_guard rc;
    peer c;
    TEST_CHILD_CHECK(c.init_with(tls, UCP_FEATURE_TAG, {}) == UCS_OK);
    std::vector<uint8_t> remote;
    TEST_CHILD_CHECK(test::send_blob(fd, c.address()) && test::recv_blob(fd, &remote));
    TEST_CHILD_CHECK(c.connect(remote, UCP_ERR_HANDLING_MODE_PEER) == UCS_OK);
    uint64_t value = 0;
    ucp_tag_recv_info_t info{};
    TEST_CHILD_CHECK(c.recv(&value, sizeof(value), 1, ~ucp_tag_t(0), &info) == UCS_OK);
    TEST_CHILD_CHECK(c.send(&value, sizeof(value), 2) == UCS_OK);
    uint8_t never;
    c.recv_value_progress(fd, &never); /* until killed */
    return 0;
}

} // namespace

TEST_CASE("wireup over connect-to-ep lanes: a killed peer fails the ep once, sends fail",
          "[ucp_wireup]")
{
    rc_enable_guard rc;
    peer p;
    REQUIRE(p.init_with(tls, UCP_FEATURE_TAG, {}) == UCS_OK);
    test::child_process child(doomed_child);
    std::vector<uint8_t> remote;
    REQUIRE(test::send_blob(child.fd(), p.address()));
    REQUIRE(test::recv_blob(child.fd(), &remote));
    ucp_test::ep_errors errors;
    REQUIRE(p.connect(remote, UCP_ERR_HANDLING_MODE_PEER, ucp_test::ep_errors::record, &errors) ==
            UCS_OK);
    uint64_t value = 42;
    REQUIRE(p.send(&value, sizeof(value), 1) == UCS_OK);
    ucp_tag_recv_info_t info{};
    REQUIRE(p.recv(&value, sizeof(value), 2, ~ucp_tag_t(0), &info) == UCS_OK);
    CHECK(value == 42);
    CHECK(lanes_of(p.ep).find(ucp_test::rc_tl) != std::string::npos);

    child.kill(SIGKILL);
    CHECK(child.wait() == 128 + SIGKILL);
    /* Sends find the dead peer (the rc socket is gone) and fail the ep. */
    ucs_status_t status = UCS_OK;
    REQUIRE(test::poll_until(
        [&] {
        if (errors.calls > 0) {
            return true;
        }
        status = p.send(&value, sizeof(value), 3);
        return status != UCS_OK;
        },
        [&] { ucp_worker_progress(p.worker); }));
    REQUIRE(test::poll_until([&] { return errors.calls > 0; },
                             [&] { ucp_worker_progress(p.worker); }));
    CHECK(errors.calls == 1);
    CHECK(errors.status != UCS_OK);
    CHECK(p.send(&value, sizeof(value), 4) != UCS_OK);
}
