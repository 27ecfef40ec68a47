/* The send queue: post_send checks and copies WRs, then executes them in
 * order. A WR that cannot proceed (target ring full, peer not ready yet)
 * holds back everything behind it and is retried on later post_send and
 * poll_cq calls, like hardware retrying with infinite RNR retries. */
#include "send_ops.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_set>

#include <endian.h>
#include <unistd.h>

namespace verbs_emu {

namespace {

std::unordered_set<emu_qp *> g_stalled;

constexpr uint32_t kQkeyFromQp = 0x80000000u; /* IB: take the QP's own qkey */
constexpr size_t kGrhBytes     = 40;

bool opcode_allowed(const emu_qp *qp, enum ibv_wr_opcode opcode)
{
    switch (opcode) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
        return true;
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
    case IBV_WR_RDMA_READ:
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        return qp->ibv.qp_type == IBV_QPT_RC;
    default:
        return false;
    }
}

bool is_atomic(enum ibv_wr_opcode opcode)
{
    return opcode == IBV_WR_ATOMIC_CMP_AND_SWP || opcode == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

bool carries_inline(const struct ibv_send_wr &wr)
{
    return (wr.send_flags & IBV_SEND_INLINE) && wr.opcode != IBV_WR_RDMA_READ &&
           !is_atomic(wr.opcode);
}

/* What post_send itself refuses (the WR is then not posted). */
int validate_wr(const emu_qp *qp, const struct ibv_send_wr &wr)
{
    if (!opcode_allowed(qp, wr.opcode) || wr.num_sge < 0 ||
        uint32_t(wr.num_sge) > qp->cap.max_send_sge || (wr.num_sge > 0 && wr.sg_list == nullptr)) {
        return EINVAL;
    }
    if (carries_inline(wr)) {
        uint64_t total = 0;
        for (int i = 0; i < wr.num_sge; ++i) {
            total += wr.sg_list[i].length;
        }
        if (total > qp->cap.max_inline_data) {
            return EINVAL;
        }
    }
    if (is_atomic(wr.opcode) && (wr.num_sge != 1 || wr.sg_list[0].length != 8)) {
        return EINVAL;
    }
    if (qp->ibv.qp_type == IBV_QPT_UD && lookup<emu_ah>(wr.wr.ud.ah) == nullptr) {
        return EINVAL;
    }
    if (qp->sq_posted - qp->sq_freed >= qp->cap.max_send_wr) {
        return ENOMEM;
    }
    return 0;
}

send_wqe copy_wr(emu_qp *qp, const struct ibv_send_wr &wr)
{
    send_wqe wqe;
    wqe.wr_id      = wr.wr_id;
    wqe.seq        = qp->sq_posted;
    wqe.opcode     = wr.opcode;
    wqe.send_flags = wr.send_flags;
    wqe.imm        = wr.imm_data;
    if (carries_inline(wr)) {
        /* inline data is copied at post time: the buffer is free at once */
        for (int i = 0; i < wr.num_sge; ++i) {
            const auto *bytes = reinterpret_cast<const uint8_t *>(wr.sg_list[i].addr);
            wqe.inline_data.insert(wqe.inline_data.end(), bytes, bytes + wr.sg_list[i].length);
        }
        wqe.send_flags |= IBV_SEND_INLINE;
    } else {
        wqe.send_flags &= ~unsigned(IBV_SEND_INLINE);
        wqe.sges.assign(wr.sg_list, wr.sg_list + wr.num_sge);
    }
    if (qp->ibv.qp_type == IBV_QPT_UD) {
        wqe.ud_ah       = lookup<emu_ah>(wr.wr.ud.ah)->attr;
        wqe.remote_qpn  = wr.wr.ud.remote_qpn;
        wqe.remote_qkey = wr.wr.ud.remote_qkey;
    } else if (is_atomic(wr.opcode)) {
        wqe.remote_addr = wr.wr.atomic.remote_addr;
        wqe.rkey        = wr.wr.atomic.rkey;
        wqe.compare_add = wr.wr.atomic.compare_add;
        wqe.swap        = wr.wr.atomic.swap;
    } else {
        wqe.remote_addr = wr.wr.rdma.remote_addr;
        wqe.rkey        = wr.wr.rdma.rkey;
    }
    return wqe;
}

uint16_t own_lid(const emu_qp *qp)
{
    return port_lid(qp->ctx->cfg, qp->ctx->device_index, qp->attr.port_num);
}

/* Whether a route reaches the port the target QP lives on. */
bool route_reaches(const emu_qp *qp, const struct ibv_ah_attr &ah, const qp_view &peer)
{
    const config &cfg = qp->ctx->cfg;
    if (cfg.ethernet || ah.is_global) {
        if (!ah.is_global ||
            !port_owns_gid(cfg, peer.id.device_index, peer.id.port_num, ah.grh.dgid)) {
            return false;
        }
    }
    return cfg.ethernet || ah.dlid == port_lid(cfg, peer.id.device_index, peer.id.port_num);
}

bool accepts_packets(uint32_t state)
{
    return state == IBV_QPS_RTR || state == IBV_QPS_RTS || state == IBV_QPS_SQD;
}

/* How long hardware would retry a peer that does not answer:
 * 4.096 us * 2^timeout per try, retry_cnt + 1 tries (0: forever). */
clock::duration retry_window(const emu_qp *qp)
{
    constexpr auto kLongest = std::chrono::seconds(30);
    if (qp->attr.timeout == 0) {
        return kLongest;
    }
    double seconds = 4.096e-6 * double(1ull << qp->attr.timeout) * double(qp->attr.retry_cnt + 1);
    auto window =
        std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(seconds));
    return std::clamp<clock::duration>(window, std::chrono::milliseconds(1), kLongest);
}

exec_result rc_send(emu_qp *qp, send_wqe &wqe, outbound_ring &ring)
{
    uint64_t total = send_length(wqe);
    if (total > kMaxMessageBytes) {
        return exec_error(IBV_WC_LOC_LEN_ERR);
    }
    gather_list source;
    if (!gather_send_data(qp, wqe, &source)) {
        return exec_error(IBV_WC_LOC_PROT_ERR);
    }
    record_header record;
    std::memset(&record, 0, sizeof(record));
    record.opcode             = kRecordSend;
    record.src_qpn            = qp->ibv.qp_num;
    record.imm                = wqe.imm;
    record.message_length     = total;
    record.src_lid            = own_lid(qp);
    record.src_pid            = getpid();
    const size_t fragment_max = std::min(kMaxFragmentBytes, ring.capacity / 4);
    for (;;) {
        uint64_t remaining = total - wqe.bytes_sent;
        size_t payload_max = size_t(std::min<uint64_t>(remaining, fragment_max));
        /* a short message goes whole; a long one in pieces of what fits */
        size_t payload_min = std::min<size_t>(payload_max, 4096);
        record.offset      = wqe.bytes_sent;
        record.flags       = (wqe.bytes_sent == 0) ? kRecordFirst : 0;
        if (wqe.opcode == IBV_WR_SEND_WITH_IMM) {
            record.flags |= kRecordHasImm;
        }
        size_t written        = 0;
        produce_status status = ring_produce(ring, record, source, wqe.bytes_sent, payload_min,
                                             payload_max, &written);
        if (status == produce_status::broken) {
            return exec_error(IBV_WC_RETRY_EXC_ERR);
        }
        if (status == produce_status::no_room) {
            room_wait wait = wait_for_room(qp, ring, payload_min);
            if (wait == room_wait::peer_dead) {
                return exec_error(IBV_WC_RETRY_EXC_ERR);
            }
            if (wait == room_wait::stalled) {
                return exec_stall();
            }
            continue;
        }
        wqe.bytes_sent += written;
        ring_notify_owner(ring);
        if (wqe.bytes_sent == total) {
            break;
        }
    }
    return exec_ok();
}

exec_result execute_rc(emu_qp *qp, send_wqe &wqe)
{
    qp_view peer;
    if (!fabric_lookup_qp(qp->attr.dest_qp_num, &peer) || peer.id.type != IBV_QPT_RC ||
        !route_reaches(qp, qp->attr.ah_attr, peer)) {
        return exec_error(IBV_WC_RETRY_EXC_ERR);
    }
    outbound_ring *ring = outbound_ring_get(qp->attr.dest_qp_num, peer);
    if (ring == nullptr || !outbound_owner_alive(*ring)) {
        return exec_error(IBV_WC_RETRY_EXC_ERR);
    }
    if (!accepts_packets(peer.state)) {
        if (peer.state != IBV_QPS_RESET && peer.state != IBV_QPS_INIT) {
            return exec_error(IBV_WC_RETRY_EXC_ERR); /* peer in error */
        }
        /* not connected yet: hardware retries until the timeout */
        clock::time_point now = clock::now();
        if (!qp->stall_has_deadline) {
            qp->stall_has_deadline = true;
            qp->stall_deadline     = now + retry_window(qp);
        } else if (now > qp->stall_deadline) {
            return exec_error(IBV_WC_RETRY_EXC_ERR);
        }
        if (qp->send_cq->channel != nullptr) {
            ring_register_waiter(*ring, qp->send_cq->notify_slot,
                                 qp->send_cq->channel->address.c_str());
        }
        return exec_stall();
    }
    qp->stall_has_deadline = false;
    if (peer.dest_qpn != qp->ibv.qp_num) {
        return exec_error(IBV_WC_RETRY_EXC_ERR); /* connected to someone else */
    }
    switch (wqe.opcode) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
        return rc_send(qp, wqe, *ring);
    case IBV_WR_RDMA_WRITE:
        return rdma_write(qp, wqe, peer, *ring, false);
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        return rdma_write(qp, wqe, peer, *ring, true);
    case IBV_WR_RDMA_READ:
        return rdma_read(qp, wqe, peer, *ring);
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        return atomic_op(qp, wqe, peer, *ring);
    default:
        return exec_error(IBV_WC_LOC_QP_OP_ERR);
    }
}

