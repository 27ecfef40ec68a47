/* The receive side: posted receive WQEs (the QP's own or its SRQ's) and
 * turning inbound ring records into receive completions. Records wait in
 * the ring while no WQE is posted, which stalls the sender once the ring
 * fills: receiver-not-ready with infinite retries. */
#include "objects.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>

namespace verbs_emu {

namespace {

constexpr uint64_t kGrhBytes = 40;

std::deque<recv_wqe> &wqe_source(emu_qp *qp)
{
    return (qp->srq != nullptr) ? qp->srq->wqes : qp->rq;
}

const emu_pd *wqe_pd(const emu_qp *qp)
{
    return (qp->srq != nullptr) ? qp->srq->pd : qp->pd;
}

bool accepts_packets(const emu_qp *qp)
{
    enum ibv_qp_state state = qp->ibv.state;
    return state == IBV_QPS_RTR || state == IBV_QPS_RTS || state == IBV_QPS_SQD;
}

/* Copies the fragment's payload to where it belongs in the WQE's buffers.
 * `skip` message bytes at the start are left alone (a UD GRH area that the
 * sender did not fill). */
void scatter_fragment(emu_qp *qp, const record_header &record, uint64_t skip)
{
    const uint64_t fragment_begin = record.offset;
    const uint64_t fragment_end   = record.offset + record.fragment_length;
    uint64_t piece_begin          = 0;
    for (const struct iovec &piece : qp->inbound.buffers) {
        uint64_t piece_end = piece_begin + piece.iov_len;
        uint64_t from      = std::max({piece_begin, fragment_begin, skip});
        uint64_t to        = std::min(piece_end, fragment_end);
        if (from < to) {
            qp->ring.copy_payload(record, size_t(from - fragment_begin),
                                  static_cast<uint8_t *>(piece.iov_base) + (from - piece_begin),
                                  size_t(to - from));
        }
        piece_begin = piece_end;
    }
}

void complete_receive(emu_qp *qp, enum ibv_wc_status status)
{
    const inbound_message &in = qp->inbound;
    struct ibv_wc wc          = make_wc(qp, in.wqe.wr_id, status,
                               (in.opcode == kRecordWriteImm) ? IBV_WC_RECV_RDMA_WITH_IMM :
                                                                         IBV_WC_RECV);
    if (status == IBV_WC_SUCCESS) {
        /* RDMA_WRITE_WITH_IMM reports the written length (as rxe and mlx5) */
        wc.byte_len = uint32_t(in.length);
        if (in.flags & kRecordHasImm) {
            wc.wc_flags |= IBV_WC_WITH_IMM;
            wc.imm_data = in.imm;
        }
        if (in.flags & kRecordHasGrh) {
            wc.wc_flags |= IBV_WC_GRH;
        }
        wc.src_qp     = in.src_qpn;
        wc.slid       = in.src_lid;
        wc.pkey_index = 0;
    }
    cq_push(qp->recv_cq, {wc, qp, false, 0});
    qp->inbound = inbound_message();
}

/* Starts a message: takes a WQE and checks it can hold the message.
 * Returns false if no WQE is posted (the record waits). */
bool begin_message(emu_qp *qp, const record_header &record, bool *failed)
{
    std::deque<recv_wqe> &source = wqe_source(qp);
    if (source.empty()) {
        return false;
    }
    inbound_message &in = qp->inbound;
    in                  = inbound_message();
    in.active           = true;
    in.wqe              = std::move(source.front());
    source.pop_front();
    in.length  = record.message_length;
    in.opcode  = record.opcode;
    in.flags   = record.flags;
    in.imm     = record.imm;
    in.src_qpn = record.src_qpn;
    in.src_lid = record.src_lid;
    *failed    = false;
    if (record.opcode == kRecordWriteImm) {
        return true; /* the data went by RDMA: nothing to scatter */
    }
    if (!resolve_local_sges(wqe_pd(qp), in.wqe.sges.data(), in.wqe.sges.size(),
                            IBV_ACCESS_LOCAL_WRITE, &in.buffers)) {
        complete_receive(qp, IBV_WC_LOC_PROT_ERR);
        *failed = true;
        return true;
    }
    uint64_t room = 0;
    for (const struct iovec &piece : in.buffers) {
        room += piece.iov_len;
    }
    if (record.message_length > room) {
        complete_receive(qp, IBV_WC_LOC_LEN_ERR);
        *failed = true;
    }
    return true;
}

} // namespace

bool qp_has_deliverable(emu_qp *qp)
{
    return accepts_packets(qp) && qp->ring.has_records() &&
           (qp->inbound.active || !wqe_source(qp).empty());
}

void drain_inbound(emu_qp *qp)
{
    emu_cq *cq = qp->recv_cq;
    while (cq->entries.size() < cq->capacity) {
        record_header record;
        inbound_ring::peek_result peeked = qp->ring.peek(&record);
        if (peeked == inbound_ring::peek_result::empty) {
            return;
        }
        if (peeked == inbound_ring::peek_result::corrupt) {
            std::fprintf(stderr, "verbs_emu: QP 0x%x: corrupt inbound ring, QP to error\n",
                         qp->ibv.qp_num);
            qp_to_error(qp);
            return;
        }
        bool from_peer = qp->ibv.qp_type == IBV_QPT_UD || record.src_qpn == qp->attr.dest_qp_num;
        if (!accepts_packets(qp) || !from_peer) {
            qp->ring.pop(record); /* dropped, as the HCA would */
            continue;
        }
        if (record.flags & kRecordFirst) {
            if (qp->inbound.active) {
                /* a new message before the last one ended (its sender
                 * restarted): the unfinished one is abandoned, its WQE
                 * takes the new one */
                wqe_source(qp).push_front(std::move(qp->inbound.wqe));
                qp->inbound = inbound_message();
            }
            {
                bool failed = false;
                if (!begin_message(qp, record, &failed)) {
                    return; /* no receive posted: the record waits */
                }
                if (failed) {
                    qp->ring.pop(record);
                    qp_to_error(qp);
                    return;
                }
            }
        } else if (!qp->inbound.active) {
            qp->ring.pop(record); /* the rest of a message we dropped */
            continue;
        }
        if (record.opcode == kRecordSend) {
            bool grh_unfilled = qp->ibv.qp_type == IBV_QPT_UD && !(record.flags & kRecordHasGrh);
            scatter_fragment(qp, record, grh_unfilled ? kGrhBytes : 0);
        }
        qp->ring.pop(record);
        if (record.flags & kRecordLast) {
            complete_receive(qp, IBV_WC_SUCCESS);
        }
    }
}

int post_recv(struct ibv_qp *ibv_qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_qp *qp = lookup<emu_qp>(ibv_qp);
    int rc     = 0;
    if (qp == nullptr || qp->srq != nullptr || qp->ibv.state == IBV_QPS_RESET) {
        rc = EINVAL;
    }
    while (rc == 0 && wr != nullptr) {
        if (wr->num_sge < 0 || uint32_t(wr->num_sge) > qp->cap.max_recv_sge ||
            (wr->num_sge > 0 && wr->sg_list == nullptr)) {
            rc = EINVAL;
        } else if (qp->rq.size() >= qp->cap.max_recv_wr) {
            rc = ENOMEM;
        }
        if (rc != 0) {
            break;
        }
        recv_wqe wqe;
        wqe.wr_id = wr->wr_id;
        wqe.sges.assign(wr->sg_list, wr->sg_list + wr->num_sge);
        qp->rq.push_back(std::move(wqe));
        wr = wr->next;
    }
    if (rc != 0 && bad_wr != nullptr) {
        *bad_wr = wr;
    }
    if (qp != nullptr) {
        if (qp->ibv.state == IBV_QPS_ERR) {
            qp_flush_receives(qp); /* receives posted in error flush at once */
        } else if (qp_has_deliverable(qp)) {
            /* a waiting message lands now: an event if the CQ is armed */
            cq_fire_if_armed(qp->recv_cq);
        }
    }
    return rc;
}

} // namespace verbs_emu
