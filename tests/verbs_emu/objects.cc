#include "objects.h"

#include <cstring>

#include <pthread.h>

namespace verbs_emu {

std::mutex &emu_lock()
{
    static std::mutex lock;
    return lock;
}

namespace {

/* A fork while another thread holds the lock would leave the child's copy
 * locked forever: fork only between our calls. */
void lock_for_fork()
{
    emu_lock().lock();
}

void unlock_after_fork()
{
    emu_lock().unlock();
}

/* The child must not drive the parent's queues (its poll_cq would send
 * the parent's stalled WRs a second time): it forgets every inherited
 * object. Their memory is simply left behind. */
void reset_in_child()
{
    registry<emu_context>().clear();
    registry<emu_pd>().clear();
    registry<emu_mr>().clear();
    registry<emu_ah>().clear();
    registry<emu_channel>().clear();
    registry<emu_cq>().clear();
    registry<emu_srq>().clear();
    registry<emu_qp>().clear();
    forget_local_mrs();
    forget_stalled_send_queues();
    emu_lock().unlock();
}

struct fork_handlers {
    fork_handlers() { pthread_atfork(lock_for_fork, unlock_after_fork, reset_in_child); }
} g_fork_handlers;

} // namespace

struct ibv_wc make_wc(const emu_qp *qp, uint64_t wr_id, enum ibv_wc_status status,
                      enum ibv_wc_opcode opcode)
{
    struct ibv_wc wc;
    std::memset(&wc, 0, sizeof(wc));
    wc.wr_id  = wr_id;
    wc.status = status;
    wc.opcode = opcode;
    wc.qp_num = qp->ibv.qp_num;
    return wc;
}

} // namespace verbs_emu
