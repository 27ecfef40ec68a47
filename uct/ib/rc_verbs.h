/*
 * rc_verbs: reliable-connected queue pairs through libibverbs.
 *
 * An ep is one RC QP, created unconnected (CONNECT_TO_EP) and connected to
 * the peer ep's QP number in connect_to_ep. Every ep of an iface shares the
 * iface's send CQ, receive CQ and shared receive queue (SRQ) of registered
 * segments.
 *
 * Wire: a send carries a 1-byte header (the AM id) and then the payload;
 * short messages go inline. Puts and gets are RDMA writes and reads,
 * atomics the device's 64-bit fetch-add and compare-swap.
 *
 * Send completions are moderated: a work request is signaled when
 * something waits for it (a completion, a buffer to release, a get result)
 * or every TX_CQ_MODERATION requests; a signaled completion retires every
 * earlier request of its QP (RC completes in order).
 *
 * Flow control is the device's: the QPs retry a receiver-not-ready peer
 * RNR_RETRY_COUNT times (7: for ever), so a receiver that runs out of
 * posted segments slows its senders down, nothing is lost. UCX's credit
 * scheme on top (UCX_RC_VERBS_FC_*) is not implemented.
 */
#ifndef UCT_IB_RC_VERBS_H
#define UCT_IB_RC_VERBS_H

#include <uct/base/uct_worker.h>
#include <uct/ib/ib_buffers.h>
#include <uct/ib/ib_cq.h>
#include <uct/ib/ib_iface_base.h>
#include <uct/ib/ib_md.h>
#include <ucs/datastruct/ring_fifo.h>

namespace uct::ib {

/* An ep as the peer connects to it. */
struct rc_ep_address {
    uint32_t qpn;
    uint32_t psn; /* the first packet sequence number this QP sends */
};
static_assert(sizeof(rc_ep_address) == 8, "rc_ep_address layout");

class rc_verbs_iface;

class rc_verbs_ep final : public ib_ep_base {
public:
    explicit rc_verbs_ep(rc_verbs_iface &iface);
    ~rc_verbs_ep() override;

    ucs_status_t init();

    ucs_status_t get_address(void *buffer) const override;
    ucs_status_t connect_to_ep(const void *dev_addr, size_t dev_addr_len, const void *ep_addr,
                               size_t ep_addr_len) override;

    ucs_status_t am_short(am_id_t id, uint64_t header, const void *payload,
                          unsigned length) override;
    ssize_t am_bcopy(am_id_t id, pack_callback_t pack, void *arg, unsigned flags) override;
    ucs_status_t am_zcopy(am_id_t id, const void *header, unsigned header_length, const iov *iov,
                          size_t iovcnt, unsigned flags, completion *comp) override;
    ucs_status_t put_short(const void *buffer, unsigned length, uint64_t remote_addr,
                           rkey_t rkey) override;
    ssize_t put_bcopy(pack_callback_t pack, void *arg, uint64_t remote_addr, rkey_t rkey) override;
    ucs_status_t put_zcopy(const iov *iov, size_t iovcnt, uint64_t remote_addr, rkey_t rkey,
                           completion *comp) override;
    ucs_status_t get_bcopy(unpack_callback_t unpack, void *arg, size_t length, uint64_t remote_addr,
                           rkey_t rkey, completion *comp) override;
    ucs_status_t get_zcopy(const iov *iov, size_t iovcnt, uint64_t remote_addr, rkey_t rkey,
                           completion *comp) override;
    ucs_status_t atomic_post(atomic_op op, unsigned size, uint64_t value, uint64_t remote_addr,
                             rkey_t rkey) override;
    ucs_status_t atomic_fetch(atomic_op op, unsigned size, uint64_t value, uint64_t compare,
                              void *result, uint64_t remote_addr, rkey_t rkey,
                              completion *comp) override;

    ucs_status_t flush(unsigned flags, completion *comp) override;
    ucs_status_t fence(unsigned flags) override;
    ucs_status_t check(unsigned flags, completion *comp) override;

    /* For the iface. */
    uint32_t qpn() const { return qp_->qp_num; }
    /* A completion of request `sn` (its work request id): retires it and
     * every earlier one. */
    void complete(uint64_t sn, ucs_status_t status);
    bool flush_ready() const override;
    /* Fails every outstanding operation and reports the ep (once). */
    void fail(ucs_status_t status);
    /* Posts a signaled request if unsignaled ones are outstanding, so that
     * they complete and give their send CQ entries back; true if posted. */
    bool close_batch();

private:
    enum class op_kind : uint8_t { RELEASE, COMP, GET_BCOPY, ATOMIC, FLUSH };

    /* What a signaled request leaves to do when it completes. */
    struct tx_op {
        uint64_t sn;
        op_kind kind;
        uint8_t *buffer; /* pool buffer to release, or get/atomic result */
        completion *comp;
        unpack_callback_t unpack; /* GET_BCOPY */
        void *arg;                /* GET_BCOPY: unpack's; ATOMIC: the result */
        uint32_t length;          /* GET_BCOPY bytes; ATOMIC: 4 or 8 */
    };

