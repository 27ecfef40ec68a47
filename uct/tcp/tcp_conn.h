/*
 * One TCP connection of an iface, shared by at most one ep on each side.
 * The initiator's ep owns its end from the start; the acceptor's end is
 * unowned until an ep created towards the initiator's iface attaches to it.
 * When both sides' eps connect towards each other at once, the handshakes
 * pair them (by ep serial number) and one of the two connections is kept
 * for both: replies and acknowledgements then travel with the data, which
 * halves the packets of a ping-pong.
 * Either side receives and serves everything the other sends (messages,
 * requests, replies). When an ep goes away its end becomes unowned and a
 * DETACH frame tells the peer; an unowned end closes when the peer detaches
 * too, or on end-of-stream, so neither ep's lifetime depends on the other's.
 * Sockets are non-blocking and serviced from progress() only; no Asio
 * handler ever runs.
 */
#ifndef UCT_TCP_TCP_CONN_H
#define UCT_TCP_TCP_CONN_H

#include <uct/tcp/tcp_config.h>
#include <uct/tcp/tcp_fetch_ring.h>
#include <uct/base/pending_queue.h>
#include <uct/tcp/tcp_tx_queue.h>
#include <uct/tcp/tcp_wire.h>
#include <ucs/datastruct/ring_fifo.h>

#include <boost/asio/ip/tcp.hpp>

#include <sys/uio.h>

#include <chrono>
#include <cstdint>
#include <memory>

namespace uct::tcp {

class tcp_iface;

// clang-format off
enum class conn_state : uint8_t {
    CONNECTING,   /* outbound: connect() in flight, sends are buffered */
    WAIT_ACCEPT,  /* outbound: handshake sent, sends buffered until CONN_ACCEPT */
    WAIT_PEER,    /* outbound, rejected: the peer's own connection will be
                     adopted when it arrives; no socket meanwhile */
    HANDSHAKE,    /* inbound: waiting for the peer's handshake */
    CONNECTED,
    FAILED,       /* error seen; the iface reports it from progress() */
    CLOSED        /* socket closed, waiting to be freed */
};
// clang-format on

/* Orders two iface addresses (family, ip, port): <0, 0 or >0. */
int compare_iface_addr(const handshake &a, const handshake &b);

/* What an accepted connection becomes once its handshake was read. */
enum class pairing : uint8_t {
    NONE,   /* an ordinary accepted connection: answer CONN_ACCEPT */
    REJECT, /* our own ep's connection to that peer is kept instead */
    ADOPTED /* our ep's pending connection took over this socket */
};

class tcp_conn {
public:
    /* Takes over `fd`, a non-blocking TCP socket (a plain descriptor: an
     * Asio socket would also sit in Asio's own epoll set, and every packet
     * would wake both). */
    tcp_conn(tcp_iface &iface, int fd, bool outbound);
    ~tcp_conn();

    tcp_conn(const tcp_conn &)            = delete;
    tcp_conn &operator=(const tcp_conn &) = delete;

    ucs_status_t init();

    bool outbound() const { return outbound_; }
    conn_state state() const { return state_; }
    bool closed() const { return state_ == conn_state::CLOSED; }
    int fd() const { return fd_; }
    uint32_t epoll_events() const { return ev_mask_; }
    void set_epoll_events(uint32_t mask) { ev_mask_ = mask; }
    void set_owner_ep(ep *owner)
    {
        owner_ep_   = owner;
        ever_owned_ = true;
    }
    ep *owner_ep() const { return owner_ep_; }

    /* An accepted connection from `peer`'s ep number `conn_sn` that an ep
     * may attach to. */
    bool attachable_to(const boost::asio::ip::tcp::endpoint &peer, uint32_t conn_sn,
                       const iface_key &key) const;

    /* The peer's iface address and, for pairing, the ep serial number. */
    const handshake &peer() const { return peer_; }
    /* Our connection towards `hs`'s iface, made for our ep number hs.conn_sn,
     * and still waiting for the peer's answer. */
    bool pairs_with(const handshake &hs) const;
    /* Has sent nothing but its handshake yet: it may still give way. */
    bool establishing() const { return state_ <= conn_state::WAIT_PEER; }
    /* Received bytes beyond the handshake (a peer breaking the protocol). */
    bool rx_pending() const { return rx_tail_ > rx_head_; }

    /*
     * Both sides connected towards each other at once, and the peer's
     * connection is the one to keep: this (pending) connection closes its
     * own socket and takes over `accepted`'s, which closes; the buffered
     * sends follow a CONN_ACCEPT on it.
     */
    void adopt(tcp_conn &accepted);

