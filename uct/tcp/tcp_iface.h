/*
 * A tcp iface: a listening socket on one network interface, the connections
 * it accepted, and the connections its eps opened. One epoll set holds
 * every socket; progress() asks it what is ready (or, with very few
 * connections, just tries them) and services the sockets without blocking.
 * The epoll fd doubles as the wakeup fd: event_arm() answers UCS_ERR_BUSY
 * while anything is ready, so a caller may then block on the fd.
 * Active messages are delivered without the DESC flag (the data is valid
 * during the handler only), so rx_headroom is not used. No locks: one
 * thread at a time (SINGLE or SERIALIZED workers; MULTI is refused).
 */
#ifndef UCT_TCP_TCP_IFACE_H
#define UCT_TCP_TCP_IFACE_H

#include <uct/base/uct_iface.h>
#include <uct/base/uct_worker.h>
#include <uct/tcp/tcp_buffers.h>
#include <uct/tcp/tcp_config.h>
#include <uct/tcp/tcp_conn.h>
#include <uct/tcp/tcp_netif.h>
#include <uct/tcp/tcp_wire.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <memory>
#include <vector>

namespace uct::tcp {

class tcp_conn;
class tcp_md;

class tcp_iface : public iface {
public:
    static ucs_status_t open(tcp_md &md, worker &worker, const iface_params &params,
                             const tcp_config &config, iface **iface_p);
    ~tcp_iface() override;

    const iface_attr &attr() const override { return attr_; }
    md &owner_md() const override;

    ucs_status_t get_device_address(void *buffer) const override;
    ucs_status_t get_address(void *buffer) const override;
    bool is_reachable(const void *dev_addr, size_t dev_addr_len, const void *iface_addr,
                      size_t iface_addr_len) const override;
    ucs_status_t ep_create_connected(const void *dev_addr, size_t dev_addr_len,
                                     const void *iface_addr, size_t iface_addr_len,
                                     ep **ep_p) override;

    unsigned progress() override;
    ucs_status_t flush(unsigned flags, completion *comp) override;
    ucs_status_t fence(unsigned flags) override;
    ucs_status_t event_fd_get(int *fd_p) override;
    ucs_status_t event_arm(unsigned events) override;

    /* ---- for connections and eps ---- */
    const tcp_config &config() const { return config_; }
    tcp_md &regions() const { return md_; }
    /* Connections take these buffers only while data waits in them. */
    buffer_pool &rx_buffers() { return rx_buffers_; }
    buffer_pool &tx_buffers() { return tx_buffers_; }
    uint16_t port() const { return port_; }
    /* This iface's handshake (conn_sn 0). */
    const handshake &local_handshake() const { return handshake_; }
    /* The key a connection to this iface must show (in its address), and
     * how many connections came without it and were closed. */
    const iface_key &key() const { return handshake_.initiator_key; }
    uint64_t count_refused_handshake() { return ++refused_handshakes_; }
    uint64_t refused_handshakes() const { return refused_handshakes_; }
    /* A configured non-blocking TCP socket of `family`, or -1 (logged). */
    int open_socket(int family);
    /* Largest user AM frame payload this side accepts. */
    size_t max_am_frame() const { return max_am_frame_; }

    ucs_status_t deliver_am(am_id_t id, void *data, size_t length)
    {
        return invoke_am_handler(id, data, length, 0);
    }

    void epoll_update(tcp_conn *conn, uint32_t events);
    void defer_failure(tcp_conn *conn) { failures_.push_back(conn); }
    void conn_closed() { need_sweep_ = true; }

