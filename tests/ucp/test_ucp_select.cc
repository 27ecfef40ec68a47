/*
 * The protocol selection table (ucp/proto/select.h) and the endpoint
 * configurations that own it (ucp/core/ucp_ep_config.h).
 */
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
    for (operation op : {operation::TAG, operation::TAG_SYNC, operation::AM,
                         operation::STREAM}) {
        const uint8_t variants = (op == operation::AM) ? ucp::proto::am_variant::count : 1;
        for (uint8_t v = 0; v < variants; ++v) {
            for (auto dt : {ucp::dt::dt_class::contig, ucp::dt::dt_class::iov,
                            ucp::dt::dt_class::generic}) {
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

/* The first candidate for `length` of `k`. */
protocol first_at(const ucp::proto::table &t, const ucp::proto::key &k, size_t length)
{
    return t.get(k).find(length).candidates[0];
}

} // namespace

TEST_CASE("every selection table covers all sizes once and ends each range with a "
          "protocol that never declines", "[ucp_select]")
{
    std::mt19937_64 rng(7);
    for (int round = 0; round < 200; ++round) {
        const size_t bcopy    = 256 + rng() % 65536;
        const ssize_t max_short = (rng() % 4 == 0) ? -1 : ssize_t(rng() % 512);
        const size_t zcopy    = (rng() % 4 == 0) ? SIZE_MAX : 1 + rng() % 100000;
        const size_t rndv     = (rng() % 4 == 0) ? SIZE_MAX : rng() % 1000000;
        const auto in = inputs(max_short, bcopy, zcopy, rndv, rndv != SIZE_MAX,
                               rng() % 2);
        const ucp::proto::table table(in);
        for (const auto &k : every_host_key()) {
            const ucp::proto::selection &sel = table.get(k);
            INFO("round " << round << " op " << int(k.op) << " variant " << int(k.variant)
                 << " dt " << int(k.dt));
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

TEST_CASE("the selection follows the thresholds: short, bcopy, zcopy, rendezvous",
          "[ucp_select]")
{
    using ucp::proto::operation;
    const auto in = inputs(100, 8192, 2000, 100000, true);
    const ucp::proto::table table(in);
    const ucp::proto::key tag{operation::TAG, 0, ucp::dt::dt_class::contig,
                              UCS_MEMORY_TYPE_HOST};
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
    const ucp::proto::key am{operation::AM, 0, ucp::dt::dt_class::contig,
                             UCS_MEMORY_TYPE_HOST};
    CHECK(first_at(table, am, 50) == protocol::EAGER_SHORT);
    CHECK(first_at(table, am, 100000) == protocol::RNDV);
    ucp::proto::key forced = am;
    forced.variant = ucp::proto::am_variant::FORCE_RNDV;
    CHECK(first_at(table, forced, 1) == protocol::RNDV);
    forced.variant = ucp::proto::am_variant::FORCE_EAGER;
    CHECK(first_at(table, forced, SIZE_MAX) == protocol::EAGER_ZCOPY);
    forced.variant = ucp::proto::am_variant::REPLY;
    CHECK(first_at(table, forced, 50) == protocol::EAGER_BCOPY_SINGLE);

    /* Other memory types: nothing here copies them (no module registered a
     * copier; test_ucp_memtype.cc covers one that did). */
    CHECK(table.get({operation::TAG, 0, ucp::dt::dt_class::contig,
                     UCS_MEMORY_TYPE_CUDA}).count == 0);
}

TEST_CASE("iov data goes by copy where zero-copy buffers must be registered",
          "[ucp_select]")
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
    params.address    = reinterpret_cast<const ucp_address_t*>(b_address.data());
    REQUIRE(ucp_ep_create(a.worker, &params, &second) == UCS_OK);
    params.address    = reinterpret_cast<const ucp_address_t*>(a_address.data());
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
        params.address    = reinterpret_cast<const ucp_address_t*>(address.data());
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
         at = out.find("ep_cfg[", at + 1)) {
        ++count;
    }
    CHECK(count == 1);
    CHECK(out.find("tag_send, contiguous data") != std::string::npos);
    CHECK(out.find("eager short") != std::string::npos);
}
