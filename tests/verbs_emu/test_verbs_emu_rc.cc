/*
 * Reliable connected QPs between two processes, through the public
 * libibverbs API with the emulator preloaded: sends, RDMA, atomics, the
 * errors hardware reports, completion events, and a peer that dies.
 */
#include "two_process.h"
#include "verbs_test_util.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include <endian.h>
#include <fcntl.h>

using namespace verbs_test;

namespace {

constexpr int kAllAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                           IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

/* Waits until the peer says it is done; false if it went away. */
bool wait_for_peer(int fd)
{
    return test::sync_peer(fd);
}

} // namespace

TEST_CASE("verbs_emu: RC send/recv with immediate, inline and several sges", "[verbs_emu]")
{
    REQUIRE(emulator_present());
    qp_options opts;
    test::child_process child([&](int fd) {
        rc_side side;
        TEST_CHILD_CHECK(setup_rc_side(fd, opts, 64 * 1024, kAllAccess, &side));
        uint32_t lkey = side.mr->lkey;
        uint8_t *buf  = side.buffer;
        for (uint64_t i = 0; i < 4; ++i) {
            TEST_CHILD_CHECK(post_recv(side.ep.qp, buf + i * 4096, 4096, lkey, i));
        }
        /* the multi-sge message lands in two pieces of a two-sge receive */
        struct ibv_sge sges[2]  = {{uint64_t(buf + 16384), 100, lkey},
                                   {uint64_t(buf + 20480), 4000, lkey}};
        struct ibv_recv_wr wr   = {};
        struct ibv_recv_wr *bad = nullptr;
        wr.wr_id                = 4;
        wr.sg_list              = sges;
        wr.num_sge              = 2;
        TEST_CHILD_CHECK(ibv_post_recv(side.ep.qp, &wr, &bad) == 0);
        TEST_CHILD_CHECK(test::sync_peer(fd));

        std::vector<struct ibv_wc> wcs;
        TEST_CHILD_CHECK(poll_completions(side.ep.recv_cq, 5, &wcs) == 5);
        for (uint64_t i = 0; i < 5; ++i) {
            TEST_CHILD_CHECK(wcs[i].status == IBV_WC_SUCCESS);
            TEST_CHILD_CHECK(wcs[i].wr_id == i);
            TEST_CHILD_CHECK(wcs[i].opcode == IBV_WC_RECV);
            TEST_CHILD_CHECK(wcs[i].qp_num == side.ep.qp->qp_num);
            TEST_CHILD_CHECK(wcs[i].src_qp == side.peer.qpn);
            TEST_CHILD_CHECK(wcs[i].slid == side.peer.lid);
        }
        TEST_CHILD_CHECK(wcs[0].byte_len == 100 && !(wcs[0].wc_flags & IBV_WC_WITH_IMM));
        TEST_CHILD_CHECK(check_pattern(buf, 100, 1));
        TEST_CHILD_CHECK(wcs[1].byte_len == 200 && (wcs[1].wc_flags & IBV_WC_WITH_IMM));
        TEST_CHILD_CHECK(be32toh(wcs[1].imm_data) == 0x1234abcd);
        TEST_CHILD_CHECK(check_pattern(buf + 4096, 200, 2));
        TEST_CHILD_CHECK(wcs[2].byte_len == 64 && check_pattern(buf + 8192, 64, 3));
        TEST_CHILD_CHECK(wcs[3].byte_len == 0);
        /* 3 sges of 50, 150 and 1000 bytes gathered: 1200 bytes */
        TEST_CHILD_CHECK(wcs[4].byte_len == 1200);
        std::vector<uint8_t> joined(1200);
        std::memcpy(joined.data(), buf + 16384, 100);
        std::memcpy(joined.data() + 100, buf + 20480, 1100);
        TEST_CHILD_CHECK(check_pattern(joined.data(), 1200, 5));
        TEST_CHILD_CHECK(wait_for_peer(fd));
        teardown_rc_side(&side);
        return 0;
    });
    rc_side side;
    REQUIRE(setup_rc_side(child.fd(), opts, 64 * 1024, kAllAccess, &side));
    REQUIRE(test::sync_peer(child.fd()));
    uint8_t *buf  = side.buffer;
    uint32_t lkey = side.mr->lkey;
    fill_pattern(buf, 100, 1);
    REQUIRE(post_send(side.ep.qp, IBV_WR_SEND, buf, 100, lkey, 0));
    fill_pattern(buf + 4096, 200, 2);
    REQUIRE(post_send(side.ep.qp, IBV_WR_SEND_WITH_IMM, buf + 4096, 200, lkey, 1, IBV_SEND_SIGNALED,
                      0, 0, htobe32(0x1234abcd)));
    /* inline: the data is copied at post time, the buffer is free at once */
    fill_pattern(buf + 8192, 64, 3);
    REQUIRE(post_send(side.ep.qp, IBV_WR_SEND, buf + 8192, 64, 0, 2,
                      IBV_SEND_SIGNALED | IBV_SEND_INLINE));
    std::memset(buf + 8192, 0, 64);
    REQUIRE(post_send(side.ep.qp, IBV_WR_SEND, nullptr, 0, lkey, 3));
    /* one message from three sges */
    std::vector<uint8_t> message(1200);
    fill_pattern(message.data(), message.size(), 5);
    std::memcpy(buf + 16384, message.data(), 50);
    std::memcpy(buf + 20000, message.data() + 50, 150);
    std::memcpy(buf + 30000, message.data() + 200, 1000);
    struct ibv_sge sges[3]  = {{uint64_t(buf + 16384), 50, lkey},
                               {uint64_t(buf + 20000), 150, lkey},
                               {uint64_t(buf + 30000), 1000, lkey}};
    struct ibv_send_wr wr   = {};
    struct ibv_send_wr *bad = nullptr;
    wr.wr_id                = 4;
    wr.opcode               = IBV_WR_SEND;
    wr.send_flags           = IBV_SEND_SIGNALED;
    wr.sg_list              = sges;
    wr.num_sge              = 3;
    REQUIRE(ibv_post_send(side.ep.qp, &wr, &bad) == 0);

    std::vector<struct ibv_wc> wcs;
    REQUIRE(poll_completions(side.ep.send_cq, 5, &wcs) == 5);
    for (uint64_t i = 0; i < 5; ++i) {
        INFO(describe(wcs[i]));
        CHECK(wcs[i].status == IBV_WC_SUCCESS);
        CHECK(wcs[i].wr_id == i); /* in posting order */
        CHECK(wcs[i].opcode == IBV_WC_SEND);
    }
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(child.wait() == 0);
    teardown_rc_side(&side);
}

