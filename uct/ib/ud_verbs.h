/*
 * ud_verbs: unreliable-datagram queue pairs through libibverbs, made
 * reliable here (go-back-N).
 *
 * An iface is one UD QP with a send CQ, a receive CQ and receive buffers
 * posted on the QP itself (each with the 40-byte GRH area first). Eps are
 * connected to a peer iface (CONNECT_TO_IFACE): an address handle to the
 * peer port and the peer iface's QP number; no QP per peer.
 *
 * Reliability: every data packet carries a 32-bit packet sequence number
 * (psn) per ep. The receiver keeps, per source (the sender's QP number, ep
 * id, LID and GID), the next psn it expects: that packet is delivered, a
 * duplicate is dropped and acknowledged again, a later one is dropped.
 * It acknowledges cumulatively with a separate ACK packet to the sender's
 * ep after each receive poll that took a packet from that source, so a
 * ping-pong never waits for a timer. The sender keeps every unacknowledged
 * packet in its registered send buffer (the window: at most MAX_WINDOW and
 * TX_QUEUE_LEN), frees it on the acknowledgement, and sends the whole window
 * again after TIMER_TICK without one (the wait growing by TIMER_BACKOFF, up
 * to a cap); after TIMEOUT without an acknowledgement the ep fails.
 * Timers are checked from progress() against a cycle-counter clock.
 *
 * Closing: a destroyed ep that sent anything lingers: the iface keeps its
 * state (a new ep object under the same id, the user's is gone), sends the
 * window again until it is acknowledged, and ends it with a FIN, a packet
 * of its own psn in the window. The receiver, having delivered everything
 * before it, acknowledges the FIN, frees what it kept for that source and
 * remembers it among the last CLOSED_SOURCES closed ones: a late copy of
 * its first packet cannot start it again, and a FIN sent again (its ACK
 * lost) is acknowledged again. The lingering state goes with the FIN's
 * acknowledgement, or at TIMEOUT. Address handles are destroyed once the
 * sends posted through them have completed.
 */
#ifndef UCT_IB_UD_VERBS_H
#define UCT_IB_UD_VERBS_H

#include <uct/base/uct_worker.h>
#include <uct/ib/ib_buffers.h>
#include <uct/ib/ib_cq.h>
#include <uct/ib/ib_iface_base.h>
#include <uct/ib/ib_md.h>
#include <ucs/datastruct/ring_fifo.h>
#include <ucs/sys/clock.h>

#include <memory>
#include <unordered_map>
#include <vector>

namespace uct::ib {

/* The iface as a peer connects to it. */
struct ud_iface_address {
    uint32_t qpn;
    uint8_t version;
    uint8_t reserved[3];
    static constexpr uint8_t VERSION = 1;
};
static_assert(sizeof(ud_iface_address) == 8, "ud_iface_address layout");

/*
 * In front of every packet's payload (after the 40-byte GRH area on the
 * receiving side, so the payload starts 64 bytes into the receive buffer).
 * Data packets: dest_id is the receiver's id of this source (0 until an
 * ACK told it), src_id the sending ep's id, psn its sequence number.
 * ACK packets: dest_id is the acknowledged ep's id, src_id the receiver's
 * id of that source, ack_psn the last psn received in order.
 */
struct ud_header {
    uint8_t am_id;
    uint8_t flags;
    uint16_t magic;
    uint32_t dest_id;
    uint32_t src_id;
    uint32_t psn;
    uint32_t ack_psn;
    uint32_t reserved;

    static constexpr uint16_t MAGIC = 0x7564;  /* "ud" */
    static constexpr uint8_t AM     = 1u << 0; /* carries an active message */
    static constexpr uint8_t SYN    = 1u << 1; /* the ep's first psn */
    static constexpr uint8_t ACK    = 1u << 2; /* an ACK packet (no psn) */
    static constexpr uint8_t FIN    = 1u << 3; /* the ep is gone: its last packet */
    static constexpr uint8_t KNOWN  = AM | SYN | ACK | FIN;
};
static_assert(sizeof(ud_header) == 24, "ud_header layout");

constexpr size_t UD_GRH_LEN = 40;

class ud_verbs_iface;

class ud_verbs_ep final : public ib_ep_base {
public:
    ud_verbs_ep(ud_verbs_iface &iface, uint32_t id);
    ~ud_verbs_ep() override;

    /* Lingering: takes over a destroyed ep's peer and window. */
    struct linger_tag {};
    ud_verbs_ep(ud_verbs_ep &destroyed, linger_tag);

    ucs_status_t init(const device_address &dev, const ud_iface_address &addr);

    ucs_status_t am_short(am_id_t id, uint64_t header, const void *payload,
                          unsigned length) override;
    ssize_t am_bcopy(am_id_t id, pack_callback_t pack, void *arg, unsigned flags) override;
    ucs_status_t flush(unsigned flags, completion *comp) override;
    ucs_status_t fence(unsigned flags) override;
    ucs_status_t check(unsigned flags, completion *comp) override;