    /* WAIT_PEER past its deadline: connects again (the peer's connection,
     * which it rejected ours for, is not coming). */
    void check_peer_wait(std::chrono::steady_clock::time_point now);
    /* Accepted and still without a handshake: closes it once past its
     * deadline (UCX_TCP_HANDSHAKE_TIMEOUT); true while it keeps waiting. */
    bool check_handshake_wait(std::chrono::steady_clock::time_point now);

    /*
     * The owning ep is going away: the end becomes unowned and the peer is
     * told; or, when nothing can be kept (broken, peer gone, zero-copy data
     * still referenced), the connection closes.
     */
    void detach();

    /* Starts a non-blocking connect to the iface at `peer` for our ep number
     * `conn_sn`, showing it `acceptor_key`; our handshake goes first, the
     * sends it buffers after the peer's CONN_ACCEPT. */
    ucs_status_t start_connect(const boost::asio::ip::tcp::endpoint &peer, uint32_t conn_sn,
                               const iface_key &acceptor_key);

    /* ---- send side, used by the ep operations ---- */

    /* UCS_OK when a new operation may be queued now. */
    ucs_status_t send_check() const
    {
        if (ucs_unlikely(state_ >= conn_state::FAILED)) {
            return failure_;
        }
        if (ucs_unlikely(!pending_.empty() && !dispatching_)) {
            return UCS_ERR_NO_RESOURCE; /* keep order behind queued requests */
        }
        if (ucs_unlikely(fence_seq_ != 0)) {
            return UCS_ERR_NO_RESOURCE; /* a fence waits for earlier replies */
        }
        return UCS_OK;
    }

    uint8_t *tx_reserve(size_t length) { return tx_.reserve(length); }

    /* Queues `length` reserved bytes and writes them if the socket was idle. */
    void tx_send(size_t length)
    {
        bool was_idle = tx_.empty();
        tx_.commit(length);
        if (was_idle) {
            tx_kick();
        }
    }

    /* A zero-copy send may be queued now (see tx_queue::zcopy_room). */
    bool zcopy_room() { return tx_.zcopy_room(); }

    /*
     * Queues a frame header (already reserved, `hdr_length` bytes) and the
     * caller's iov. UCS_OK if everything was written at once (comp will not
     * be called), UCS_INPROGRESS otherwise. A reply uses the reply slots.
     */
    ucs_status_t tx_send_zcopy(size_t hdr_length, const iov *iov, size_t iovcnt, completion *comp,
                               bool reply = false);

    fetch_ring &fetches() { return fetches_; }
    bool fetch_ready(unsigned capacity) { return fetches_.ensure(capacity) && !fetches_.full(); }
    void mark_remote_unacked() { remote_unacked_ = true; }

    /*
     * Operations after this wait until the replies to every request before
     * it arrived: a target reads the data of a large get only as the socket
     * takes it, so a later put could otherwise overwrite it first. Everything
     * else is applied in stream order and needs no wait.
     */
    void fence() { fence_seq_ = fetches_.empty() ? 0 : fetches_.last_seq(); }

    ucs_status_t pending_add(pending_req *req);
    void pending_purge(pending_purge_callback_t cb, void *arg);
    ucs_status_t flush(completion *comp);

    /* Nothing queued, nothing waiting for a reply. */
    bool idle() const
    {
        return tx_.empty() && fetches_.empty() && !remote_unacked_ && !establishing();
    }

    /* ---- progress, called by the iface ---- */

    /* Services epoll `events`; returns work done. */
    unsigned handle_events(uint32_t events);
    /* Few connections: try the socket without asking epoll. */
    unsigned poll_direct();

    /* Marks the connection failed; the iface reports it from progress(). */
    void schedule_failure(ucs_status_t status, const char *reason);
    /* Completes everything queued with the error, then reports to the owner. */
    void handle_failure();
    /* Closes the socket and forgets queued work without completing it. */
    void close();

    /* Received requests wait in the buffer for send room (for event_arm). */
    bool rx_buffered() const { return rx_blocked_; }

    /* Registers the socket's events with the iface's epoll set. */
    void arm();

    /* A flush request could be queued now, or none is needed. */
    bool flush_ready() const;