TEST_CASE("verbs_emu: RC over a shared receive queue", "[verbs_emu]")
{
    REQUIRE(emulator_present());
    qp_options opts;
    test::child_process child([&](int fd) {
        qp_options mine = opts;
        mine.use_srq    = true;
        rc_side side;
        TEST_CHILD_CHECK(setup_rc_side(fd, mine, 64 * 1024, kAllAccess, &side));
        /* receives go to the SRQ, not to a QP that has one */
        TEST_CHILD_CHECK(!post_recv(side.ep.qp, side.buffer, 64, side.mr->lkey, 99));
        for (uint64_t i = 0; i < 5; ++i) {
            TEST_CHILD_CHECK(post_srq_recv(side.ep.srq, side.buffer + i * 1024, 1024, side.mr->lkey,
                                           100 + i));
        }
        TEST_CHILD_CHECK(test::sync_peer(fd));
        std::vector<struct ibv_wc> wcs;
        TEST_CHILD_CHECK(poll_completions(side.ep.recv_cq, 3, &wcs) == 3);
        for (uint64_t i = 0; i < 3; ++i) {
            TEST_CHILD_CHECK(wcs[i].status == IBV_WC_SUCCESS && wcs[i].wr_id == 100 + i);
            TEST_CHILD_CHECK(wcs[i].byte_len == 500);
            TEST_CHILD_CHECK(check_pattern(side.buffer + i * 1024, 500, uint32_t(i)));
        }
        /* the QP's error does not flush what belongs to the SRQ */
        struct ibv_qp_attr attr = {};
        attr.qp_state           = IBV_QPS_ERR;
        TEST_CHILD_CHECK(ibv_modify_qp(side.ep.qp, &attr, IBV_QP_STATE) == 0);
        struct ibv_wc wc;
        TEST_CHILD_CHECK(ibv_poll_cq(side.ep.recv_cq, 1, &wc) == 0);
        struct ibv_srq_attr srq_attr;
        TEST_CHILD_CHECK(ibv_query_srq(side.ep.srq, &srq_attr) == 0);
        TEST_CHILD_CHECK(srq_attr.max_wr == mine.srq_wr);
        TEST_CHILD_CHECK(ibv_destroy_srq(side.ep.srq) == EBUSY); /* a QP uses it */
        TEST_CHILD_CHECK(wait_for_peer(fd));
        teardown_rc_side(&side);
        return 0;
    });
    rc_side side;
    REQUIRE(setup_rc_side(child.fd(), opts, 64 * 1024, kAllAccess, &side));
    REQUIRE(test::sync_peer(child.fd()));
    for (uint32_t i = 0; i < 3; ++i) {
        fill_pattern(side.buffer + i * 1024, 500, i);
        REQUIRE(post_send(side.ep.qp, IBV_WR_SEND, side.buffer + i * 1024, 500, side.mr->lkey, i));
    }
    std::vector<struct ibv_wc> wcs;
    REQUIRE(poll_completions(side.ep.send_cq, 3, &wcs) == 3);
    CHECK(wcs[2].status == IBV_WC_SUCCESS);
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(child.wait() == 0);
    teardown_rc_side(&side);
}

TEST_CASE("verbs_emu: RC send bigger than the ring completes as the receiver drains", "[verbs_emu]")
{
    REQUIRE(emulator_present());
    qp_options opts;
    opts.max_recv_wr    = 4; /* the smallest ring: 256 KiB */
    const size_t length = (1u << 20) + 123;
    test::child_process child([&](int fd) {
        rc_side side;
        TEST_CHILD_CHECK(setup_rc_side(fd, opts, length, kAllAccess, &side));
        /* no receive yet: the sender fills the ring and stalls */
        TEST_CHILD_CHECK(test::sync_peer(fd));
        TEST_CHILD_CHECK(post_recv(side.ep.qp, side.buffer, uint32_t(length), side.mr->lkey, 7));
        struct ibv_wc wc;
        TEST_CHILD_CHECK(poll_one(side.ep.recv_cq, &wc));
        TEST_CHILD_CHECK(wc.status == IBV_WC_SUCCESS && wc.byte_len == length);
        TEST_CHILD_CHECK(check_pattern(side.buffer, length, 77));
        TEST_CHILD_CHECK(wait_for_peer(fd));
        teardown_rc_side(&side);
        return 0;
    });
    rc_side side;
    REQUIRE(setup_rc_side(child.fd(), opts, length, kAllAccess, &side));
    fill_pattern(side.buffer, length, 77);
    REQUIRE(post_send(side.ep.qp, IBV_WR_SEND, side.buffer, uint32_t(length), side.mr->lkey, 1));
    struct ibv_wc wc;
    CHECK(ibv_poll_cq(side.ep.send_cq, 1, &wc) == 0); /* stalled on the full ring */
    REQUIRE(test::sync_peer(child.fd()));
    REQUIRE(poll_one(side.ep.send_cq, &wc));
    CHECK(wc.status == IBV_WC_SUCCESS);
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(child.wait() == 0);
    teardown_rc_side(&side);
}

