/*
 * The protocol selection table (ucp/proto/select.h) and the endpoint
 * configurations that own it (ucp/core/ucp_ep_config.h).
 */
#include "rc_transport.h"
#include "rma_test_util.h"
#include "ucp_peer.h"
#include "ucp_test_util.h"

#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_worker.h>
#include <ucp/proto/select.h>
#include <ucp/proto/wire.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <unistd.h>

using namespace ucp_test;
using ucp::proto::protocol;

namespace {

/* Limits as a lane with these properties gives them. */
ucp::proto::table_inputs inputs(ssize_t max_short, size_t bcopy, size_t zcopy, size_t rndv,
                                bool has_rndv, bool needs_memh = false)
{
    ucp::ep_thresholds t{};
    t.max_eager_short  = max_short;
    t.am_max_bcopy     = bcopy;
    t.max_eager_only   = bcopy - sizeof(ucp_tag_t);
    t.first_frag       = bcopy - sizeof(ucp::wire::eager_first_hdr);
    t.sync_first_frag  = t.first_frag - sizeof(uint64_t);
    t.middle_frag      = bcopy - sizeof(ucp::wire::eager_middle_hdr);
    t.rndv             = rndv;
    t.am_rndv          = rndv;
    t.zcopy            = zcopy;
    t.zcopy_frag       = (zcopy == SIZE_MAX) ? 0 : 64512;
    t.am_zcopy_frag    = t.zcopy_frag;
    t.zcopy_max_hdr    = 128;
    t.zcopy_max_iov    = 6;
    t.zcopy_needs_memh = needs_memh;
    return {t, has_rndv ? (1ull << UCS_MEMORY_TYPE_HOST) : 0};
}

std::vector<ucp::proto::key> every_host_key()
{
    using ucp::proto::operation;
    std::vector<ucp::proto::key> keys;
    for (operation op : {operation::TAG, operation::TAG_SYNC, operation::AM, operation::STREAM}) {
        const uint8_t variants = (op == operation::AM) ? ucp::proto::am_variant::count : 1;
        for (uint8_t v = 0; v < variants; ++v) {
            for (auto dt :
                 {ucp::dt::dt_class::contig, ucp::dt::dt_class::iov, ucp::dt::dt_class::generic}) {
                keys.push_back({op, v, dt, UCS_MEMORY_TYPE_HOST});
            }
        }
    }
    return keys;
}

bool never_declines(const ucp::proto::key &k, protocol p)
{
    /* An active message's one-fragment send depends on its user header. */
    if (k.op == ucp::proto::operation::AM) {
        return p == protocol::EAGER_BCOPY_MULTI;
    }
    return (p == protocol::EAGER_BCOPY_SINGLE) || (p == protocol::EAGER_BCOPY_MULTI) ||
           (p == protocol::EAGER_SHORT);
}

/* A put/get key reached by `reach` (a lane index or ucp::proto::rma_reach). */
ucp::proto::key rma_key(ucp::proto::operation op, uint8_t reach,
                        ucs_memory_type_t mem_type = UCS_MEMORY_TYPE_HOST)
{
    return {op, reach, ucp::dt::dt_class::contig, mem_type};
}

/* Lane 0 with put short up to 256, bcopy up to 8192, zcopy of 65536, get
 * bcopy and zcopy alike, and the zero-copy threshold `zcopy`. */
ucp::proto::table_inputs rma_inputs(size_t zcopy, bool amo, bool amo_cpu)
{
    ucp::proto::table_inputs in    = inputs(100, 8192, SIZE_MAX, SIZE_MAX, false);
    ucp::proto::rma_lane_limits &l = in.rma_lanes[0];
    l.put_short                    = 256;
    l.put_bcopy = l.get_bcopy = 8192;
    l.put_zcopy = l.get_zcopy = 65536;
    l.zcopy                   = zcopy;
    l.amo                     = amo;
    in.amo_cpu                = amo_cpu;
    return in;
}

/* The first candidate for `length` of `k`. */
protocol first_at(const ucp::proto::table &t, const ucp::proto::key &k, size_t length)
{
    return t.get(k).find(length).candidates[0];
}

} // namespace

