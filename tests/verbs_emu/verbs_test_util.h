/*
 * Test helpers over the public libibverbs API (the tests never link the
 * emulator; LD_PRELOAD puts it underneath). Everything returns bool or a
 * value instead of asserting, so forked children can use it too.
 */
#ifndef VERBS_EMU_VERBS_TEST_UTIL_H
#define VERBS_EMU_VERBS_TEST_UTIL_H

#include <infiniband/verbs.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace verbs_test {

/* Access flags as plain ints: ibv_reg_mr() is a macro that masks its
 * argument with an enumerator of another enum, which C++20 deprecates for
 * an enumerator argument (clang -Werror rejects it). */
constexpr int kLocalWrite  = IBV_ACCESS_LOCAL_WRITE;
constexpr int kRemoteWrite = IBV_ACCESS_REMOTE_WRITE;

/* Whether the emulator is underneath (device "emu0" exists). */
bool emulator_present();

struct device {
    struct ibv_context *ctx   = nullptr;
    struct ibv_pd *pd         = nullptr;
    struct ibv_port_attr port = {};
    union ibv_gid gid         = {}; /* index 0 */
};

bool open_device(device *dev, int index = 0);
void close_device(device *dev);

struct qp_options {
    enum ibv_qp_type type = IBV_QPT_RC;
    uint32_t max_send_wr  = 128;
    uint32_t max_recv_wr  = 128;
    uint32_t max_sge      = 4;
    uint32_t max_inline   = 256;
    int cq_size           = 1024;
    bool use_srq          = false;
    uint32_t srq_wr       = 256;
    bool use_channel      = false;
    bool sq_sig_all       = false;
    int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                 IBV_ACCESS_REMOTE_ATOMIC;
    uint32_t qkey = 0x11111111;
};

struct endpoint {
    struct ibv_comp_channel *channel = nullptr;
    struct ibv_cq *send_cq           = nullptr;
    struct ibv_cq *recv_cq           = nullptr;
    struct ibv_srq *srq              = nullptr;
    struct ibv_qp *qp                = nullptr;
};

bool create_endpoint(const device &dev, const qp_options &opts, endpoint *ep);
void destroy_endpoint(endpoint *ep);

/* What a peer needs to reach a QP and one of its buffers. */
struct peer_info {
    uint32_t qpn;
    uint16_t lid;
    union ibv_gid gid;
    uint64_t addr;
    uint32_t rkey;
    uint64_t length;
};

peer_info local_info(const device &dev, const endpoint &ep, const struct ibv_mr *mr);

/* RESET -> INIT -> RTR -> RTS with every attribute hardware requires. */
bool connect_rc(const device &dev, endpoint &ep, const peer_info &peer, const qp_options &opts);
bool bring_up_ud(endpoint &ep, const qp_options &opts);

/* Address handle reaching `peer` (GID route when `global`). */
struct ibv_ah *make_ah(const device &dev, const peer_info &peer, bool global);

bool post_send(struct ibv_qp *qp, enum ibv_wr_opcode opcode, const void *buf, uint32_t length,
               uint32_t lkey, uint64_t wr_id, unsigned flags = IBV_SEND_SIGNALED,
               uint64_t remote_addr = 0, uint32_t rkey = 0, uint32_t imm = 0);
bool post_atomic(struct ibv_qp *qp, enum ibv_wr_opcode opcode, uint64_t *result, uint32_t lkey,
                 uint64_t wr_id, uint64_t remote_addr, uint32_t rkey, uint64_t compare_add,
                 uint64_t swap);
bool post_recv(struct ibv_qp *qp, void *buf, uint32_t length, uint32_t lkey, uint64_t wr_id);
bool post_srq_recv(struct ibv_srq *srq, void *buf, uint32_t length, uint32_t lkey, uint64_t wr_id);

/* Polls until `count` completions arrived or the timeout passed; returns
 * how many arrived (appended to `out`). A negative poll result stops. */
size_t poll_completions(struct ibv_cq *cq, size_t count, std::vector<struct ibv_wc> *out,
                        std::chrono::milliseconds timeout = std::chrono::seconds(5));

/* One completion within the timeout. */
bool poll_one(struct ibv_cq *cq, struct ibv_wc *wc,
              std::chrono::milliseconds timeout = std::chrono::seconds(5));

/* One side of a two-process RC test: device, endpoint and a registered
 * buffer, connected to the peer on the other end of `fd`. */
struct rc_side {
    device dev;
    endpoint ep;
    uint8_t *buffer     = nullptr;
    size_t buffer_bytes = 0;
    struct ibv_mr *mr   = nullptr;
    peer_info peer      = {};
};

bool setup_rc_side(int fd, const qp_options &opts, size_t buffer_bytes, int mr_access,
                   rc_side *side);
void teardown_rc_side(rc_side *side);

/* "status/opcode/wr_id" for failure messages. */
std::string describe(const struct ibv_wc &wc);

/* Fills and checks a recognisable byte pattern. */
void fill_pattern(void *buf, size_t length, uint32_t seed);
bool check_pattern(const void *buf, size_t length, uint32_t seed);

} // namespace verbs_test

#endif
