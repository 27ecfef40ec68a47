/* QP state changes, checked the way the kernel checks them
 * (ib_modify_qp_is_ok): which transitions exist, which attributes each one
 * requires and which it allows. */
#include "objects.h"

#include <cerrno>

namespace verbs_emu {

namespace {

constexpr int kStates = IBV_QPS_ERR + 1;

struct transition {
    bool valid;
    int required_rc;
    int required_ud;
    int optional_rc;
    int optional_ud;
};

constexpr int kRtsOptionalRc = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
                               IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE;
constexpr int kRtsOptionalUd = IBV_QP_CUR_STATE | IBV_QP_QKEY;

transition rule(enum ibv_qp_state from, enum ibv_qp_state to)
{
    transition none  = {false, 0, 0, 0, 0};
    transition plain = {true, 0, 0, 0, 0};
    if (to == IBV_QPS_RESET || to == IBV_QPS_ERR) {
        /* from anywhere, except RESET -> ERR */
        return (from == IBV_QPS_RESET && to == IBV_QPS_ERR) ? none : plain;
    }
    switch (from) {
    case IBV_QPS_RESET:
        if (to == IBV_QPS_INIT) {
            return {true, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
                    IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, 0, 0};
        }
        break;
    case IBV_QPS_INIT:
        if (to == IBV_QPS_INIT) {
            return {true, 0, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
                    IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY};
        }
        if (to == IBV_QPS_RTR) {
            return {true,
                    IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
                    0, IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
                    IBV_QP_PKEY_INDEX | IBV_QP_QKEY};
        }
        break;
    case IBV_QPS_RTR:
        if (to == IBV_QPS_RTS) {
            return {true,
                    IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                        IBV_QP_MAX_QP_RD_ATOMIC,
                    IBV_QP_SQ_PSN, kRtsOptionalRc, kRtsOptionalUd};
        }
        break;
    case IBV_QPS_RTS:
        if (to == IBV_QPS_RTS) {
            return {true, 0, 0, kRtsOptionalRc, kRtsOptionalUd};
        }
        if (to == IBV_QPS_SQD) {
            return {true, 0, 0, IBV_QP_EN_SQD_ASYNC_NOTIFY, IBV_QP_EN_SQD_ASYNC_NOTIFY};
        }
        break;
    case IBV_QPS_SQD:
        if (to == IBV_QPS_RTS) {
            return {true, 0, 0, kRtsOptionalRc, kRtsOptionalUd};
        }
        if (to == IBV_QPS_SQD) {
            return {true, 0, 0,
                    IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                        IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_ALT_PATH |
                        IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_MIN_RNR_TIMER |
                        IBV_QP_PATH_MIG_STATE,
                    IBV_QP_PKEY_INDEX | IBV_QP_QKEY};
        }
        break;
    case IBV_QPS_SQE:
        if (to == IBV_QPS_RTS) {
            return {true, 0, 0, 0, IBV_QP_CUR_STATE | IBV_QP_QKEY};
        }
        break;
    default:
        break;
    }
    return none;
}

bool transition_allowed(const emu_qp *qp, enum ibv_qp_state from, enum ibv_qp_state to, int mask)
{
    if (from >= kStates || to >= kStates) {
        return false;
    }
    if ((mask & IBV_QP_CUR_STATE) && from != IBV_QPS_RTR && from != IBV_QPS_RTS &&
        from != IBV_QPS_SQD && from != IBV_QPS_SQE) {
        return false;
    }
    transition t = rule(from, to);
    if (!t.valid) {
        return false;
    }
    bool rc      = qp->ibv.qp_type == IBV_QPT_RC;
    int required = rc ? t.required_rc : t.required_ud;
    int optional = rc ? t.optional_rc : t.optional_ud;
    return (mask & required) == required && (mask & ~(required | optional | IBV_QP_STATE)) == 0;
}

/* The values themselves, for the attributes in `mask`. */
bool values_valid(const emu_qp *qp, const struct ibv_qp_attr &attr, int mask)
{
    const config &cfg = qp->ctx->cfg;
    if ((mask & IBV_QP_PORT) && (attr.port_num < 1 || attr.port_num > cfg.ports_per_device)) {
        return false;
    }
    if ((mask & IBV_QP_PKEY_INDEX) && attr.pkey_index != 0) {
        return false;
    }
    if ((mask & IBV_QP_PATH_MTU) && (attr.path_mtu < IBV_MTU_256 || attr.path_mtu > IBV_MTU_4096)) {
        return false;
    }
    if (mask & IBV_QP_AV) {
        const struct ibv_ah_attr &ah = attr.ah_attr;
        if (cfg.ethernet && !ah.is_global) {
            return false; /* RoCE routes by GID */
        }
        if (ah.is_global && ah.grh.sgid_index >= port_gid_count(cfg)) {
            return false;
        }
        if (ah.port_num > cfg.ports_per_device) {
            return false;
        }
    }
    if (((mask & IBV_QP_TIMEOUT) && attr.timeout > 31) ||
        ((mask & IBV_QP_RETRY_CNT) && attr.retry_cnt > 7) ||
        ((mask & IBV_QP_RNR_RETRY) && attr.rnr_retry > 7) ||
        ((mask & IBV_QP_MIN_RNR_TIMER) && attr.min_rnr_timer > 31) ||
        ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && attr.max_rd_atomic > 16) ||
        ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && attr.max_dest_rd_atomic > 16)) {
        return false;
    }
    if ((mask & IBV_QP_DEST_QPN) && attr.dest_qp_num > 0xffffff) {
        return false;
    }
    return true;
}