TEST_CASE("every selection table covers all sizes once and ends each range with a "
          "protocol that never declines",
          "[ucp_select]")
{
    std::mt19937_64 rng(7);
    for (int round = 0; round < 200; ++round) {
        const size_t bcopy      = 256 + rng() % 65536;
        const ssize_t max_short = (rng() % 4 == 0) ? -1 : ssize_t(rng() % 512);
        const size_t zcopy      = (rng() % 4 == 0) ? SIZE_MAX : 1 + rng() % 100000;
        const size_t rndv       = (rng() % 4 == 0) ? SIZE_MAX : rng() % 1000000;
        const auto in = inputs(max_short, bcopy, zcopy, rndv, rndv != SIZE_MAX, rng() % 2);
        const ucp::proto::table table(in);
        for (const auto &k : every_host_key()) {
            const ucp::proto::selection &sel = table.get(k);
            INFO("round " << round << " op " << int(k.op) << " variant " << int(k.variant) << " dt "
                          << int(k.dt));
            REQUIRE(sel.count > 0);
            REQUIRE(sel.count <= ucp::proto::max_ranges);
            size_t from = 0;
            for (uint8_t i = 0; i < sel.count; ++i) {
                const ucp::proto::range &r = sel.ranges[i];
                CHECK(r.last >= from);
                REQUIRE(r.count > 0);
                CHECK(never_declines(k, r.candidates[r.count - 1]));
                /* Only contiguous data goes short or by rendezvous. */
                for (uint8_t c = 0; c < r.count; ++c) {
                    if (k.dt != ucp::dt::dt_class::contig) {
                        CHECK(r.candidates[c] != protocol::EAGER_SHORT);
                        CHECK(r.candidates[c] != protocol::RNDV);
                    }
                    if (k.dt == ucp::dt::dt_class::generic) {
                        CHECK(r.candidates[c] != protocol::EAGER_ZCOPY);
                    }
                }
                if (i + 1 < sel.count) {
                    /* Neighbours differ, or they would be one range. */
                    const ucp::proto::range &n = sel.ranges[i + 1];
                    CHECK(!std::equal(r.candidates, r.candidates + r.count, n.candidates,
                                      n.candidates + n.count));
                }
                from = r.last + 1;
            }
            CHECK(sel.ranges[sel.count - 1].last == SIZE_MAX);
        }
    }
}

TEST_CASE("the selection follows the thresholds: short, bcopy, zcopy, rendezvous", "[ucp_select]")
{
    using ucp::proto::operation;
    const auto in = inputs(100, 8192, 2000, 100000, true);
    const ucp::proto::table table(in);
    const ucp::proto::key tag{operation::TAG, 0, ucp::dt::dt_class::contig, UCS_MEMORY_TYPE_HOST};
    CHECK(first_at(table, tag, 0) == protocol::EAGER_SHORT);
    CHECK(first_at(table, tag, 100) == protocol::EAGER_SHORT);
    CHECK(first_at(table, tag, 101) == protocol::EAGER_BCOPY_SINGLE);
    CHECK(first_at(table, tag, 1999) == protocol::EAGER_BCOPY_SINGLE);
    CHECK(first_at(table, tag, 2000) == protocol::EAGER_ZCOPY);
    CHECK(first_at(table, tag, 99999) == protocol::EAGER_ZCOPY);
    CHECK(first_at(table, tag, 100000) == protocol::RNDV);
    CHECK(first_at(table, tag, SIZE_MAX) == protocol::RNDV);
    /* A declined zcopy falls back by size: one fragment or several. */
    const auto &mid = table.get(tag).find(5000);
    REQUIRE(mid.count == 2);
    CHECK(mid.candidates[1] == protocol::EAGER_BCOPY_SINGLE);
    const auto &big = table.get(tag).find(50000);
    REQUIRE(big.count == 2);
    CHECK(big.candidates[1] == protocol::EAGER_BCOPY_MULTI);
    /* A declined rendezvous (registration failed) goes eagerly. */
    const auto &huge = table.get(tag).find(200000);
    REQUIRE(huge.count == 3);
    CHECK(huge.candidates[1] == protocol::EAGER_ZCOPY);
    CHECK(huge.candidates[2] == protocol::EAGER_BCOPY_MULTI);

    /* Sync sends never go short; the sync header shrinks the single fragment. */
    const ucp::proto::key sync{operation::TAG_SYNC, 0, ucp::dt::dt_class::contig,
                               UCS_MEMORY_TYPE_HOST};
    CHECK(first_at(table, sync, 0) == protocol::EAGER_BCOPY_SINGLE);

    /* Streams have no short sends, and a rendezvous only from
     * stream_rndv_min (above this table's rendezvous threshold). */
    const ucp::proto::key stream{operation::STREAM, 0, ucp::dt::dt_class::contig,
                                 UCS_MEMORY_TYPE_HOST};
    static_assert(ucp::proto::stream_rndv_min > 100000);
    CHECK(first_at(table, stream, 0) == protocol::EAGER_BCOPY_SINGLE);
    CHECK(first_at(table, stream, 100000) == protocol::EAGER_ZCOPY);
    CHECK(first_at(table, stream, ucp::proto::stream_rndv_min - 1) == protocol::EAGER_ZCOPY);
    CHECK(first_at(table, stream, ucp::proto::stream_rndv_min) == protocol::RNDV);
    CHECK(first_at(table, stream, SIZE_MAX) == protocol::RNDV);
    const ucp::proto::table late(inputs(100, 8192, 2000, 1u << 20, true));
    CHECK(first_at(late, stream, (1u << 20) - 1) == protocol::EAGER_ZCOPY);
    CHECK(first_at(late, stream, 1u << 20) == protocol::RNDV);

    /* Active messages: the flags force or forbid a rendezvous. */
    const ucp::proto::key am{operation::AM, 0, ucp::dt::dt_class::contig, UCS_MEMORY_TYPE_HOST};
    CHECK(first_at(table, am, 50) == protocol::EAGER_SHORT);
    CHECK(first_at(table, am, 100000) == protocol::RNDV);
    ucp::proto::key forced = am;
    forced.variant         = ucp::proto::am_variant::FORCE_RNDV;
    CHECK(first_at(table, forced, 1) == protocol::RNDV);
    forced.variant = ucp::proto::am_variant::FORCE_EAGER;
    CHECK(first_at(table, forced, SIZE_MAX) == protocol::EAGER_ZCOPY);
    forced.variant = ucp::proto::am_variant::REPLY;
    CHECK(first_at(table, forced, 50) == protocol::EAGER_BCOPY_SINGLE);

    /* Other memory types: nothing here copies them (no module registered a
     * copier; test_ucp_memtype.cc covers one that did). */
    CHECK(table.get({operation::TAG, 0, ucp::dt::dt_class::contig, UCS_MEMORY_TYPE_CUDA}).count ==
          0);
}

