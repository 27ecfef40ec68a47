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

constexpr unsigned POLL_BATCH = 16;
constexpr unsigned BUFFERS_PER_SLAB = 256;

/* Data rate of one port in bytes per second, from its width and speed. */
double port_bandwidth(const ibv_port_attr &attr)
{
    double lanes = 1;
    switch (attr.active_width) {
    case 2:  lanes = 4;  break;
    case 4:  lanes = 8;  break;
    case 8:  lanes = 12; break;
    case 16: lanes = 2;  break;
    default: lanes = 1;  break;
    }
    double gbps;     /* per lane, after encoding */
    switch (attr.active_speed) {
    case 1:   gbps = 2.5 * 0.8;            break;  /* SDR */
    case 2:   gbps = 5.0 * 0.8;            break;  /* DDR */
    case 4:   gbps = 10.0 * 0.8;           break;  /* QDR */
    case 8:   gbps = 10.3125 * 64 / 66;    break;  /* FDR10 */
    case 16:  gbps = 14.0625 * 64 / 66;    break;  /* FDR */
    case 32:  gbps = 25.78125 * 64 / 66;   break;  /* EDR */
    case 64:  gbps = 53.125 * 64 / 66;     break;  /* HDR */
    case 128: gbps = 106.25 * 64 / 66;     break;  /* NDR */
    default:  gbps = 25.78125 * 64 / 66;   break;
    }
    return lanes * gbps * 1e9 / 8;
}

} // namespace

rc_verbs_iface::rc_verbs_iface(ib_md &md, const port_info &port, worker &worker,
                               const iface_params &params, const rc_verbs_config &config)
    : md_(md), port_(port), worker_(worker), config_(config),
      err_handler_(params.err_handler), err_arg_(params.err_handler_arg),
      rx_headroom_(params.rx_headroom),
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
    drain_channel();
    for (ibv_cq *cq : {send_cq_, recv_cq_}) {
        if (cq != nullptr) {
            ibv_destroy_cq(cq);
        }
    }
    if (channel_ != nullptr) {
        ibv_destroy_comp_channel(channel_);
    }
}

