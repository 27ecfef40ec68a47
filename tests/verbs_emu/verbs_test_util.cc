#include "verbs_test_util.h"

#include "two_process.h"

#include <cstdlib>
#include <cstring>

namespace verbs_test {

bool emulator_present()
{
    int count                = 0;
    struct ibv_device **list = ibv_get_device_list(&count);
    if (list == nullptr) {
        return false;
    }
    bool found = count > 0 && std::strcmp(ibv_get_device_name(list[0]), "emu0") == 0;
    ibv_free_device_list(list);
    return found;
}

bool open_device(device *dev, int index)
{
    int count                = 0;
    struct ibv_device **list = ibv_get_device_list(&count);
    if (list == nullptr || index >= count) {
        if (list != nullptr) {
            ibv_free_device_list(list);
        }
        return false;
    }
    dev->ctx = ibv_open_device(list[index]);
    ibv_free_device_list(list);
    if (dev->ctx == nullptr) {
        return false;
    }
    dev->pd = ibv_alloc_pd(dev->ctx);
    return dev->pd != nullptr && ibv_query_port(dev->ctx, 1, &dev->port) == 0 &&
           ibv_query_gid(dev->ctx, 1, 0, &dev->gid) == 0;
}

void close_device(device *dev)
{
    if (dev->pd != nullptr) {
        ibv_dealloc_pd(dev->pd);
        dev->pd = nullptr;
    }
    if (dev->ctx != nullptr) {
        ibv_close_device(dev->ctx);
        dev->ctx = nullptr;
    }
}

bool create_endpoint(const device &dev, const qp_options &opts, endpoint *ep)
{
    if (opts.use_channel) {
        ep->channel = ibv_create_comp_channel(dev.ctx);
        if (ep->channel == nullptr) {
            return false;
        }
    }
    ep->send_cq = ibv_create_cq(dev.ctx, opts.cq_size, nullptr, ep->channel, 0);
    ep->recv_cq = ibv_create_cq(dev.ctx, opts.cq_size, nullptr, ep->channel, 0);
    if (ep->send_cq == nullptr || ep->recv_cq == nullptr) {
        return false;
    }
    if (opts.use_srq) {
        struct ibv_srq_init_attr srq_attr = {};
        srq_attr.attr.max_wr              = opts.srq_wr;
        srq_attr.attr.max_sge             = opts.max_sge;
        ep->srq                           = ibv_create_srq(dev.pd, &srq_attr);
        if (ep->srq == nullptr) {
            return false;
        }
    }
    struct ibv_qp_init_attr init = {};
    init.send_cq                 = ep->send_cq;
    init.recv_cq                 = ep->recv_cq;
    init.srq                     = ep->srq;
    init.qp_type                 = opts.type;
    init.sq_sig_all              = opts.sq_sig_all ? 1 : 0;
    init.cap.max_send_wr         = opts.max_send_wr;
    init.cap.max_recv_wr         = opts.max_recv_wr;
    init.cap.max_send_sge        = opts.max_sge;
    init.cap.max_recv_sge        = opts.max_sge;
    init.cap.max_inline_data     = opts.max_inline;
    ep->qp                       = ibv_create_qp(dev.pd, &init);
    return ep->qp != nullptr;
}

void destroy_endpoint(endpoint *ep)
{
    if (ep->qp != nullptr) {
        ibv_destroy_qp(ep->qp);
    }
    if (ep->srq != nullptr) {
        ibv_destroy_srq(ep->srq);
    }
    if (ep->send_cq != nullptr) {
        ibv_destroy_cq(ep->send_cq);
    }
    if (ep->recv_cq != nullptr) {
        ibv_destroy_cq(ep->recv_cq);
    }
    if (ep->channel != nullptr) {
        ibv_destroy_comp_channel(ep->channel);
    }
    *ep = endpoint();
}

peer_info local_info(const device &dev, const endpoint &ep, const struct ibv_mr *mr)
{
    peer_info info = {};
    info.qpn       = ep.qp->qp_num;
    info.lid       = dev.port.lid;
    info.gid       = dev.gid;
    if (mr != nullptr) {
        info.addr   = reinterpret_cast<uint64_t>(mr->addr);
        info.rkey   = mr->rkey;
        info.length = mr->length;
    }
    return info;
}

bool connect_rc(const device &dev, endpoint &ep, const peer_info &peer, const qp_options &opts)
{
    struct ibv_qp_attr attr = {};
    attr.qp_state           = IBV_QPS_INIT;
    attr.pkey_index         = 0;
    attr.port_num           = 1;
    attr.qp_access_flags    = opts.access;
    if (ibv_modify_qp(ep.qp, &attr,
                      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0) {
        return false;
    }
    attr                    = {};
    attr.qp_state           = IBV_QPS_RTR;
    attr.path_mtu           = IBV_MTU_4096;
    attr.dest_qp_num        = peer.qpn;
    attr.rq_psn             = 0;
    attr.max_dest_rd_atomic = 16;
    attr.min_rnr_timer      = 12;
    attr.ah_attr.dlid       = peer.lid;
    attr.ah_attr.port_num   = 1;
    if (dev.port.link_layer == IBV_LINK_LAYER_ETHERNET) {
        attr.ah_attr.is_global      = 1;
        attr.ah_attr.grh.dgid       = peer.gid;
        attr.ah_attr.grh.sgid_index = 0;
        attr.ah_attr.grh.hop_limit  = 64;
    }
    if (ibv_modify_qp(ep.qp, &attr,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0) {
        return false;
    }
    attr               = {};
    attr.qp_state      = IBV_QPS_RTS;
    attr.sq_psn        = 0;
    attr.timeout       = 14;
    attr.retry_cnt     = 7;
    attr.rnr_retry     = 7;
    attr.max_rd_atomic = 16;
    return ibv_modify_qp(ep.qp, &attr,
                         IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                             IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC) == 0;
}

bool bring_up_ud(endpoint &ep, const qp_options &opts)
{
    struct ibv_qp_attr attr = {};
    attr.qp_state           = IBV_QPS_INIT;
    attr.pkey_index         = 0;
    attr.port_num           = 1;
    attr.qkey               = opts.qkey;
    if (ibv_modify_qp(ep.qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY) !=
        0) {
        return false;
    }
    attr          = {};
    attr.qp_state = IBV_QPS_RTR;
    if (ibv_modify_qp(ep.qp, &attr, IBV_QP_STATE) != 0) {
        return false;
    }
    attr          = {};
    attr.qp_state = IBV_QPS_RTS;
    attr.sq_psn   = 0;
    return ibv_modify_qp(ep.qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0;
}

struct ibv_ah *make_ah(const device &dev, const peer_info &peer, bool global)
{
    struct ibv_ah_attr attr = {};
    attr.dlid               = peer.lid;
    attr.port_num           = 1;
    if (global) {
        attr.is_global      = 1;
        attr.grh.dgid       = peer.gid;
        attr.grh.sgid_index = 0;
        attr.grh.hop_limit  = 64;
    }
    return ibv_create_ah(dev.pd, &attr);
}

bool post_send(struct ibv_qp *qp, enum ibv_wr_opcode opcode, const void *buf, uint32_t length,
               uint32_t lkey, uint64_t wr_id, unsigned flags, uint64_t remote_addr, uint32_t rkey,
               uint32_t imm)
{
    struct ibv_sge sge      = {reinterpret_cast<uint64_t>(buf), length, lkey};
    struct ibv_send_wr wr   = {};
    struct ibv_send_wr *bad = nullptr;
    wr.wr_id                = wr_id;
    wr.opcode               = opcode;
    wr.send_flags           = flags;
    wr.sg_list              = &sge;
    wr.num_sge              = (length > 0) ? 1 : 0;
    wr.imm_data             = imm;
    wr.wr.rdma.remote_addr  = remote_addr;
    wr.wr.rdma.rkey         = rkey;
    return ibv_post_send(qp, &wr, &bad) == 0;
}

bool post_atomic(struct ibv_qp *qp, enum ibv_wr_opcode opcode, uint64_t *result, uint32_t lkey,
                 uint64_t wr_id, uint64_t remote_addr, uint32_t rkey, uint64_t compare_add,
                 uint64_t swap)
{
    struct ibv_sge sge       = {reinterpret_cast<uint64_t>(result), 8, lkey};
    struct ibv_send_wr wr    = {};
    struct ibv_send_wr *bad  = nullptr;
    wr.wr_id                 = wr_id;
    wr.opcode                = opcode;
    wr.send_flags            = IBV_SEND_SIGNALED;
    wr.sg_list               = &sge;
    wr.num_sge               = 1;
    wr.wr.atomic.remote_addr = remote_addr;
    wr.wr.atomic.rkey        = rkey;
    wr.wr.atomic.compare_add = compare_add;
    wr.wr.atomic.swap        = swap;
    return ibv_post_send(qp, &wr, &bad) == 0;
}

bool post_recv(struct ibv_qp *qp, void *buf, uint32_t length, uint32_t lkey, uint64_t wr_id)
{
    struct ibv_sge sge      = {reinterpret_cast<uint64_t>(buf), length, lkey};
    struct ibv_recv_wr wr   = {};
    struct ibv_recv_wr *bad = nullptr;
    wr.wr_id                = wr_id;
    wr.sg_list              = &sge;
    wr.num_sge              = 1;
    return ibv_post_recv(qp, &wr, &bad) == 0;
}

bool post_srq_recv(struct ibv_srq *srq, void *buf, uint32_t length, uint32_t lkey, uint64_t wr_id)
{
    struct ibv_sge sge      = {reinterpret_cast<uint64_t>(buf), length, lkey};
    struct ibv_recv_wr wr   = {};
    struct ibv_recv_wr *bad = nullptr;
    wr.wr_id                = wr_id;
    wr.sg_list              = &sge;
    wr.num_sge              = 1;
    return ibv_post_srq_recv(srq, &wr, &bad) == 0;
}

size_t poll_completions(struct ibv_cq *cq, size_t count, std::vector<struct ibv_wc> *out,
                        std::chrono::milliseconds timeout)
{
    auto deadline = std::chrono::steady_clock::now() + timeout;
    size_t got    = 0;
    while (got < count && std::chrono::steady_clock::now() < deadline) {
        struct ibv_wc wc[16];
        int n = ibv_poll_cq(cq, int(std::min<size_t>(16, count - got)), wc);
        if (n < 0) {
            break;
        }
        out->insert(out->end(), wc, wc + n);
        got += size_t(n);
    }
    return got;
}

bool poll_one(struct ibv_cq *cq, struct ibv_wc *wc, std::chrono::milliseconds timeout)
{
    std::vector<struct ibv_wc> got;
    if (poll_completions(cq, 1, &got, timeout) != 1) {
        return false;
    }
    *wc = got[0];
    return true;
}

bool setup_rc_side(int fd, const qp_options &opts, size_t buffer_bytes, int mr_access,
                   rc_side *side)
{
    if (!open_device(&side->dev) || !create_endpoint(side->dev, opts, &side->ep)) {
        return false;
    }
    side->buffer_bytes = buffer_bytes;
    size_t rounded     = (buffer_bytes + 4095) & ~size_t(4095);
    side->buffer       = static_cast<uint8_t *>(std::aligned_alloc(4096, rounded));
    if (side->buffer == nullptr) {
        return false;
    }
    std::memset(side->buffer, 0, buffer_bytes);
    side->mr = ibv_reg_mr(side->dev.pd, side->buffer, buffer_bytes, mr_access);
    if (side->mr == nullptr) {
        return false;
    }
    peer_info mine = local_info(side->dev, side->ep, side->mr);
    return test::send_value(fd, mine) && test::recv_value(fd, &side->peer) &&
           connect_rc(side->dev, side->ep, side->peer, opts);
}

void teardown_rc_side(rc_side *side)
{
    destroy_endpoint(&side->ep);
    if (side->mr != nullptr) {
        ibv_dereg_mr(side->mr);
        side->mr = nullptr;
    }
    std::free(side->buffer);
    side->buffer = nullptr;
    close_device(&side->dev);
}

std::string describe(const struct ibv_wc &wc)
{
    return std::string(ibv_wc_status_str(wc.status)) + " opcode " + std::to_string(int(wc.opcode)) +
           " wr_id " + std::to_string(wc.wr_id);
}

void fill_pattern(void *buf, size_t length, uint32_t seed)
{
    auto *bytes    = static_cast<uint8_t *>(buf);
    uint32_t state = seed * 2654435761u + 1;
    for (size_t i = 0; i < length; ++i) {
        state    = state * 1103515245u + 12345u;
        bytes[i] = uint8_t(state >> 16);
    }
}

bool check_pattern(const void *buf, size_t length, uint32_t seed)
{
    std::vector<uint8_t> expected(length);
    fill_pattern(expected.data(), length, seed);
    return std::memcmp(buf, expected.data(), length) == 0;
}

} // namespace verbs_test
