/*
 * Unreliable datagram QPs between two processes, and both link layers on
 * the wire: the GRH area of receives, qkey checks, the MTU limit, and
 * RoCE-style GID addressing.
 */
#include "two_process.h"
#include "verbs_test_util.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <vector>

#include <endian.h>

using namespace verbs_test;

namespace {

constexpr size_t kGrh = 40;

/* A UD endpoint with a registered buffer, and the peer's address. */
struct ud_side {
    device dev;
    endpoint ep;
    std::vector<uint8_t> buffer = std::vector<uint8_t>(64 * 1024);
    struct ibv_mr *mr           = nullptr;
    peer_info peer              = {};
};

bool setup_ud_side(int fd, const qp_options &opts, ud_side *side)
{
    if (!open_device(&side->dev) || !create_endpoint(side->dev, opts, &side->ep) ||
        !bring_up_ud(side->ep, opts)) {
        return false;
    }
    side->mr = ibv_reg_mr(side->dev.pd, side->buffer.data(), side->buffer.size(), kLocalWrite);
    peer_info mine = local_info(side->dev, side->ep, nullptr);
    return side->mr != nullptr && test::send_value(fd, mine) && test::recv_value(fd, &side->peer);
}

void teardown_ud_side(ud_side *side)
{
    destroy_endpoint(&side->ep);
    if (side->mr != nullptr) {
        ibv_dereg_mr(side->mr);
    }
    close_device(&side->dev);
}

bool post_ud_send(ud_side &side, struct ibv_ah *ah, const void *data, uint32_t length,
                  uint64_t wr_id, uint32_t qkey, uint32_t imm = 0, bool with_imm = false)
{
    struct ibv_sge sge      = {uint64_t(data), length, side.mr->lkey};
    struct ibv_send_wr wr   = {};
    struct ibv_send_wr *bad = nullptr;
    wr.wr_id                = wr_id;
    wr.opcode               = with_imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
    wr.send_flags           = IBV_SEND_SIGNALED;
    wr.sg_list              = &sge;
    wr.num_sge              = 1;
    wr.imm_data             = imm;
    wr.wr.ud.ah             = ah;
    wr.wr.ud.remote_qpn     = side.peer.qpn;
    wr.wr.ud.remote_qkey    = qkey;
    return ibv_post_send(side.ep.qp, &wr, &bad) == 0;
}

} // namespace

