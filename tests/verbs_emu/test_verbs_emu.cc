/*
 * The emulated verbs device, through libibverbs' public API only: devices,
 * ports and GIDs (both link layers), memory registration and the QP state
 * machine. The two-process data path is in test_verbs_emu_rc.cc and
 * test_verbs_emu_ud.cc.
 */
#include "two_process.h"
#include "verbs_test_util.h"

#include <catch2/catch.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <dlfcn.h>
#include <endian.h>
#include <sys/mman.h>
#include <unistd.h>

using namespace verbs_test;

namespace {

struct ibv_qp *make_qp(const device &dev, struct ibv_cq *cq, enum ibv_qp_type type)
{
    struct ibv_qp_init_attr init = {};
    init.send_cq                 = cq;
    init.recv_cq                 = cq;
    init.qp_type                 = type;
    init.cap.max_send_wr         = 8;
    init.cap.max_recv_wr         = 8;
    init.cap.max_send_sge        = 1;
    init.cap.max_recv_sge        = 1;
    return ibv_create_qp(dev.pd, &init);
}

int modify(struct ibv_qp *qp, enum ibv_qp_state state, int mask)
{
    struct ibv_qp_attr attr = {};
    attr.qp_state           = state;
    attr.port_num           = 1;
    attr.qp_access_flags    = IBV_ACCESS_REMOTE_WRITE;
    attr.qkey               = 7;
    attr.path_mtu           = IBV_MTU_4096;
    attr.dest_qp_num        = qp->qp_num;
    attr.max_dest_rd_atomic = 1;
    attr.min_rnr_timer      = 12;
    attr.ah_attr.dlid       = 1;
    attr.ah_attr.port_num   = 1;
    attr.timeout            = 14;
    attr.retry_cnt          = 7;
    attr.rnr_retry          = 7;
    attr.max_rd_atomic      = 1;
    return ibv_modify_qp(qp, &attr, mask | IBV_QP_STATE);
}

constexpr int kInitMask = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
constexpr int kRtrMask  = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                         IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
constexpr int kRtsMask = IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                         IBV_QP_MAX_QP_RD_ATOMIC;

} // namespace

TEST_CASE("verbs_emu: the emulated device and its InfiniBand port", "[verbs_emu]")
{
    REQUIRE(emulator_present()); /* run with LD_PRELOAD=libverbs_emu.so */
    int count                = 0;
    struct ibv_device **list = ibv_get_device_list(&count);
    REQUIRE(list != nullptr);
    REQUIRE(count == 1);
    CHECK(std::strcmp(ibv_get_device_name(list[0]), "emu0") == 0);
    CHECK(list[1] == nullptr);
    CHECK(list[0]->node_type == IBV_NODE_CA);
    CHECK(list[0]->transport_type == IBV_TRANSPORT_IB);
    __be64 guid = ibv_get_device_guid(list[0]);
    CHECK(guid != 0);

    struct ibv_context *ctx = ibv_open_device(list[0]);
    ibv_free_device_list(list);
    REQUIRE(ctx != nullptr);
    CHECK(ctx->async_fd >= 0);
    CHECK(!test::readable(ctx->async_fd));

    struct ibv_device_attr attr;
    REQUIRE(ibv_query_device(ctx, &attr) == 0);
    CHECK(attr.node_guid == guid);
    CHECK(attr.max_qp == 65536);
    CHECK(attr.max_qp_wr == 16384);
    CHECK(attr.max_sge == 30);
    CHECK(attr.max_cqe == 4194303);
    CHECK(attr.max_srq_wr == 16384);
    CHECK(attr.max_qp_rd_atom == 16);
    CHECK(attr.atomic_cap == IBV_ATOMIC_HCA);
    CHECK(attr.max_mr_size == UINT64_MAX);
    CHECK(attr.phys_port_cnt == 1);
    CHECK(std::strcmp(attr.fw_ver, "emulated") == 0);

    struct ibv_device_attr_ex attr_ex;
    CHECK(ibv_query_device_ex(ctx, nullptr, &attr_ex) == 0); /* legacy fallback */
    CHECK(attr_ex.orig_attr.max_qp == 65536);

    struct ibv_port_attr port;
    REQUIRE(ibv_query_port(ctx, 1, &port) == 0);
    CHECK(port.state == IBV_PORT_ACTIVE);
    CHECK(port.active_mtu == IBV_MTU_4096);
    CHECK(port.max_mtu == IBV_MTU_4096);
    CHECK(port.link_layer == IBV_LINK_LAYER_INFINIBAND);
    CHECK(port.lid == 1);
    CHECK(port.gid_tbl_len == 1);
    CHECK(port.pkey_tbl_len == 1);
    CHECK(port.max_msg_sz == (1u << 30));
    CHECK(ibv_query_port(ctx, 2, &port) == EINVAL);

    union ibv_gid gid;
    REQUIRE(ibv_query_gid(ctx, 1, 0, &gid) == 0);
    CHECK(be64toh(gid.global.subnet_prefix) == 0xfe80000000000000ull);
    CHECK(ibv_query_gid(ctx, 1, 1, &gid) == EINVAL);
    __be16 pkey = 0;
    CHECK(ibv_query_pkey(ctx, 1, 0, &pkey) == 0);
    CHECK(be16toh(pkey) == 0xffff);

    /* what the context promises to the inline helpers */
    struct ibv_cq_init_attr_ex cq_ex = {};
    cq_ex.cqe                        = 4;
    CHECK(ibv_create_cq_ex(ctx, &cq_ex) == nullptr);
    CHECK(errno == EOPNOTSUPP);
    CHECK(ibv_close_device(ctx) == 0);
}