    /* For the iface. */
    uint32_t id() const { return id_; }
    /* Whether a packet (its GRH area at `grh`) came from this ep's peer. */
    bool from_peer(const ibv_wc &wc, const uint8_t *grh) const;
    /* An ACK of everything up to `ack_psn`; `rx_id` names us at the peer. */
    void handle_ack(uint32_t ack_psn, uint32_t rx_id, ucs::sys::ticks_t now);
    /* The window's timers, then a FIN still owed. */
    void check_timers(ucs::sys::ticks_t now);
    /* Work for the timers: packets not acknowledged, or a FIN still owed. */
    bool has_unacked() const { return !window_.empty() || owes_fin(); }
    bool flush_ready() const override;
    void fail(ucs_status_t status);
    bool failed() const { return failed_ != UCS_OK; }
    /* Lingering: the FIN was acknowledged, or the peer was lost. */
    bool linger_over() const { return (failed_ != UCS_OK) || (fin_sent_ && window_.empty()); }

private:
    struct tx_entry {
        uint32_t psn;
        uint8_t *buffer; /* the tx pool buffer holding the packet */
        uint32_t length; /* header and payload */
    };
    struct flush_entry {
        uint32_t psn; /* done once this one is acknowledged */
        completion *comp;
    };

    ucs_status_t ready() const override;
    /* Fills the header of `buffer` (a tx pool buffer) and sends it, keeping
     * it in the window. */
    ucs_status_t send_packet(uint8_t *buffer, uint8_t flags, am_id_t id, size_t payload);
    ucs_status_t post_entry(const tx_entry &e);
    uint32_t last_psn() const { return next_psn_ - 1; }
    /* Retransmits the window or fails the ep when it waited too long. */
    void check_window(ucs::sys::ticks_t now);
    /* Lingering and its FIN not yet in the window (no send slot then). */
    bool owes_fin() const { return lingering_ && !fin_sent_ && (failed_ == UCS_OK); }
    /* Puts the FIN in the window once there is room (a send slot, a buffer). */
    void try_send_fin();

    ud_verbs_iface &iface_;
    uint32_t id_;
    ibv_ah *ah_           = nullptr;
    uint32_t peer_qpn_    = 0;
    uint16_t peer_lid_    = 0;
    bool peer_ethernet_   = false;
    uint8_t peer_gid_[16] = {};
    uint32_t peer_rx_id_  = 0; /* our id at the peer, once acked */
    uint32_t first_psn_   = 0;
    uint32_t next_psn_    = 0;
    ucs_status_t failed_  = UCS_OK;
    ucs::ring_fifo<tx_entry> window_;
    ucs::ring_fifo<flush_entry> flushes_;
    ucs::sys::ticks_t last_ack_time_ = 0; /* last progress of the window */
    ucs::sys::ticks_t rto_           = 0;
    ucs::sys::ticks_t rto_deadline_  = 0;
    bool lingering_                  = false;
    bool fin_sent_                   = false;
};

class ud_verbs_iface final : public ib_iface_base {
public:
    ud_verbs_iface(ib_md &md, const port_info &port, worker &worker, const iface_params &params,
                   const ud_verbs_config &config);
    ~ud_verbs_iface() override;

    ucs_status_t init();

    const iface_attr &attr() const override { return attr_; }
    md &owner_md() const override { return md_; }
    ucs_status_t get_device_address(void *buffer) const override;
    ucs_status_t get_address(void *buffer) const override;
    bool is_reachable(const void *dev_addr, size_t dev_addr_len, const void *iface_addr,
                      size_t iface_addr_len) const override;
    ucs_status_t ep_create_connected(const void *dev_addr, size_t dev_addr_len,
                                     const void *iface_addr, size_t iface_addr_len,
                                     ep **ep_p) override;
    unsigned progress() override;
    ucs_status_t fence(unsigned flags) override;
    void release_am_desc(void *data) override;
    ucs_status_t event_fd_get(int *fd_p) override;
    ucs_status_t event_arm(unsigned events) override;

