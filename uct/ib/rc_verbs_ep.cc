/*
 * rc_verbs ep: one RC queue pair, its connection, the operations as work
 * requests, and what their completions leave to do.
 */
#include <uct/ib/rc_verbs.h>

#include <ucs/debug/log.h>
#include <ucs/sys/random.h>
#include <ucs/type/wire_reader.h>

#include <cstring>

namespace uct::ib {

namespace {

/* An AM header byte, an 8-byte header word and the payload fit here. */
constexpr size_t MAX_INLINE_BUFFER = 4096 + 16;

constexpr uint8_t AM_HDR_LEN = 1;

} // namespace

rc_verbs_ep::rc_verbs_ep(rc_verbs_iface &iface) : ib_ep_base(iface), iface_(iface)
{
}

rc_verbs_ep::~rc_verbs_ep()
{
    if (qp_ == nullptr) {
        return;
    }
    iface_.remove_ep(qp_->qp_num, this);
    /* Nothing completes any more: buffers go back, no callback runs. */
    for (const tx_op &op : ops_) {
        if ((op.buffer != nullptr) && (op.kind != op_kind::FLUSH)) {
            iface_.tx_buffers().put(op.buffer);
        }
    }
    /* Completions of this QP not polled yet will not be counted: the CQ's
     * slack (one send queue) covers them. */
    iface_.return_cq_entries(unsigned(posted_sn_ - cq_returned_sn_) + (batch_is_open() ? 1 : 0));
    ibv_destroy_qp(qp_);
}

ucs_status_t rc_verbs_ep::init()
{
    const rc_verbs_config &cfg = iface_.config();
    ibv_qp_init_attr qp_attr{};
    qp_attr.send_cq             = iface_.send_cq();
    qp_attr.recv_cq             = iface_.recv_cq();
    qp_attr.srq                 = iface_.srq();
    qp_attr.qp_type             = IBV_QPT_RC;
    qp_attr.sq_sig_all          = 0;
    qp_attr.cap.max_send_wr     = cfg.tx_queue_len;
    qp_attr.cap.max_send_sge    = cfg.tx_min_sge;
    qp_attr.cap.max_inline_data = uint32_t(iface_.max_inline());
    qp_                         = ibv_create_qp(iface_.dev().pd(), &qp_attr);
    if (qp_ == nullptr) {
        ucs_error("rc_verbs: ibv_create_qp failed: %m");
        return UCS_ERR_IO_ERROR;
    }
    ibv_qp_attr attr{};
    attr.qp_state        = IBV_QPS_INIT;
    attr.pkey_index      = 0;
    attr.port_num        = iface_.port().num;
    attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                           IBV_ACCESS_REMOTE_ATOMIC;
    const int rc = ibv_modify_qp(qp_, &attr,
                                 IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                                     IBV_QP_ACCESS_FLAGS);
    if (rc != 0) {
        ucs_error("rc_verbs: QP %u to INIT failed: %s", qp_->qp_num, std::strerror(rc));
        ibv_destroy_qp(qp_);
        qp_ = nullptr;
        return UCS_ERR_IO_ERROR;
    }
    psn_ = uint32_t(ucs::sys::random_u64()) & 0xffffff;
    iface_.add_ep(qp_->qp_num, this);
    return UCS_OK;
}

ucs_status_t rc_verbs_ep::get_address(void *buffer) const
{
    const rc_ep_address a{qp_->qp_num, psn_};
    std::memcpy(buffer, &a, sizeof(a));
    return UCS_OK;
}

ucs_status_t rc_verbs_ep::connect_to_ep(const void *dev_addr, size_t dev_addr_len,
                                        const void *ep_addr, size_t ep_addr_len)
{
    device_address dev;
    rc_ep_address peer;
    ucs::wire_reader rd(dev_addr, dev_addr_len), re(ep_addr, ep_addr_len);
    if (!rd.get(&dev) || !rd.at_end() || !re.get(&peer) || !re.at_end() || (peer.qpn > 0xffffff) ||
        (peer.psn > 0xffffff)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (connected_) {
        return UCS_ERR_ALREADY_EXISTS; /* a QP is connected once */
    }
    const port_info &port = iface_.port();
    if (!port_reaches(port, dev)) {
        return UCS_ERR_UNREACHABLE;
    }
    const rc_verbs_config &cfg = iface_.config();
    const unsigned rd_atomic   = (cfg.max_rd_atomic != 0) ?
                                     cfg.max_rd_atomic :
                                     unsigned(std::max(1, iface_.dev().attr().max_qp_rd_atom));

    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_RTR;
    attr.path_mtu = (cfg.path_mtu != 0) ? std::min(mtu_enum(cfg.path_mtu), port.attr.active_mtu) :
                                          port.attr.active_mtu;
    attr.dest_qp_num        = peer.qpn;
    attr.rq_psn             = peer.psn;
    attr.max_dest_rd_atomic = uint8_t(std::min(rd_atomic, 255u));
    attr.min_rnr_timer      = cfg.rnr_timer_code;
    fill_ah_attr(port, dev, cfg.sl, cfg.traffic_class, cfg.hop_limit, &attr.ah_attr);
    int rc = ibv_modify_qp(qp_, &attr,
                           IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                               IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
    if (rc != 0) {
        ucs_error("rc_verbs: QP %u to RTR (peer QP %u) failed: %s", qp_->qp_num, peer.qpn,
                  std::strerror(rc));
        return UCS_ERR_IO_ERROR;
    }
    attr               = {};
    attr.qp_state      = IBV_QPS_RTS;
    attr.timeout       = cfg.timeout_code;
    attr.retry_cnt     = cfg.retry_count;
    attr.rnr_retry     = cfg.rnr_retry_count;
    attr.sq_psn        = psn_;
    attr.max_rd_atomic = uint8_t(std::min(rd_atomic, 255u));
    rc                 = ibv_modify_qp(qp_, &attr,
                                       IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                           IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
    if (rc != 0) {
        ucs_error("rc_verbs: QP %u to RTS failed: %s", qp_->qp_num, std::strerror(rc));
        return UCS_ERR_IO_ERROR;
    }
    connected_ = true;
    if (!pending_.empty()) {
        iface_.schedule_pending(this);
    }
    return UCS_OK;
}

ucs_status_t rc_verbs_ep::ready() const
{
    if (ucs_unlikely(failed_ != UCS_OK)) {
        return failed_;
    }
    /* Room in the send queue, and a send CQ entry (an open batch holds
     * one for the request that closes it). */
    if (ucs_unlikely(!connected_ || (posted_sn_ - completed_sn_ >= iface_.config().tx_queue_len) ||
                     (!iface_.has_cq_entries() && !batch_is_open()) || pending_blocks())) {
        return UCS_ERR_NO_RESOURCE;
    }
    return UCS_OK;
}

ucs_status_t rc_verbs_ep::post(ibv_send_wr &wr, bool signal, const tx_op *op)
{
    const rc_verbs_config &cfg = iface_.config();
    /* A signaled request at least every moderation period, and early
     * enough that the send queue never fills with unsignaled ones. */
    const unsigned period = std::max(1u, std::min(cfg.tx_cq_moderation, cfg.tx_queue_len / 2));
    signal                = signal || (op != nullptr) || (unsignaled_ + 1 >= period);
    /* Send CQ entries: one per request, and one held while a batch of
     * unsignaled requests is open, for the signaled request that will
     * close it (it never waits for an entry, so no batch is stuck open). */
    const bool batch_open = batch_is_open();
    unsigned need         = signal ? (batch_open ? 0 : 1) : (batch_open ? 1 : 2);
    if (!iface_.take_cq_entries(need)) {
        need = batch_open ? 0 : 1; /* close the batch instead, or send alone */
        if (signal || !iface_.take_cq_entries(need)) {
            return UCS_ERR_NO_RESOURCE;
        }
        signal = true;
    }
    wr.wr_id = posted_sn_ + 1;
    wr.next  = nullptr;
    wr.send_flags |= (signal ? IBV_SEND_SIGNALED : 0) | (fence_next_ ? IBV_SEND_FENCE : 0);
    ibv_send_wr *bad = nullptr;
    const int rc     = ibv_post_send(qp_, &wr, &bad);
    if (ucs_unlikely(rc != 0)) {
        iface_.return_cq_entries(need);
        if (rc == ENOMEM) {
            return UCS_ERR_NO_RESOURCE;
        }
        ucs_error("rc_verbs: ibv_post_send on QP %u failed: %s", qp_->qp_num, std::strerror(rc));
        return UCS_ERR_IO_ERROR;
    }
    ++posted_sn_;
    fence_next_ = false;
    if (signal) {
        unsignaled_  = 0;
        signaled_sn_ = posted_sn_;
    } else {
        ++unsignaled_;
    }
    if (op != nullptr) {
        ops_.push_back(*op);
        ops_.back().sn = posted_sn_;
    }
    return UCS_OK;
}

bool rc_verbs_ep::close_batch()
{
    return batch_is_open() && (ready() == UCS_OK) && (post_nop() == UCS_OK);
}

ucs_status_t rc_verbs_ep::post_send(const ibv_sge *sge, int num_sge, unsigned flags,
                                    const tx_op *op)
{
    ibv_send_wr wr{};
    wr.opcode     = IBV_WR_SEND;
    wr.sg_list    = const_cast<ibv_sge *>(sge);
    wr.num_sge    = num_sge;
    wr.send_flags = flags;
    return post(wr, false, op);
}

ucs_status_t rc_verbs_ep::post_buffer(ibv_send_wr &wr, uint8_t *buffer, size_t length)
{
    ibv_sge sge{reinterpret_cast<uintptr_t>(buffer), uint32_t(length), buffer_pool::lkey(buffer)};
    wr.sg_list = &sge;
    wr.num_sge = (length != 0) ? 1 : 0;
    ucs_status_t status;
    if (length <= iface_.max_inline()) {
        /* Inline: the device copied it, the buffer is free again. */
        wr.send_flags = IBV_SEND_INLINE;
        status        = post(wr, false, nullptr);
        iface_.tx_buffers().put(buffer);
        return status;
    }
    const tx_op op{0, op_kind::RELEASE, buffer, nullptr, nullptr, nullptr, 0};
    status = post(wr, false, &op);
    if (status != UCS_OK) {
        iface_.tx_buffers().put(buffer);
    }
    return status;
}

ucs_status_t rc_verbs_ep::post_rdma(ibv_wr_opcode opcode, ibv_sge *sge, int num_sge, size_t length,
                                    uint64_t remote_addr, rkey_t rkey, const tx_op *op,
                                    unsigned flags)
{
    const remote_key &key = remote_key_of(rkey);
    if (ucs_unlikely(!key.covers(remote_addr, length))) {
        return UCS_ERR_INVALID_PARAM;
    }
    ibv_send_wr wr{};
    wr.opcode              = opcode;
    wr.sg_list             = sge;
    wr.num_sge             = num_sge;
    wr.send_flags          = flags;
    wr.wr.rdma.remote_addr = remote_addr;
    wr.wr.rdma.rkey        = key.rkey;
    return post(wr, false, op);
}

ucs_status_t rc_verbs_ep::post_nop()
{
    ibv_send_wr wr{};
    wr.opcode = IBV_WR_RDMA_WRITE; /* zero length: no key is checked */
    return post(wr, true, nullptr);
}

ucs_status_t rc_verbs_ep::iov_to_sge(const iov *iov, size_t iovcnt, size_t max_iov,
                                     size_t max_bytes, ibv_sge *sge, int *num_sge, size_t *total_p)
{
    if (iovcnt > max_iov) {
        return UCS_ERR_INVALID_PARAM;
    }
    size_t total = 0;
    int n        = 0;
    for (size_t i = 0; i < iovcnt; ++i) {
        if (iov[i].length == 0) {
            continue;
        }
        if ((iov[i].memh == MEM_HANDLE_NULL) || (iov[i].length > UINT32_MAX)) {
            return UCS_ERR_INVALID_PARAM;
        }
        total += iov[i].length;
        sge[n++] = {reinterpret_cast<uintptr_t>(iov[i].buffer), uint32_t(iov[i].length),
                    memh_lkey(iov[i].memh)};
    }
    if (total > max_bytes) {
        return UCS_ERR_INVALID_PARAM;
    }
    *num_sge = n;
    *total_p = total;
    return UCS_OK;
}

ucs_status_t rc_verbs_ep::am_short(am_id_t id, uint64_t header, const void *payload,
                                   unsigned length)
{
    if (ucs_unlikely(length + sizeof(header) > iface_.attr().am.max_short)) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucs_status_t status = ready();
    if (status != UCS_OK) {
        return status;
    }
    uint8_t buffer[MAX_INLINE_BUFFER];
    buffer[0] = id;
    std::memcpy(buffer + AM_HDR_LEN, &header, sizeof(header));
    if (length != 0) {
        std::memcpy(buffer + AM_HDR_LEN + sizeof(header), payload, length);
    }
    const ibv_sge sge{reinterpret_cast<uintptr_t>(buffer),
                      uint32_t(AM_HDR_LEN + sizeof(header) + length), 0};
    return post_send(&sge, 1, IBV_SEND_INLINE, nullptr);
}

ssize_t rc_verbs_ep::am_bcopy(am_id_t id, pack_callback_t pack, void *arg, unsigned)
{
    ucs_status_t status = ready();
    if (status != UCS_OK) {
        return status;
    }
    uint8_t *buffer = iface_.tx_buffers().get();
    if (buffer == nullptr) {
        return UCS_ERR_NO_RESOURCE;
    }
    buffer[0]           = id;
    const size_t length = pack(buffer + AM_HDR_LEN, arg);
    if (length > iface_.attr().am.max_bcopy) {
        iface_.tx_buffers().put(buffer);
        return UCS_ERR_INVALID_PARAM;
    }
    ibv_send_wr wr{};
    wr.opcode = IBV_WR_SEND;
    status    = post_buffer(wr, buffer, AM_HDR_LEN + length);
    return (status == UCS_OK) ? ssize_t(length) : ssize_t(status);
}

ucs_status_t rc_verbs_ep::am_zcopy(am_id_t id, const void *header, unsigned header_length,
                                   const iov *iov, size_t iovcnt, unsigned, completion *comp)
{
    const iface_attr &a = iface_.attr();
    ibv_sge sge[32];
    int num_sge  = 0;
    size_t total = 0;
    if ((header_length > a.am.max_hdr) || (iov_to_sge(iov, iovcnt, a.am.max_iov, a.am.max_zcopy,
                                                      sge + 1, &num_sge, &total) != UCS_OK)) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucs_status_t status = ready();
    if (status != UCS_OK) {
        return status;
    }
    uint8_t *buffer = iface_.tx_buffers().get();
    if (buffer == nullptr) {
        return UCS_ERR_NO_RESOURCE;
    }
    buffer[0] = id;
    if (header_length != 0) {
        std::memcpy(buffer + AM_HDR_LEN, header, header_length);
    }
    sge[0] = {reinterpret_cast<uintptr_t>(buffer), uint32_t(AM_HDR_LEN + header_length),
              buffer_pool::lkey(buffer)};
    const tx_op op{0, op_kind::COMP, buffer, comp, nullptr, nullptr, 0};
    status = post_send(sge, num_sge + 1, 0, &op);
    if (status != UCS_OK) {
        iface_.tx_buffers().put(buffer);
        return status;
    }
    return UCS_INPROGRESS;
}

ucs_status_t rc_verbs_ep::put_short(const void *buffer, unsigned length, uint64_t remote_addr,
                                    rkey_t rkey)
{
    if (length > iface_.attr().put.max_short) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucs_status_t status = ready();
    if (status != UCS_OK) {
        return status;
    }
    ibv_sge sge{reinterpret_cast<uintptr_t>(buffer), length, 0};
    return post_rdma(IBV_WR_RDMA_WRITE, &sge, (length != 0) ? 1 : 0, length, remote_addr, rkey,
                     nullptr, IBV_SEND_INLINE);
}

ssize_t rc_verbs_ep::put_bcopy(pack_callback_t pack, void *arg, uint64_t remote_addr, rkey_t rkey)
{
    ucs_status_t status = ready();
    if (status != UCS_OK) {
        return status;
    }
    uint8_t *buffer = iface_.tx_buffers().get();
    if (buffer == nullptr) {
        return UCS_ERR_NO_RESOURCE;
    }
    const size_t length   = pack(buffer, arg);
    const remote_key &key = remote_key_of(rkey);
    if ((length > iface_.attr().put.max_bcopy) || !key.covers(remote_addr, length)) {
        iface_.tx_buffers().put(buffer);
        return UCS_ERR_INVALID_PARAM;
    }
    ibv_send_wr wr{};
    wr.opcode              = IBV_WR_RDMA_WRITE;
    wr.wr.rdma.remote_addr = remote_addr;
    wr.wr.rdma.rkey        = key.rkey;
    status                 = post_buffer(wr, buffer, length);
    return (status == UCS_OK) ? ssize_t(length) : ssize_t(status);
}

ucs_status_t rc_verbs_ep::put_zcopy(const iov *iov, size_t iovcnt, uint64_t remote_addr,
                                    rkey_t rkey, completion *comp)
{
    return rdma_zcopy(IBV_WR_RDMA_WRITE, iface_.attr().put, iov, iovcnt, remote_addr, rkey, comp);
}

ucs_status_t rc_verbs_ep::get_bcopy(unpack_callback_t unpack, void *arg, size_t length,
                                    uint64_t remote_addr, rkey_t rkey, completion *comp)
{
    if ((length > iface_.attr().get.max_bcopy) || (comp == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucs_status_t status = ready();
    if (status != UCS_OK) {
        return status;
    }
    uint8_t *buffer = iface_.tx_buffers().get();
    if (buffer == nullptr) {
        return UCS_ERR_NO_RESOURCE;
    }
    ibv_sge sge{reinterpret_cast<uintptr_t>(buffer), uint32_t(length), buffer_pool::lkey(buffer)};
    const tx_op op{0, op_kind::GET_BCOPY, buffer, comp, unpack, arg, uint32_t(length)};
    status = post_rdma(IBV_WR_RDMA_READ, &sge, (length != 0) ? 1 : 0, length, remote_addr, rkey,
                       &op, 0);
    if (status != UCS_OK) {
        iface_.tx_buffers().put(buffer);
        return status;
    }
    return UCS_INPROGRESS;
}

ucs_status_t rc_verbs_ep::get_zcopy(const iov *iov, size_t iovcnt, uint64_t remote_addr,
                                    rkey_t rkey, completion *comp)
{
    if (comp == nullptr) {
        return UCS_ERR_INVALID_PARAM; /* the data lands later: someone must hear of it */
    }
    return rdma_zcopy(IBV_WR_RDMA_READ, iface_.attr().get, iov, iovcnt, remote_addr, rkey, comp);
}

ucs_status_t rc_verbs_ep::rdma_zcopy(ibv_wr_opcode opcode, const op_limits &limits, const iov *iov,
                                     size_t iovcnt, uint64_t remote_addr, rkey_t rkey,
                                     completion *comp)
{
    ibv_sge sge[32];
    int num_sge  = 0;
    size_t total = 0;
    if (iov_to_sge(iov, iovcnt, limits.max_iov, limits.max_zcopy, sge, &num_sge, &total) !=
        UCS_OK) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucs_status_t status = ready();
    if (status != UCS_OK) {
        return status;
    }
    const tx_op op{0, op_kind::COMP, nullptr, comp, nullptr, nullptr, 0};
    status = post_rdma(opcode, sge, num_sge, total, remote_addr, rkey,
                       (comp != nullptr) ? &op : nullptr, 0);
    return (status == UCS_OK) ? UCS_INPROGRESS : status;
}

ucs_status_t rc_verbs_ep::post_atomic(ibv_wr_opcode opcode, uint64_t compare_add, uint64_t swap,
                                      uint64_t remote_addr, rkey_t rkey, void *result,
                                      completion *comp)
{
    const remote_key &key = remote_key_of(rkey);
    if ((remote_addr % 8 != 0) || !key.covers(remote_addr, 8)) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucs_status_t status = ready();
    if (status != UCS_OK) {
        return status;
    }
    /* The device writes the old value into a registered buffer; it goes to
     * `result` (if any) on completion. */
    uint8_t *buffer = iface_.tx_buffers().get();
    if (buffer == nullptr) {
        return UCS_ERR_NO_RESOURCE;
    }
    ibv_sge sge{reinterpret_cast<uintptr_t>(buffer), 8, buffer_pool::lkey(buffer)};
    ibv_send_wr wr{};
    wr.opcode                = opcode;
    wr.sg_list               = &sge;
    wr.num_sge               = 1;
    wr.wr.atomic.remote_addr = remote_addr;
    wr.wr.atomic.rkey        = key.rkey;
    wr.wr.atomic.compare_add = compare_add;
    wr.wr.atomic.swap        = swap;
    const tx_op record       = (result != nullptr) ?
                                   tx_op{0, op_kind::ATOMIC, buffer, comp, nullptr, result, 8} :
                                   tx_op{0, op_kind::RELEASE, buffer, nullptr, nullptr, nullptr, 0};
    status                   = post(wr, false, &record);
    if (status != UCS_OK) {
        iface_.tx_buffers().put(buffer);
    }
    return status;
}

ucs_status_t rc_verbs_ep::atomic_fetch(atomic_op op, unsigned size, uint64_t value,
                                       uint64_t compare, void *result, uint64_t remote_addr,
                                       rkey_t rkey, completion *comp)
{
    if ((size != 8) || !(iface_.attr().atomic64_fetch & atomic_op_bit(op))) {
        return UCS_ERR_UNSUPPORTED;
    }
    if (result == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    const ucs_status_t status = (op == atomic_op::ADD) ?
                                    post_atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, value, 0, remote_addr,
                                                rkey, result, comp) :
                                    post_atomic(IBV_WR_ATOMIC_CMP_AND_SWP, compare, value,
                                                remote_addr, rkey, result, comp);
    return (status == UCS_OK) ? UCS_INPROGRESS : status;
}

ucs_status_t rc_verbs_ep::atomic_post(atomic_op op, unsigned size, uint64_t value,
                                      uint64_t remote_addr, rkey_t rkey)
{
    if ((size != 8) || !(iface_.attr().atomic64_post & atomic_op_bit(op))) {
        return UCS_ERR_UNSUPPORTED;
    }
    return post_atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, value, 0, remote_addr, rkey, nullptr, nullptr);
}

void rc_verbs_ep::finish(const tx_op &op, ucs_status_t status)
{
    switch (op.kind) {
    case op_kind::GET_BCOPY:
        if (status == UCS_OK) {
            op.unpack(op.arg, op.buffer, op.length);
        }
        break;
    case op_kind::ATOMIC:
        if (status == UCS_OK) {
            std::memcpy(op.arg, op.buffer, op.length);
        }
        break;
    default:
        break;
    }
    if (op.buffer != nullptr) {
        iface_.tx_buffers().put(op.buffer);
    }
    if (op.comp != nullptr) {
        invoke_completion(op.comp, status);
    }
}

void rc_verbs_ep::complete(uint64_t sn, ucs_status_t status)
{
    if ((sn > cq_returned_sn_) && (sn <= posted_sn_)) {
        /* A successful completion retires the unsignaled requests before it
         * (they leave no entry); after a failure each request leaves one. */
        iface_.return_cq_entries(unsigned((failed_ == UCS_OK) ? sn - cq_returned_sn_ : 1));
        cq_returned_sn_ = (failed_ == UCS_OK) ? sn : cq_returned_sn_ + 1;
    }
    if ((sn <= completed_sn_) || (sn > posted_sn_)) {
        return; /* flushed after a failure already handled, or stale */
    }
    completed_sn_ = sn;
    /* RC completes in order: everything before `sn` succeeded, even when
     * `sn` itself failed. */
    if (!ops_.empty() && (ops_.front().sn <= sn)) {
        const std::shared_ptr<bool> alive = alive_;
        do {
            const tx_op op = ops_.front();
            ops_.pop_front();
            finish(op, (op.sn == sn) ? status : UCS_OK);
            if (!*alive) {
                return;
            }
        } while (!ops_.empty() && (ops_.front().sn <= sn));
    }
    if (status != UCS_OK) {
        fail(status);
        return;
    }
    if (!pending_.empty()) {
        iface_.schedule_pending(this);
    }
}

void rc_verbs_ep::fail(ucs_status_t status)
{
    if (failed_ != UCS_OK) {
        return;
    }
    const bool batch_was_open = batch_is_open();
    failed_                   = status;
    if (batch_was_open) {
        iface_.return_cq_entries(1); /* no request will close the batch */
    }
    /* The device flushes what is left; nothing of it will be waited for. */
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_ERR;
    ibv_modify_qp(qp_, &attr, IBV_QP_STATE);
    completed_sn_                     = posted_sn_;
    const std::shared_ptr<bool> alive = alive_;
    while (!ops_.empty()) {
        const tx_op op = ops_.front();
        ops_.pop_front();
        finish(op, status);
        if (!*alive) {
            return;
        }
    }
    iface_.report(this, status);
}

bool rc_verbs_ep::flush_ready() const
{
    if ((failed_ != UCS_OK) || (posted_sn_ == completed_sn_) || (signaled_sn_ == posted_sn_)) {
        return pending_.empty() || (failed_ != UCS_OK);
    }
    return pending_.empty() && connected_ &&
           (posted_sn_ - completed_sn_ < iface_.config().tx_queue_len);
}

ucs_status_t rc_verbs_ep::flush(unsigned, completion *comp)
{
    if (failed_ != UCS_OK) {
        return failed_;
    }
    if (!pending_.empty()) {
        return UCS_ERR_NO_RESOURCE;
    }
    if (posted_sn_ == completed_sn_) {
        return UCS_OK;
    }
    if (signaled_sn_ != posted_sn_) {
        /* The last request is unsignaled: a signaled one retires it. */
        ucs_status_t status = ready();
        if (status == UCS_OK) {
            status = post_nop();
        }
        if (status != UCS_OK) {
            return status;
        }
    }
    if (comp != nullptr) {
        ops_.push_back({posted_sn_, op_kind::FLUSH, nullptr, comp, nullptr, nullptr, 0});
    }
    return UCS_INPROGRESS;
}

ucs_status_t rc_verbs_ep::fence(unsigned)
{
    /* The next request waits for earlier reads and atomics (RC orders the rest). */
    fence_next_ = (posted_sn_ != completed_sn_);
    return UCS_OK;
}

ucs_status_t rc_verbs_ep::check(unsigned, completion *)
{
    /* An idle QP learns of a dead peer only by sending: a zero-length
     * write, which fails with a retry error when nobody acknowledges. */
    if ((failed_ == UCS_OK) && connected_ && (posted_sn_ == completed_sn_) && (ready() == UCS_OK)) {
        post_nop();
    }
    return UCS_OK;
}

} // namespace uct::ib
