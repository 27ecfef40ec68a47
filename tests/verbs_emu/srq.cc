/* Shared receive queues: a pool of receive WQEs that the QPs created with
 * it consume from when their messages arrive. */
#include "objects.h"

#include <algorithm>
#include <cerrno>

namespace verbs_emu {

int post_srq_recv(struct ibv_srq *ibv_srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_srq *srq = lookup<emu_srq>(ibv_srq);
    if (srq == nullptr) {
        if (bad_wr != nullptr) {
            *bad_wr = wr;
        }
        return EINVAL;
    }
    for (; wr != nullptr; wr = wr->next) {
        int rc = 0;
        if (wr->num_sge < 0 || uint32_t(wr->num_sge) > srq->max_sge ||
            (wr->num_sge > 0 && wr->sg_list == nullptr)) {
            rc = EINVAL;
        } else if (srq->wqes.size() >= srq->max_wr) {
            rc = ENOMEM;
        }
        if (rc != 0) {
            if (bad_wr != nullptr) {
                *bad_wr = wr;
            }
            return rc;
        }
        recv_wqe wqe;
        wqe.wr_id = wr->wr_id;
        wqe.sges.assign(wr->sg_list, wr->sg_list + wr->num_sge);
        srq->wqes.push_back(std::move(wqe));
    }
    /* a message waiting for a receive lands now: an event if armed */
    for (emu_qp *qp : srq->qps) {
        if (qp_has_deliverable(qp)) {
            cq_fire_if_armed(qp->recv_cq);
        }
    }
    return 0;
}

} // namespace verbs_emu

using namespace verbs_emu;

struct ibv_srq *ibv_create_srq(struct ibv_pd *ibv_pd, struct ibv_srq_init_attr *init_attr)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_pd *pd = lookup<emu_pd>(ibv_pd);
    if (pd == nullptr || init_attr == nullptr) {
        errno = EINVAL;
        return nullptr;
    }
    struct ibv_srq_attr &attr = init_attr->attr;
    if (attr.max_wr == 0 || attr.max_wr > 16384 || attr.max_sge > 30) {
        errno = EINVAL;
        return nullptr;
    }
    auto *srq = new (std::nothrow) emu_srq();
    if (srq == nullptr) {
        errno = ENOMEM;
        return nullptr;
    }
    static uint32_t next_handle = 1;
    srq->ctx                    = lookup<emu_context>(pd->ibv.context);
    srq->pd                     = pd;
    srq->max_wr                 = attr.max_wr;
    srq->max_sge                = std::max<uint32_t>(attr.max_sge, 1);
    srq->limit                  = attr.srq_limit;
    srq->ibv.context            = pd->ibv.context;
    srq->ibv.srq_context        = init_attr->srq_context;
    srq->ibv.pd                 = ibv_pd;
    srq->ibv.handle             = next_handle++;
    pthread_mutex_init(&srq->ibv.mutex, nullptr);
    pthread_cond_init(&srq->ibv.cond, nullptr);
    attr.max_sge = srq->max_sge;
    ++pd->users;
    register_object(srq);
    return &srq->ibv;
}

int ibv_modify_srq(struct ibv_srq *ibv_srq, struct ibv_srq_attr *attr, int attr_mask)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_srq *srq = lookup<emu_srq>(ibv_srq);
    if (srq == nullptr || attr == nullptr) {
        return EINVAL;
    }
    /* resizing is not supported (as on mlx5); the limit event is never
     * raised, but the limit is kept for ibv_query_srq */
    if (attr_mask & IBV_SRQ_MAX_WR) {
        return EINVAL;
    }
    if (attr_mask & IBV_SRQ_LIMIT) {
        if (attr->srq_limit > srq->max_wr) {
            return EINVAL;
        }
        srq->limit = attr->srq_limit;
    }
    return 0;
}

int ibv_query_srq(struct ibv_srq *ibv_srq, struct ibv_srq_attr *attr)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_srq *srq = lookup<emu_srq>(ibv_srq);
    if (srq == nullptr || attr == nullptr) {
        return EINVAL;
    }
    attr->max_wr    = srq->max_wr;
    attr->max_sge   = srq->max_sge;
    attr->srq_limit = srq->limit;
    return 0;
}

int ibv_destroy_srq(struct ibv_srq *ibv_srq)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_srq *srq = lookup<emu_srq>(ibv_srq);
    if (srq == nullptr) {
        return EINVAL;
    }
    if (!srq->qps.empty()) {
        return EBUSY;
    }
    --srq->pd->users;
    unregister_object(srq);
    pthread_mutex_destroy(&srq->ibv.mutex);
    pthread_cond_destroy(&srq->ibv.cond);
    delete srq;
    return 0;
}