TEST_CASE("iov data goes by copy where zero-copy buffers must be registered", "[ucp_select]")
{
    using ucp::proto::operation;
    const ucp::proto::table plain(inputs(100, 8192, 2000, SIZE_MAX, false));
    const ucp::proto::table memh(inputs(100, 8192, 2000, SIZE_MAX, false, true));
    const ucp::proto::key iov{operation::TAG, 0, ucp::dt::dt_class::iov, UCS_MEMORY_TYPE_HOST};
    CHECK(first_at(plain, iov, 100000) == protocol::EAGER_ZCOPY);
    CHECK(first_at(memh, iov, 100000) == protocol::EAGER_BCOPY_MULTI);
    const ucp::proto::key contig{operation::TAG, 0, ucp::dt::dt_class::contig,
                                 UCS_MEMORY_TYPE_HOST};
    CHECK(first_at(memh, contig, 100000) == protocol::EAGER_ZCOPY);
}

TEST_CASE("eps with the same lanes share one configuration", "[ucp_select]")
{
    peer a, b;
    REQUIRE(a.init("tcp,self") == UCS_OK);
    REQUIRE(b.init("tcp,self") == UCS_OK);
    /* a -> b twice over tcp, a -> a over self. */
    REQUIRE(a.connect(b.address()) == UCS_OK);
    ucp_ep_h second, self;
    ucp_ep_params_t params{};
    const std::vector<uint8_t> b_address = b.address(), a_address = a.address();
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    params.address    = reinterpret_cast<const ucp_address_t *>(b_address.data());
    REQUIRE(ucp_ep_create(a.worker, &params, &second) == UCS_OK);
    params.address = reinterpret_cast<const ucp_address_t *>(a_address.data());
    REQUIRE(ucp_ep_create(a.worker, &params, &self) == UCS_OK);

    CHECK(a.ep->cfg == second->cfg);
    CHECK(a.ep->cfg != self->cfg);
    CHECK(a.worker->ep_configs.size() == 2);
    const std::string info = print_to_string([&](FILE *f) { ucp_ep_print_info(second, f); });
    CHECK(info.find("ep_cfg[" + std::to_string(a.ep->cfg->index) + "]") != std::string::npos);
    /* The fast path's copy comes from the configuration. */
    CHECK(second->max_eager_short == second->cfg->thresh.max_eager_short);

    for (ucp_ep_h ep : {second, self}) {
        ucp_request_param_t close{};
        close.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        close.flags        = UCP_EP_CLOSE_FLAG_FORCE;
        a.wait(ucp_ep_close_nbx(ep, &close));
    }
}