void apply_attributes(emu_qp *qp, const struct ibv_qp_attr &attr, int mask)
{
    struct ibv_qp_attr &a = qp->attr;
    if (mask & IBV_QP_PORT)
        a.port_num = attr.port_num;
    if (mask & IBV_QP_PKEY_INDEX)
        a.pkey_index = attr.pkey_index;
    if (mask & IBV_QP_QKEY)
        a.qkey = attr.qkey;
    if (mask & IBV_QP_ACCESS_FLAGS)
        a.qp_access_flags = attr.qp_access_flags;
    if (mask & IBV_QP_AV)
        a.ah_attr = attr.ah_attr;
    if (mask & IBV_QP_ALT_PATH)
        a.alt_ah_attr = attr.alt_ah_attr;
    if (mask & IBV_QP_PATH_MTU)
        a.path_mtu = attr.path_mtu;
    if (mask & IBV_QP_DEST_QPN)
        a.dest_qp_num = attr.dest_qp_num;
    if (mask & IBV_QP_RQ_PSN)
        a.rq_psn = attr.rq_psn;
    if (mask & IBV_QP_SQ_PSN)
        a.sq_psn = attr.sq_psn;
    if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
        a.max_dest_rd_atomic = attr.max_dest_rd_atomic;
    if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
        a.max_rd_atomic = attr.max_rd_atomic;
    if (mask & IBV_QP_MIN_RNR_TIMER)
        a.min_rnr_timer = attr.min_rnr_timer;
    if (mask & IBV_QP_TIMEOUT)
        a.timeout = attr.timeout;
    if (mask & IBV_QP_RETRY_CNT)
        a.retry_cnt = attr.retry_cnt;
    if (mask & IBV_QP_RNR_RETRY)
        a.rnr_retry = attr.rnr_retry;
    if (mask & IBV_QP_PATH_MIG_STATE)
        a.path_mig_state = attr.path_mig_state;
}

void qp_reset(emu_qp *qp)
{
    /* RESET forgets the queues without completions */
    qp->sq.clear();
    qp->rq.clear();
    qp->inbound   = inbound_message();
    qp->sq_posted = 0;
    qp->sq_freed  = 0;
    cq_purge_qp(qp->send_cq, qp);
    cq_purge_qp(qp->recv_cq, qp);
    qp->ring.discard_all();
    qp->attr          = ibv_qp_attr();
    qp->attr.port_num = 1;
    qp->ibv.state     = IBV_QPS_RESET;
    qp_mark_stalled(qp, false);
    qp_publish(qp);
}

} // namespace

void qp_publish(emu_qp *qp)
{
    fabric_update_qp(qp->ibv.qp_num, qp->attr.port_num, qp->ibv.state, qp->attr.qkey,
                     qp->attr.dest_qp_num, qp->attr.qp_access_flags);
}

void qp_flush_receives(emu_qp *qp)
{
    if (qp->inbound.active) {
        cq_push(qp->recv_cq, {make_wc(qp, qp->inbound.wqe.wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV),
                              qp, false, 0});
        qp->inbound = inbound_message();
    }
    /* WQEs of an SRQ belong to the SRQ and stay there */
    while (!qp->rq.empty()) {
        cq_push(qp->recv_cq, {make_wc(qp, qp->rq.front().wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV),
                              qp, false, 0});
        qp->rq.pop_front();
    }
}

void qp_to_error(emu_qp *qp)
{
    qp->ibv.state = IBV_QPS_ERR;
    qp_publish(qp);
    qp_mark_stalled(qp, false);
    while (!qp->sq.empty()) {
        const send_wqe &wqe = qp->sq.front();
        /* flushed WRs complete whether signaled or not */
        cq_push(qp->send_cq,
                {make_wc(qp, wqe.wr_id, IBV_WC_WR_FLUSH_ERR, wc_opcode_for(wqe.opcode)), qp, true,
                 wqe.seq});
        qp->sq.pop_front();
    }
    qp_flush_receives(qp);
    qp->ring.discard_all();
}

} // namespace verbs_emu

using namespace verbs_emu;

int ibv_modify_qp(struct ibv_qp *ibv_qp, struct ibv_qp_attr *attr, int attr_mask)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_qp *qp = lookup<emu_qp>(ibv_qp);
    if (qp == nullptr || attr == nullptr) {
        return EINVAL;
    }
    enum ibv_qp_state from = qp->ibv.state;
    if ((attr_mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != from) {
        return EINVAL;
    }
    enum ibv_qp_state to = (attr_mask & IBV_QP_STATE) ? attr->qp_state : from;
    if (!transition_allowed(qp, from, to, attr_mask) || !values_valid(qp, *attr, attr_mask)) {
        return EINVAL;
    }
    if (to == IBV_QPS_RESET) {
        qp_reset(qp);
        return 0;
    }
    apply_attributes(qp, *attr, attr_mask);
    if (to == IBV_QPS_ERR) {
        qp_to_error(qp);
        return 0;
    }
    qp->ibv.state = to;
    qp_publish(qp);
    if (to == IBV_QPS_RTR) {
        /* a sender that found us not ready yet may wait for an event */
        qp->ring.wake_waiter();
    }
    if (to == IBV_QPS_RTS) {
        progress_send_queue(qp); /* WRs held while the QP was drained */
    }
    return 0;
}