    /* What one look of the ack watch (tcp_ack_watch.h) found. */
    enum class ack_check { IDLE, WATCHING, FAILED };
    /* IDLE: nothing sent waits for the peer any more; WATCHING: data waits,
     * the peer still answers; FAILED: it went silent, the connection's
     * failure is scheduled. */
    ack_check check_acks(uint32_t timeout_ms);

private:
    unsigned tx_progress();
    void tx_kick();
    unsigned rx_progress();
    /* Parses whole frames in the receive buffer; false when the connection stopped. */
    bool parse_frames();
    bool parse_handshake();
    /* CONN_ACCEPT or CONN_REJECT, the first frame an initiator reads. */
    bool parse_conn_reply();
    /* Setup bytes to go out before the queue: ours is a handshake or the
     * answer to the peer's (written by ctl_bytes() when sent). */
    enum class ctl_kind : uint8_t { NONE, HANDSHAKE, CONN_ACCEPT, CONN_ACCEPT_PAIRED, CONN_REJECT };
    void set_ctl(ctl_kind kind);
    bool ctl_pending() const { return ctl_ != ctl_kind::NONE; }
    /* The whole of the pending setup bytes into `out`; their length. */
    size_t ctl_bytes(uint8_t (&out)[sizeof(handshake)]) const;
    /* The peer iface's address (outbound: where we connect). */
    boost::asio::ip::tcp::endpoint peer_endpoint() const;
    /* Connects the (new, non-blocking) socket towards peer_endpoint() with
     * our handshake first; a failure is scheduled. */
    void connect_socket();
    /* Tells the initiator to use its peer's connection, and closes. */
    void reject();
    /* Rejected: waits for the peer's connection (closes if the ep is gone). */
    void wait_for_peer();
    /* Queues a DETACH frame: the ep on this side is gone. */
    void send_detach();
    /* An ep destroyed while connecting: tell the peer once connected. */
    void send_detach_if_orphan();
    unsigned tx_ctl();
    /* send()/sendmsg(); -1 when nothing was taken (a real error is
     * scheduled as a failure). */
    ssize_t write_vec(const struct iovec *vec, size_t n);
    void set_tx_blocked(bool blocked);
    /* Tells the iface whether this connection must be polled through epoll
     * (it waits for writability, or reads with SO_RCVLOWAT). */
    void refresh_epoll_need();
    /* Delivers one validated frame; false if it must wait for send room. */
    bool dispatch(const frame_hdr &hdr, uint8_t *payload);
    bool valid_frame(const frame_hdr &hdr) const;
    bool dispatch_internal(const frame_hdr &hdr, uint8_t *payload);
    void handle_put(const put_hdr &hdr, const uint8_t *data, size_t data_length);
    bool handle_get_req(const get_req &req);
    bool handle_atomic(const atomic_req &req, bool fetch);
    bool handle_flush_req(const flush_req &req);
    void handle_detach();
    void finish_connect();
    void set_state(conn_state state);
    void close_socket();
    unsigned dispatch_pending();
    void resume_rx();
    void update_events();
    void protocol_error(const char *what);
    void io_error(const boost::system::error_code &ec, const char *op);
    bool has_send_room() const;
    /* Room for a reply frame's first `reserve_length` bytes, its header
     * written; from the send room when `copy`, else from the reply room. */
    uint8_t *reply_reserve(internal_op op, size_t frame_length, size_t reserve_length,
                           bool copy = false);
    void refuse_rma(const char *what, uint64_t address, uint64_t length);
    void rx_error(const boost::system::error_code &ec);
    /* After a failed read: rx_error() unless errno only means "no data now". */
    void rx_failed(ssize_t result);
    /* The receive buffer for a read; false (failure scheduled) without one. */
    bool rx_acquire();
    /* Gives the receive buffer back when nothing waits in it. */
    void rx_release_if_empty();
    bool large_reserve(size_t length);

    /* ---- frames read straight into their destination (tcp_conn_rx.cc) ---- */
    enum class sink_kind : uint8_t {
        NONE,
        BOUNCE,    /* larger than rx_ (an AM): into large_.buf, delivered whole */
        PUT,       /* into the registered region */
        GET_REPLY, /* into the get_zcopy's iovs */
        DISCARD    /* payload nobody may receive (refused put, departed ep) */
    };
    /* Starts reading the incomplete frame at rx_head_ into its destination;
     * false when it must wait for more bytes in rx_ (or failed). */
    bool start_sink(const frame_hdr &hdr, size_t avail);
    /* One read into the sink (and the receive buffer after it); false when
     * the socket has no more for now or the connection stopped. */
    bool sink_read(unsigned *count);
    /* The destinations of the sink's remaining `left` bytes (`put_dest`:
     * a PUT's, checked for this read) into `vec` (MAX_IOV); their number. */
    unsigned sink_pieces(struct iovec *vec, void *put_dest) const;
    void finish_sink();
    /* SO_RCVLOWAT for the sink's remaining payload (see UCX_TCP_RX_LOWAT). */
    void update_rx_lowat();
    void set_rx_lowat(uint32_t bytes);
    /* Completes the local flushes whose bytes were all written. */
    void complete_local_flushes();
    /* The reply matches the oldest request; a protocol error otherwise. */
    bool check_reply(internal_op op, const reply_hdr &reply, size_t data_len);
    /* Completes the oldest request with its reply (data already placed for
     * a get_zcopy). */
    void complete_reply(const reply_hdr &reply, const uint8_t *data, size_t data_len);