ucs_status_t rc_verbs_iface::init()
{
    const device &dev = md_.dev();
    ibv_context *ctx  = dev.context();
    channel_ = ibv_create_comp_channel(ctx);
    if (channel_ == nullptr) {
        ucs_error("rc_verbs: ibv_create_comp_channel failed: %m");
        return UCS_ERR_IO_ERROR;
    }
    const int fl = ::fcntl(channel_->fd, F_GETFL);
    if ((fl < 0) || (::fcntl(channel_->fd, F_SETFL, fl | O_NONBLOCK) != 0)) {
        ucs_error("rc_verbs: cannot make the completion channel non-blocking: %m");
        return UCS_ERR_IO_ERROR;
    }
    /* TX_CQ_LEN requests in flight, and one send queue of slack for the
     * completions of a QP destroyed before they were polled. */
    send_cq_ = ibv_create_cq(ctx, int(config_.tx_cq_len + config_.tx_queue_len), nullptr,
                             channel_, 0);
    recv_cq_ = ibv_create_cq(ctx, int(config_.rx_queue_len), nullptr, channel_, 0);
    if ((send_cq_ == nullptr) || (recv_cq_ == nullptr)) {
        ucs_error("rc_verbs: ibv_create_cq failed: %m");
        return UCS_ERR_IO_ERROR;
    }
    ibv_srq_init_attr srq_attr{};
    srq_attr.attr.max_wr  = config_.rx_queue_len;
    srq_attr.attr.max_sge = 1;
    srq_ = ibv_create_srq(dev.pd(), &srq_attr);
    if (srq_ == nullptr) {
        ucs_error("rc_verbs: ibv_create_srq(%u) failed: %m", config_.rx_queue_len);
        return UCS_ERR_IO_ERROR;
    }
    refill_srq();
    if (rx_posted_ == 0) {
        return UCS_ERR_NO_MEMORY;
    }

    /* The QPs are created with this much inline room; the device may give more. */
    max_inline_ = std::max<size_t>(config_.tx_min_inline, 9 + 1);
    const size_t seg    = config_.seg_size;
    const unsigned sge  = config_.tx_min_sge;
    const size_t max_msg = port_.attr.max_msg_sz;

    using namespace iface_flag;
    attr_.flags = AM_SHORT | AM_BCOPY | PENDING | PUT_SHORT | PUT_BCOPY | PUT_ZCOPY |
                  GET_BCOPY | GET_ZCOPY | CONNECT_TO_EP | ERRHANDLE_PEER_FAILURE |
                  EP_CHECK | CB_SYNC;
    attr_.event_flags   = event_flag::FD | event_flag::SEND_COMP | event_flag::RECV;
    attr_.am.max_short  = max_inline_ - 1;          /* the 1-byte header rides along */
    attr_.am.max_bcopy  = seg - 1;
    if (sge >= 2) {
        /* Header and payload: a receive segment has room for both. */
        attr_.flags       |= AM_ZCOPY;
        attr_.am.max_zcopy = seg - 1;
        attr_.am.max_hdr   = config_.max_am_hdr;
        attr_.am.max_iov   = sge - 1;               /* one entry carries the header */
    }
    attr_.put.max_short = max_inline_;
    attr_.put.max_bcopy = seg;
    attr_.put.max_zcopy = max_msg;
    attr_.put.max_iov   = sge;
    attr_.get.max_bcopy = seg;
    attr_.get.max_zcopy = max_msg;
    attr_.get.max_iov   = std::min<unsigned>(sge, std::max(1, dev.attr().max_sge_rd));
    if (dev.attr().atomic_cap != IBV_ATOMIC_NONE) {
        attr_.flags         |= ATOMIC_DEVICE;
        attr_.atomic64_post  = atomic_op_bit(atomic_op::ADD);
        attr_.atomic64_fetch = atomic_op_bit(atomic_op::ADD) | atomic_op_bit(atomic_op::CSWAP);
    }
    attr_.device_addr_len = sizeof(device_address);
    attr_.iface_addr_len  = 0;
    attr_.ep_addr_len     = sizeof(rc_ep_address);
    attr_.max_num_eps     = size_t(std::max(1, dev.attr().max_qp));
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
    return UCS_OK;     /* an RC peer needs the device and the ep address only */
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
    auto ep = std::make_unique<rc_verbs_ep>(*this);
    ucs_status_t status = ep->init();
    if (status != UCS_OK) {
        return status;
    }
    *ep_p = ep.release();
    return UCS_OK;
}

void rc_verbs_iface::add_ep(rc_verbs_ep *ep)
{
    eps_[ep->qpn()] = ep;
}

void rc_verbs_iface::remove_ep(rc_verbs_ep *ep)
{
    auto it = eps_.find(ep->qpn());
    if ((it != eps_.end()) && (it->second == ep)) {
        eps_.erase(it);
    }
    pending_eps_.erase(std::remove(pending_eps_.begin(), pending_eps_.end(), ep),
                       pending_eps_.end());
    errors_.erase(std::remove_if(errors_.begin(), errors_.end(),
                                 [ep](const auto &e) { return e.first == ep; }),
                  errors_.end());
}

void rc_verbs_iface::schedule_pending(rc_verbs_ep *ep)
{
    if (std::find(pending_eps_.begin(), pending_eps_.end(), ep) == pending_eps_.end()) {
        pending_eps_.push_back(ep);
    }
}

void rc_verbs_iface::report(rc_verbs_ep *ep, ucs_status_t status)
{
    errors_.emplace_back(ep, status);
}

unsigned rc_verbs_iface::report_errors()
{
    unsigned count = 0;
    while (!errors_.empty()) {
        auto [ep, status] = errors_.front();
        errors_.pop_front();
        if (err_handler_ != nullptr) {
            err_handler_(err_arg_, ep, status);
        }
        ++count;
    }
    return count;
}

