/*
 * rc_verbs iface: the CQs, the shared receive queue and its segments, the
 * eps by QP number, completions, pending dispatch and wakeup.
 */
#include <uct/ib/rc_verbs.h>

#include <ucs/debug/log.h>
#include <ucs/type/wire_reader.h>

#include <fcntl.h>

#include <algorithm>
#include <cstring>

namespace uct::ib {

namespace {

constexpr unsigned POLL_BATCH       = 16;
constexpr unsigned BUFFERS_PER_SLAB = 256;

} // namespace

rc_verbs_iface::rc_verbs_iface(ib_md &md, const port_info &port, worker &worker,
                               const iface_params &params, const rc_verbs_config &config) :
    ib_iface_base(params),
    md_(md), port_(port), worker_(worker), config_(config), rx_headroom_(params.rx_headroom),
    rx_pool_(md.dev().pd(), params.rx_headroom + config.seg_size + config.max_am_hdr,
             BUFFERS_PER_SLAB, "receive"),
    tx_pool_(md.dev().pd(), config.seg_size, BUFFERS_PER_SLAB, "send"),
    tx_cq_available_(config.tx_cq_len)
{
}

rc_verbs_iface::~rc_verbs_iface()
{
    worker_.progress_unregister(this);
    if (srq_ != nullptr) {
        ibv_destroy_srq(srq_);
    }
}

ucs_status_t rc_verbs_iface::init()
{
    const device &dev = md_.dev();
    ibv_context *ctx  = dev.context();
    /* TX_CQ_LEN requests in flight, and one send queue of slack for the
     * completions of a QP destroyed before they were polled. */
    ucs_status_t status = cqs_.create(ctx, int(config_.tx_cq_len + config_.tx_queue_len),
                                      int(config_.rx_queue_len), "rc_verbs");
    if (status != UCS_OK) {
        return status;
    }
    ibv_srq_init_attr srq_attr{};
    srq_attr.attr.max_wr  = config_.rx_queue_len;
    srq_attr.attr.max_sge = 1;
    srq_                  = ibv_create_srq(dev.pd(), &srq_attr);
    if (srq_ == nullptr) {
        ucs_error("rc_verbs: ibv_create_srq(%u) failed: %m", config_.rx_queue_len);
        return UCS_ERR_IO_ERROR;
    }
    refill_srq();
    if (rx_posted_ == 0) {
        return UCS_ERR_NO_MEMORY;
    }

    /* The QPs are created with this much inline room; the device may give more. */
    max_inline_          = std::max<size_t>(config_.tx_min_inline, 9 + 1);
    const size_t seg     = config_.seg_size;
    const unsigned sge   = config_.tx_min_sge;
    const size_t max_msg = port_.attr.max_msg_sz;

    using namespace iface_flag;
    attr_.flags = AM_SHORT | AM_BCOPY | PENDING | PUT_SHORT | PUT_BCOPY | PUT_ZCOPY | GET_BCOPY |
                  GET_ZCOPY | CONNECT_TO_EP | ERRHANDLE_PEER_FAILURE | EP_CHECK | CB_SYNC;
    attr_.event_flags  = event_flag::FD | event_flag::SEND_COMP | event_flag::RECV;
    attr_.am.max_short = max_inline_ - 1; /* the 1-byte header rides along */
    attr_.am.max_bcopy = seg - 1;
    if (sge >= 2) {
        /* Header and payload: a receive segment has room for both. */
        attr_.flags |= AM_ZCOPY;
        attr_.am.max_zcopy = seg - 1;
        attr_.am.max_hdr   = config_.max_am_hdr;
        attr_.am.max_iov   = sge - 1; /* one entry carries the header */
    }
    attr_.put.max_short = max_inline_;
    attr_.put.max_bcopy = seg;
    attr_.put.max_zcopy = max_msg;
    attr_.put.max_iov   = sge;
    attr_.get.max_bcopy = seg;
    attr_.get.max_zcopy = max_msg;
    attr_.get.max_iov   = std::min<unsigned>(sge, std::max(1, dev.attr().max_sge_rd));
    if (dev.attr().atomic_cap != IBV_ATOMIC_NONE) {
        attr_.flags |= ATOMIC_DEVICE;
        attr_.atomic64_post  = atomic_op_bit(atomic_op::ADD);
        attr_.atomic64_fetch = atomic_op_bit(atomic_op::ADD) | atomic_op_bit(atomic_op::CSWAP);
    }
    attr_.device_addr_len      = sizeof(device_address);
    attr_.iface_addr_len       = 0;
    attr_.ep_addr_len          = sizeof(rc_ep_address);
    attr_.max_num_eps          = size_t(std::max(1, dev.attr().max_qp));
    attr_.perf.latency_s       = 800e-9;
    attr_.perf.send_overhead_s = 75e-9;
    attr_.perf.recv_overhead_s = 75e-9;
    attr_.perf.bandwidth_Bps   = port_bandwidth(port_.attr);

    worker_.progress_register(this);
    return UCS_OK;
}

ucs_status_t rc_verbs_iface::get_device_address(void *buffer) const
{
    const device_address a = pack_device_address(port_);
    std::memcpy(buffer, &a, sizeof(a));
    return UCS_OK;
}

ucs_status_t rc_verbs_iface::get_address(void *) const
{
    return UCS_OK; /* an RC peer needs the device and the ep address only */
}

bool rc_verbs_iface::is_reachable(const void *dev_addr, size_t dev_addr_len, const void *,
                                  size_t iface_addr_len) const
{
    device_address peer;
    ucs::wire_reader r(dev_addr, dev_addr_len);
    return r.get(&peer) && r.at_end() && (iface_addr_len == 0) && port_reaches(port_, peer);
}

ucs_status_t rc_verbs_iface::ep_create(ep **ep_p)
{
    auto ep             = std::make_unique<rc_verbs_ep>(*this);
    ucs_status_t status = ep->init();
    if (status != UCS_OK) {
        return status;
    }
    *ep_p = ep.release();
    return UCS_OK;
}

void rc_verbs_iface::refill_srq()
{
    rx_posted_ += post_receives(
        rx_pool_, rx_headroom_, uint32_t(rx_segment_size()), config_.rx_queue_len - rx_posted_,
        [this](ibv_recv_wr *wr, ibv_recv_wr **bad) { return ibv_post_srq_recv(srq_, wr, bad); },
        "rc_verbs");
}

void rc_verbs_iface::handle_recv(const ibv_wc &wc)
{
    auto *buffer = reinterpret_cast<uint8_t *>(wc.wr_id);
    --rx_posted_;
    if (ucs_unlikely(wc.status != IBV_WC_SUCCESS)) {
        if (wc.status != IBV_WC_WR_FLUSH_ERR) {
            ucs_debug("rc_verbs: receive completion with error: %s", ibv_wc_status_str(wc.status));
        }
        rx_pool_.put(buffer);
        return;
    }
    uint8_t *segment = buffer + rx_headroom_;
    /* The length comes from the peer: a header byte at least, within the segment. */
    if (ucs_unlikely((wc.byte_len < 1) || (wc.byte_len > rx_segment_size()))) {
        ucs_warn("rc_verbs: dropping a message of %u bytes", wc.byte_len);
        rx_pool_.put(buffer);
        return;
    }
    const ucs_status_t status = invoke_am_handler(segment[0], segment + 1, wc.byte_len - 1,
                                                  am_cb_flag::DESC);
    if (status != UCS_INPROGRESS) {
        rx_pool_.put(buffer);
    }
}

void rc_verbs_iface::release_am_desc(void *data)
{
    rx_pool_.put(static_cast<uint8_t *>(data) - 1 - rx_headroom_);
}

unsigned rc_verbs_iface::poll_recv()
{
    ibv_wc wc[POLL_BATCH];
    const int n = cqs_.poll_recv(wc, int(std::min(config_.rx_max_poll, POLL_BATCH)));
    for (int i = 0; i < n; ++i) {
        handle_recv(wc[i]);
    }
    if (rx_posted_ < config_.rx_queue_len) {
        refill_srq();
    }
    return unsigned(n);
}

unsigned rc_verbs_iface::poll_send()
{
    ibv_wc wc[POLL_BATCH];
    const int n = cqs_.poll_send(wc, int(std::min(config_.tx_max_poll, POLL_BATCH)));
    for (int i = 0; i < n; ++i) {
        auto it = eps_.find(wc[i].qp_num);
        if (it == eps_.end()) {
            continue; /* its ep is gone: it gave the CQ entries back */
        }
        static_cast<rc_verbs_ep *>(it->second)
            ->complete(wc[i].wr_id, wc_status_to_ucs(wc[i].status));
    }
    return unsigned(n);
}

unsigned rc_verbs_iface::progress()
{
    unsigned count = poll_send() + poll_recv();
    if (has_pending_eps()) {
        if (tx_cq_available_ == 0) {
            /* Requests wait for send CQ entries that open batches of
             * unsignaled requests hold: close them. */
            for (const auto &[qpn, ep] : eps_) {
                count += static_cast<rc_verbs_ep *>(ep)->close_batch() ? 1 : 0;
            }
        }
        count += dispatch_pending();
    }
    if (ucs_unlikely(has_reports())) {
        count += report_errors();
    }
    return count;
}

ucs_status_t rc_verbs_iface::fence(unsigned flags)
{
    for (const auto &[qpn, ep] : eps_) {
        ep->fence(flags);
    }
    return UCS_OK;
}

ucs_status_t rc_verbs_iface::event_fd_get(int *fd_p)
{
    if (fd_p == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    *fd_p = cqs_.fd();
    return UCS_OK;
}

ucs_status_t rc_verbs_iface::event_arm(unsigned events)
{
    if (has_reports()) {
        return UCS_ERR_BUSY;
    }
    return cqs_.arm(events);
}

} // namespace uct::ib