TEST_CASE("verbs_emu: RC delivers 10000 messages in order", "[verbs_emu]")
{
    REQUIRE(emulator_present());
    constexpr uint32_t kMessages = 10000;
    constexpr uint32_t kSlots    = 128;
    qp_options opts;
    test::child_process child([&](int fd) {
        rc_side side;
        TEST_CHILD_CHECK(setup_rc_side(fd, opts, kSlots * 64, kAllAccess, &side));
        for (uint32_t slot = 0; slot < kSlots; ++slot) {
            TEST_CHILD_CHECK(post_recv(side.ep.qp, side.buffer + slot * 64, 64, side.mr->lkey,
                                       slot));
        }
        TEST_CHILD_CHECK(test::sync_peer(fd));
        uint32_t expected = 0;
        auto deadline     = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (expected < kMessages && std::chrono::steady_clock::now() < deadline) {
            struct ibv_wc wc[32];
            int n = ibv_poll_cq(side.ep.recv_cq, 32, wc);
            TEST_CHILD_CHECK(n >= 0);
            for (int i = 0; i < n; ++i) {
                TEST_CHILD_CHECK(wc[i].status == IBV_WC_SUCCESS && wc[i].byte_len == 8);
                uint64_t slot = wc[i].wr_id;
                uint64_t sequence;
                std::memcpy(&sequence, side.buffer + slot * 64, 8);
                TEST_CHILD_CHECK(sequence == expected);
                ++expected;
                TEST_CHILD_CHECK(post_recv(side.ep.qp, side.buffer + slot * 64, 64, side.mr->lkey,
                                           slot));
            }
        }
        TEST_CHILD_CHECK(expected == kMessages);
        TEST_CHILD_CHECK(wait_for_peer(fd));
        teardown_rc_side(&side);
        return 0;
    });
    rc_side side;
    REQUIRE(setup_rc_side(child.fd(), opts, 64, kAllAccess, &side));
    REQUIRE(test::sync_peer(child.fd()));
    uint32_t completed = 0;
    uint32_t posted    = 0;
    bool in_order      = true;
    auto deadline      = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (completed < kMessages && std::chrono::steady_clock::now() < deadline) {
        while (posted < kMessages && posted - completed < opts.max_send_wr) {
            uint64_t sequence = posted;
            REQUIRE(post_send(side.ep.qp, IBV_WR_SEND, &sequence, 8, 0, posted,
                              IBV_SEND_SIGNALED | IBV_SEND_INLINE));
            ++posted;
        }
        struct ibv_wc wc[32];
        int n = ibv_poll_cq(side.ep.send_cq, 32, wc);
        REQUIRE(n >= 0);
        for (int i = 0; i < n; ++i) {
            REQUIRE(wc[i].status == IBV_WC_SUCCESS);
            in_order = in_order && (wc[i].wr_id == completed);
            ++completed;
        }
    }
    CHECK(in_order);
    CHECK(completed == kMessages);
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(child.wait() == 0);
    teardown_rc_side(&side);
}