    ucs_status_t ready() const override;
    /* Unsignaled requests posted since the last signaled one (none after a failure). */
    bool batch_is_open() const { return (failed_ == UCS_OK) && (posted_sn_ != signaled_sn_); }
    /* Posts one request; `signal` forces a completion. Records `op` (its sn
     * filled in) when given. */
    ucs_status_t post(ibv_send_wr &wr, bool signal, const tx_op *op);
    ucs_status_t post_send(const ibv_sge *sge, int num_sge, unsigned flags, const tx_op *op);
    /* Posts `wr` with `length` bytes of `buffer` (a send pool buffer, which
     * this releases): inline when they fit, else the buffer waits for the
     * request's completion. */
    ucs_status_t post_buffer(ibv_send_wr &wr, uint8_t *buffer, size_t length);
    /* put_zcopy and get_zcopy: one RDMA write or read of the iov. */
    ucs_status_t rdma_zcopy(ibv_wr_opcode opcode, const op_limits &limits, const iov *iov,
                            size_t iovcnt, uint64_t remote_addr, rkey_t rkey, completion *comp);
    /* An RDMA write or read of `length` bytes; UCS_ERR_INVALID_PARAM, with
     * nothing posted, when they leave the remote key's range. */
    ucs_status_t post_rdma(ibv_wr_opcode opcode, ibv_sge *sge, int num_sge, size_t length,
                           uint64_t remote_addr, rkey_t rkey, const tx_op *op, unsigned flags);
    /* A fetch-add or compare-swap of 8 bytes; the old value goes to `result`
     * (with `comp`) when given, else nowhere. */
    ucs_status_t post_atomic(ibv_wr_opcode opcode, uint64_t compare_add, uint64_t swap,
                             uint64_t remote_addr, rkey_t rkey, void *result, completion *comp);
    void finish(const tx_op &op, ucs_status_t status);
    /* The iov as gather entries (empty ones left out); UCS_ERR_INVALID_PARAM
     * past max_iov or max_bytes, or for an entry with no memory handle. */
    static ucs_status_t iov_to_sge(const iov *iov, size_t iovcnt, size_t max_iov, size_t max_bytes,
                                   ibv_sge *sge, int *num_sge, size_t *total);
    /* A zero-length RDMA write, signaled: retires everything before it. */
    ucs_status_t post_nop();

    rc_verbs_iface &iface_;
    ibv_qp *qp_            = nullptr;
    uint32_t psn_          = 0;
    bool connected_        = false;
    ucs_status_t failed_   = UCS_OK;
    bool fence_next_       = false;
    uint64_t posted_sn_    = 0;
    uint64_t completed_sn_ = 0;
    uint64_t signaled_sn_  = 0; /* last signaled request */
    /* Requests up to here gave their send CQ entry back. Every request holds
     * one while outstanding: a QP in error completes even the unsignaled
     * ones (flush errors), and those must find room in the CQ. */
    uint64_t cq_returned_sn_ = 0;
    unsigned unsignaled_     = 0;
    ucs::ring_fifo<tx_op> ops_;
};

class rc_verbs_iface final : public ib_iface_base {
public:
    rc_verbs_iface(ib_md &md, const port_info &port, worker &worker, const iface_params &params,
                   const rc_verbs_config &config);
    ~rc_verbs_iface() override;

    ucs_status_t init();

    const iface_attr &attr() const override { return attr_; }
    md &owner_md() const override { return md_; }
    ucs_status_t get_device_address(void *buffer) const override;
    ucs_status_t get_address(void *buffer) const override;
    bool is_reachable(const void *dev_addr, size_t dev_addr_len, const void *iface_addr,
                      size_t iface_addr_len) const override;
    ucs_status_t ep_create(ep **ep_p) override;
    unsigned progress() override;
    ucs_status_t fence(unsigned flags) override;
    void release_am_desc(void *data) override;
    ucs_status_t event_fd_get(int *fd_p) override;
    ucs_status_t event_arm(unsigned events) override;

    /* For the eps. */
    const rc_verbs_config &config() const { return config_; }
    const port_info &port() const { return port_; }
    device &dev() const { return md_.dev(); }
    ibv_cq *send_cq() const { return cqs_.send_cq(); }
    ibv_cq *recv_cq() const { return cqs_.recv_cq(); }
    ibv_srq *srq() const { return srq_; }
    size_t max_inline() const { return max_inline_; }
    buffer_pool &tx_buffers() { return tx_pool_; }
    /* Send CQ entries for requests (see rc_verbs_ep::post); false, taking
     * none, when fewer than `count` are left. */
    bool take_cq_entries(unsigned count)
    {
        if (tx_cq_available_ < count) {
            return false;
        }
        tx_cq_available_ -= count;
        return true;
    }
    void return_cq_entries(unsigned count) { tx_cq_available_ += count; }
    bool has_cq_entries() const { return tx_cq_available_ > 0; }

private:
    unsigned poll_send();
    unsigned poll_recv();
    void handle_recv(const ibv_wc &wc);
    /* Posts receive segments until RX_QUEUE_LEN are posted. */
    void refill_srq();
    /* A posted receive: the AM id byte, a zcopy header and SEG_SIZE - 1 bytes. */
    size_t rx_segment_size() const { return config_.seg_size + config_.max_am_hdr; }

    ib_md &md_;
    port_info port_;
    worker &worker_;
    rc_verbs_config config_;
    iface_attr attr_;
    size_t rx_headroom_;
    size_t max_inline_ = 0;
    cq_pair cqs_; /* eps_ are keyed by QP number */
    ibv_srq *srq_ = nullptr;
    buffer_pool rx_pool_;
    buffer_pool tx_pool_;
    unsigned rx_posted_ = 0;
    unsigned tx_cq_available_;
};

} // namespace uct::ib

#endif