TEST_CASE("verbs_emu: more devices and ports have distinct LIDs", "[verbs_emu]")
{
    REQUIRE(emulator_present());
    test::child_process child([](int) {
        setenv("VERBS_EMU_DEVICES", "2", 1);
        setenv("VERBS_EMU_PORTS", "2", 1);
        int count                = 0;
        struct ibv_device **list = ibv_get_device_list(&count);
        TEST_CHILD_CHECK(list != nullptr && count == 2);
        TEST_CHILD_CHECK(std::strcmp(ibv_get_device_name(list[1]), "emu1") == 0);
        TEST_CHILD_CHECK(ibv_get_device_guid(list[0]) != ibv_get_device_guid(list[1]));
        struct ibv_context *ctx = ibv_open_device(list[1]);
        ibv_free_device_list(list);
        TEST_CHILD_CHECK(ctx != nullptr);
        struct ibv_port_attr port;
        TEST_CHILD_CHECK(ibv_query_port(ctx, 2, &port) == 0);
        TEST_CHILD_CHECK(port.lid == 1 + 16 + 1);
        TEST_CHILD_CHECK(ibv_query_port(ctx, 3, &port) == EINVAL);
        struct ibv_device_attr attr;
        TEST_CHILD_CHECK(ibv_query_device(ctx, &attr) == 0 && attr.phys_port_cnt == 2);
        ibv_close_device(ctx);
        return 0;
    });
    CHECK(child.wait() == 0);
}