TEST_CASE("verbs_emu: UD datagrams land after a 40-byte GRH area", "[verbs_emu]")
{
    REQUIRE(emulator_present());
    qp_options opts;
    opts.type = IBV_QPT_UD;
    test::child_process child([&](int fd) {
        ud_side side;
        TEST_CHILD_CHECK(setup_ud_side(fd, opts, &side));
        uint8_t *buf = side.buffer.data();
        std::memset(buf, 0xaa, side.buffer.size());
        TEST_CHILD_CHECK(post_recv(side.ep.qp, buf, kGrh + 4096, side.mr->lkey, 1));
        TEST_CHILD_CHECK(post_recv(side.ep.qp, buf + 8192, kGrh + 4096, side.mr->lkey, 2));
        TEST_CHILD_CHECK(test::sync_peer(fd));
        std::vector<struct ibv_wc> wcs;
        TEST_CHILD_CHECK(poll_completions(side.ep.recv_cq, 2, &wcs) == 2);
        for (const struct ibv_wc &wc : wcs) {
            TEST_CHILD_CHECK(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV);
            TEST_CHILD_CHECK(wc.src_qp == side.peer.qpn && wc.slid == side.peer.lid);
        }
        /* a local route: no GRH, its area left as it was */
        TEST_CHILD_CHECK(wcs[0].wr_id == 1 && wcs[0].byte_len == kGrh + 100);
        TEST_CHILD_CHECK(!(wcs[0].wc_flags & IBV_WC_GRH));
        TEST_CHILD_CHECK((wcs[0].wc_flags & IBV_WC_WITH_IMM) && be32toh(wcs[0].imm_data) == 42);
        for (size_t i = 0; i < kGrh; ++i) {
            TEST_CHILD_CHECK(buf[i] == 0xaa);
        }
        TEST_CHILD_CHECK(check_pattern(buf + kGrh, 100, 1));
        /* a global route: the GRH names both ends */
        TEST_CHILD_CHECK(wcs[1].wr_id == 2 && wcs[1].byte_len == kGrh + 200);
        TEST_CHILD_CHECK(wcs[1].wc_flags & IBV_WC_GRH);
        struct ibv_grh grh;
        std::memcpy(&grh, buf + 8192, sizeof(grh));
        TEST_CHILD_CHECK(std::memcmp(grh.sgid.raw, side.peer.gid.raw, 16) == 0);
        TEST_CHILD_CHECK(std::memcmp(grh.dgid.raw, side.dev.gid.raw, 16) == 0);
        TEST_CHILD_CHECK(be16toh(grh.paylen) == 200);
        TEST_CHILD_CHECK(check_pattern(buf + 8192 + kGrh, 200, 2));
        /* an address handle for the reply, built from the completion */
        struct ibv_ah *reply = ibv_create_ah_from_wc(side.dev.pd, &wcs[1],
                                                     reinterpret_cast<struct ibv_grh *>(buf + 8192),
                                                     1);
        TEST_CHILD_CHECK(reply != nullptr);
        ibv_destroy_ah(reply);
        TEST_CHILD_CHECK(test::sync_peer(fd));
        teardown_ud_side(&side);
        return 0;
    });
    ud_side side;
    REQUIRE(setup_ud_side(child.fd(), opts, &side));
    struct ibv_ah *local  = make_ah(side.dev, side.peer, false);
    struct ibv_ah *global = make_ah(side.dev, side.peer, true);
    REQUIRE(local != nullptr);
    REQUIRE(global != nullptr);
    REQUIRE(test::sync_peer(child.fd()));
    uint8_t *buf = side.buffer.data();
    fill_pattern(buf, 100, 1);
    REQUIRE(post_ud_send(side, local, buf, 100, 1, opts.qkey, htobe32(42), true));
    fill_pattern(buf + 4096, 200, 2);
    REQUIRE(post_ud_send(side, global, buf + 4096, 200, 2, opts.qkey));
    std::vector<struct ibv_wc> wcs;
    REQUIRE(poll_completions(side.ep.send_cq, 2, &wcs) == 2);
    CHECK(wcs[0].status == IBV_WC_SUCCESS);
    CHECK(wcs[1].status == IBV_WC_SUCCESS);
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(child.wait() == 0);
    ibv_destroy_ah(local);
    ibv_destroy_ah(global);
    teardown_ud_side(&side);
}

