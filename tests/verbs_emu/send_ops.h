/*
 * How one send WR executes against its target. Shared by the send queue
 * (send_queue.cc: SEND and UD datagrams) and the remote memory operations
 * (remote_ops.cc: RDMA write/read and atomics, done with CMA).
 */
#ifndef VERBS_EMU_SEND_OPS_H
#define VERBS_EMU_SEND_OPS_H

#include "objects.h"

namespace verbs_emu {

struct exec_result {
    bool stall; /* try again later; nothing was done */
    enum ibv_wc_status status;
    uint32_t byte_len;
};

inline exec_result exec_ok(uint32_t byte_len = 0)
{
    return {false, IBV_WC_SUCCESS, byte_len};
}

inline exec_result exec_error(enum ibv_wc_status status)
{
    return {false, status, 0};
}

inline exec_result exec_stall()
{
    return {true, IBV_WC_SUCCESS, 0};
}

/* The bytes a SEND or RDMA_WRITE carries (inline copy or the sges). */
bool gather_send_data(const emu_qp *qp, const send_wqe &wqe, gather_list *out);
uint64_t send_length(const send_wqe &wqe);

enum class room_wait { room_now, stalled, peer_dead };

/* The target ring lacks room for `payload`: asks to be woken through the
 * send CQ, then looks again (the receiver may have drained meanwhile). */
room_wait wait_for_room(emu_qp *qp, outbound_ring &ring, size_t payload);

exec_result rdma_write(emu_qp *qp, const send_wqe &wqe, const qp_view &peer, outbound_ring &ring,
                       bool with_imm);
exec_result rdma_read(emu_qp *qp, const send_wqe &wqe, const qp_view &peer, outbound_ring &ring);
exec_result atomic_op(emu_qp *qp, const send_wqe &wqe, const qp_view &peer, outbound_ring &ring);

} // namespace verbs_emu

#endif