TEST_CASE("verbs_emu: the Ethernet (RoCE) link layer", "[verbs_emu]")
{
    REQUIRE(emulator_present());
    test::child_process child([](int) {
        setenv("VERBS_EMU_LINK_LAYER", "ethernet", 1);
        device dev;
        TEST_CHILD_CHECK(open_device(&dev));
        TEST_CHILD_CHECK(dev.port.link_layer == IBV_LINK_LAYER_ETHERNET);
        TEST_CHILD_CHECK(dev.port.lid == 0);
        TEST_CHILD_CHECK(dev.port.gid_tbl_len == 2);
        union ibv_gid gid;
        TEST_CHILD_CHECK(ibv_query_gid(dev.ctx, 1, 0, &gid) == 0);
        TEST_CHILD_CHECK(be64toh(gid.global.subnet_prefix) == 0xfe80000000000000ull);
        TEST_CHILD_CHECK(ibv_query_gid(dev.ctx, 1, 1, &gid) == 0);
        const uint8_t v4_mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
        TEST_CHILD_CHECK(std::memcmp(gid.raw, v4_mapped, 16) == 0);
        struct ibv_gid_entry entry;
        TEST_CHILD_CHECK(ibv_query_gid_ex(dev.ctx, 1, 1, &entry, 0) == 0);
        TEST_CHILD_CHECK(entry.gid_type == IBV_GID_TYPE_ROCE_V2);
        /* RoCE routes by GID only */
        struct ibv_ah_attr ah_attr = {};
        ah_attr.port_num           = 1;
        ah_attr.dlid               = 1;
        TEST_CHILD_CHECK(ibv_create_ah(dev.pd, &ah_attr) == nullptr && errno == EINVAL);
        ah_attr.is_global = 1;
        ah_attr.grh.dgid  = gid;
        struct ibv_ah *ah = ibv_create_ah(dev.pd, &ah_attr);
        TEST_CHILD_CHECK(ah != nullptr);
        ibv_destroy_ah(ah);
        close_device(&dev);
        return 0;
    });
    CHECK(child.wait() == 0);
}