void rc_verbs_iface::refill_srq()
{
    ibv_recv_wr wrs[POLL_BATCH];
    ibv_sge sges[POLL_BATCH];
    while (rx_posted_ < config_.rx_queue_len) {
        unsigned n = 0;
        while ((n < POLL_BATCH) && (rx_posted_ + n < config_.rx_queue_len)) {
            uint8_t *buffer = rx_pool_.get();
            if (buffer == nullptr) {
                break;
            }
            sges[n] = {reinterpret_cast<uintptr_t>(buffer + rx_headroom_),
                       uint32_t(rx_segment_size()), buffer_pool::lkey(buffer)};
            wrs[n]  = {};
            wrs[n].wr_id   = reinterpret_cast<uintptr_t>(buffer);
            wrs[n].sg_list = &sges[n];
            wrs[n].num_sge = 1;
            if (n > 0) {
                wrs[n - 1].next = &wrs[n];
            }
            ++n;
        }
        if (n == 0) {
            return;
        }
        ibv_recv_wr *bad = nullptr;
        const int rc = ibv_post_srq_recv(srq_, wrs, &bad);
        unsigned posted = n;
        if (rc != 0) {
            /* Everything from `bad` on was not posted. */
            posted = unsigned(bad - wrs);
            for (unsigned i = posted; i < n; ++i) {
                rx_pool_.put(reinterpret_cast<uint8_t*>(wrs[i].wr_id));
            }
            ucs_error("rc_verbs: ibv_post_srq_recv failed: %s", std::strerror(rc));
        }
        rx_posted_ += posted;
        if (posted < n) {
            return;
        }
    }
}