TEST_CASE("verbs_emu: RC RDMA write and read at the edges of a region", "[verbs_emu]")
{
    REQUIRE(emulator_present());
    qp_options opts;
    const size_t region = 64 * 1024;
    test::child_process child([&](int fd) {
        rc_side side;
        TEST_CHILD_CHECK(setup_rc_side(fd, opts, region, kAllAccess, &side));
        fill_pattern(side.buffer + 1000, 300, 30); /* for the peer to read */
        TEST_CHILD_CHECK(post_recv(side.ep.qp, nullptr, 0, side.mr->lkey, 55));
        TEST_CHILD_CHECK(test::sync_peer(fd));
        /* the write with immediate consumes a receive and reports its length */
        struct ibv_wc wc;
        TEST_CHILD_CHECK(poll_one(side.ep.recv_cq, &wc));
        TEST_CHILD_CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 55);
        TEST_CHILD_CHECK(wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM);
        TEST_CHILD_CHECK((wc.wc_flags & IBV_WC_WITH_IMM) && be32toh(wc.imm_data) == 99);
        TEST_CHILD_CHECK(wc.byte_len == 512);
        /* earlier writes are visible when the immediate arrives */
        TEST_CHILD_CHECK(check_pattern(side.buffer, 100, 10));
        TEST_CHILD_CHECK(check_pattern(side.buffer + region - 100, 100, 11));
        TEST_CHILD_CHECK(check_pattern(side.buffer + 2048, 512, 12));
        TEST_CHILD_CHECK(wait_for_peer(fd));
        teardown_rc_side(&side);
        return 0;
    });
    rc_side side;
    REQUIRE(setup_rc_side(child.fd(), opts, region, kAllAccess, &side));
    REQUIRE(test::sync_peer(child.fd()));
    uint8_t *buf          = side.buffer;
    uint32_t lkey         = side.mr->lkey;
    const peer_info &peer = side.peer;
    fill_pattern(buf, 100, 10);
    fill_pattern(buf + 100, 100, 11);
    fill_pattern(buf + 200, 512, 12);
    REQUIRE(post_send(side.ep.qp, IBV_WR_RDMA_WRITE, buf, 100, lkey, 1, IBV_SEND_SIGNALED,
                      peer.addr, peer.rkey));
    REQUIRE(post_send(side.ep.qp, IBV_WR_RDMA_WRITE, buf + 100, 100, lkey, 2, IBV_SEND_SIGNALED,
                      peer.addr + region - 100, peer.rkey));
    REQUIRE(post_send(side.ep.qp, IBV_WR_RDMA_READ, buf + 4096, 100, lkey, 3, IBV_SEND_SIGNALED,
                      peer.addr + region - 100, peer.rkey));
    REQUIRE(post_send(side.ep.qp, IBV_WR_RDMA_READ, buf + 8192, 300, lkey, 4, IBV_SEND_SIGNALED,
                      peer.addr + 1000, peer.rkey));
    REQUIRE(post_send(side.ep.qp, IBV_WR_RDMA_WRITE_WITH_IMM, buf + 200, 512, lkey, 5,
                      IBV_SEND_SIGNALED, peer.addr + 2048, peer.rkey, htobe32(99)));
    std::vector<struct ibv_wc> wcs;
    REQUIRE(poll_completions(side.ep.send_cq, 5, &wcs) == 5);
    for (size_t i = 0; i < 5; ++i) {
        INFO(describe(wcs[i]));
        CHECK(wcs[i].status == IBV_WC_SUCCESS);
        CHECK(wcs[i].wr_id == i + 1);
    }
    CHECK(wcs[0].opcode == IBV_WC_RDMA_WRITE);
    CHECK(wcs[2].opcode == IBV_WC_RDMA_READ);
    CHECK(check_pattern(buf + 4096, 100, 11)); /* read back what we wrote */
    CHECK(check_pattern(buf + 8192, 300, 30));
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(child.wait() == 0);
    teardown_rc_side(&side);
}

TEST_CASE("verbs_emu: RC remote access errors, then the QP flushes", "[verbs_emu]")
{
    REQUIRE(emulator_present());
    qp_options opts;
    const size_t region = 8192;
    enum class fault { out_of_bounds, no_read_access, deregistered, misaligned_atomic };
    fault which = fault::out_of_bounds;
    SECTION("out of bounds") {
        which = fault::out_of_bounds;
    }
    SECTION("no remote read access") {
        which = fault::no_read_access;
    }
    SECTION("deregistered key") {
        which = fault::deregistered;
    }
    SECTION("misaligned atomic") {
        which = fault::misaligned_atomic;
    }

    test::child_process child([&](int fd) {
        rc_side side;
        int access = (which == fault::no_read_access) ?
                         (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) :
                         kAllAccess;
        TEST_CHILD_CHECK(setup_rc_side(fd, opts, region, access, &side));
        if (which == fault::deregistered) {
            TEST_CHILD_CHECK(ibv_dereg_mr(side.mr) == 0);
            side.mr = nullptr;
        }
        TEST_CHILD_CHECK(test::sync_peer(fd));
        TEST_CHILD_CHECK(wait_for_peer(fd));
        teardown_rc_side(&side);
        return 0;
    });
    rc_side side;
    REQUIRE(setup_rc_side(child.fd(), opts, region, kAllAccess, &side));
    REQUIRE(test::sync_peer(child.fd()));
    uint8_t *buf                = side.buffer;
    uint32_t lkey               = side.mr->lkey;
    const peer_info &peer       = side.peer;
    enum ibv_wc_status expected = IBV_WC_REM_ACCESS_ERR;
    switch (which) {
    case fault::out_of_bounds:
        REQUIRE(post_send(side.ep.qp, IBV_WR_RDMA_WRITE, buf, 100, lkey, 1, IBV_SEND_SIGNALED,
                          peer.addr + region - 50, peer.rkey));
        break;
    case fault::no_read_access:
        REQUIRE(post_send(side.ep.qp, IBV_WR_RDMA_READ, buf, 100, lkey, 1, IBV_SEND_SIGNALED,
                          peer.addr, peer.rkey));
        break;
    case fault::deregistered:
        REQUIRE(post_send(side.ep.qp, IBV_WR_RDMA_WRITE, buf, 100, lkey, 1, IBV_SEND_SIGNALED,
                          peer.addr, peer.rkey));
        break;
    case fault::misaligned_atomic:
        REQUIRE(post_atomic(side.ep.qp, IBV_WR_ATOMIC_FETCH_AND_ADD,
                            reinterpret_cast<uint64_t *>(buf), lkey, 1, peer.addr + 4, peer.rkey, 1,
                            0));
        expected = IBV_WC_REM_INV_REQ_ERR;
        break;
    }
    /* a correct WR behind the failed one is flushed, signaled or not */
    REQUIRE(post_send(side.ep.qp, IBV_WR_RDMA_WRITE, buf, 8, lkey, 2, 0, peer.addr, peer.rkey));
    std::vector<struct ibv_wc> wcs;
    REQUIRE(poll_completions(side.ep.send_cq, 2, &wcs) == 2);
    INFO(describe(wcs[0]));
    CHECK(wcs[0].wr_id == 1);
    CHECK(wcs[0].status == expected);
    CHECK(wcs[1].wr_id == 2);
    CHECK(wcs[1].status == IBV_WC_WR_FLUSH_ERR);
    CHECK(side.ep.qp->state == IBV_QPS_ERR);
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(child.wait() == 0);
    teardown_rc_side(&side);
}