    /* For the eps. */
    static constexpr uint32_t QKEY = 0x1ee7a330;
    /* Bytes in front of the header in a tx buffer (ud_tx_meta). */
    static constexpr size_t TX_META = 16;
    const ud_verbs_config &config() const { return config_; }
    const port_info &port() const { return port_; }
    device &dev() const { return md_.dev(); }
    buffer_pool &tx_buffers() { return tx_pool_; }
    size_t max_packet() const { return max_packet_; }
    size_t window_limit() const { return window_limit_; }
    ucs::sys::ticks_t tick() const { return tick_; }
    ucs::sys::ticks_t rto_max() const { return rto_max_; }
    ucs::sys::ticks_t timeout() const { return timeout_; }
    bool sq_full() const { return sq_outstanding_ >= sq_len_; }
    /* Posts `length` bytes at `packet` to `qpn` through `ah`; `buffer` (its
     * tx pool buffer, or nullptr) stays until the send completes. */
    ucs_status_t post(ibv_ah *ah, uint32_t qpn, const uint8_t *packet, uint32_t length,
                      uint8_t *buffer);
    /* A tx buffer the window no longer holds: free once no send uses it. */
    void release_tx(uint8_t *buffer);
    /* Destroy `ah` once every send posted so far has completed. */
    void retire_ah(ibv_ah *ah);
    /* Keeps a destroyed ep's lingering successor until linger_over(). */
    void linger(ud_verbs_ep *successor);

private:
    /* What the iface knows of one sender (peer iface QP, ep id, port). */
    struct rx_peer {
        uint32_t qpn;
        uint32_t src_id;
        uint16_t lid;
        uint8_t gid[16];
        uint32_t id; /* ours, told to the sender in ACKs */
        uint32_t first_psn;
        uint32_t expected_psn;
        bool ack_due = false;
        ibv_ah *ah   = nullptr;
    };

    unsigned poll_send();
    unsigned poll_recv();
    unsigned check_timers();
    /* The ep of `id` (eps_ are keyed by ep id), or nullptr. */
    ud_verbs_ep *find_ep(uint32_t id) const
    {
        auto it = eps_.find(id);
        return (it == eps_.end()) ? nullptr : static_cast<ud_verbs_ep *>(it->second);
    }
    void handle_recv(const ibv_wc &wc);
    void handle_ack_packet(const ibv_wc &wc, const ud_header &hdr, const uint8_t *grh);
    rx_peer *find_rx_peer(const ibv_wc &wc, const ud_header &hdr, const uint8_t *grh);
    rx_peer *new_rx_peer(const ibv_wc &wc, const ud_header &hdr, const uint8_t *grh);
    void send_acks();
    bool send_ack(rx_peer &peer);
    /* A FIN from no known source: acknowledged again if it closed one. */
    void handle_stale_fin(const ibv_wc &wc, const ud_header &hdr, const uint8_t *grh);
    void close_rx_peer(rx_peer *peer);
    struct closed_source;
    /* The source closed lately that `hdr` came from (a copy of its first
     * packet or of its FIN), or nullptr. */
    const closed_source *closed_lately(const ibv_wc &wc, const ud_header &hdr) const;
    /* An address handle toward the sender of `wc`, or nullptr. */
    ibv_ah *ah_toward(const ibv_wc &wc, const uint8_t *grh);
    void destroy_retired_ahs();
    /* Deletes the lingering eps whose linger is over (all with `all`). */
    void reap_lingering(bool all);
    void refill_rx();
    /* A posted receive: the GRH area and one MTU. */
    size_t rx_length() const { return UD_GRH_LEN + mtu_; }

    ib_md &md_;
    port_info port_;
    worker &worker_;
    ud_verbs_config config_;
    iface_attr attr_;
    size_t rx_headroom_;
    size_t mtu_;
    size_t max_packet_;
    size_t max_inline_ = 0;
    unsigned window_limit_;
    unsigned sq_len_;
    unsigned sq_outstanding_ = 0;
    ucs::sys::ticks_t tick_ = 0, rto_max_ = 0, timeout_ = 0, next_timer_ = 0;
    cq_pair cqs_;
    ibv_qp *qp_ = nullptr;
    buffer_pool rx_pool_;
    buffer_pool tx_pool_;
    unsigned rx_posted_  = 0;
    uint32_t next_ep_id_ = 1;
    std::vector<std::unique_ptr<rx_peer>> rx_peers_; /* by id - 1; null once closed */
    std::vector<uint32_t> free_rx_ids_;
    std::unordered_map<uint64_t, std::vector<rx_peer *>> rx_by_source_;
    std::vector<rx_peer *> acks_due_;
    /* The sources closed last (a ring): QP, ep id, first psn, the FIN's
     * psn and our id for the source (for a repeated FIN's ACK). */
    struct closed_source {
        uint32_t qpn;
        uint32_t src_id;
        uint32_t first_psn;
        uint32_t fin_psn;
        uint32_t rx_id;
    };
    static constexpr size_t CLOSED_SOURCES = 256;
    std::vector<closed_source> closed_;
    size_t closed_next_ = 0;
    /* Address handles waiting for the sends posted through them. */
    uint64_t sends_posted_ = 0, sends_completed_ = 0;
    std::vector<std::pair<uint64_t, ibv_ah *>> retired_ahs_; /* by sends_posted_ stamp */
    std::vector<std::unique_ptr<ud_verbs_ep>> lingering_;
};

} // namespace uct::ib

#endif