TEST_CASE("verbs_emu: UD drops what the target does not accept", "[verbs_emu]")
{
    REQUIRE(emulator_present());
    qp_options opts;
    opts.type = IBV_QPT_UD;
    test::child_process child([&](int fd) {
        ud_side side;
        TEST_CHILD_CHECK(setup_ud_side(fd, opts, &side));
        uint8_t *buf = side.buffer.data();
        for (uint64_t i = 0; i < 4; ++i) {
            TEST_CHILD_CHECK(post_recv(side.ep.qp, buf + i * 8192, kGrh + 4096, side.mr->lkey, i));
        }
        TEST_CHILD_CHECK(test::sync_peer(fd));
        TEST_CHILD_CHECK(test::sync_peer(fd)); /* everything is sent */
        /* only the datagrams with the right qkey arrived, in order */
        std::vector<struct ibv_wc> wcs;
        TEST_CHILD_CHECK(poll_completions(side.ep.recv_cq, 2, &wcs) == 2);
        TEST_CHILD_CHECK(wcs[0].status == IBV_WC_SUCCESS && wcs[0].wr_id == 0);
        TEST_CHILD_CHECK(check_pattern(buf + kGrh, 64, 2));
        TEST_CHILD_CHECK(wcs[1].status == IBV_WC_SUCCESS && wcs[1].wr_id == 1);
        TEST_CHILD_CHECK(check_pattern(buf + 8192 + kGrh, 64, 3));
        struct ibv_wc extra;
        TEST_CHILD_CHECK(ibv_poll_cq(side.ep.recv_cq, 1, &extra) == 0);
        TEST_CHILD_CHECK(test::sync_peer(fd));
        teardown_ud_side(&side);
        return 0;
    });
    ud_side side;
    REQUIRE(setup_ud_side(child.fd(), opts, &side));
    struct ibv_ah *ah = make_ah(side.dev, side.peer, false);
    REQUIRE(ah != nullptr);
    REQUIRE(test::sync_peer(child.fd()));
    uint8_t *buf = side.buffer.data();
    fill_pattern(buf, 64, 1);
    REQUIRE(post_ud_send(side, ah, buf, 64, 1, opts.qkey + 1)); /* wrong qkey */
    fill_pattern(buf + 1024, 64, 2);
    REQUIRE(post_ud_send(side, ah, buf + 1024, 64, 2, opts.qkey));
    fill_pattern(buf + 2048, 64, 3);
    REQUIRE(post_ud_send(side, ah, buf + 2048, 64, 3, 0x80000000u)); /* QP's qkey */
    /* an address that does not reach the target's port */
    peer_info elsewhere       = side.peer;
    elsewhere.lid             = uint16_t(side.peer.lid + 5);
    struct ibv_ah *wrong_port = make_ah(side.dev, elsewhere, false);
    REQUIRE(wrong_port != nullptr);
    REQUIRE(post_ud_send(side, wrong_port, buf, 64, 4, opts.qkey));
    /* the sender cannot tell: every send completes successfully */
    std::vector<struct ibv_wc> wcs;
    REQUIRE(poll_completions(side.ep.send_cq, 4, &wcs) == 4);
    for (const struct ibv_wc &wc : wcs) {
        CHECK(wc.status == IBV_WC_SUCCESS);
    }
    REQUIRE(test::sync_peer(child.fd()));
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(child.wait() == 0);
    ibv_destroy_ah(wrong_port);
    ibv_destroy_ah(ah);
    teardown_ud_side(&side);
}

TEST_CASE("verbs_emu: UD refuses a datagram larger than the MTU", "[verbs_emu]")
{
    REQUIRE(emulator_present());
    qp_options opts;
    opts.type = IBV_QPT_UD;
    device dev;
    REQUIRE(open_device(&dev));
    endpoint ep;
    REQUIRE(create_endpoint(dev, opts, &ep));
    REQUIRE(bring_up_ud(ep, opts));
    std::vector<uint8_t> buffer(8192);
    struct ibv_mr *mr = ibv_reg_mr(dev.pd, buffer.data(), buffer.size(), kLocalWrite);
    REQUIRE(mr != nullptr);
    peer_info self    = local_info(dev, ep, nullptr);
    struct ibv_ah *ah = make_ah(dev, self, false);
    REQUIRE(ah != nullptr);

    struct ibv_sge sge      = {uint64_t(buffer.data()), 4097, mr->lkey};
    struct ibv_send_wr wr   = {};
    struct ibv_send_wr *bad = nullptr;
    wr.wr_id                = 1;
    wr.opcode               = IBV_WR_SEND;
    wr.send_flags           = IBV_SEND_SIGNALED;
    wr.sg_list              = &sge;
    wr.num_sge              = 1;
    wr.wr.ud.ah             = ah;
    wr.wr.ud.remote_qpn     = self.qpn;
    wr.wr.ud.remote_qkey    = opts.qkey;
    REQUIRE(ibv_post_send(ep.qp, &wr, &bad) == 0);
    struct ibv_wc wc;
    REQUIRE(poll_one(ep.send_cq, &wc));
    CHECK(wc.status == IBV_WC_LOC_LEN_ERR);
    /* RDMA has no place on a datagram QP */
    wr.opcode  = IBV_WR_RDMA_WRITE;
    sge.length = 8;
    CHECK(ibv_post_send(ep.qp, &wr, &bad) == EINVAL);

    ibv_destroy_ah(ah);
    ibv_dereg_mr(mr);
    destroy_endpoint(&ep);
    close_device(&dev);
}