TEST_CASE("verbs_emu: modify_qp checks transitions and attribute masks", "[verbs_emu]")
{
    REQUIRE(emulator_present());
    device dev;
    REQUIRE(open_device(&dev));
    struct ibv_cq *cq = ibv_create_cq(dev.ctx, 16, nullptr, nullptr, 0);
    REQUIRE(cq != nullptr);

    SECTION("RC") {
        struct ibv_qp *qp = make_qp(dev, cq, IBV_QPT_RC);
        REQUIRE(qp != nullptr);
        CHECK(qp->state == IBV_QPS_RESET);
        CHECK(modify(qp, IBV_QPS_RTR, kRtrMask) == EINVAL); /* skips INIT */
        CHECK(modify(qp, IBV_QPS_ERR, 0) == EINVAL);        /* not from RESET */
        CHECK(modify(qp, IBV_QPS_INIT, IBV_QP_PKEY_INDEX | IBV_QP_PORT) == EINVAL);
        CHECK(modify(qp, IBV_QPS_INIT, kInitMask | IBV_QP_SQ_PSN) == EINVAL); /* extra */
        CHECK(modify(qp, IBV_QPS_INIT, kInitMask | IBV_QP_QKEY) == EINVAL);   /* UD's */
        REQUIRE(modify(qp, IBV_QPS_INIT, kInitMask) == 0);
        CHECK(qp->state == IBV_QPS_INIT);
        CHECK(verbs_test::post_send(qp, IBV_WR_SEND, nullptr, 0, 0, 1) == false);
        CHECK(modify(qp, IBV_QPS_RTS, kRtsMask) == EINVAL); /* skips RTR */
        CHECK(modify(qp, IBV_QPS_RTR, kRtrMask & ~IBV_QP_MIN_RNR_TIMER) == EINVAL);
        REQUIRE(modify(qp, IBV_QPS_RTR, kRtrMask) == 0);
        CHECK(modify(qp, IBV_QPS_RTS, kRtsMask & ~IBV_QP_RNR_RETRY) == EINVAL);
        REQUIRE(modify(qp, IBV_QPS_RTS, kRtsMask) == 0);
        CHECK(modify(qp, IBV_QPS_RTS, IBV_QP_PATH_MTU) == EINVAL); /* not in RTS */
        CHECK(modify(qp, IBV_QPS_RTS, IBV_QP_MIN_RNR_TIMER) == 0);
        CHECK(modify(qp, IBV_QPS_SQD, 0) == 0);
        CHECK(modify(qp, IBV_QPS_RTS, 0) == 0);
        CHECK(modify(qp, IBV_QPS_INIT, kInitMask) == EINVAL); /* backwards */
        CHECK(modify(qp, IBV_QPS_ERR, 0) == 0);
        CHECK(modify(qp, IBV_QPS_RTS, 0) == EINVAL); /* only RESET out */
        CHECK(modify(qp, IBV_QPS_RESET, 0) == 0);
        CHECK(modify(qp, IBV_QPS_INIT, kInitMask) == 0);

        struct ibv_qp_attr attr;
        struct ibv_qp_init_attr init;
        REQUIRE(ibv_query_qp(qp, &attr, IBV_QP_STATE, &init) == 0);
        CHECK(attr.qp_state == IBV_QPS_INIT);
        CHECK(attr.qp_access_flags == IBV_ACCESS_REMOTE_WRITE);
        CHECK(init.qp_type == IBV_QPT_RC);
        CHECK(ibv_destroy_qp(qp) == 0);
    }
    SECTION("UD") {
        struct ibv_qp *qp = make_qp(dev, cq, IBV_QPT_UD);
        REQUIRE(qp != nullptr);
        CHECK(modify(qp, IBV_QPS_INIT, kInitMask) == EINVAL); /* needs QKEY */
        REQUIRE(modify(qp, IBV_QPS_INIT, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) == 0);
        CHECK(modify(qp, IBV_QPS_RTR, IBV_QP_AV) == EINVAL); /* UD has no path */
        REQUIRE(modify(qp, IBV_QPS_RTR, 0) == 0);
        CHECK(modify(qp, IBV_QPS_RTS, 0) == EINVAL); /* needs SQ_PSN */
        REQUIRE(modify(qp, IBV_QPS_RTS, IBV_QP_SQ_PSN) == 0);
        CHECK(ibv_destroy_qp(qp) == 0);
    }
    SECTION("values out of range") {
        struct ibv_qp *qp = make_qp(dev, cq, IBV_QPT_RC);
        REQUIRE(qp != nullptr);
        struct ibv_qp_attr attr = {};
        attr.qp_state           = IBV_QPS_INIT;
        attr.port_num           = 2;
        CHECK(ibv_modify_qp(qp, &attr, IBV_QP_STATE | kInitMask) == EINVAL);
        attr.port_num   = 1;
        attr.pkey_index = 1;
        CHECK(ibv_modify_qp(qp, &attr, IBV_QP_STATE | kInitMask) == EINVAL);
        CHECK(ibv_destroy_qp(qp) == 0);
    }
    SECTION("resource limits") {
        struct ibv_qp_init_attr init = {};
        init.send_cq                 = cq;
        init.recv_cq                 = cq;
        init.qp_type                 = IBV_QPT_RC;
        init.cap.max_send_wr         = 16385;
        CHECK(ibv_create_qp(dev.pd, &init) == nullptr);
        init.cap.max_send_wr     = 1;
        init.cap.max_inline_data = 513;
        CHECK(ibv_create_qp(dev.pd, &init) == nullptr);
        init.cap.max_inline_data = 0;
        init.qp_type             = IBV_QPT_UC;
        CHECK(ibv_create_qp(dev.pd, &init) == nullptr);
        CHECK(ibv_create_cq(dev.ctx, 0, nullptr, nullptr, 0) == nullptr);
    }
    CHECK(ibv_destroy_cq(cq) == 0);
    close_device(&dev);
}