TEST_CASE("verbs_emu: RC atomics from two processes at once are exact", "[verbs_emu]")
{
    REQUIRE(emulator_present());
    constexpr int kFetchAdds = 500;
    constexpr int kSwaps     = 200;
    qp_options opts;

    /* Each side increments the parent's counter kFetchAdds times with
     * fetch-and-add and kSwaps times with compare-and-swap loops; every
     * increment must have seen a different old value. */
    auto increment = [&](struct ibv_qp *qp, struct ibv_cq *cq, uint64_t *result, uint32_t lkey,
                         uint64_t addr, uint32_t rkey, std::vector<uint64_t> *seen) -> bool {
        struct ibv_wc wc;
        for (int i = 0; i < kFetchAdds; ++i) {
            if (!post_atomic(qp, IBV_WR_ATOMIC_FETCH_AND_ADD, result, lkey, 1, addr, rkey, 1, 0) ||
                !poll_one(cq, &wc) || wc.status != IBV_WC_SUCCESS || wc.byte_len != 8) {
                return false;
            }
            seen->push_back(*result);
        }
        uint64_t guess = 0;
        for (int done = 0; done < kSwaps;) {
            if (!post_atomic(qp, IBV_WR_ATOMIC_CMP_AND_SWP, result, lkey, 2, addr, rkey, guess,
                             guess + 1) ||
                !poll_one(cq, &wc) || wc.status != IBV_WC_SUCCESS) {
                return false;
            }
            if (*result == guess) {
                seen->push_back(guess);
                ++done;
            }
            guess = *result + ((*result == guess) ? 1 : 0);
        }
        return true;
    };

    test::child_process child([&](int fd) {
        rc_side side;
        TEST_CHILD_CHECK(setup_rc_side(fd, opts, 4096, kAllAccess, &side));
        TEST_CHILD_CHECK(test::sync_peer(fd));
        std::vector<uint64_t> seen;
        TEST_CHILD_CHECK(increment(side.ep.qp, side.ep.send_cq,
                                   reinterpret_cast<uint64_t *>(side.buffer), side.mr->lkey,
                                   side.peer.addr, side.peer.rkey, &seen));
        TEST_CHILD_CHECK(test::send_blob(fd, seen.data(), seen.size() * sizeof(uint64_t)));
        TEST_CHILD_CHECK(wait_for_peer(fd));
        teardown_rc_side(&side);
        return 0;
    });
    rc_side side;
    REQUIRE(setup_rc_side(child.fd(), opts, 4096, kAllAccess, &side));
    auto *counter = reinterpret_cast<uint64_t *>(side.buffer);
    *counter      = 0;

    /* the parent reaches its own memory through a loopback QP pair */
    endpoint near, far;
    REQUIRE(create_endpoint(side.dev, opts, &near));
    REQUIRE(create_endpoint(side.dev, opts, &far));
    peer_info near_info = local_info(side.dev, near, nullptr);
    peer_info far_info  = local_info(side.dev, far, nullptr);
    REQUIRE(connect_rc(side.dev, near, far_info, opts));
    REQUIRE(connect_rc(side.dev, far, near_info, opts));

    REQUIRE(test::sync_peer(child.fd()));
    std::vector<uint64_t> seen;
    REQUIRE(increment(near.qp, near.send_cq, reinterpret_cast<uint64_t *>(side.buffer + 64),
                      side.mr->lkey, uint64_t(counter), side.mr->rkey, &seen));
    std::vector<uint8_t> blob;
    REQUIRE(test::recv_blob(child.fd(), &blob));
    std::vector<uint64_t> child_seen(blob.size() / sizeof(uint64_t));
    std::memcpy(child_seen.data(), blob.data(), blob.size());

    const uint64_t total = 2 * (kFetchAdds + kSwaps);
    CHECK(*counter == total);
    seen.insert(seen.end(), child_seen.begin(), child_seen.end());
    std::sort(seen.begin(), seen.end());
    REQUIRE(seen.size() == total);
    bool each_once = true;
    for (uint64_t i = 0; i < total; ++i) {
        each_once = each_once && seen[i] == i;
    }
    CHECK(each_once);
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(child.wait() == 0);
    destroy_endpoint(&near);
    destroy_endpoint(&far);
    teardown_rc_side(&side);
}

