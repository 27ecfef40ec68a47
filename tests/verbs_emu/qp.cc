/* Queue pair objects: creation (with the inbound ring and a fabric slot),
 * destruction and queries. State changes live in qp_modify.cc. */
#include "objects.h"

#include <algorithm>
#include <cerrno>

#include <unistd.h>

namespace verbs_emu {

namespace {

constexpr uint32_t kMaxWr  = 16384;
constexpr uint32_t kMaxSge = 30;

template <typename T>
void erase_value(std::vector<T> &values, const T &value)
{
    values.erase(std::remove(values.begin(), values.end(), value), values.end());
}

bool caps_valid(const struct ibv_qp_init_attr &init, bool has_srq)
{
    const struct ibv_qp_cap &cap = init.cap;
    if (cap.max_send_wr > kMaxWr || cap.max_send_sge > kMaxSge ||
        cap.max_inline_data > kMaxInlineData) {
        return false;
    }
    return has_srq || (cap.max_recv_wr <= kMaxWr && cap.max_recv_sge <= kMaxSge);
}

} // namespace

} // namespace verbs_emu

using namespace verbs_emu;

struct ibv_qp *ibv_create_qp(struct ibv_pd *ibv_pd, struct ibv_qp_init_attr *init)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_pd *pd = lookup<emu_pd>(ibv_pd);
    if (pd == nullptr || init == nullptr) {
        errno = EINVAL;
        return nullptr;
    }
    if (init->qp_type != IBV_QPT_RC && init->qp_type != IBV_QPT_UD) {
        errno = EOPNOTSUPP;
        return nullptr;
    }
    emu_context *ctx = lookup<emu_context>(pd->ibv.context);
    emu_cq *send_cq  = lookup<emu_cq>(init->send_cq);
    emu_cq *recv_cq  = lookup<emu_cq>(init->recv_cq);
    emu_srq *srq     = lookup<emu_srq>(init->srq);
    if (ctx == nullptr || send_cq == nullptr || recv_cq == nullptr || send_cq->ctx != ctx ||
        recv_cq->ctx != ctx || (init->srq != nullptr && (srq == nullptr || srq->ctx != ctx)) ||
        !caps_valid(*init, srq != nullptr)) {
        errno = EINVAL;
        return nullptr;
    }
    auto *qp = new (std::nothrow) emu_qp();
    if (qp == nullptr) {
        errno = ENOMEM;
        return nullptr;
    }
    qp->ctx     = ctx;
    qp->pd      = pd;
    qp->send_cq = send_cq;
    qp->recv_cq = recv_cq;
    qp->srq     = srq;
    qp->cap     = init->cap;
    if (srq != nullptr) {
        qp->cap.max_recv_wr  = 0;
        qp->cap.max_recv_sge = 0;
    }
    qp->sq_sig_all    = init->sq_sig_all != 0;
    qp->attr          = ibv_qp_attr();
    qp->attr.port_num = 1;

    int rc       = qp->ring.create(ring_capacity_for(qp->cap.max_recv_wr));
    uint32_t qpn = 0;
    if (rc == 0) {
        qp_identity id;
        id.owner        = getpid();
        id.ring_fd      = qp->ring.fd();
        id.type         = init->qp_type;
        id.device_index = ctx->device_index;
        id.port_num     = 1;
        rc              = fabric_alloc_qp(id, &qpn);
    }
    if (rc != 0) {
        delete qp;
        errno = rc;
        return nullptr;
    }
    /* arrivals raise the receive CQ's event, if it has a channel */
    qp->ring.publish(qpn, recv_cq->notify_slot,
                     recv_cq->channel != nullptr ? recv_cq->channel->address : "");

    struct ibv_qp &ibv = qp->ibv;
    ibv.context        = pd->ibv.context;
    ibv.qp_context     = init->qp_context;
    ibv.pd             = ibv_pd;
    ibv.send_cq        = init->send_cq;
    ibv.recv_cq        = init->recv_cq;
    ibv.srq            = init->srq;
    ibv.handle         = qpn;
    ibv.qp_num         = qpn;
    ibv.state          = IBV_QPS_RESET;
    ibv.qp_type        = init->qp_type;
    pthread_mutex_init(&ibv.mutex, nullptr);
    pthread_cond_init(&ibv.cond, nullptr);

    init->cap = qp->cap;
    send_cq->send_qps.push_back(qp);
    recv_cq->recv_qps.push_back(qp);
    if (srq != nullptr) {
        srq->qps.push_back(qp);
    }
    ++pd->users;
    register_object(qp);
    return &qp->ibv;
}

int ibv_destroy_qp(struct ibv_qp *ibv_qp)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_qp *qp = lookup<emu_qp>(ibv_qp);
    if (qp == nullptr) {
        return EINVAL;
    }
    /* peers fail from now on: the number no longer resolves */
    fabric_free_qp(qp->ibv.qp_num);
    qp_mark_stalled(qp, false);
    erase_value(qp->send_cq->send_qps, qp);
    erase_value(qp->recv_cq->recv_qps, qp);
    if (qp->srq != nullptr) {
        erase_value(qp->srq->qps, qp);
    }
    /* as mlx5 does: no completion of a destroyed QP stays in its CQs */
    cq_purge_qp(qp->send_cq, qp);
    cq_purge_qp(qp->recv_cq, qp);
    qp->ring.destroy();
    --qp->pd->users;
    unregister_object(qp);
    pthread_mutex_destroy(&qp->ibv.mutex);
    pthread_cond_destroy(&qp->ibv.cond);
    delete qp;
    return 0;
}

int ibv_query_qp(struct ibv_qp *ibv_qp, struct ibv_qp_attr *attr, int attr_mask,
                 struct ibv_qp_init_attr *init_attr)
{
    (void)attr_mask; /* everything is cheap to report */
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_qp *qp = lookup<emu_qp>(ibv_qp);
    if (qp == nullptr || attr == nullptr || init_attr == nullptr) {
        return EINVAL;
    }
    *attr                 = qp->attr;
    attr->qp_state        = qp->ibv.state;
    attr->cur_qp_state    = qp->ibv.state;
    attr->cap             = qp->cap;
    *init_attr            = ibv_qp_init_attr();
    init_attr->qp_context = qp->ibv.qp_context;
    init_attr->send_cq    = qp->ibv.send_cq;
    init_attr->recv_cq    = qp->ibv.recv_cq;
    init_attr->srq        = qp->ibv.srq;
    init_attr->cap        = qp->cap;
    init_attr->qp_type    = qp->ibv.qp_type;
    init_attr->sq_sig_all = qp->sq_sig_all ? 1 : 0;
    return 0;
}