TEST_CASE("verbs_emu: memory registration", "[verbs_emu]")
{
    REQUIRE(emulator_present());
    device dev;
    REQUIRE(open_device(&dev));
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    void *region = mmap(nullptr, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                        0);
    REQUIRE(region != MAP_FAILED);

    struct ibv_mr *mr = ibv_reg_mr(dev.pd, region, 4 * page, kLocalWrite | kRemoteWrite);
    REQUIRE(mr != nullptr);
    CHECK(mr->lkey == mr->rkey);
    CHECK(mr->addr == region);
    CHECK(mr->length == 4 * page);
    CHECK(mr->pd == dev.pd);
    CHECK(mr->context == dev.ctx);
    CHECK(ibv_dealloc_pd(dev.pd) == EBUSY);

    struct ibv_mr *second = ibv_reg_mr(dev.pd, region, page, kLocalWrite);
    REQUIRE(second != nullptr);
    CHECK(second->lkey != mr->lkey);

    /* the checks hardware registration makes */
    CHECK(ibv_reg_mr(dev.pd, region, 0, kLocalWrite) == nullptr);
    CHECK(errno == EINVAL);
    CHECK(ibv_reg_mr(dev.pd, region, page, kRemoteWrite) == nullptr);
    CHECK(errno == EINVAL);
    const int on_demand = kLocalWrite | IBV_ACCESS_ON_DEMAND;
    CHECK(ibv_reg_mr(dev.pd, region, page, on_demand) == nullptr);
    CHECK(errno == EINVAL);
    munmap(static_cast<char *>(region) + 2 * page, page); /* a hole */
    CHECK(ibv_reg_mr(dev.pd, region, 4 * page, kLocalWrite) == nullptr);
    CHECK(errno == EFAULT);
    const int access       = kLocalWrite | IBV_ACCESS_RELAXED_ORDERING;
    struct ibv_mr *relaxed = ibv_reg_mr(dev.pd, region, page, access); /* via iova2 */
    REQUIRE(relaxed != nullptr);

    CHECK(ibv_dereg_mr(relaxed) == 0);
    CHECK(ibv_dereg_mr(second) == 0);
    CHECK(ibv_dereg_mr(mr) == 0);
    munmap(region, 4 * page);
    close_device(&dev);
}

TEST_CASE("verbs_emu: a dlopened module linking libibverbs gets the emulator", "[verbs_emu]")
{
    REQUIRE(emulator_present());
    void *module = dlopen(VERBS_EMU_PROBE_MODULE, RTLD_NOW | RTLD_LOCAL);
    INFO(dlerror());
    REQUIRE(module != nullptr);
    auto probe = reinterpret_cast<const char *(*)()>(dlsym(module, "verbs_emu_probe"));
    REQUIRE(probe != nullptr);
    const char *name = probe();
    REQUIRE(name != nullptr);
    CHECK(std::strcmp(name, "emu0") == 0);
    dlclose(module);
}

TEST_CASE("verbs_emu: a forked child does not inherit the parent's verbs objects", "[verbs_emu]")
{
    REQUIRE(emulator_present());
    device dev;
    REQUIRE(open_device(&dev));
    struct ibv_cq *cq = ibv_create_cq(dev.ctx, 16, nullptr, nullptr, 0);
    REQUIRE(cq != nullptr);
    struct ibv_qp *qp = make_qp(dev, cq, IBV_QPT_RC);
    REQUIRE(qp != nullptr);
    test::child_process child([&](int) {
        /* the parent's objects are the parent's hardware state */
        struct ibv_wc wc;
        TEST_CHILD_CHECK(ibv_poll_cq(cq, 1, &wc) < 0);
        TEST_CHILD_CHECK(modify(qp, IBV_QPS_INIT, kInitMask) == EINVAL);
        TEST_CHILD_CHECK(ibv_dealloc_pd(dev.pd) == EINVAL);
        /* but the child opens its own */
        device own;
        TEST_CHILD_CHECK(open_device(&own));
        struct ibv_cq *own_cq = ibv_create_cq(own.ctx, 16, nullptr, nullptr, 0);
        TEST_CHILD_CHECK(own_cq != nullptr);
        TEST_CHILD_CHECK(ibv_destroy_cq(own_cq) == 0);
        close_device(&own);
        return 0;
    });
    CHECK(child.wait() == 0);
    CHECK(modify(qp, IBV_QPS_INIT, kInitMask) == 0); /* still the parent's */
    CHECK(ibv_destroy_qp(qp) == 0);
    CHECK(ibv_destroy_cq(cq) == 0);
    close_device(&dev);
}
