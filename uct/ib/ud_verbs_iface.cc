/*
 * ud_verbs iface: the UD QP, its CQs and receive buffers, the eps by id,
 * what it knows of each sender (next psn expected, acknowledgements due),
 * retransmission timers, pending dispatch and wakeup.
 */
#include <uct/ib/ud_verbs.h>

#include <ucs/debug/log.h>
#include <ucs/type/wire_reader.h>

#include <algorithm>
#include <cstring>

namespace uct::ib {

namespace {

constexpr unsigned POLL_BATCH       = 16;
constexpr unsigned BUFFERS_PER_SLAB = 256;

uint64_t source_key(uint32_t qpn, uint32_t src_id)
{
    return (uint64_t(qpn) << 32) | src_id;
}

/* Where the send completion of a tx buffer is counted (TX_META bytes). */
struct ud_tx_meta {
    uint32_t posted;   /* sends of it not completed */
    uint32_t released; /* the window dropped it */
    uint32_t reserved[2];
};
static_assert(sizeof(ud_tx_meta) == ud_verbs_iface::TX_META, "ud_tx_meta layout");

ud_tx_meta &meta_of(uint8_t *buffer)
{
    return *reinterpret_cast<ud_tx_meta *>(buffer);
}

/* The largest datagram this iface sends: UCX_UD_VERBS_PATH_MTU, never above
 * the port's active MTU (which receive buffers are sized for: a peer may
 * send that much). */
size_t send_mtu(const port_info &port, const ud_verbs_config &config)
{
    const size_t active = mtu_bytes(port.attr.active_mtu);
    return (config.path_mtu != 0) ? std::min(size_t(config.path_mtu), active) : active;
}

} // namespace

ud_verbs_iface::ud_verbs_iface(ib_md &md, const port_info &port, worker &worker,
                               const iface_params &params, const ud_verbs_config &config) :
    ib_iface_base(params),
    md_(md), port_(port), worker_(worker), config_(config), rx_headroom_(params.rx_headroom),
    mtu_(mtu_bytes(port.attr.active_mtu)),
    max_packet_(std::min(config.seg_size, send_mtu(port, config))),
    window_limit_(std::min(config.max_window, config.tx_queue_len)), sq_len_(config.tx_queue_len),
    /* mtu_ and max_packet_ are declared (so initialized) before the pools. */
    rx_pool_(md.dev().pd(), rx_headroom_ + rx_length(), BUFFERS_PER_SLAB, "receive"),
    tx_pool_(md.dev().pd(), TX_META + max_packet_, BUFFERS_PER_SLAB, "send")
{
}

ud_verbs_iface::~ud_verbs_iface()
{
    worker_.progress_unregister(this);
    reap_lingering(true);
    if (qp_ != nullptr) {
        ibv_destroy_qp(qp_);
    }
    for (auto &peer : rx_peers_) {
        if ((peer != nullptr) && (peer->ah != nullptr)) {
            ibv_destroy_ah(peer->ah);
        }
    }
    for (auto &retired : retired_ahs_) {
        ibv_destroy_ah(retired.second);
    }
}

ucs_status_t ud_verbs_iface::init()
{
    if (max_packet_ < sizeof(ud_header) + 64) {
        ucs_error("ud_verbs: port MTU %zu, UCX_UD_VERBS_PATH_MTU %u or SEG_SIZE %zu too small",
                  mtu_, config_.path_mtu, config_.seg_size);
        return UCS_ERR_INVALID_PARAM;
    }
    const device &dev   = md_.dev();
    ibv_context *ctx    = dev.context();
    ucs_status_t status = cqs_.create(ctx, int(sq_len_), int(config_.rx_queue_len), "ud_verbs");
    if (status != UCS_OK) {
        return status;
    }

    /* TX_MIN_INLINE counts the message (the short limit); the header rides along. */
    max_inline_ = std::max<size_t>(config_.tx_min_inline, 8) + sizeof(ud_header);
    ibv_qp_init_attr qp_attr{};
    qp_attr.send_cq             = cqs_.send_cq();
    qp_attr.recv_cq             = cqs_.recv_cq();
    qp_attr.qp_type             = IBV_QPT_UD;
    qp_attr.sq_sig_all          = 0;
    qp_attr.cap.max_send_wr     = sq_len_;
    qp_attr.cap.max_recv_wr     = config_.rx_queue_len;
    qp_attr.cap.max_send_sge    = config_.tx_min_sge;
    qp_attr.cap.max_recv_sge    = 1;
    qp_attr.cap.max_inline_data = uint32_t(max_inline_);
    qp_                         = ibv_create_qp(dev.pd(), &qp_attr);
    if (qp_ == nullptr) {
        ucs_error("ud_verbs: ibv_create_qp failed: %m");
        return UCS_ERR_IO_ERROR;
    }
    ibv_qp_attr attr{};
    attr.qp_state   = IBV_QPS_INIT;
    attr.pkey_index = 0;
    attr.port_num   = port_.num;
    attr.qkey       = QKEY;
    int rc          = ibv_modify_qp(qp_, &attr,
                                    IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
    if (rc == 0) {
        attr          = {};
        attr.qp_state = IBV_QPS_RTR;
        rc            = ibv_modify_qp(qp_, &attr, IBV_QP_STATE);
    }
    if (rc == 0) {
        attr          = {};
        attr.qp_state = IBV_QPS_RTS;
        attr.sq_psn   = 0;
        rc            = ibv_modify_qp(qp_, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN);
    }
    if (rc != 0) {
        ucs_error("ud_verbs: UD QP %u to RTS failed: %s", qp_->qp_num, std::strerror(rc));
        return UCS_ERR_IO_ERROR;
    }
    refill_rx();
    if (rx_posted_ == 0) {
        return UCS_ERR_NO_MEMORY;
    }

    tick_    = std::max<ucs::sys::ticks_t>(1, ucs::sys::time_from_sec(config_.timer_tick_s));
    timeout_ = (config_.timeout_s > 1e9) ? ~ucs::sys::ticks_t(0) / 2 :
                                           ucs::sys::time_from_sec(config_.timeout_s);
    /* Retransmissions back off up to a quarter of the timeout, at most 1s. */
    rto_max_ = std::max(tick_, std::min(timeout_ / 4, ucs::sys::time_from_sec(1.0)));

    using namespace iface_flag;
    attr_.flags = AM_SHORT | AM_BCOPY | PENDING | CONNECT_TO_IFACE | ERRHANDLE_PEER_FAILURE |
                  EP_CHECK | CB_SYNC;
    attr_.event_flags          = event_flag::FD | event_flag::SEND_COMP | event_flag::RECV;
    attr_.am.max_short         = max_inline_ - sizeof(ud_header);
    attr_.am.max_bcopy         = max_packet_ - sizeof(ud_header);
    attr_.device_addr_len      = sizeof(device_address);
    attr_.iface_addr_len       = sizeof(ud_iface_address);
    attr_.ep_addr_len          = 0;
    attr_.max_num_eps          = size_t(1) << 30;
    attr_.perf.latency_s       = 1000e-9;
    attr_.perf.send_overhead_s = 100e-9;
    attr_.perf.recv_overhead_s = 100e-9;
    attr_.perf.bandwidth_Bps   = port_bandwidth(port_.attr);

    worker_.progress_register(this);
    return UCS_OK;
}

ucs_status_t ud_verbs_iface::get_device_address(void *buffer) const
{
    const device_address a = pack_device_address(port_);
    std::memcpy(buffer, &a, sizeof(a));
    return UCS_OK;
}

ucs_status_t ud_verbs_iface::get_address(void *buffer) const
{
    const ud_iface_address a{qp_->qp_num, ud_iface_address::VERSION, {}};
    std::memcpy(buffer, &a, sizeof(a));
    return UCS_OK;
}

namespace {

bool parse_addresses(const void *dev_addr, size_t dev_addr_len, const void *iface_addr,
                     size_t iface_addr_len, device_address *dev, ud_iface_address *addr)
{
    ucs::wire_reader rd(dev_addr, dev_addr_len), ri(iface_addr, iface_addr_len);
    return (dev_addr != nullptr) && (iface_addr != nullptr) && rd.get(dev) && rd.at_end() &&
           ri.get(addr) && ri.at_end() && (addr->version == ud_iface_address::VERSION) &&
           (addr->qpn <= 0xffffff);
}

} // namespace

bool ud_verbs_iface::is_reachable(const void *dev_addr, size_t dev_addr_len, const void *iface_addr,
                                  size_t iface_addr_len) const
{
    device_address dev;
    ud_iface_address addr;
    return parse_addresses(dev_addr, dev_addr_len, iface_addr, iface_addr_len, &dev, &addr) &&
           port_reaches(port_, dev);
}

ucs_status_t ud_verbs_iface::ep_create_connected(const void *dev_addr, size_t dev_addr_len,
                                                 const void *iface_addr, size_t iface_addr_len,
                                                 ep **ep_p)
{
    device_address dev;
    ud_iface_address addr;
    if (!parse_addresses(dev_addr, dev_addr_len, iface_addr, iface_addr_len, &dev, &addr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (!port_reaches(port_, dev)) {
        return UCS_ERR_UNREACHABLE;
    }
    uint32_t id = next_ep_id_;
    while ((id == 0) || (eps_.count(id) != 0)) {
        ++id;
    }
    next_ep_id_         = id + 1;
    auto ep             = std::make_unique<ud_verbs_ep>(*this, id);
    ucs_status_t status = ep->init(dev, addr);
    if (status != UCS_OK) {
        return status;
    }
    add_ep(id, ep.get());
    *ep_p = ep.release();
    return UCS_OK;
}

ucs_status_t ud_verbs_iface::post(ibv_ah *ah, uint32_t qpn, const uint8_t *packet, uint32_t length,
                                  uint8_t *buffer)
{
    if (sq_full()) {
        return UCS_ERR_NO_RESOURCE;
    }
    const bool inline_send = (length <= max_inline_);
    const ibv_sge sge{reinterpret_cast<uintptr_t>(packet), length,
                      inline_send || (buffer == nullptr) ? 0 : buffer_pool::lkey(buffer)};
    ibv_send_wr wr{};
    wr.wr_id             = inline_send ? 0 : reinterpret_cast<uintptr_t>(buffer);
    wr.opcode            = IBV_WR_SEND;
    wr.sg_list           = const_cast<ibv_sge *>(&sge);
    wr.num_sge           = 1;
    wr.send_flags        = IBV_SEND_SIGNALED | (inline_send ? IBV_SEND_INLINE : 0);
    wr.wr.ud.ah          = ah;
    wr.wr.ud.remote_qpn  = qpn;
    wr.wr.ud.remote_qkey = QKEY;
    ibv_send_wr *bad     = nullptr;
    const int rc         = ibv_post_send(qp_, &wr, &bad);
    if (ucs_unlikely(rc != 0)) {
        if (rc == ENOMEM) {
            return UCS_ERR_NO_RESOURCE;
        }
        ucs_error("ud_verbs: ibv_post_send on QP %u failed: %s", qp_->qp_num, std::strerror(rc));
        return UCS_ERR_IO_ERROR;
    }
    ++sq_outstanding_;
    ++sends_posted_;
    if (!inline_send) {
        ++meta_of(buffer).posted;
    }
    return UCS_OK;
}

void ud_verbs_iface::retire_ah(ibv_ah *ah)
{
    if (ah == nullptr) {
        return;
    }
    if (sends_completed_ == sends_posted_) {
        ibv_destroy_ah(ah);
        return;
    }
    retired_ahs_.emplace_back(sends_posted_, ah);
}

void ud_verbs_iface::destroy_retired_ahs()
{
    size_t done = 0;
    while ((done < retired_ahs_.size()) && (retired_ahs_[done].first <= sends_completed_)) {
        ibv_destroy_ah(retired_ahs_[done++].second);
    }
    retired_ahs_.erase(retired_ahs_.begin(), retired_ahs_.begin() + ptrdiff_t(done));
}

void ud_verbs_iface::linger(ud_verbs_ep *successor)
{
    add_ep(successor->id(), successor);
    lingering_.emplace_back(successor);
}

void ud_verbs_iface::reap_lingering(bool all)
{
    size_t kept = 0;
    for (auto &ep : lingering_) {
        if (all || ep->linger_over()) {
            ucs_debug("ud_verbs: ep %u stops lingering (%s)", ep->id(),
                      all ? "iface closed" : (ep->failed() ? "peer lost" : "FIN acknowledged"));
            ep.reset();
        } else {
            lingering_[kept++] = std::move(ep);
        }
    }
    lingering_.resize(kept);
}

void ud_verbs_iface::release_tx(uint8_t *buffer)
{
    ud_tx_meta &m = meta_of(buffer);
    m.released    = 1;
    if (m.posted == 0) {
        tx_pool_.put(buffer);
    }
}

void ud_verbs_iface::refill_rx()
{
    rx_posted_ += post_receives(
        rx_pool_, rx_headroom_, uint32_t(rx_length()), config_.rx_queue_len - rx_posted_,
        [this](ibv_recv_wr *wr, ibv_recv_wr **bad) { return ibv_post_recv(qp_, wr, bad); },
        "ud_verbs");
}

ud_verbs_iface::rx_peer *ud_verbs_iface::find_rx_peer(const ibv_wc &wc, const ud_header &hdr,
                                                      const uint8_t *grh)
{
    uint8_t gid[16] = {};
    if (wc.wc_flags & IBV_WC_GRH) {
        std::memcpy(gid, grh + 8, sizeof(gid)); /* the source GID */
    }
    auto matches = [&](const rx_peer &p) {
        return (p.qpn == wc.src_qp) && (p.src_id == hdr.src_id) &&
               (port_.ethernet || (p.lid == wc.slid)) &&
               (std::memcmp(p.gid, gid, sizeof(gid)) == 0);
    };
    /* The sender names us once it learned our id; checked, never trusted. */
    if ((hdr.dest_id != 0) && (hdr.dest_id <= rx_peers_.size()) &&
        (rx_peers_[hdr.dest_id - 1] != nullptr) && matches(*rx_peers_[hdr.dest_id - 1])) {
        return rx_peers_[hdr.dest_id - 1].get();
    }
    auto it = rx_by_source_.find(source_key(wc.src_qp, hdr.src_id));
    if (it != rx_by_source_.end()) {
        for (rx_peer *p : it->second) {
            if (matches(*p)) {
                return p;
            }
        }
    }
    return nullptr;
}

ibv_ah *ud_verbs_iface::ah_toward(const ibv_wc &wc, const uint8_t *grh)
{
    device_address from{};
    from.lid   = port_.ethernet ? 0 : uint16_t(wc.slid);
    from.flags = port_.ethernet ? device_address::ETHERNET : 0;
    if (wc.wc_flags & IBV_WC_GRH) {
        std::memcpy(from.gid, grh + 8, sizeof(from.gid));
    } else if (port_.ethernet) {
        ucs_debug("ud_verbs: dropping a packet without a GRH on RoCE");
        return nullptr;
    }
    ibv_ah_attr ah_attr;
    fill_ah_attr(port_, from, config_.sl, config_.traffic_class, config_.hop_limit, &ah_attr);
    ibv_ah *ah = ibv_create_ah(md_.dev().pd(), &ah_attr);
    if (ah == nullptr) {
        ucs_warn("ud_verbs: ibv_create_ah toward QP %u failed: %m", wc.src_qp);
    }
    return ah;
}

ud_verbs_iface::rx_peer *ud_verbs_iface::new_rx_peer(const ibv_wc &wc, const ud_header &hdr,
                                                     const uint8_t *grh)
{
    ibv_ah *ah = ah_toward(wc, grh);
    if (ah == nullptr) {
        return nullptr;
    }
    auto peer    = std::make_unique<rx_peer>();
    peer->qpn    = wc.src_qp;
    peer->src_id = hdr.src_id;
    peer->lid    = uint16_t(wc.slid);
    if (wc.wc_flags & IBV_WC_GRH) {
        std::memcpy(peer->gid, grh + 8, sizeof(peer->gid)); /* the source GID */
    } else {
        std::memset(peer->gid, 0, sizeof(peer->gid));
    }
    peer->first_psn    = hdr.psn;
    peer->expected_psn = hdr.psn;
    peer->ah           = ah;
    rx_peer *p         = peer.get();
    if (!free_rx_ids_.empty()) {
        peer->id = free_rx_ids_.back();
        free_rx_ids_.pop_back();
        rx_peers_[peer->id - 1] = std::move(peer);
    } else {
        peer->id = uint32_t(rx_peers_.size() + 1);
        rx_peers_.push_back(std::move(peer));
    }
    rx_by_source_[source_key(wc.src_qp, hdr.src_id)].push_back(p);
    return p;
}

const ud_verbs_iface::closed_source *ud_verbs_iface::closed_lately(const ibv_wc &wc,
                                                                   const ud_header &hdr) const
{
    const uint32_t psn = hdr.psn;
    const bool fin     = (hdr.flags & ud_header::FIN) != 0;
    auto it            = std::find_if(closed_.begin(), closed_.end(), [&](const closed_source &c) {
        return (c.qpn == wc.src_qp) && (c.src_id == hdr.src_id) &&
               (psn == (fin ? c.fin_psn : c.first_psn));
    });
    return (it == closed_.end()) ? nullptr : &*it;
}

void ud_verbs_iface::close_rx_peer(rx_peer *peer)
{
    if (peer->ack_due) {
        acks_due_.erase(std::find(acks_due_.begin(), acks_due_.end(), peer));
    }
    auto it = rx_by_source_.find(source_key(peer->qpn, peer->src_id));
    if (it != rx_by_source_.end()) {
        auto &list = it->second;
        list.erase(std::remove(list.begin(), list.end(), peer), list.end());
        if (list.empty()) {
            rx_by_source_.erase(it);
        }
    }
    /* Called for the FIN just delivered: the psn before the next. */
    const closed_source entry{peer->qpn, peer->src_id, peer->first_psn, peer->expected_psn - 1,
                              peer->id};
    if (closed_.size() < CLOSED_SOURCES) {
        closed_.push_back(entry);
    } else {
        closed_[closed_next_] = entry;
        closed_next_          = (closed_next_ + 1) % CLOSED_SOURCES;
    }
    retire_ah(peer->ah);
    const uint32_t id = peer->id;
    rx_peers_[id - 1].reset();
    free_rx_ids_.push_back(id);
    ucs_debug("ud_verbs: source QP %u ep %u closed (%zu sources left)", entry.qpn, entry.src_id,
              rx_peers_.size() - free_rx_ids_.size());
}

void ud_verbs_iface::handle_stale_fin(const ibv_wc &wc, const ud_header &hdr, const uint8_t *grh)
{
    const closed_source *closed = closed_lately(wc, hdr);
    if (closed == nullptr) {
        ucs_debug("ud_verbs: dropping a FIN (psn %u) from QP %u ep %u", hdr.psn, wc.src_qp,
                  hdr.src_id);
        return;
    }
    /* Its ACK was lost: the sender lingers until it hears one. */
    ibv_ah *ah = ah_toward(wc, grh);
    if (ah == nullptr) {
        return;
    }
    const ud_header ack{
        0, ud_header::ACK, ud_header::MAGIC, closed->src_id, closed->rx_id, 0, closed->fin_psn, 0};
    ucs_debug("ud_verbs: acknowledging again the FIN of closed source QP %u ep %u", wc.src_qp,
              hdr.src_id);
    post(ah, wc.src_qp, reinterpret_cast<const uint8_t *>(&ack), sizeof(ack), nullptr);
    retire_ah(ah);
}

void ud_verbs_iface::handle_ack_packet(const ibv_wc &wc, const ud_header &hdr, const uint8_t *grh)
{
    ud_verbs_ep *ep = find_ep(hdr.dest_id);
    if ((ep == nullptr) || !ep->from_peer(wc, grh)) {
        ucs_debug("ud_verbs: dropping an ACK for ep %u from QP %u", hdr.dest_id, wc.src_qp);
        return;
    }
    ep->handle_ack(hdr.ack_psn, hdr.src_id, ucs::sys::get_time());
}

void ud_verbs_iface::handle_recv(const ibv_wc &wc)
{
    auto *buffer = reinterpret_cast<uint8_t *>(wc.wr_id);
    --rx_posted_;
    if (ucs_unlikely(wc.status != IBV_WC_SUCCESS)) {
        if (wc.status != IBV_WC_WR_FLUSH_ERR) {
            ucs_debug("ud_verbs: receive completion with error: %s", ibv_wc_status_str(wc.status));
        }
        rx_pool_.put(buffer);
        return;
    }
    const uint8_t *grh = buffer + rx_headroom_;
    uint8_t *packet    = buffer + rx_headroom_ + UD_GRH_LEN;
    /* Everything below comes from the peer: checked before use. */
    if (ucs_unlikely((wc.byte_len < UD_GRH_LEN + sizeof(ud_header)) ||
                     (wc.byte_len > rx_length()))) {
        ucs_warn("ud_verbs: dropping a packet of %u bytes from QP %u", wc.byte_len, wc.src_qp);
        rx_pool_.put(buffer);
        return;
    }
    ud_header hdr;
    std::memcpy(&hdr, packet, sizeof(hdr));
    if (ucs_unlikely((hdr.magic != ud_header::MAGIC) || (hdr.flags & ~ud_header::KNOWN) ||
                     ((hdr.flags & ud_header::AM) && (hdr.am_id >= AM_ID_MAX)))) {
        ucs_warn("ud_verbs: dropping a malformed packet from QP %u (magic 0x%x flags 0x%x)",
                 wc.src_qp, hdr.magic, hdr.flags);
        rx_pool_.put(buffer);
        return;
    }
    if (hdr.flags & ud_header::ACK) {
        handle_ack_packet(wc, hdr, grh);
        rx_pool_.put(buffer);
        return;
    }
    rx_peer *peer = find_rx_peer(wc, hdr, grh);
    if ((peer == nullptr) && (hdr.flags & ud_header::FIN)) {
        handle_stale_fin(wc, hdr, grh);
        rx_pool_.put(buffer);
        return;
    }
    if (peer == nullptr) {
        /* Only an ep's first packet starts a source: a later one came
         * before it (the first is retransmitted with it). A copy of the
         * first packet of a source that closed is late, not new. */
        if (!(hdr.flags & ud_header::SYN) || (closed_lately(wc, hdr) != nullptr) ||
            ((peer = new_rx_peer(wc, hdr, grh)) == nullptr)) {
            ucs_debug("ud_verbs: dropping psn %u of a new source (QP %u ep %u)", hdr.psn, wc.src_qp,
                      hdr.src_id);
            rx_pool_.put(buffer);
            return;
        }
    } else if ((hdr.flags & ud_header::SYN) && (hdr.psn != peer->first_psn)) {
        /* Another ep with the same QP number and id (a new process). */
        peer->first_psn    = hdr.psn;
        peer->expected_psn = hdr.psn;
    }
    if (!peer->ack_due) {
        peer->ack_due = true;
        acks_due_.push_back(peer);
    }
    if (hdr.psn != peer->expected_psn) {
        /* A duplicate (acknowledged again) or one after a lost packet. */
        rx_pool_.put(buffer);
        return;
    }
    ++peer->expected_psn;
    if (hdr.flags & ud_header::FIN) {
        /* Everything before it was delivered: acknowledged now, while the
         * source's address handle is still ours, then forgotten. */
        rx_pool_.put(buffer);
        send_ack(*peer);
        close_rx_peer(peer);
        return;
    }
    if (!(hdr.flags & ud_header::AM)) {
        rx_pool_.put(buffer); /* a keepalive */
        return;
    }
    uint8_t *data             = packet + sizeof(ud_header);
    const ucs_status_t status = invoke_am_handler(hdr.am_id, data,
                                                  wc.byte_len - UD_GRH_LEN - sizeof(ud_header),
                                                  am_cb_flag::DESC);
    if (status != UCS_INPROGRESS) {
        rx_pool_.put(buffer);
    }
}

void ud_verbs_iface::release_am_desc(void *data)
{
    rx_pool_.put(static_cast<uint8_t *>(data) - sizeof(ud_header) - UD_GRH_LEN - rx_headroom_);
}

bool ud_verbs_iface::send_ack(rx_peer &peer)
{
    const ud_header hdr{
        0, ud_header::ACK, ud_header::MAGIC, peer.src_id, peer.id, 0, peer.expected_psn - 1, 0};
    return post(peer.ah, peer.qpn, reinterpret_cast<const uint8_t *>(&hdr), sizeof(hdr), nullptr) ==
           UCS_OK;
}

void ud_verbs_iface::send_acks()
{
    size_t kept = 0;
    for (rx_peer *peer : acks_due_) {
        if (send_ack(*peer)) {
            peer->ack_due = false;
        } else {
            acks_due_[kept++] = peer; /* no send slot: the next progress */
        }
    }
    acks_due_.resize(kept);
}

unsigned ud_verbs_iface::poll_recv()
{
    ibv_wc wc[POLL_BATCH];
    const int n = cqs_.poll_recv(wc, int(std::min(config_.rx_max_poll, POLL_BATCH)));
    for (int i = 0; i < n; ++i) {
        handle_recv(wc[i]);
    }
    if (rx_posted_ < config_.rx_queue_len) {
        refill_rx();
    }
    /* Acknowledge what this poll took (and duplicates), at once. */
    if (!acks_due_.empty()) {
        send_acks();
    }
    return unsigned(n);
}

unsigned ud_verbs_iface::poll_send()
{
    ibv_wc wc[POLL_BATCH];
    const int n = cqs_.poll_send(wc, int(std::min(config_.tx_max_poll, POLL_BATCH)));
    for (int i = 0; i < n; ++i) {
        if (sq_outstanding_ > 0) {
            --sq_outstanding_;
        }
        if (ucs_unlikely(wc[i].status != IBV_WC_SUCCESS)) {
            /* Lost like a dropped packet: retransmission or the timeout
             * takes care of it. */
            ucs_debug("ud_verbs: send completion with error: %s", ibv_wc_status_str(wc[i].status));
        }
        if (wc[i].wr_id != 0) {
            auto *buffer  = reinterpret_cast<uint8_t *>(wc[i].wr_id);
            ud_tx_meta &m = meta_of(buffer);
            if ((--m.posted == 0) && m.released) {
                tx_pool_.put(buffer);
            }
        }
    }
    sends_completed_ += unsigned(std::max(n, 0));
    if (!retired_ahs_.empty()) {
        destroy_retired_ahs();
    }
    return unsigned(n);
}

unsigned ud_verbs_iface::check_timers()
{
    const ucs::sys::ticks_t now = ucs::sys::get_time();
    if (now < next_timer_) {
        return 0;
    }
    next_timer_ = now + std::max<ucs::sys::ticks_t>(1, tick_ / 2);
    /* An ep may fail and run completions that destroy eps: work on a copy. */
    std::vector<uint32_t> ids;
    for (const auto &[id, ep] : eps_) {
        if (static_cast<ud_verbs_ep *>(ep)->has_unacked()) {
            ids.push_back(id);
        }
    }
    for (uint32_t id : ids) {
        if (ud_verbs_ep *ep = find_ep(id)) {
            ep->check_timers(now);
        }
    }
    return 0;
}

unsigned ud_verbs_iface::progress()
{
    unsigned count = poll_send() + poll_recv();
    if (!eps_.empty()) {
        count += check_timers();
    }
    if (has_pending_eps()) {
        count += dispatch_pending();
    }
    if (ucs_unlikely(!acks_due_.empty())) {
        send_acks();
    }
    if (ucs_unlikely(has_reports())) {
        count += report_errors();
    }
    if (ucs_unlikely(!lingering_.empty())) {
        reap_lingering(false);
    }
    return count;
}

ucs_status_t ud_verbs_iface::fence(unsigned)
{
    return UCS_OK; /* one ep's packets are delivered in order */
}

ucs_status_t ud_verbs_iface::event_fd_get(int *fd_p)
{
    if (fd_p == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    *fd_p = cqs_.fd();
    return UCS_OK;
}

ucs_status_t ud_verbs_iface::event_arm(unsigned events)
{
    if (has_reports() || !acks_due_.empty() || has_pending_eps()) {
        return UCS_ERR_BUSY;
    }
    /* Retransmission timers run in progress(): a worker with packets not
     * yet acknowledged must not sleep. */
    for (const auto &[id, ep] : eps_) {
        if (static_cast<ud_verbs_ep *>(ep)->has_unacked()) {
            return UCS_ERR_BUSY;
        }
    }
    return cqs_.arm(events);
}

} // namespace uct::ib