    /* Members are ordered to leave no padding, and rarely read flags are
     * bits: a worker may hold thousands of connections. */
    tcp_iface &iface_;
    const tcp_config &config_;
    ep *owner_ep_ = nullptr;
    int fd_;
    uint32_t ev_mask_  = 0;
    uint32_t rx_lowat_ = 0; /* SO_RCVLOWAT set beyond 1 (0: not) */
    /* Receive buffer of config_.rx_seg_size bytes (at most 4 GiB,
     * check_tcp_config): frames parsed in place from rx_[rx_head_, rx_tail_);
     * taken from the iface's pool for a read, given back once empty. */
    uint32_t rx_head_ = 0, rx_tail_ = 0;
    const bool outbound_;
    conn_state state_;
    bool dispatching_    = false;      /* inside dispatch_pending() */
    bool in_tx_          = false;      /* inside tx_progress() */
    bool in_rx_          = false;      /* inside rx_progress() */
    bool tx_deferred_    = false;      /* queued while in_rx_/in_tx_ */
    bool rx_blocked_     = false;      /* a request waits for send room */
    bool remote_unacked_ = false;      /* puts/atomics since the last flush request */
    bool peer_sends_;                  /* the peer sends more than replies here */
    bool tx_blocked_ : 1      = false; /* the socket took less than offered */
    bool error_reported_ : 1  = false;
    bool connect_counted_ : 1 = false; /* counted in the iface's connecting total */
    bool ever_owned_ : 1      = false; /* an ep used this end: never attach again */
    bool peer_detached_ : 1   = false; /* the peer's ep (if any) is gone */
    bool discard_replies_ : 1 = false; /* detached: replies have no requester */
    bool epoll_needed_ : 1    = false; /* counted in the iface's epoll_need */
    bool ack_watched_ : 1     = false; /* sent data the ack watch looks after */
    ucs_status_t failure_     = UCS_OK;
    ucs_status_t rma_error_   = UCS_OK; /* target: first refused put since last flush */
    /* Connection setup bytes (a handshake, a CONN_ACCEPT) that go out
     * before the queue, and while the queue must wait: which, and how many
     * of them were written. Made from peer_ when sent, not kept: thousands
     * of connections each spare the bytes. */
    ctl_kind ctl_           = ctl_kind::NONE;
    uint8_t ctl_sent_       = 0;
    uint64_t fence_seq_     = 0; /* sends wait for this reply (0: none) */
    uint64_t flush_req_end_ = 0; /* stream position after the last flush request */
    uint8_t *rx_            = nullptr;

    // clang-format off
    /* The payload of the frame being read straight into its destination;
     * where the rest goes follows from `left` (sink_pieces). */
    struct {
        frame_hdr  hdr{};
        sink_kind  kind = sink_kind::NONE;
        bool       pop_fetch = false;  /* DISCARD of a reply: still answers a request */
        bool       streaming = false;  /* part of a bulk transfer: SO_RCVLOWAT pays */
        uint32_t   left = 0;           /* payload bytes still to read (of a 32-bit frame) */
        uint64_t   region_id = 0;      /* PUT: re-checked before every read;
                                          a reply: its sequence number */
        uint64_t   address = 0;        /* PUT: where the next byte goes */
    } sink_;
    // clang-format on

    /* When the previous in-place frame ended; the next one starting within
     * STREAM_GAP belongs to a bulk transfer. */
    static constexpr std::chrono::microseconds STREAM_GAP{20};
    std::chrono::steady_clock::time_point last_sink_end_{};

    /* Bounce buffer of AMs larger than the receive buffer (delivered whole). */
    struct {
        uint8_t *buf = nullptr;
        size_t cap   = 0;
    } large_;

    tx_queue tx_;
    /* Flushes with nothing to confirm remotely (only sends queued): each
     * completes once the stream position it names is written. */
    struct local_flush {
        uint64_t end;
        completion *comp;
    };
    ucs::ring_fifo<local_flush> local_flushes_;
    fetch_ring fetches_;
    pending_queue pending_;
    /* Who is on the other side: its handshake, or (outbound) what its
     * handshake would say. */
    handshake peer_{};
    /* How long a rejected connection waits for the peer's before it tries
     * again. */
    static constexpr std::chrono::milliseconds PEER_WAIT{500};
    /* WAIT_PEER: when to connect again; HANDSHAKE (accepted): when the
     * peer's handshake must have arrived. */
    std::chrono::steady_clock::time_point deadline_{};
};

} // namespace uct::tcp

#endif