/* Fills the 40-byte GRH a datagram sent on a global route carries. */
void build_grh(const emu_qp *qp, const struct ibv_ah_attr &ah, uint64_t payload,
               struct ibv_grh *grh)
{
    std::memset(grh, 0, sizeof(*grh));
    grh->version_tclass_flow = htobe32((6u << 28) | (uint32_t(ah.grh.traffic_class) << 20) |
                                       (ah.grh.flow_label & 0xfffff));
    grh->paylen              = htobe16(uint16_t(payload));
    grh->next_hdr            = 0x1b;
    grh->hop_limit           = ah.grh.hop_limit;
    port_gid(qp->ctx->cfg, qp->ctx->device_index, qp->attr.port_num, ah.grh.sgid_index, &grh->sgid);
    grh->dgid = ah.grh.dgid;
}

/* Unreliable as on hardware: a datagram the target cannot take is gone,
 * and the sender still completes successfully. */
exec_result execute_ud(emu_qp *qp, send_wqe &wqe)
{
    uint64_t total = send_length(wqe);
    if (total > kPortMtuBytes) {
        return exec_error(IBV_WC_LOC_LEN_ERR);
    }
    gather_list data;
    if (!gather_send_data(qp, wqe, &data)) {
        return exec_error(IBV_WC_LOC_PROT_ERR);
    }
    qp_view peer;
    if (!fabric_lookup_qp(wqe.remote_qpn, &peer) || peer.id.type != IBV_QPT_UD ||
        !accepts_packets(peer.state) || !route_reaches(qp, wqe.ud_ah, peer)) {
        return exec_ok();
    }
    uint32_t qkey = (wqe.remote_qkey & kQkeyFromQp) ? qp->attr.qkey : wqe.remote_qkey;
    if (qkey != peer.qkey) {
        return exec_ok();
    }
    outbound_ring *ring = outbound_ring_get(wqe.remote_qpn, peer);
    if (ring == nullptr || !outbound_owner_alive(*ring)) {
        return exec_ok();
    }
    struct ibv_grh grh;
    bool global = wqe.ud_ah.is_global || qp->ctx->cfg.ethernet;
    if (global) {
        build_grh(qp, wqe.ud_ah, total, &grh);
    } else {
        std::memset(&grh, 0, sizeof(grh));
    }
    gather_list source;
    source.push_back({&grh, kGrhBytes});
    source.insert(source.end(), data.begin(), data.end());
    record_header record;
    std::memset(&record, 0, sizeof(record));
    record.opcode = kRecordSend;
    record.flags  = kRecordFirst | kRecordLast | (global ? kRecordHasGrh : 0) |
                   ((wqe.opcode == IBV_WR_SEND_WITH_IMM) ? kRecordHasImm : 0);
    record.src_qpn        = qp->ibv.qp_num;
    record.imm            = wqe.imm;
    record.message_length = kGrhBytes + total;
    record.src_lid        = own_lid(qp);
    record.src_pid        = getpid();
    size_t written        = 0;
    if (ring_produce(*ring, record, source, 0, kGrhBytes + total, kGrhBytes + total, &written) ==
        produce_status::done) {
        ring_notify_owner(*ring);
    }
    return exec_ok();
}