TEST_CASE("verbs_emu: RC message longer than the receive buffer", "[verbs_emu]")
{
    REQUIRE(emulator_present());
    qp_options opts;
    test::child_process child([&](int fd) {
        rc_side side;
        TEST_CHILD_CHECK(setup_rc_side(fd, opts, 4096, kAllAccess, &side));
        TEST_CHILD_CHECK(post_recv(side.ep.qp, side.buffer, 64, side.mr->lkey, 1));
        TEST_CHILD_CHECK(post_recv(side.ep.qp, side.buffer + 64, 64, side.mr->lkey, 2));
        TEST_CHILD_CHECK(test::sync_peer(fd));
        std::vector<struct ibv_wc> wcs;
        TEST_CHILD_CHECK(poll_completions(side.ep.recv_cq, 2, &wcs) == 2);
        TEST_CHILD_CHECK(wcs[0].wr_id == 1 && wcs[0].status == IBV_WC_LOC_LEN_ERR);
        /* the QP went to error: the other receive flushes */
        TEST_CHILD_CHECK(wcs[1].wr_id == 2 && wcs[1].status == IBV_WC_WR_FLUSH_ERR);
        TEST_CHILD_CHECK(side.ep.qp->state == IBV_QPS_ERR);
        TEST_CHILD_CHECK(wait_for_peer(fd));
        teardown_rc_side(&side);
        return 0;
    });
    rc_side side;
    REQUIRE(setup_rc_side(child.fd(), opts, 4096, kAllAccess, &side));
    REQUIRE(test::sync_peer(child.fd()));
    REQUIRE(post_send(side.ep.qp, IBV_WR_SEND, side.buffer, 128, side.mr->lkey, 1));
    struct ibv_wc wc;
    REQUIRE(poll_one(side.ep.send_cq, &wc));
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(child.wait() == 0);
    teardown_rc_side(&side);
}

TEST_CASE("verbs_emu: completion channel events across processes", "[verbs_emu]")
{
    REQUIRE(emulator_present());
    qp_options opts;
    opts.use_channel = true;
    test::child_process child([&](int fd) {
        rc_side side;
        TEST_CHILD_CHECK(setup_rc_side(fd, opts, 4096, kAllAccess, &side));
        int channel_fd = side.ep.channel->fd;
        TEST_CHILD_CHECK(post_recv(side.ep.qp, side.buffer, 4096, side.mr->lkey, 3));
        TEST_CHILD_CHECK(ibv_req_notify_cq(side.ep.recv_cq, 0) == 0);
        TEST_CHILD_CHECK(!test::readable(channel_fd)); /* nothing arrived yet */
        TEST_CHILD_CHECK(test::sync_peer(fd));         /* peer: send now */
        TEST_CHILD_CHECK(test::readable(channel_fd, 5000));
        struct ibv_cq *cq = nullptr;
        void *context     = nullptr;
        TEST_CHILD_CHECK(ibv_get_cq_event(side.ep.channel, &cq, &context) == 0);
        TEST_CHILD_CHECK(cq == side.ep.recv_cq);
        ibv_ack_cq_events(cq, 1);
        struct ibv_wc wc;
        TEST_CHILD_CHECK(poll_one(cq, &wc) && wc.wr_id == 3 && wc.byte_len == 32);
        /* one arming, one event: nothing more to read */
        TEST_CHILD_CHECK(fcntl(channel_fd, F_SETFL, O_NONBLOCK) == 0);
        TEST_CHILD_CHECK(ibv_get_cq_event(side.ep.channel, &cq, &context) == -1);
        TEST_CHILD_CHECK(errno == EAGAIN);
        TEST_CHILD_CHECK(wait_for_peer(fd));
        teardown_rc_side(&side);
        return 0;
    });
    rc_side side;
    REQUIRE(setup_rc_side(child.fd(), opts, 4096, kAllAccess, &side));
    REQUIRE(test::sync_peer(child.fd()));
    /* a local completion on an armed send CQ raises an event too */
    REQUIRE(ibv_req_notify_cq(side.ep.send_cq, 0) == 0);
    REQUIRE(post_send(side.ep.qp, IBV_WR_SEND, side.buffer, 32, side.mr->lkey, 9));
    REQUIRE(test::readable(side.ep.channel->fd, 5000));
    struct ibv_cq *cq = nullptr;
    void *context     = nullptr;
    REQUIRE(ibv_get_cq_event(side.ep.channel, &cq, &context) == 0);
    CHECK(cq == side.ep.send_cq);
    ibv_ack_cq_events(cq, 1);
    struct ibv_wc wc;
    REQUIRE(poll_one(side.ep.send_cq, &wc));
    CHECK(wc.wr_id == 9);
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(child.wait() == 0);
    teardown_rc_side(&side);
}