TEST_CASE("UCX_PROTO_INFO=y prints each configuration's tables once", "[ucp_select]")
{
    /* stdout of a child that makes two eps of one configuration. */
    int pipe_fds[2];
    REQUIRE(pipe(pipe_fds) == 0);
    test::child_process child([&](int) {
        ::close(pipe_fds[0]);
        ::dup2(pipe_fds[1], STDOUT_FILENO);
        env_guard env;
        env.set("UCX_PROTO_INFO", "y");
        peer p;
        TEST_CHILD_CHECK(p.init("self") == UCS_OK);
        TEST_CHILD_CHECK(p.connect(p.address()) == UCS_OK);
        const std::vector<uint8_t> address = p.address();
        ucp_ep_params_t params{};
        params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        params.address    = reinterpret_cast<const ucp_address_t *>(address.data());
        ucp_ep_h again;
        TEST_CHILD_CHECK(ucp_ep_create(p.worker, &params, &again) == UCS_OK);
        std::fflush(stdout);
        return 0;
    });
    ::close(pipe_fds[1]);
    std::string out;
    char buffer[4096];
    ssize_t n;
    while ((n = ::read(pipe_fds[0], buffer, sizeof(buffer))) > 0) {
        out.append(buffer, size_t(n));
    }
    ::close(pipe_fds[0]);
    CHECK(child.wait() == 0);
    INFO(out);
    size_t count = 0;
    for (size_t at = out.find("ep_cfg["); at != std::string::npos;
         at        = out.find("ep_cfg[", at + 1)) {
        ++count;
    }
    CHECK(count == 1);
    CHECK(out.find("tag_send, contiguous data") != std::string::npos);
    CHECK(out.find("eager short") != std::string::npos);
}

TEST_CASE("put and get: short, copy, zero copy on a lane; one protocol for a mapped key "
          "and for none",
          "[ucp_select]")
{
    using ucp::proto::operation;
    namespace reach = ucp::proto::rma_reach;
    const ucp::proto::table t(rma_inputs(2000, false, true));
    const auto put = rma_key(operation::PUT, 0), get = rma_key(operation::GET, 0);
    CHECK(first_at(t, put, 0) == protocol::RMA_SHORT);
    CHECK(first_at(t, put, 256) == protocol::RMA_SHORT);
    CHECK(first_at(t, put, 257) == protocol::RMA_BCOPY);
    CHECK(first_at(t, put, 1999) == protocol::RMA_BCOPY);
    CHECK(first_at(t, put, 2000) == protocol::RMA_ZCOPY);
    CHECK(first_at(t, put, SIZE_MAX) == protocol::RMA_ZCOPY);
    CHECK(first_at(t, get, 0) == protocol::RMA_BCOPY);
    CHECK(first_at(t, get, 2000) == protocol::RMA_ZCOPY);
    /* A threshold above one copy fragment: zero copy from the next size. */
    const ucp::proto::table late(rma_inputs(SIZE_MAX, false, true));
    CHECK(first_at(late, put, 8192) == protocol::RMA_BCOPY);
    CHECK(first_at(late, put, 8193) == protocol::RMA_ZCOPY);
    CHECK(first_at(late, get, 8193) == protocol::RMA_ZCOPY);

    for (operation op : {operation::PUT, operation::GET}) {
        CHECK(first_at(t, rma_key(op, reach::DIRECT), 0) == protocol::RMA_DIRECT);
        CHECK(first_at(t, rma_key(op, reach::DIRECT), SIZE_MAX) == protocol::RMA_DIRECT);
        CHECK(t.get(rma_key(op, reach::DIRECT)).count == 1);
        CHECK(first_at(t, rma_key(op, reach::AM), 12345) == protocol::RMA_EMULATED);
        CHECK(t.get(rma_key(op, reach::AM)).count == 1);
        /* Lane 1 offers nothing. */
        CHECK(t.get(rma_key(op, 1)).count == 0);
        /* Device memory: only a lane whose md reaches it, in place. */
        CHECK(t.get(rma_key(op, 0, UCS_MEMORY_TYPE_CUDA)).count == 0);
        CHECK(t.get(rma_key(op, reach::DIRECT, UCS_MEMORY_TYPE_CUDA)).count == 0);
    }
    ucp::proto::table_inputs in = rma_inputs(2000, false, true);
    in.rma_lanes[0].mem_types   = (1ull << UCS_MEMORY_TYPE_HOST) | (1ull << UCS_MEMORY_TYPE_CUDA);
    const ucp::proto::table device(in);
    CHECK(first_at(device, rma_key(operation::PUT, 0, UCS_MEMORY_TYPE_CUDA), 8) ==
          protocol::RMA_ZCOPY);
    CHECK(first_at(device, rma_key(operation::GET, 0, UCS_MEMORY_TYPE_CUDA), 8) ==
          protocol::RMA_ZCOPY);
}