void push_send_completion(emu_qp *qp, const send_wqe &wqe, const exec_result &result)
{
    bool signaled = qp->sq_sig_all || (wqe.send_flags & IBV_SEND_SIGNALED);
    if (result.status == IBV_WC_SUCCESS && !signaled) {
        return;
    }
    struct ibv_wc wc = make_wc(qp, wqe.wr_id, result.status, wc_opcode_for(wqe.opcode));
    wc.byte_len      = result.byte_len;
    cq_push(qp->send_cq, {wc, qp, true, wqe.seq});
}

} // namespace

enum ibv_wc_opcode wc_opcode_for(enum ibv_wr_opcode opcode)
{
    switch (opcode) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
        return IBV_WC_RDMA_WRITE;
    case IBV_WR_RDMA_READ:
        return IBV_WC_RDMA_READ;
    case IBV_WR_ATOMIC_CMP_AND_SWP:
        return IBV_WC_COMP_SWAP;
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
        return IBV_WC_FETCH_ADD;
    default:
        return IBV_WC_SEND;
    }
}

uint64_t send_length(const send_wqe &wqe)
{
    if (wqe.send_flags & IBV_SEND_INLINE) {
        return wqe.inline_data.size();
    }
    uint64_t total = 0;
    for (const struct ibv_sge &sge : wqe.sges) {
        total += sge.length;
    }
    return total;
}