TEST_CASE("verbs_emu: a sender stalled on a full ring is woken by its channel", "[verbs_emu]")
{
    REQUIRE(emulator_present());
    qp_options opts;
    opts.max_recv_wr    = 4; /* 256 KiB ring */
    opts.use_channel    = true;
    const size_t length = 1u << 20;
    test::child_process child([&](int fd) {
        rc_side side;
        TEST_CHILD_CHECK(setup_rc_side(fd, opts, length, kAllAccess, &side));
        TEST_CHILD_CHECK(test::sync_peer(fd));
        TEST_CHILD_CHECK(post_recv(side.ep.qp, side.buffer, uint32_t(length), side.mr->lkey, 1));
        /* Only polling drains the ring: wait until the sender saw its send
         * stalled, or it could finish while the sender was not running. */
        TEST_CHILD_CHECK(test::sync_peer(fd));
        struct ibv_wc wc;
        TEST_CHILD_CHECK(poll_one(side.ep.recv_cq, &wc)); /* drains as data comes */
        TEST_CHILD_CHECK(wc.status == IBV_WC_SUCCESS && wc.byte_len == length);
        TEST_CHILD_CHECK(check_pattern(side.buffer, length, 5));
        TEST_CHILD_CHECK(wait_for_peer(fd));
        teardown_rc_side(&side);
        return 0;
    });
    rc_side side;
    REQUIRE(setup_rc_side(child.fd(), opts, length, kAllAccess, &side));
    fill_pattern(side.buffer, length, 5);
    REQUIRE(post_send(side.ep.qp, IBV_WR_SEND, side.buffer, uint32_t(length), side.mr->lkey, 1));
    REQUIRE(test::sync_peer(child.fd()));
    /* A quarter of the message fills the ring, which nobody drains yet: the
     * send is stalled when the channel is armed, so the receiver's draining
     * (once told to) must wake it. */
    REQUIRE(ibv_req_notify_cq(side.ep.send_cq, 0) == 0);
    struct ibv_wc first;
    CHECK(ibv_poll_cq(side.ep.send_cq, 1, &first) == 0);
    REQUIRE(test::sync_peer(child.fd()));
    int events = 0;
    REQUIRE(test::readable(side.ep.channel->fd, 5000));
    {
        struct ibv_cq *cq = nullptr;
        void *context     = nullptr;
        REQUIRE(ibv_get_cq_event(side.ep.channel, &cq, &context) == 0);
        CHECK(cq == side.ep.send_cq);
        ibv_ack_cq_events(cq, 1);
        ++events;
    }
    /* then the usual event loop: arm, poll, sleep on the channel */
    bool done = false;
    while (!done) {
        REQUIRE(ibv_req_notify_cq(side.ep.send_cq, 0) == 0);
        struct ibv_wc wc;
        int n = ibv_poll_cq(side.ep.send_cq, 1, &wc);
        REQUIRE(n >= 0);
        if (n == 1) {
            CHECK(wc.status == IBV_WC_SUCCESS);
            done = true;
            break;
        }
        REQUIRE(test::readable(side.ep.channel->fd, 5000));
        struct ibv_cq *cq = nullptr;
        void *context     = nullptr;
        REQUIRE(ibv_get_cq_event(side.ep.channel, &cq, &context) == 0);
        CHECK(cq == side.ep.send_cq);
        ibv_ack_cq_events(cq, 1);
        ++events;
    }
    CHECK(events >= 1);
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(child.wait() == 0);
    teardown_rc_side(&side);
}

TEST_CASE("verbs_emu: modify to ERR flushes sends and receives", "[verbs_emu]")
{
    REQUIRE(emulator_present());
    qp_options opts;
    opts.max_recv_wr = 4; /* small ring, filled quickly */
    test::child_process child([&](int fd) {
        rc_side side;
        TEST_CHILD_CHECK(setup_rc_side(fd, opts, 4096, kAllAccess, &side));
        /* posts no receive: the sender's messages pile up and it stalls */
        TEST_CHILD_CHECK(wait_for_peer(fd));
        teardown_rc_side(&side);
        return 0;
    });
    const uint32_t message = 64 * 1024;
    rc_side side;
    REQUIRE(setup_rc_side(child.fd(), opts, message, kAllAccess, &side));
    for (uint64_t i = 0; i < 8; ++i) {
        REQUIRE(post_send(side.ep.qp, IBV_WR_SEND, side.buffer, message, side.mr->lkey, i));
    }
    std::vector<struct ibv_wc> done;
    size_t sent = poll_completions(side.ep.send_cq, 8, &done, std::chrono::milliseconds(50));
    REQUIRE(sent >= 1);
    REQUIRE(sent < 8);
    REQUIRE(post_recv(side.ep.qp, side.buffer, 64, side.mr->lkey, 100));
    REQUIRE(post_recv(side.ep.qp, side.buffer, 64, side.mr->lkey, 101));

    struct ibv_qp_attr attr = {};
    attr.qp_state           = IBV_QPS_ERR;
    REQUIRE(ibv_modify_qp(side.ep.qp, &attr, IBV_QP_STATE) == 0);
    std::vector<struct ibv_wc> flushed;
    REQUIRE(poll_completions(side.ep.send_cq, 8 - sent, &flushed) == 8 - sent);
    for (size_t i = 0; i < flushed.size(); ++i) {
        CHECK(flushed[i].status == IBV_WC_WR_FLUSH_ERR);
        CHECK(flushed[i].wr_id == sent + i);
    }
    std::vector<struct ibv_wc> receives;
    REQUIRE(poll_completions(side.ep.recv_cq, 2, &receives) == 2);
    CHECK(receives[0].status == IBV_WC_WR_FLUSH_ERR);
    CHECK(receives[0].wr_id == 100);
    CHECK(receives[1].wr_id == 101);
    /* work posted in the error state flushes too */
    REQUIRE(post_send(side.ep.qp, IBV_WR_SEND, side.buffer, 8, side.mr->lkey, 200, 0));
    struct ibv_wc wc;
    REQUIRE(poll_one(side.ep.send_cq, &wc));
    CHECK(wc.wr_id == 200);
    CHECK(wc.status == IBV_WC_WR_FLUSH_ERR);
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(child.wait() == 0);
    teardown_rc_side(&side);
}

