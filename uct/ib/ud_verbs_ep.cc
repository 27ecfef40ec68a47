/*
 * ud_verbs ep: an address handle to a peer iface, the window of packets not
 * yet acknowledged, retransmission and failure, flush and pending.
 */
#include <uct/ib/ud_verbs.h>

#include <ucs/debug/log.h>
#include <ucs/sys/random.h>

#include <algorithm>
#include <cstring>

namespace uct::ib {

namespace {

/* psn a comes before psn b (32-bit serial arithmetic). */
bool psn_before(uint32_t a, uint32_t b)
{
    return int32_t(a - b) < 0;
}

} // namespace

ud_verbs_ep::ud_verbs_ep(ud_verbs_iface &iface, uint32_t id) :
    ib_ep_base(iface), iface_(iface), id_(id)
{
}

ud_verbs_ep::ud_verbs_ep(ud_verbs_ep &destroyed, linger_tag) :
    ib_ep_base(destroyed.iface_), iface_(destroyed.iface_), id_(destroyed.id_), ah_(destroyed.ah_),
    peer_qpn_(destroyed.peer_qpn_), peer_lid_(destroyed.peer_lid_),
    peer_ethernet_(destroyed.peer_ethernet_), peer_rx_id_(destroyed.peer_rx_id_),
    first_psn_(destroyed.first_psn_), next_psn_(destroyed.next_psn_),
    last_ack_time_(destroyed.last_ack_time_), rto_(destroyed.rto_),
    rto_deadline_(destroyed.rto_deadline_), lingering_(true)
{
    std::memcpy(peer_gid_, destroyed.peer_gid_, sizeof(peer_gid_));
    for (const tx_entry &e : destroyed.window_) {
        window_.push_back(e);
    }
    destroyed.window_.clear();
    destroyed.ah_ = nullptr;
    /* Its flushes are the destroyed ep's: no callback runs any more. */
    try_send_fin();
}

ud_verbs_ep::~ud_verbs_ep()
{
    iface_.remove_ep(id_, this);
    /* The peer keeps per-source state once it heard from us, and what is
     * unacknowledged is still owed to it: a successor lingers with both
     * until the FIN is acknowledged. */
    if (!lingering_ && (failed_ == UCS_OK) && (ah_ != nullptr) &&
        ((peer_rx_id_ != 0) || !window_.empty())) {
        auto *successor = new (std::nothrow) ud_verbs_ep(*this, linger_tag{});
        if (successor != nullptr) {
            iface_.linger(successor);
        }
    }
    /* Nothing completes any more: buffers go back, no callback runs. */
    for (const tx_entry &e : window_) {
        iface_.release_tx(e.buffer);
    }
    iface_.retire_ah(ah_);
}

ucs_status_t ud_verbs_ep::init(const device_address &dev, const ud_iface_address &addr)
{
    const ud_verbs_config &cfg = iface_.config();
    ibv_ah_attr ah_attr;
    fill_ah_attr(iface_.port(), dev, cfg.sl, cfg.traffic_class, cfg.hop_limit, &ah_attr);
    ah_ = ibv_create_ah(iface_.dev().pd(), &ah_attr);
    if (ah_ == nullptr) {
        ucs_error("ud_verbs: ibv_create_ah toward QP %u failed: %m", addr.qpn);
        return UCS_ERR_IO_ERROR;
    }
    peer_qpn_      = addr.qpn;
    peer_lid_      = dev.lid;
    peer_ethernet_ = (dev.flags & device_address::ETHERNET) != 0;
    std::memcpy(peer_gid_, dev.gid, sizeof(peer_gid_));
    first_psn_ = uint32_t(ucs::sys::random_u64());
    next_psn_  = first_psn_;
    rto_       = iface_.tick();
    return UCS_OK;
}

bool ud_verbs_ep::from_peer(const ibv_wc &wc, const uint8_t *grh) const
{
    if (wc.src_qp != peer_qpn_) {
        return false;
    }
    if (!peer_ethernet_) {
        return wc.slid == peer_lid_;
    }
    /* RoCE: routed by GID, the source GID is in the GRH area. */
    return (wc.wc_flags & IBV_WC_GRH) && (std::memcmp(grh + 8, peer_gid_, 16) == 0);
}

ucs_status_t ud_verbs_ep::ready() const
{
    if (ucs_unlikely(failed_ != UCS_OK)) {
        return failed_;
    }
    if (ucs_unlikely((window_.size() >= iface_.window_limit()) || iface_.sq_full() ||
                     pending_blocks())) {
        return UCS_ERR_NO_RESOURCE;
    }
    return UCS_OK;
}

ucs_status_t ud_verbs_ep::post_entry(const tx_entry &e)
{
    uint8_t *packet = e.buffer + ud_verbs_iface::TX_META;
    /* The peer's id for us may have been learned since. */
    std::memcpy(packet + offsetof(ud_header, dest_id), &peer_rx_id_, sizeof(peer_rx_id_));
    return iface_.post(ah_, peer_qpn_, packet, e.length, e.buffer);
}

ucs_status_t ud_verbs_ep::send_packet(uint8_t *buffer, uint8_t flags, am_id_t id, size_t payload)
{
    const uint32_t psn = next_psn_;
    if (psn == first_psn_) {
        flags |= ud_header::SYN;
    }
    const ud_header hdr{id, flags, ud_header::MAGIC, peer_rx_id_, id_, psn, 0, 0};
    std::memcpy(buffer + ud_verbs_iface::TX_META, &hdr, sizeof(hdr));
    const tx_entry e{psn, buffer, uint32_t(sizeof(ud_header) + payload)};
    const ucs_status_t status = post_entry(e);
    if (status != UCS_OK) {
        return status;
    }
    if (window_.empty()) {
        last_ack_time_ = ucs::sys::get_time();
        rto_           = iface_.tick();
        rto_deadline_  = last_ack_time_ + rto_;
    }
    window_.push_back(e);
    ++next_psn_;
    return UCS_OK;
}

void ud_verbs_ep::try_send_fin()
{
    if (!owes_fin() || (window_.size() >= iface_.window_limit()) || iface_.sq_full()) {
        return; /* again from check_timers() */
    }
    uint8_t *buffer = iface_.tx_buffers().get();
    if (buffer == nullptr) {
        return;
    }
    std::memset(buffer, 0, ud_verbs_iface::TX_META);
    if (send_packet(buffer, ud_header::FIN, 0, 0) != UCS_OK) {
        iface_.tx_buffers().put(buffer);
        return;
    }
    fin_sent_ = true;
}

ucs_status_t ud_verbs_ep::am_short(am_id_t id, uint64_t header, const void *payload,
                                   unsigned length)
{
    if (ucs_unlikely((id >= AM_ID_MAX) || (length + sizeof(header) > iface_.attr().am.max_short))) {
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
    std::memset(buffer, 0, ud_verbs_iface::TX_META);
    uint8_t *data = buffer + ud_verbs_iface::TX_META + sizeof(ud_header);
    std::memcpy(data, &header, sizeof(header));
    if (length != 0) {
        std::memcpy(data + sizeof(header), payload, length);
    }
    status = send_packet(buffer, ud_header::AM, id, sizeof(header) + length);
    if (status != UCS_OK) {
        iface_.tx_buffers().put(buffer);
    }
    return status;
}

ssize_t ud_verbs_ep::am_bcopy(am_id_t id, pack_callback_t pack, void *arg, unsigned)
{
    if (ucs_unlikely(id >= AM_ID_MAX)) {
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
    std::memset(buffer, 0, ud_verbs_iface::TX_META);
    const size_t length = pack(buffer + ud_verbs_iface::TX_META + sizeof(ud_header), arg);
    if (length > iface_.attr().am.max_bcopy) {
        iface_.tx_buffers().put(buffer);
        return UCS_ERR_INVALID_PARAM;
    }
    status = send_packet(buffer, ud_header::AM, id, length);
    if (status != UCS_OK) {
        iface_.tx_buffers().put(buffer);
        return status;
    }
    return ssize_t(length);
}

void ud_verbs_ep::handle_ack(uint32_t ack_psn, uint32_t rx_id, ucs::sys::ticks_t now)
{
    if (failed_ != UCS_OK) {
        return;
    }
    /* Only an acknowledgement of something in the window counts. */
    if (window_.empty() || psn_before(ack_psn, window_.front().psn) ||
        !psn_before(ack_psn, next_psn_)) {
        return;
    }
    peer_rx_id_ = rx_id;
    while (!window_.empty() && !psn_before(ack_psn, window_.front().psn)) {
        iface_.release_tx(window_.front().buffer);
        window_.pop_front();
    }
    last_ack_time_                    = now;
    rto_                              = iface_.tick();
    rto_deadline_                     = now + rto_;
    const std::shared_ptr<bool> alive = alive_;
    while (!flushes_.empty() && !psn_before(ack_psn, flushes_.front().psn)) {
        completion *comp = flushes_.front().comp;
        flushes_.pop_front();
        invoke_completion(comp, UCS_OK);
        if (!*alive) {
            return;
        }
    }
    if (!pending_.empty()) {
        iface_.schedule_pending(this);
    }
    if (owes_fin()) {
        try_send_fin(); /* the window has room now */
    }
}

void ud_verbs_ep::check_timers(ucs::sys::ticks_t now)
{
    check_window(now);
    /* After the window's timers: a FIN sent now starts its clock after `now`. */
    if (owes_fin()) {
        try_send_fin();
    }
}

void ud_verbs_ep::check_window(ucs::sys::ticks_t now)
{
    if (window_.empty() || (failed_ != UCS_OK)) {
        return;
    }
    if (now - last_ack_time_ >= iface_.timeout()) {
        ucs_debug("ud_verbs: ep %u: no acknowledgement from QP %u, the peer is lost", id_,
                  peer_qpn_);
        fail(UCS_ERR_ENDPOINT_TIMEOUT);
        return;
    }
    if (now < rto_deadline_) {
        return;
    }
    /* Go-back-N: the whole window again, as far as the send queue takes it. */
    ucs_debug("ud_verbs: ep %u: sending psn %u..%u to QP %u again", id_, window_.front().psn,
              last_psn(), peer_qpn_);
    for (const tx_entry &e : window_) {
        if (post_entry(e) != UCS_OK) {
            break;
        }
    }
    rto_          = std::min(iface_.rto_max(),
                             ucs::sys::ticks_t(double(rto_) * iface_.config().timer_backoff));
    rto_deadline_ = now + rto_;
}

void ud_verbs_ep::fail(ucs_status_t status)
{
    if (failed_ != UCS_OK) {
        return;
    }
    failed_ = status;
    for (const tx_entry &e : window_) {
        iface_.release_tx(e.buffer);
    }
    window_.clear();
    /* A lingering ep's loss is nobody's error any more: iface flushes that
     * waited for it are done, and the iface lets it go. */
    const std::shared_ptr<bool> alive = alive_;
    while (!flushes_.empty()) {
        completion *comp = flushes_.front().comp;
        flushes_.pop_front();
        invoke_completion(comp, lingering_ ? UCS_OK : status);
        if (!*alive) {
            return;
        }
    }
    if (!lingering_) {
        iface_.report(this, status);
    }
}

bool ud_verbs_ep::flush_ready() const
{
    return (failed_ != UCS_OK) || pending_.empty();
}

ucs_status_t ud_verbs_ep::flush(unsigned, completion *comp)
{
    if (failed_ != UCS_OK) {
        return lingering_ ? UCS_OK : failed_;
    }
    if (!pending_.empty()) {
        return UCS_ERR_NO_RESOURCE;
    }
    if (window_.empty()) {
        return UCS_OK;
    }
    if (comp != nullptr) {
        flushes_.push_back({last_psn(), comp});
    }
    return UCS_INPROGRESS;
}

ucs_status_t ud_verbs_ep::fence(unsigned)
{
    return UCS_OK; /* packets are delivered in the order sent */
}

ucs_status_t ud_verbs_ep::check(unsigned, completion *)
{
    /* An idle ep learns of a dead peer only by sending: a keepalive packet
     * the peer acknowledges, or the timeout fails the ep. */
    if ((failed_ != UCS_OK) || !window_.empty() || (ready() != UCS_OK)) {
        return UCS_OK;
    }
    uint8_t *buffer = iface_.tx_buffers().get();
    if (buffer == nullptr) {
        return UCS_OK;
    }
    std::memset(buffer, 0, ud_verbs_iface::TX_META);
    if (send_packet(buffer, 0, 0, 0) != UCS_OK) {
        iface_.tx_buffers().put(buffer);
    }
    return UCS_OK;
}

} // namespace uct::ib