TEST_CASE("atomics: a lane's fall back to the target's CPU in cpu mode, never in device "
          "mode",
          "[ucp_select]")
{
    using ucp::proto::operation;
    namespace reach = ucp::proto::rma_reach;
    const auto amo  = rma_key(operation::AMO, 0);
    const ucp::proto::table cpu(rma_inputs(2000, true, true));
    const ucp::proto::range &both = cpu.get(amo).find(8);
    REQUIRE(both.count == 2);
    CHECK(both.candidates[0] == protocol::AMO_LANE);
    CHECK(both.candidates[1] == protocol::RMA_EMULATED);
    CHECK(first_at(cpu, rma_key(operation::AMO, reach::DIRECT), 4) == protocol::RMA_DIRECT);
    CHECK(first_at(cpu, rma_key(operation::AMO, reach::AM), 4) == protocol::RMA_EMULATED);

    const ucp::proto::table device(rma_inputs(2000, true, false));
    const ucp::proto::range &lane_only = device.get(amo).find(8);
    REQUIRE(lane_only.count == 1);
    CHECK(lane_only.candidates[0] == protocol::AMO_LANE);
    /* Device mode: no CPU path serves atomics at all. */
    CHECK(device.get(rma_key(operation::AMO, reach::DIRECT)).count == 0);
    CHECK(device.get(rma_key(operation::AMO, reach::AM)).count == 0);
}

TEST_CASE("every put and get table covers all sizes once", "[ucp_select]")
{
    using ucp::proto::operation;
    std::mt19937_64 rng(11);
    for (int round = 0; round < 200; ++round) {
        ucp::proto::table_inputs in    = rma_inputs(rng() % 100000, rng() % 2, rng() % 2);
        ucp::proto::rma_lane_limits &l = in.rma_lanes[0];
        l.put_short                    = (rng() % 3 == 0) ? -1 : ssize_t(rng() % 1024);
        l.put_bcopy                    = (rng() % 3 == 0) ? 0 : 1 + rng() % 65536;
        l.get_bcopy                    = (rng() % 3 == 0) ? 0 : 1 + rng() % 65536;
        l.put_zcopy = (rng() % 3 == 0) ? 0 : ((rng() % 2) ? SIZE_MAX : 1 + rng() % 1000000);
        l.get_zcopy = (rng() % 3 == 0) ? 0 : 1 + rng() % 1000000;
        const ucp::proto::table t(in);
        for (operation op : {operation::PUT, operation::GET}) {
            const ucp::proto::selection &sel = t.get(rma_key(op, 0));
            INFO("round " << round << " op " << int(op));
            const bool any = (op == operation::PUT) ?
                                 ((l.put_short >= 0) || l.put_bcopy || l.put_zcopy) :
                                 (l.get_bcopy || l.get_zcopy);
            REQUIRE(sel.count <= ucp::proto::max_ranges);
            if (sel.count == 0) {
                CHECK_FALSE(any);
                continue;
            }
            size_t from = 0;
            for (uint8_t i = 0; i < sel.count; ++i) {
                const ucp::proto::range &r = sel.ranges[i];
                CHECK(r.last >= from);
                CHECK(r.count <= 1); /* one protocol per size: none declines */
                if (r.count == 1) {
                    /* Short only where it fits; a copy only within its
                     * fragment unless there is no zero copy. */
                    if (r.candidates[0] == protocol::RMA_SHORT) {
                        CHECK(r.last <= size_t(l.put_short));
                    }
                    if ((r.candidates[0] == protocol::RMA_BCOPY) &&
                        (((op == operation::PUT) ? l.put_zcopy : l.get_zcopy) != 0)) {
                        CHECK(r.last <= ((op == operation::PUT) ? l.put_bcopy : l.get_bcopy));
                    }
                }
                from = r.last + 1;
            }
            CHECK(sel.ranges[sel.count - 1].last == SIZE_MAX);
        }
    }
}