TEST_CASE("verbs_emu: RC sends to a killed peer fail with RETRY_EXC_ERR", "[verbs_emu]")
{
    REQUIRE(emulator_present());
    qp_options opts;
    opts.max_recv_wr = 4;
    bool stall_first = false;
    bool reap        = false;
    SECTION("outstanding sends stalled on the dead peer's full ring") {
        stall_first = true;
        reap        = true;
    }
    SECTION("the next send after the peer died (not yet reaped)") {
        stall_first = false;
        reap        = false;
    }
    test::child_process child([&](int fd) {
        rc_side side;
        TEST_CHILD_CHECK(setup_rc_side(fd, opts, 4096, kAllAccess, &side));
        TEST_CHILD_CHECK(test::sync_peer(fd));
        TEST_CHILD_CHECK(wait_for_peer(fd)); /* until killed */
        return 0;
    });
    const uint32_t message = 64 * 1024;
    rc_side side;
    REQUIRE(setup_rc_side(child.fd(), opts, message, kAllAccess, &side));
    REQUIRE(test::sync_peer(child.fd()));
    size_t sent     = 0;
    uint64_t posted = 0;
    if (stall_first) {
        for (; posted < 8; ++posted) {
            REQUIRE(post_send(side.ep.qp, IBV_WR_SEND, side.buffer, message, side.mr->lkey,
                              posted));
        }
        std::vector<struct ibv_wc> done;
        sent = poll_completions(side.ep.send_cq, 8, &done, std::chrono::milliseconds(50));
        REQUIRE(sent < 8);
    }
    child.kill(SIGKILL);
    if (reap) {
        CHECK(child.wait() == 128 + SIGKILL);
        /* the stalled send fails, everything behind it flushes */
        REQUIRE(post_send(side.ep.qp, IBV_WR_SEND, side.buffer, 16, side.mr->lkey, posted));
        ++posted;
        std::vector<struct ibv_wc> wcs;
        size_t expected = posted - sent;
        REQUIRE(poll_completions(side.ep.send_cq, expected, &wcs, std::chrono::seconds(3)) ==
                expected);
        INFO(describe(wcs[0]));
        CHECK(wcs[0].status == IBV_WC_RETRY_EXC_ERR);
        CHECK(wcs[0].wr_id == sent);
        for (size_t i = 1; i < wcs.size(); ++i) {
            CHECK(wcs[i].status == IBV_WC_WR_FLUSH_ERR);
        }
    } else {
        /* sends racing with the kill may still succeed; then one fails */
        bool failed   = false;
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
        while (!failed && std::chrono::steady_clock::now() < deadline) {
            REQUIRE(post_send(side.ep.qp, IBV_WR_SEND, side.buffer, 16, side.mr->lkey, posted++));
            struct ibv_wc wc;
            REQUIRE(poll_one(side.ep.send_cq, &wc));
            INFO(describe(wc));
            REQUIRE((wc.status == IBV_WC_SUCCESS || wc.status == IBV_WC_RETRY_EXC_ERR));
            failed = wc.status == IBV_WC_RETRY_EXC_ERR;
        }
        CHECK(failed);
    }
    CHECK(side.ep.qp->state == IBV_QPS_ERR);
    teardown_rc_side(&side);
}

TEST_CASE("verbs_emu: post_send refuses what hardware refuses", "[verbs_emu]")
{
    REQUIRE(emulator_present());
    qp_options opts;
    opts.max_send_wr = 4;
    opts.max_sge     = 2;
    test::child_process child([&](int fd) {
        rc_side side;
        TEST_CHILD_CHECK(setup_rc_side(fd, opts, 4096, kAllAccess, &side));
        for (uint64_t i = 0; i < 8; ++i) {
            TEST_CHILD_CHECK(post_recv(side.ep.qp, side.buffer, 64, side.mr->lkey, i));
        }
        TEST_CHILD_CHECK(wait_for_peer(fd));
        teardown_rc_side(&side);
        return 0;
    });
    rc_side side;
    REQUIRE(setup_rc_side(child.fd(), opts, 4096, kAllAccess, &side));
    uint32_t lkey            = side.mr->lkey;
    struct ibv_sge sges[3]   = {{uint64_t(side.buffer), 8, lkey},
                                {uint64_t(side.buffer + 8), 8, lkey},
                                {uint64_t(side.buffer + 16), 8, lkey}};
    struct ibv_send_wr first = {}, second = {};
    first.wr_id             = 1;
    first.opcode            = IBV_WR_SEND;
    first.sg_list           = sges;
    first.num_sge           = 1;
    first.next              = &second;
    second                  = first;
    second.wr_id            = 2;
    second.num_sge          = 3; /* more than max_send_sge */
    second.next             = nullptr;
    struct ibv_send_wr *bad = nullptr;
    CHECK(ibv_post_send(side.ep.qp, &first, &bad) == EINVAL);
    CHECK(bad == &second);
    first.next = nullptr;

    /* unsignaled WRs keep their slots until a later signaled one is polled */
    REQUIRE(post_send(side.ep.qp, IBV_WR_SEND, side.buffer, 8, lkey, 3, 0));
    REQUIRE(post_send(side.ep.qp, IBV_WR_SEND, side.buffer, 8, lkey, 4));
    CHECK(ibv_post_send(side.ep.qp, &first, &bad) == 0); /* the 4th slot */
    CHECK(ibv_post_send(side.ep.qp, &first, &bad) == ENOMEM);
    CHECK(bad == &first);
    struct ibv_wc wc;
    REQUIRE(poll_one(side.ep.send_cq, &wc));
    CHECK(wc.wr_id == 4);
    CHECK(ibv_post_send(side.ep.qp, &first, &bad) == 0);

    /* a local key that does not cover the buffer */
    REQUIRE(post_send(side.ep.qp, IBV_WR_SEND, side.buffer + 4000, 200, lkey, 5));
    REQUIRE(poll_one(side.ep.send_cq, &wc));
    INFO(describe(wc));
    CHECK(wc.wr_id == 5);
    CHECK(wc.status == IBV_WC_LOC_PROT_ERR);
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(child.wait() == 0);
    teardown_rc_side(&side);
}