    /* Open connections, for diagnostics and tests. */
    size_t num_connections() const;
    /* epoll_wait calls so far, for diagnostics and tests. */
    uint64_t epoll_waits() const { return epoll_waits_; }
    void connect_started() { ++connecting_; }
    void connect_finished() { --connecting_; }
    /* Connections that wait for epoll to say their socket is ready (it
     * honours SO_RCVLOWAT; writability after a full socket): progress
     * asks epoll, rather than trying the sockets, while there are any. */
    void epoll_need_changed(int delta) { epoll_need_ += delta; }
    /* A connection sent data: the ack watch looks at it until the peer has
     * acknowledged everything. False when no user timeout is set. */
    bool watch_acks()
    {
        if (ack_timer_fd_ < 0) {
            return false;
        }
        if (!ack_timer_armed_) {
            arm_ack_timer(true);
        }
        return true;
    }
    /* Calls the user's error handler for `failed_ep`. */
    void report_ep_failure(ep *failed_ep, ucs_status_t status);
    /* An ep is going away: detach it from its connection (closing that
     * when nobody else uses it), freed when safe. */
    void release_conn(tcp_conn *conn);
    /* An accepted connection read its handshake: is it the peer's half of
     * a pair of eps connecting towards each other at once? */
    pairing pair_accepted(tcp_conn &accepted);

private:
    tcp_iface(tcp_md &md, worker &worker, const iface_params &params, const tcp_config &config,
              const netif &nif);

    ucs_status_t init();
    void init_attr();
    ucs_status_t configure_socket(int fd);
    unsigned poll_epoll();
    unsigned poll_direct();
    unsigned poll_hot();
    void note_reception(tcp_conn *conn);
    void forget_hot(const tcp_conn *conn);
    unsigned accept_connections();
    unsigned handle_failures();
    /* The ack watch's timer (a timerfd in the epoll set, so that a waiting
     * worker wakes up for it): every connection it watches is asked. */
    ucs_status_t init_ack_timer();
    void arm_ack_timer(bool armed);
    unsigned check_acks();
    void *ack_timer_tag() { return &ack_timer_fd_; }
    void sweep_closed();
    bool parse_peer(const void *dev_addr, size_t dev_addr_len, const void *iface_addr,
                    size_t iface_addr_len, boost::asio::ip::tcp::endpoint *peer,
                    device_addr_hdr *hdr, iface_key *key) const;
    static void flush_waiter_done(completion *self);
    /* Serial number of the next ep towards `peer`'s iface. */
    uint32_t next_conn_sn(const boost::asio::ip::tcp::endpoint &peer);

    tcp_md &md_;
    worker &worker_;
    tcp_config config_;
    netif netif_;
    error_handler_t err_handler_;
    void *err_handler_arg_;
    iface_attr attr_;
    size_t max_am_frame_ = 0;

    boost::asio::io_context io_{1};
    boost::asio::ip::tcp::acceptor acceptor_;
    uint16_t port_        = 0;
    int epfd_             = -1;
    int ack_timer_fd_     = -1;
    bool ack_timer_armed_ = false;
    handshake handshake_{};
    uint64_t refused_handshakes_ = 0;

    buffer_pool rx_buffers_; /* before conns_: outlive them */
    buffer_pool tx_buffers_;
    std::vector<std::unique_ptr<tcp_conn>> conns_;
    std::vector<tcp_conn *> failures_;
    /* Eps created so far towards each peer iface (pairing serial numbers). */
    std::vector<std::pair<boost::asio::ip::tcp::endpoint, uint32_t>> conn_sns_;
    unsigned progress_depth_ = 0;
    unsigned connecting_     = 0;
    int epoll_need_          = 0;
    unsigned tick_           = 0;
    bool need_sweep_         = false;
    /* With more connections than direct_poll_max progress asks epoll, but
     * while every recent reception came from one connection (a ping-pong on
     * one ep of many), that one is read directly and epoll asked every
     * epoll_period calls, as with few connections; a reception elsewhere
     * ends it. */
    static constexpr unsigned hot_streak_min = 8;
    tcp_conn *hot_conn_                      = nullptr; /* where the latest receptions came from */
    unsigned hot_streak_                     = 0;       /* receptions in a row from hot_conn_ */
    uint64_t epoll_waits_                    = 0;
    /* Accepted connections may still owe their handshake: their deadlines
     * are looked at every handshake_check_period progress calls. */
    bool handshakes_due_      = false;
    unsigned handshake_ticks_ = 0;

    struct flush_waiter {
        completion inner;
        completion *user;
        bool busy;
    };
    static constexpr unsigned MAX_FLUSH_WAITERS    = 8;
    flush_waiter flush_waiters_[MAX_FLUSH_WAITERS] = {};
};

} // namespace uct::tcp

#endif
