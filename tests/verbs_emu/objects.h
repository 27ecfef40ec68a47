/*
 * The process-local verbs objects. Each wraps the public libibverbs struct
 * as its first member, so the pointers the application holds convert both
 * ways. One mutex (emu_lock) guards all of them: verbs are thread-safe,
 * and nothing here is hot enough to need finer locks.
 */
#ifndef VERBS_EMU_OBJECTS_H
#define VERBS_EMU_OBJECTS_H

#include "config.h"
#include "fabric.h"
#include "inbound_ring.h"
#include "outbound_ring.h"
#include "verbs_api.h"

#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <new>
#include <string>
#include <unordered_set>
#include <vector>

namespace verbs_emu {

using clock = std::chrono::steady_clock;

struct emu_cq;
struct emu_qp;
struct emu_srq;

struct emu_context {
    struct ibv_context ibv;
    int device_index;
    config cfg;    /* as the environment said at open time */
    int users = 0; /* PDs, CQs and channels made from it */
};

struct emu_pd {
    struct ibv_pd ibv;
    int users = 0; /* MRs, QPs, SRQs and AHs made from it */
};

struct emu_mr {
    struct ibv_mr ibv;
    emu_pd *pd;
    uint64_t iova; /* the addresses sges and peers use */
    uint32_t access;
};

struct emu_ah {
    struct ibv_ah ibv;
    emu_pd *pd;
    struct ibv_ah_attr attr;
};

struct emu_channel {
    struct ibv_comp_channel ibv;
    std::string address; /* abstract socket name */
    std::vector<emu_cq *> cqs;
};

struct cqe_entry {
    struct ibv_wc wc;
    emu_qp *qp;
    bool send_queue; /* frees send-queue slots when polled */
    uint64_t sq_seq;
};

struct emu_cq {
    struct ibv_cq ibv;
    emu_context *ctx;
    emu_channel *channel;
    size_t capacity;
    std::deque<cqe_entry> entries;
    bool overrun = false;
    std::vector<emu_qp *> send_qps;
    std::vector<emu_qp *> recv_qps;
    size_t drain_start       = 0; /* round robin over recv_qps */
    uint32_t notify_slot     = kNoSlot;
    uint64_t arm_sequence    = 0;
    bool arm_pending         = false; /* armed, not yet reported */
    unsigned events_pending  = 0;     /* fired before a re-arm */
    uint32_t events_reported = 0;
};

struct recv_wqe {
    uint64_t wr_id;
    std::vector<struct ibv_sge> sges;
};

struct emu_srq {
    struct ibv_srq ibv;
    emu_context *ctx;
    emu_pd *pd;
    uint32_t max_wr;
    uint32_t max_sge;
    uint32_t limit = 0;
    std::deque<recv_wqe> wqes;
    std::vector<emu_qp *> qps;
};

struct send_wqe {
    uint64_t wr_id;
    uint64_t seq; /* position in the send queue */
    enum ibv_wr_opcode opcode;
    unsigned send_flags;
    uint32_t imm; /* network order */
    std::vector<struct ibv_sge> sges;
    std::vector<uint8_t> inline_data; /* IBV_SEND_INLINE copies at post */
    uint64_t remote_addr;
    uint32_t rkey;
    uint64_t compare_add;
    uint64_t swap;
    struct ibv_ah_attr ud_ah;
    uint32_t remote_qpn;
    uint32_t remote_qkey;
    uint64_t bytes_sent = 0; /* a SEND larger than the ring */
    bool started        = false;
};

/* A receive in progress: the WQE a multi-record message lands in. */
struct inbound_message {
    bool active = false;
    recv_wqe wqe;
    gather_list buffers; /* the WQE's sges as host memory */
    uint64_t length  = 0;
    uint16_t opcode  = 0;
    uint16_t flags   = 0;
    uint32_t imm     = 0;
    uint32_t src_qpn = 0;
    uint16_t src_lid = 0;
};

struct emu_qp {
    struct ibv_qp ibv;
    emu_context *ctx;
    emu_pd *pd;
    emu_cq *send_cq;
    emu_cq *recv_cq;
    emu_srq *srq;
    struct ibv_qp_cap cap;
    bool sq_sig_all;
    struct ibv_qp_attr attr; /* everything modify_qp was given */
    inbound_ring ring;
    std::deque<send_wqe> sq; /* posted and not yet executed */
    uint64_t sq_posted = 0;
    uint64_t sq_freed  = 0; /* slots given back by polled CQEs */
    std::deque<recv_wqe> rq;
    inbound_message inbound;
    bool stalled = false;
    clock::time_point stall_deadline; /* for a peer that is not ready */
    bool stall_has_deadline = false;
};

/* The one lock over all emulator state of this process. */
std::mutex &emu_lock();

/* Live objects by address: calls with a destroyed or foreign pointer fail
 * with EINVAL instead of touching freed memory. */
template <typename T>
std::unordered_set<const void *> &registry()
{
    static std::unordered_set<const void *> live;
    return live;
}

template <typename T>
T *lookup(const void *ibv_object)
{
    if (ibv_object == nullptr || registry<T>().count(ibv_object) == 0) {
        return nullptr;
    }
    return reinterpret_cast<T *>(const_cast<void *>(ibv_object));
}

template <typename T>
void register_object(T *object)
{
    registry<T>().insert(&object->ibv);
}

template <typename T>
void unregister_object(T *object)
{
    registry<T>().erase(&object->ibv);
}

/* Local memory keys of this process, for lkey checks. */
emu_mr *find_local_mr(uint32_t lkey);

/* After fork: the parent's objects are not the child's (as on hardware
 * without fork support); the child's lookups of them fail. */
void forget_local_mrs();
void forget_stalled_send_queues();

/* Resolves sges against this process's MRs of `pd` (addresses are the
 * MRs' iovas), requiring `access` (e.g. IBV_ACCESS_LOCAL_WRITE). Appends
 * host pieces to `out`; false if a key is unknown, of another PD, lacks the
 * access, or does not cover its sge. */
bool resolve_local_sges(const emu_pd *pd, const struct ibv_sge *sges, size_t count, uint32_t access,
                        gather_list *out);

/* CQ side (cq.cc) */
void cq_push(emu_cq *cq, const cqe_entry &entry);
void cq_fire_if_armed(emu_cq *cq);
void cq_purge_qp(emu_cq *cq, const emu_qp *qp);

/* QP side */
void qp_publish(emu_qp *qp);  /* state etc. into the fabric */
void qp_to_error(emu_qp *qp); /* flushes both queues */
void qp_flush_receives(emu_qp *qp);
void qp_mark_stalled(emu_qp *qp, bool stalled);
bool qp_has_deliverable(emu_qp *qp); /* a record and a WQE for it */
void progress_send_queue(emu_qp *qp);
void progress_stalled_send_queues();
/* Turns ring records into receive CQEs while `cq` has room. */
void drain_inbound(emu_qp *qp);

/* Completion helpers */
enum ibv_wc_opcode wc_opcode_for(enum ibv_wr_opcode opcode);
struct ibv_wc make_wc(const emu_qp *qp, uint64_t wr_id, enum ibv_wc_status status,
                      enum ibv_wc_opcode opcode);

} // namespace verbs_emu

#endif