TEST_CASE("verbs_emu: RC and UD over the Ethernet link layer route by GID", "[verbs_emu]")
{
    REQUIRE(emulator_present());
    /* the variable is read when the device list is taken; the context
     * keeps what it saw */
    setenv("VERBS_EMU_LINK_LAYER", "ethernet", 1);
    qp_options rc_opts;
    qp_options ud_opts;
    ud_opts.type = IBV_QPT_UD;
    test::child_process child([&](int fd) {
        rc_side rc;
        TEST_CHILD_CHECK(setup_rc_side(fd, rc_opts, 4096, IBV_ACCESS_LOCAL_WRITE, &rc));
        TEST_CHILD_CHECK(rc.dev.port.link_layer == IBV_LINK_LAYER_ETHERNET);
        TEST_CHILD_CHECK(post_recv(rc.ep.qp, rc.buffer, 4096, rc.mr->lkey, 1));
        ud_side ud;
        TEST_CHILD_CHECK(setup_ud_side(fd, ud_opts, &ud));
        TEST_CHILD_CHECK(post_recv(ud.ep.qp, ud.buffer.data(), kGrh + 4096, ud.mr->lkey, 2));
        TEST_CHILD_CHECK(test::sync_peer(fd));
        struct ibv_wc wc;
        TEST_CHILD_CHECK(poll_one(rc.ep.recv_cq, &wc) && wc.status == IBV_WC_SUCCESS);
        TEST_CHILD_CHECK(wc.byte_len == 300 && check_pattern(rc.buffer, 300, 8));
        TEST_CHILD_CHECK(poll_one(ud.ep.recv_cq, &wc) && wc.status == IBV_WC_SUCCESS);
        TEST_CHILD_CHECK((wc.wc_flags & IBV_WC_GRH) && wc.byte_len == kGrh + 50);
        TEST_CHILD_CHECK(wc.slid == 0);
        TEST_CHILD_CHECK(check_pattern(ud.buffer.data() + kGrh, 50, 9));
        TEST_CHILD_CHECK(test::sync_peer(fd));
        teardown_ud_side(&ud);
        teardown_rc_side(&rc);
        return 0;
    });
    rc_side rc;
    bool rc_ready = setup_rc_side(child.fd(), rc_opts, 4096, IBV_ACCESS_LOCAL_WRITE, &rc);
    ud_side ud;
    bool ud_ready = rc_ready && setup_ud_side(child.fd(), ud_opts, &ud);
    unsetenv("VERBS_EMU_LINK_LAYER");
    REQUIRE(rc_ready);
    REQUIRE(ud_ready);
    CHECK(rc.dev.port.lid == 0);
    CHECK(make_ah(ud.dev, ud.peer, false) == nullptr); /* RoCE needs a GRH */
    struct ibv_ah *ah = make_ah(ud.dev, ud.peer, true);
    REQUIRE(ah != nullptr);
    REQUIRE(test::sync_peer(child.fd()));
    fill_pattern(rc.buffer, 300, 8);
    REQUIRE(post_send(rc.ep.qp, IBV_WR_SEND, rc.buffer, 300, rc.mr->lkey, 1));
    fill_pattern(ud.buffer.data(), 50, 9);
    REQUIRE(post_ud_send(ud, ah, ud.buffer.data(), 50, 2, ud_opts.qkey));
    struct ibv_wc wc;
    REQUIRE(poll_one(rc.ep.send_cq, &wc));
    CHECK(wc.status == IBV_WC_SUCCESS);
    REQUIRE(poll_one(ud.ep.send_cq, &wc));
    CHECK(wc.status == IBV_WC_SUCCESS);
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(child.wait() == 0);
    ibv_destroy_ah(ah);
    teardown_ud_side(&ud);
    teardown_rc_side(&rc);
}