void rc_verbs_iface::handle_recv(const ibv_wc &wc)
{
    auto *buffer = reinterpret_cast<uint8_t*>(wc.wr_id);
    --rx_posted_;
    if (ucs_unlikely(wc.status != IBV_WC_SUCCESS)) {
        if (wc.status != IBV_WC_WR_FLUSH_ERR) {
            ucs_debug("rc_verbs: receive completion with error: %s",
                      ibv_wc_status_str(wc.status));
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
    rx_pool_.put(static_cast<uint8_t*>(data) - 1 - rx_headroom_);
}

unsigned rc_verbs_iface::poll_recv()
{
    unsigned count = 0;
    if (!stashed_recv_.empty()) {
        std::vector<ibv_wc> stash;
        stash.swap(stashed_recv_);
        for (const ibv_wc &wc : stash) {
            handle_recv(wc);
        }
        count += unsigned(stash.size());
    }
    ibv_wc wc[POLL_BATCH];
    const int n = ibv_poll_cq(recv_cq_, int(std::min(config_.rx_max_poll, POLL_BATCH)), wc);
    if (ucs_unlikely(n < 0)) {
        report_poll_failure("receive", n);
    }
    for (int i = 0; i < n; ++i) {
        handle_recv(wc[i]);
    }
    count += unsigned(std::max(n, 0));
    if (rx_posted_ < config_.rx_queue_len) {
        refill_srq();
    }
    return count;
}

unsigned rc_verbs_iface::poll_send()
{
    ibv_wc polled[POLL_BATCH];
    const ibv_wc *wc = polled;
    int n;
    std::vector<ibv_wc> stash;
    if (!stashed_send_.empty()) {
        stash.swap(stashed_send_);
        wc = stash.data();
        n  = int(stash.size());
    } else {
        n = ibv_poll_cq(send_cq_, int(std::min(config_.tx_max_poll, POLL_BATCH)), polled);
        if (ucs_unlikely(n < 0)) {
            report_poll_failure("send", n);
        }
    }
    for (int i = 0; i < n; ++i) {
        auto it = eps_.find(wc[i].qp_num);
        if (it == eps_.end()) {
            continue;     /* its ep is gone: it gave the CQ entries back */
        }
        it->second->complete(wc[i].wr_id, wc_status_to_ucs(wc[i].status));
    }
    return unsigned(std::max(n, 0));
}

void rc_verbs_iface::report_poll_failure(const char *which, int rc)
{
    /* A CQ overrun: the device lost completions, nothing here recovers it. */
    if (!poll_failure_reported_) {
        poll_failure_reported_ = true;
        ucs_error("rc_verbs: polling the %s CQ failed (%d): the CQ overran", which, rc);
    }
}

unsigned rc_verbs_iface::dispatch_pending()
{
    unsigned count = 0;
    for (size_t i = 0; i < pending_eps_.size();) {
        rc_verbs_ep *ep = pending_eps_[i];
        count += ep->dispatch_pending();
        /* A request may have destroyed eps, this one included. */
        if ((i < pending_eps_.size()) && (pending_eps_[i] == ep)) {
            if (ep->has_pending()) {
                ++i;
            } else {
                pending_eps_.erase(pending_eps_.begin() + ptrdiff_t(i));
            }
        }
    }
    return count;
}

unsigned rc_verbs_iface::progress()
{
    unsigned count = poll_send() + poll_recv();
    if (!pending_eps_.empty()) {
        if (tx_cq_available_ == 0) {
            /* Requests wait for send CQ entries that open batches of
             * unsignaled requests hold: close them. */
            for (const auto &[qpn, ep] : eps_) {
                count += ep->close_batch() ? 1 : 0;
            }
        }
        count += dispatch_pending();
    }
    if (ucs_unlikely(!errors_.empty())) {
        count += report_errors();
    }
    return count;
}

void rc_verbs_iface::flush_waiter_done(completion *self)
{
    static_assert(offsetof(flush_waiter, inner) == 0);
    auto *waiter = reinterpret_cast<flush_waiter*>(self);
    completion *user = waiter->user;
    waiter->user = nullptr;     /* free for the next iface flush */
    invoke_completion(user, self->status);
}

ucs_status_t rc_verbs_iface::flush(unsigned flags, completion *comp)
{
    /* All or nothing: no ep starts a flush unless each one can. */
    for (const auto &[qpn, ep] : eps_) {
        if (!ep->flush_ready()) {
            return UCS_ERR_NO_RESOURCE;
        }
    }
    flush_waiter *waiter = nullptr;
    if (comp != nullptr) {
        for (auto &w : flush_waiters_) {
            if (w->user == nullptr) {
                waiter = w.get();
                break;
            }
        }
        if (waiter == nullptr) {
            flush_waiters_.push_back(std::make_unique<flush_waiter>());
            waiter = flush_waiters_.back().get();
        }
        waiter->inner = {flush_waiter_done, 1, UCS_OK};
        waiter->user  = comp;
    }
    bool outstanding = false;
    for (const auto &[qpn, ep] : eps_) {
        completion *inner = (waiter != nullptr) ? &waiter->inner : nullptr;
        if (inner != nullptr) {
            ++inner->count;
        }
        const ucs_status_t status = ep->flush(flags, inner);
        if (status == UCS_INPROGRESS) {
            outstanding = true;
        } else if (inner != nullptr) {
            --inner->count;
        }
    }
    if (!outstanding) {
        if (waiter != nullptr) {
            waiter->user = nullptr;
        }
        return UCS_OK;
    }
    if (waiter != nullptr) {
        --waiter->inner.count;   /* the initial reference; the eps hold the rest */
    }
    return UCS_INPROGRESS;
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
    *fd_p = channel_->fd;
    return UCS_OK;
}

void rc_verbs_iface::drain_channel()
{
    if (channel_ == nullptr) {
        return;
    }
    ibv_cq *cq   = nullptr;
    void *cq_ctx = nullptr;
    while (ibv_get_cq_event(channel_, &cq, &cq_ctx) == 0) {
        ibv_ack_cq_events(cq, 1);
    }
}

ucs_status_t rc_verbs_iface::event_arm(unsigned events)
{
    drain_channel();
    if (!stashed_send_.empty() || !stashed_recv_.empty() || !errors_.empty()) {
        return UCS_ERR_BUSY;
    }
    const bool send = (events & event_flag::SEND_COMP) != 0;
    const bool recv = (events & (event_flag::RECV | event_flag::RECV_SIG)) != 0;
    if ((send && (ibv_req_notify_cq(send_cq_, 0) != 0)) ||
        (recv && (ibv_req_notify_cq(recv_cq_, 0) != 0))) {
        ucs_error("rc_verbs: ibv_req_notify_cq failed");
        return UCS_ERR_IO_ERROR;
    }
    /* A completion that came before arming raises no event: look once
     * more, keeping what is found for the next progress. */
    ibv_wc wc[POLL_BATCH];
    int n = ibv_poll_cq(send_cq_, int(POLL_BATCH), wc);
    stashed_send_.assign(wc, wc + std::max(n, 0));
    n = ibv_poll_cq(recv_cq_, int(POLL_BATCH), wc);
    stashed_recv_.assign(wc, wc + std::max(n, 0));
    return (stashed_send_.empty() && stashed_recv_.empty()) ? UCS_OK : UCS_ERR_BUSY;
}

} // namespace uct::ib