namespace {

/* Calls of each kind the test transport issued since `start`. */
struct rma_calls {
    unsigned long put_short, put_bcopy, put_zcopy, get_bcopy, get_zcopy;
};

rma_calls rma_calls_now()
{
    const auto &c = ucp_test::rc_rma_issued;
    return {c.put_short, c.put_bcopy, c.put_zcopy, c.get_bcopy, c.get_zcopy};
}

} // namespace

TEST_CASE("put and get go by the protocol the ep's table names (ucp_test_rc lane, "
          "UCX_ZCOPY_THRESH)",
          "[ucp_select]")
{
    ucp_test::rc_enable_guard rc;
    peer p;
    REQUIRE(p.init_with("ucp_test_rc,tcp", UCP_FEATURE_RMA | UCP_FEATURE_TAG,
                        {{"ZCOPY_THRESH", "4096"}}) == UCS_OK);
    constexpr size_t region_size = 1 << 20;
    rma_test::region region;
    REQUIRE(region.map(p.context, rma_test::memory::registered, region_size) == UCS_OK);
    /* An ep to our own worker: an rc QP connected to one of ours. */
    REQUIRE(p.connect(p.address()) == UCS_OK);
    ucp_rkey_h rkey;
    REQUIRE(ucp_ep_rkey_unpack(p.ep, region.key().data(), &rkey) == UCS_OK);

    const std::string info = print_to_string([&](FILE *f) { ucp_ep_print_info(p.ep, f); });
    INFO(info);
    const std::string lane = std::string(ucp_test::rc_tl) + "/" + ucp_test::rc_dev;
    CHECK(info.find("put_short on " + lane) != std::string::npos);
    CHECK(info.find("4096 .. 65536      put_zcopy on " + lane) != std::string::npos);
    CHECK(info.find("get_bcopy on " + lane) != std::string::npos);

    std::vector<uint8_t> source(region_size), back(region_size);
    const ucp_request_param_t param{};
    struct expect {
        size_t size;
        rma_calls put, get; /* calls one put and one get of `size` make */
    };
    using ucp_test::rc_max_zcopy;
    const expect cases[] = {
        {8, {1, 0, 0, 0, 0}, {0, 0, 0, 1, 0}},
        {ucp_test::rc_max_short + 1, {0, 1, 0, 0, 0}, {0, 0, 0, 1, 0}},
        {4095, {0, 1, 0, 0, 0}, {0, 0, 0, 1, 0}},
        {4096, {0, 0, 1, 0, 0}, {0, 0, 0, 0, 1}},
        {rc_max_zcopy * 3 + 1, {0, 0, 4, 0, 0}, {0, 0, 0, 0, 4}},
    };
    uint64_t seed = 1;
    for (const expect &e : cases) {
        INFO("size " << e.size);
        ucp_test::fill_pattern(source.data(), e.size, ++seed);
        rma_calls before = rma_calls_now();
        REQUIRE(p.wait(ucp_put_nbx(p.ep, source.data(), e.size, region.address(), rkey, &param)) ==
                UCS_OK);
        REQUIRE(p.wait(ucp_ep_flush_nbx(p.ep, &param)) == UCS_OK);
        rma_calls after = rma_calls_now();
        CHECK(after.put_short - before.put_short == e.put.put_short);
        CHECK(after.put_bcopy - before.put_bcopy == e.put.put_bcopy);
        CHECK(after.put_zcopy - before.put_zcopy == e.put.put_zcopy);
        CHECK(ucp_test::check_pattern(region.data(), e.size, seed));

        before = after;
        std::fill(back.begin(), back.end(), 0);
        REQUIRE(p.wait(ucp_get_nbx(p.ep, back.data(), e.size, region.address(), rkey, &param)) ==
                UCS_OK);
        after = rma_calls_now();
        CHECK(after.get_bcopy - before.get_bcopy == e.get.get_bcopy);
        CHECK(after.get_zcopy - before.get_zcopy == e.get.get_zcopy);
        CHECK(ucp_test::check_pattern(back.data(), e.size, seed));
    }
    ucp_rkey_destroy(rkey);
}