bool gather_send_data(const emu_qp *qp, const send_wqe &wqe, gather_list *out)
{
    if (wqe.send_flags & IBV_SEND_INLINE) {
        if (!wqe.inline_data.empty()) {
            out->push_back({const_cast<uint8_t *>(wqe.inline_data.data()), wqe.inline_data.size()});
        }
        return true;
    }
    return resolve_local_sges(qp->pd, wqe.sges.data(), wqe.sges.size(), 0, out);
}

room_wait wait_for_room(emu_qp *qp, outbound_ring &ring, size_t payload)
{
    if (qp->send_cq->channel != nullptr) {
        ring_register_waiter(ring, qp->send_cq->notify_slot, qp->send_cq->channel->address.c_str());
    }
    if (ring_has_room(ring, payload)) {
        return room_wait::room_now;
    }
    /* a dead receiver never drains: do not wait for it */
    return outbound_owner_alive(ring) ? room_wait::stalled : room_wait::peer_dead;
}

void forget_stalled_send_queues()
{
    g_stalled.clear();
}

void qp_mark_stalled(emu_qp *qp, bool stalled)
{
    qp->stalled = stalled;
    if (stalled) {
        g_stalled.insert(qp);
    } else {
        g_stalled.erase(qp);
        qp->stall_has_deadline = false;
    }
}

void progress_send_queue(emu_qp *qp)
{
    while (!qp->sq.empty()) {
        if (qp->ibv.state == IBV_QPS_ERR) {
            qp_to_error(qp); /* flushes what is left */
            return;
        }
        if (qp->ibv.state != IBV_QPS_RTS) {
            break; /* SQD: held until RTS again */
        }
        send_wqe &wqe      = qp->sq.front();
        exec_result result = (qp->ibv.qp_type == IBV_QPT_UD) ? execute_ud(qp, wqe) :
                                                               execute_rc(qp, wqe);
        if (result.stall) {
            qp_mark_stalled(qp, true);
            return;
        }
        push_send_completion(qp, wqe, result);
        qp->sq.pop_front();
        if (result.status != IBV_WC_SUCCESS) {
            qp_to_error(qp); /* every later WR flushes */
            return;
        }
    }
    qp_mark_stalled(qp, false);
}

void progress_stalled_send_queues()
{
    if (g_stalled.empty()) {
        return;
    }
    std::vector<emu_qp *> stalled(g_stalled.begin(), g_stalled.end());
    for (emu_qp *qp : stalled) {
        if (g_stalled.count(qp) != 0) {
            progress_send_queue(qp);
        }
    }
}

int post_send(struct ibv_qp *ibv_qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_qp *qp = lookup<emu_qp>(ibv_qp);
    int rc     = 0;
    if (qp == nullptr || qp->ibv.state == IBV_QPS_RESET || qp->ibv.state == IBV_QPS_INIT ||
        qp->ibv.state == IBV_QPS_RTR) {
        rc = EINVAL;
    }
    while (rc == 0 && wr != nullptr) {
        rc = validate_wr(qp, *wr);
        if (rc != 0) {
            break;
        }
        qp->sq.push_back(copy_wr(qp, *wr));
        ++qp->sq_posted;
        wr = wr->next;
    }
    if (rc != 0 && bad_wr != nullptr) {
        *bad_wr = wr;
    }
    if (qp != nullptr) {
        progress_send_queue(qp); /* also what is posted before a bad WR */
    }
    return rc;
}

} // namespace verbs_emu
