/*
 * Connection lifecycle and the sending side: connect, write the queue,
 * pending requests, flush, failure handling.
 */
#include <uct/tcp/tcp_conn.h>

#include <uct/tcp/tcp_ack_watch.h>
#include <uct/tcp/tcp_iface.h>

#include <ucs/sys/random.h>
#include <ucs/debug/log.h>

#include <cerrno>
#include <cstdio>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace uct::tcp {

namespace {

void complete_all(completion **done, unsigned ndone, ucs_status_t status)
{
    for (unsigned i = 0; i < ndone; ++i) {
        invoke_completion(done[i], status);
    }
}

} // namespace

int compare_iface_addr(const handshake &a, const handshake &b)
{
    if (a.family != b.family) {
        return (a.family < b.family) ? -1 : 1;
    }
    const size_t len = (a.family == uint8_t(addr_family::IPV4)) ? 4 : 16;
    int ip           = std::memcmp(a.ip, b.ip, len);
    if (ip != 0) {
        return ip;
    }
    return (a.port == b.port) ? 0 : ((a.port < b.port) ? -1 : 1);
}

tcp_conn::tcp_conn(tcp_iface &iface, int fd, bool outbound) :
    iface_(iface), config_(iface.config()), fd_(fd), outbound_(outbound),
    state_(outbound ? conn_state::CONNECTING : conn_state::HANDSHAKE), peer_sends_(!outbound)
{
    if (!outbound) {
        deadline_ = std::chrono::steady_clock::now() +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(config_.handshake_timeout));
    }
}

tcp_conn::~tcp_conn()
{
    close();
    std::free(large_.buf);
    if (rx_ != nullptr) {
        iface_.rx_buffers().put(rx_); /* closed inside rx_progress(): still held */
    }
}

ucs_status_t tcp_conn::init()
{
    /* Room for a reply to every request the peer may have in flight, if it
     * keeps to the same window (UCX_TCP_RMA_OUTSTANDING) as this side; the
     * requests of a peer with a larger window wait in the receive buffer
     * for replies to go out, which stalls only if both peers do it. */
    return tx_.init(iface_.tx_buffers(), config_.tx_buf_size, config_.zcopy_inflight,
                    config_.max_iov, config_.rma_outstanding,
                    size_t(config_.rma_outstanding) * MAX_REPLY_FRAME);
}

void tcp_conn::set_state(conn_state state)
{
    if (connect_counted_ &&
        !((state == conn_state::CONNECTING) || (state == conn_state::WAIT_ACCEPT) ||
          (state == conn_state::WAIT_PEER))) {
        connect_counted_ = false;
        iface_.connect_finished();
    }
    state_ = state;
}

ucs_status_t tcp_conn::start_connect(const boost::asio::ip::tcp::endpoint &peer, uint32_t conn_sn,
                                     const iface_key &acceptor_key)
{
    /* Whom this connection is for, as a handshake from there would say. */
    const auto address = peer.address();
    if (address.is_v4()) {
        auto bytes   = address.to_v4().to_bytes();
        peer_.family = uint8_t(addr_family::IPV4);
        std::memcpy(peer_.ip, bytes.data(), bytes.size());
    } else {
        auto bytes   = address.to_v6().to_bytes();
        peer_.family = uint8_t(addr_family::IPV6);
        std::memcpy(peer_.ip, bytes.data(), bytes.size());
    }
    peer_.port          = peer.port();
    peer_.conn_sn       = conn_sn;
    peer_.initiator_key = acceptor_key; /* what the peer's handshake would say */

    iface_.connect_started();
    connect_counted_ = true;
    connect_socket();
    return UCS_OK;
}

boost::asio::ip::tcp::endpoint tcp_conn::peer_endpoint() const
{
    /* family is IPV4 or IPV6: set from an endpoint, or checked in the handshake */
    return {make_address(addr_family(peer_.family), peer_.ip), peer_.port};
}

void tcp_conn::connect_socket()
{
    /* The handshake goes first, on its own; sends wait in the queue until
     * the peer accepts this connection. */
    set_ctl(ctl_kind::HANDSHAKE);
    set_state(conn_state::CONNECTING);
    const auto target = peer_endpoint();
    /* Not Asio's connect(): on a non-blocking socket it still waits. */
    int ret = ::connect(fd_, target.data(), socklen_t(target.size()));
    if (ret == 0) {
        set_state(conn_state::WAIT_ACCEPT);
    } else if (errno != EINPROGRESS) {
        /* Reported from progress(), like any later failure. */
        schedule_failure(UCS_ERR_CONNECTION_RESET, std::strerror(errno));
        return;
    }
    update_events();
    if (state_ == conn_state::WAIT_ACCEPT) {
        tx_progress();
    }
}

bool tcp_conn::pairs_with(const handshake &hs) const
{
    /* Also when its ep is gone already: the peer decides the same way and
     * must find the connection it expects. */
    return outbound_ && establishing() && (peer_.conn_sn == hs.conn_sn) &&
           (compare_iface_addr(peer_, hs) == 0) &&
           ucs::sys::secret_equal(&peer_.initiator_key, &hs.initiator_key,
                                  sizeof(hs.initiator_key));
}

void tcp_conn::wait_for_peer()
{
    close_socket();
    rx_head_ = rx_tail_ = 0;
    if (owner_ep_ == nullptr) {
        close(); /* nobody waits for the peer's connection any more */
        iface_.conn_closed();
        return;
    }
    set_state(conn_state::WAIT_PEER);
    deadline_ = std::chrono::steady_clock::now() + PEER_WAIT;
}

bool tcp_conn::check_handshake_wait(std::chrono::steady_clock::time_point now)
{
    if (state_ != conn_state::HANDSHAKE) {
        return false;
    }
    if (now < deadline_) {
        return true;
    }
    ucs_diag("tcp: closing an accepted connection that sent no handshake in %.1f s",
             config_.handshake_timeout);
    schedule_failure(UCS_ERR_TIMED_OUT, "no handshake");
    return false;
}

void tcp_conn::check_peer_wait(std::chrono::steady_clock::time_point now)
{
    if ((state_ != conn_state::WAIT_PEER) || (now < deadline_)) {
        return;
    }
    /* The peer's connection never came (its ep went away, or its process
     * died, before connecting): try ours again. */
    ucs_debug("tcp: ep %p: no connection from iface port %u, connecting again",
              static_cast<void *>(owner_ep_), unsigned(peer_.port));
    int fd = iface_.open_socket(peer_endpoint().protocol().family());
    if (fd < 0) {
        schedule_failure(UCS_ERR_IO_ERROR, "cannot open a socket");
        return;
    }
    fd_ = fd;
    connect_socket();
}

void tcp_conn::set_ctl(ctl_kind kind)
{
    ctl_      = kind;
    ctl_sent_ = 0;
}

size_t tcp_conn::ctl_bytes(uint8_t (&out)[sizeof(handshake)]) const
{
    if (ctl_ == ctl_kind::HANDSHAKE) {
        handshake hs    = iface_.local_handshake();
        hs.conn_sn      = peer_.conn_sn;
        hs.acceptor_key = peer_.initiator_key;
        std::memcpy(out, &hs, sizeof(hs));
        return sizeof(hs);
    }
    const internal_op op = (ctl_ == ctl_kind::CONN_REJECT) ? internal_op::CONN_REJECT :
                                                             internal_op::CONN_ACCEPT;
    frame_hdr hdr{uint8_t(op), frame_flag::INTERNAL, 0, uint32_t(sizeof(conn_reply))};
    conn_reply reply{};
    reply.flags = (ctl_ == ctl_kind::CONN_ACCEPT_PAIRED) ? conn_reply_flag::PAIRED : 0;
    std::memcpy(out, &hdr, sizeof(hdr));
    std::memcpy(out + sizeof(hdr), &reply, sizeof(reply));
    return sizeof(hdr) + sizeof(reply);
}

void tcp_conn::adopt(tcp_conn &accepted)
{
    /* Our own attempt is dropped; the peer closes its end of it. */
    close_socket();
    if (accepted.ev_mask_ != 0) {
        iface_.epoll_update(&accepted, 0);
    }
    fd_               = accepted.fd_;
    accepted.fd_      = -1;
    const uint32_t sn = peer_.conn_sn;
    peer_             = accepted.peer_;
    peer_.conn_sn     = sn;
    peer_sends_       = true;
    rx_head_ = rx_tail_ = 0;
    accepted.close();
    iface_.conn_closed();

    set_state(conn_state::CONNECTED);
    set_ctl(ctl_kind::CONN_ACCEPT_PAIRED);
    ucs_debug("tcp: ep %p uses the connection from iface port %u (its ep %u)",
              static_cast<void *>(owner_ep_), unsigned(peer_.port), unsigned(sn));
    send_detach_if_orphan();
    tx_kick();
    update_events();
}

void tcp_conn::reject()
{
    /* A fresh socket takes these few bytes at once; if not, the initiator
     * sees the connection closed, which fails its ep as a lost peer would. */
    uint8_t bytes[sizeof(handshake)];
    set_ctl(ctl_kind::CONN_REJECT);
    (void)::send(fd(), bytes, ctl_bytes(bytes), MSG_NOSIGNAL | MSG_DONTWAIT);
    set_ctl(ctl_kind::NONE);
    close();
    iface_.conn_closed();
}

void tcp_conn::arm()
{
    update_events();
}

void tcp_conn::update_events()
{
    if ((state_ >= conn_state::FAILED) || (state_ == conn_state::WAIT_PEER)) {
        return;
    }
    uint32_t mask = rx_blocked_ ? 0 : uint32_t(EPOLLIN);
    if ((state_ == conn_state::CONNECTING) || ctl_pending() ||
        ((state_ == conn_state::CONNECTED) && !tx_.empty())) {
        mask |= EPOLLOUT;
    }
    if (mask != ev_mask_) {
        iface_.epoll_update(this, mask);
    }
}

void tcp_conn::finish_connect()
{
    int err       = 0;
    socklen_t len = sizeof(err);
    if (getsockopt(fd(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
        err = errno;
    }
    if (err != 0) {
        schedule_failure(UCS_ERR_CONNECTION_RESET, std::strerror(err));
        return;
    }
    set_state(conn_state::WAIT_ACCEPT);
    tx_progress();
}

void tcp_conn::tx_kick()
{
    if (in_rx_ || in_tx_) {
        /* Written once the caller's loop finishes (replies batch up). */
        tx_deferred_ = true;
    } else if ((state_ == conn_state::CONNECTED) || ctl_pending()) {
        tx_progress();
    }
}

ucs_status_t tcp_conn::tx_send_zcopy(size_t hdr_length, const iov *iov, size_t iovcnt,
                                     completion *comp, bool reply)
{
    bool was_idle = tx_.empty();
    tx_.commit(hdr_length);
    uint64_t ticket = tx_.push_zcopy(iov, iovcnt, nullptr, reply);
    if (was_idle) {
        tx_kick();
    }
    /* Still queued: it completes later through `comp`. */
    return tx_.set_zcopy_comp(ticket, comp) ? UCS_INPROGRESS : UCS_OK;
}

unsigned tcp_conn::tx_ctl()
{
    uint8_t bytes[sizeof(handshake)];
    const size_t length = ctl_bytes(bytes);
    struct iovec v {
        bytes + ctl_sent_, length - ctl_sent_
    };
    ssize_t written = write_vec(&v, 1);
    if (written < 0) {
        return 0;
    }
    ctl_sent_ += uint8_t(written);
    if (ctl_sent_ == length) {
        set_ctl(ctl_kind::NONE);
    }
    return 1;
}

unsigned tcp_conn::tx_progress()
{
    if (in_tx_ || ((state_ != conn_state::CONNECTED) && (state_ != conn_state::WAIT_ACCEPT))) {
        return 0;
    }
    in_tx_       = true;
    tx_deferred_ = false;

    unsigned count = 0;
    if (ctl_pending()) {
        count += tx_ctl();
    }
    if ((state_ != conn_state::CONNECTED) || ctl_pending()) {
        /* The queue waits for the peer's CONN_ACCEPT, or for the setup
         * bytes to leave first. */
        in_tx_ = false;
        update_events();
        return count;
    }

    struct iovec vec[tx_queue::MAX_GATHER];
    completion *done[tx_queue::MAX_ZCOPY_SLOTS];
    bool blocked = false;
    while (!tx_.empty()) {
        size_t total   = 0;
        size_t n       = tx_.gather(vec, tx_queue::MAX_GATHER, &total, config_.tx_batch);
        size_t written = 0;
        if (total > 0) {
            ssize_t ret = write_vec(vec, n);
            if (ret < 0) {
                blocked = true; /* full, or failed (then no longer CONNECTED) */
                break;
            }
            written = size_t(ret);
        }
        unsigned ndone = 0;
        tx_.consume(written, done, &ndone);
        ++count;
        if (ndone > 0) {
            /* Callbacks may queue more on this connection (written by this
             * loop) or destroy its ep (the state check stops the loop). */
            complete_all(done, ndone, UCS_OK);
            if (state_ != conn_state::CONNECTED) {
                break;
            }
        }
        if (!local_flushes_.empty()) {
            complete_local_flushes();
            if (state_ != conn_state::CONNECTED) {
                break;
            }
        }
        if (written < total) {
            blocked = true; /* the socket buffer is full */
            break;
        }
        if (total == 0) {
            break;
        }
    }

    /* Writable again is for epoll to say: trying the socket on every
     * progress call would only contend with the kernel draining it. */
    set_tx_blocked(blocked && !tx_.empty() && (state_ == conn_state::CONNECTED));
    in_tx_ = false;
    update_events();
    return count;
}

ssize_t tcp_conn::write_vec(const struct iovec *vec, size_t n)
{
    constexpr int flags = MSG_NOSIGNAL | MSG_DONTWAIT;
    ssize_t ret;
    if (n == 1) {
        ret = ::send(fd(), vec[0].iov_base, vec[0].iov_len, flags);
    } else {
        struct msghdr msg {};
        msg.msg_iov    = const_cast<struct iovec *>(vec);
        msg.msg_iovlen = n;
        ret            = ::sendmsg(fd(), &msg, flags);
    }
    if (ret < 0) {
        const int err = errno;
        if ((err != EAGAIN) && (err != EWOULDBLOCK) && (err != EINTR)) {
            io_error(boost::system::error_code(err, boost::system::system_category()), "send");
        }
    } else if (!ack_watched_ && (ret > 0)) {
        ack_watched_ = iface_.watch_acks();
    }
    return ret;
}

tcp_conn::ack_check tcp_conn::check_acks(uint32_t timeout_ms)
{
    ack_state ack;
    if (!ack_watched_ || (state_ != conn_state::CONNECTED) || !read_ack_state(fd(), &ack) ||
        !ack_pending(ack)) {
        ack_watched_ = false;
        return ack_check::IDLE;
    }
    if (!peer_silent(ack, timeout_ms)) {
        return ack_check::WATCHING;
    }
    ack_watched_ = false;
    char reason[128];
    std::snprintf(reason, sizeof(reason),
                  "the peer acknowledged nothing for %u ms (%u retransmissions, %u "
                  "unanswered window probes)",
                  ack.last_ack_ms, ack.retransmits, ack.probes);
    schedule_failure(UCS_ERR_ENDPOINT_TIMEOUT, reason);
    return ack_check::FAILED;
}

void tcp_conn::set_tx_blocked(bool blocked)
{
    if (blocked != tx_blocked_) {
        tx_blocked_ = blocked;
        refresh_epoll_need();
    }
}

void tcp_conn::refresh_epoll_need()
{
    const bool need = tx_blocked_ || (rx_lowat_ != 0);
    if (need != epoll_needed_) {
        epoll_needed_ = need;
        iface_.epoll_need_changed(need ? 1 : -1);
    }
}

bool tcp_conn::has_send_room() const
{
    constexpr size_t max_op_hdr = sizeof(frame_hdr) + sizeof(get_req);
    return (tx_.send_room() >= max_op_hdr + config_.tx_seg_size) && !tx_.zcopy_full() &&
           !fetches_.full() && (fence_seq_ == 0);
}

ucs_status_t tcp_conn::pending_add(pending_req *req)
{
    if (state_ >= conn_state::FAILED) {
        return UCS_ERR_BUSY; /* retrying the operation reports the failure */
    }
    if (pending_.empty() && has_send_room()) {
        return UCS_ERR_BUSY;
    }
    pending_.push_back(req);
    return UCS_OK;
}

void tcp_conn::pending_purge(pending_purge_callback_t cb, void *arg)
{
    while (pending_req *req = pending_.pop_front()) {
        if (cb != nullptr) {
            cb(req, arg);
        }
    }
}

unsigned tcp_conn::dispatch_pending()
{
    unsigned count = 0;
    while (!pending_.empty() && (state_ < conn_state::FAILED) && has_send_room()) {
        /* Unlinked before the call: a request that went out may be freed
         * by its owner inside func. */
        pending_req *req    = pending_.pop_front();
        dispatching_        = true;
        ucs_status_t status = req->func(req);
        dispatching_        = false;
        if (state_ == conn_state::CLOSED) {
            break;
        }
        if (status == UCS_OK) {
            ++count;
            continue;
        }
        pending_.push_front(req);
        break;
    }
    return count;
}

ucs_status_t tcp_conn::flush(completion *comp)
{
    if (state_ >= conn_state::FAILED) {
        return failure_;
    }
    if (!pending_.empty()) {
        return UCS_ERR_NO_RESOURCE;
    }
    if (idle()) {
        return UCS_OK;
    }
    if ((comp == nullptr) && !remote_unacked_) {
        return UCS_INPROGRESS; /* the caller polls; what is queued drains */
    }
    if (!remote_unacked_ && fetches_.empty() && !tx_.empty()) {
        /* Only sends queued (maybe behind the connection setup): they are
         * complete once written, as with UCX's tcp. Asking the peer would
         * wait for it to progress, which a receiver that got all it expects
         * may no longer do. */
        local_flushes_.push_back({tx_.end_position(), comp});
        return UCS_INPROGRESS;
    }
    if (!remote_unacked_ && !fetches_.empty() && (fetches_.back().kind == fetch_kind::FLUSH) &&
        (fetches_.back().comp == nullptr) && (tx_.end_position() == flush_req_end_)) {
        /* A flush request nobody waits for (a flush without a completion
         * sent it), and nothing queued since: its reply covers this flush
         * too, without a second round trip. */
        fetches_.back().comp = comp;
        return UCS_INPROGRESS;
    }
    /* A flush request: its reply comes after the target processed
     * everything sent before it. */
    if (!fetches_.ensure(config_.rma_outstanding)) {
        return UCS_ERR_NO_MEMORY;
    }
    if (fetches_.full()) {
        return UCS_ERR_NO_RESOURCE;
    }
    constexpr size_t length = sizeof(frame_hdr) + sizeof(flush_req);
    uint8_t *p              = tx_.reserve(length);
    if (p == nullptr) {
        return UCS_ERR_NO_RESOURCE;
    }
    fetch_op &op = fetches_.push();
    op.kind      = fetch_kind::FLUSH;
    op.comp      = comp;
    frame_hdr hdr{uint8_t(internal_op::FLUSH_REQ), frame_flag::INTERNAL, 0,
                  uint32_t(sizeof(flush_req))};
    flush_req req{op.seq};
    std::memcpy(p, &hdr, sizeof(hdr));
    std::memcpy(p + sizeof(hdr), &req, sizeof(req));
    remote_unacked_ = false;
    tx_send(length);
    flush_req_end_ = tx_.end_position();
    return UCS_INPROGRESS;
}

void tcp_conn::complete_local_flushes()
{
    while (!local_flushes_.empty() && (local_flushes_.front().end <= tx_.bytes_sent())) {
        completion *comp = local_flushes_.front().comp;
        local_flushes_.pop_front();
        invoke_completion(comp, UCS_OK); /* may destroy the ep */
        if (state_ == conn_state::CLOSED) {
            return;
        }
    }
}

bool tcp_conn::flush_ready() const
{
    if (state_ >= conn_state::FAILED) {
        return true; /* nothing to wait for */
    }
    return pending_.empty() && (idle() || has_send_room());
}

unsigned tcp_conn::poll_direct()
{
    unsigned count = 0;
    if ((state_ == conn_state::CONNECTED) && !tx_.empty() && !tx_blocked_) {
        count += tx_progress();
    }
    /* An initiated connection carries only replies until the peer's ep
     * attaches; the periodic epoll pass notices when it does. */
    if (peer_sends_ || !fetches_.empty()) {
        count += rx_progress();
    }
    if (rx_blocked_) {
        resume_rx();
    }
    if (!pending_.empty()) {
        count += dispatch_pending();
    }
    return count;
}

unsigned tcp_conn::handle_events(uint32_t events)
{
    constexpr uint32_t failed_events = EPOLLERR | EPOLLHUP;
    unsigned count                   = 0;

    if (state_ == conn_state::CONNECTING) {
        if (!(events & (EPOLLOUT | failed_events))) {
            return 0;
        }
        finish_connect();
        ++count;
    }
    if (events & (EPOLLIN | failed_events)) {
        count += rx_progress();
    }
    if ((events & (EPOLLOUT | failed_events)) &&
        (((state_ == conn_state::CONNECTED) && !tx_.empty()) || ctl_pending())) {
        set_tx_blocked(false); /* tx_progress() sets it again if still full */
        count += tx_progress();
    }
    if (rx_blocked_) {
        resume_rx();
    }
    if ((events & failed_events) && (state_ < conn_state::FAILED) && rx_blocked_ && tx_.empty()) {
        /* Neither direction noticed the error; don't let it spin. */
        schedule_failure(UCS_ERR_CONNECTION_RESET, "socket error");
    }
    if (!pending_.empty()) {
        count += dispatch_pending();
    }
    return count;
}

void tcp_conn::io_error(const boost::system::error_code &ec, const char *op)
{
    const char *reason = (ec == boost::asio::error::eof) ? "closed by peer" : nullptr;
    std::string text   = (reason != nullptr) ? std::string(reason) :
                                               (std::string(op) + ": " + ec.message());
    /* Keepalive or TCP_USER_TIMEOUT gave up on a silent peer: ETIMEDOUT, or
     * the last soft error when our own route went away meanwhile. */
    ucs_status_t status = UCS_ERR_CONNECTION_RESET;
    if (ec == boost::asio::error::timed_out) {
        status = UCS_ERR_ENDPOINT_TIMEOUT;
    } else if ((ec == boost::asio::error::network_unreachable) ||
               (ec == boost::asio::error::host_unreachable)) {
        status = UCS_ERR_UNREACHABLE;
    }
    schedule_failure(status, text.c_str());
}

void tcp_conn::schedule_failure(ucs_status_t status, const char *reason)
{
    if (state_ >= conn_state::FAILED) {
        return;
    }
    if (owner_ep_ != nullptr) {
        ucs_diag("tcp ep %p (peer port %u): %s", static_cast<void *>(owner_ep_),
                 unsigned(peer_.port), reason);
    } else {
        ucs_debug("tcp connection without ep (peer port %u): %s", unsigned(peer_.port), reason);
    }
    set_state(conn_state::FAILED);
    failure_ = status;
    iface_.defer_failure(this);
}

void tcp_conn::close_socket()
{
    if (ev_mask_ != 0) {
        iface_.epoll_update(this, 0);
    }
    rx_lowat_   = 0;
    tx_blocked_ = false;
    refresh_epoll_need();
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
}

void tcp_conn::handle_failure()
{
    if (state_ != conn_state::FAILED) {
        return; /* closed meanwhile */
    }
    close_socket();

    completion *done[tx_queue::MAX_ZCOPY_SLOTS];
    unsigned ndone = 0;
    tx_.clear(done, &ndone);
    sink_.kind = sink_kind::NONE;
    rx_head_ = rx_tail_ = 0;
    rx_blocked_         = false;

    /* Every callback below may destroy the ep, which closes this connection. */
    for (unsigned i = 0; i < ndone; ++i) {
        invoke_completion(done[i], failure_);
        if (state_ == conn_state::CLOSED) {
            return;
        }
    }
    while (!local_flushes_.empty()) {
        completion *comp = local_flushes_.front().comp;
        local_flushes_.pop_front();
        invoke_completion(comp, failure_);
        if (state_ == conn_state::CLOSED) {
            return;
        }
    }
    fence_seq_ = 0;
    if (discard_replies_) {
        fetches_.clear(); /* requests of a destroyed ep: nothing to complete */
    }
    while (!fetches_.empty()) {
        completion *comp = fetches_.front().comp;
        fetches_.pop_front();
        if (comp != nullptr) {
            invoke_completion(comp, failure_);
            if (state_ == conn_state::CLOSED) {
                return;
            }
        }
    }

    if (owner_ep_ == nullptr) {
        close();
        return;
    }
    if (!error_reported_) {
        error_reported_ = true;
        iface_.report_ep_failure(owner_ep_, failure_);
        if (state_ == conn_state::CLOSED) {
            return;
        }
    }
    /* Requests the error handler did not purge run once more: their
     * operations now return the error, and they are dropped. */
    while (pending_req *req = pending_.pop_front()) {
        req->func(req);
        if (state_ == conn_state::CLOSED) {
            return;
        }
    }
}

bool tcp_conn::attachable_to(const boost::asio::ip::tcp::endpoint &peer, uint32_t conn_sn,
                             const iface_key &key) const
{
    if (outbound_ || ever_owned_ || peer_detached_ || (state_ != conn_state::CONNECTED) ||
        (peer.port() != peer_.port) || (conn_sn != peer_.conn_sn) ||
        !ucs::sys::secret_equal(&key, &peer_.initiator_key, sizeof(key))) {
        return false;
    }
    const auto address = peer.address();
    if (address.is_v4()) {
        auto bytes = address.to_v4().to_bytes();
        return (peer_.family == uint8_t(addr_family::IPV4)) &&
               (std::memcmp(bytes.data(), peer_.ip, bytes.size()) == 0);
    }
    auto bytes = address.to_v6().to_bytes();
    return (peer_.family == uint8_t(addr_family::IPV6)) &&
           (std::memcmp(bytes.data(), peer_.ip, bytes.size()) == 0);
}

void tcp_conn::detach()
{
    owner_ep_ = nullptr;
    pending_.reset();
    /* Queued zero-copy frames point into memory the caller may now free:
     * they cannot be finished, so the stream cannot go on. Waiting for the
     * peer's connection helps nobody now: when it comes, it is accepted as
     * any other. */
    if ((state_ >= conn_state::FAILED) || (state_ == conn_state::HANDSHAKE) ||
        (state_ == conn_state::WAIT_PEER) || peer_detached_ || tx_.has_zcopy()) {
        close();
        return;
    }
    /* The peer's ep may still use this connection: keep serving it, drop
     * replies addressed to the departed ep, and say it is gone. */
    discard_replies_ = true;
    if (sink_.kind == sink_kind::GET_REPLY) {
        /* Its destination belongs to the departed ep's user. */
        sink_.kind      = sink_kind::DISCARD;
        sink_.pop_fetch = true;
    }
    if (establishing()) {
        /* The peer may be taking this connection over for its own ep, or
         * have rejected its own in favour of it: setting up goes on, and
         * the DETACH follows (send_detach_if_orphan). */
        return;
    }
    send_detach();
}

void tcp_conn::send_detach_if_orphan()
{
    if ((owner_ep_ == nullptr) && ever_owned_ && (state_ == conn_state::CONNECTED)) {
        send_detach();
    }
}

void tcp_conn::send_detach()
{
    uint8_t *p = tx_.reserve(sizeof(frame_hdr));
    if (p == nullptr) {
        close();
        iface_.conn_closed();
        return;
    }
    frame_hdr hdr{uint8_t(internal_op::DETACH), frame_flag::INTERNAL, 0, 0};
    std::memcpy(p, &hdr, sizeof(hdr));
    tx_send(sizeof(hdr));
}

void tcp_conn::close()
{
    if (state_ == conn_state::CLOSED) {
        return;
    }
    set_state(conn_state::CLOSED);
    close_socket();
    /* Whoever closes (the ep's owner, or the iface going away) gives up on
     * queued work: no completion runs after this. */
    completion *done[tx_queue::MAX_ZCOPY_SLOTS];
    unsigned ndone = 0;
    tx_.clear(done, &ndone);
    local_flushes_.clear();
    fetches_.clear();
    fence_seq_ = 0;
    pending_.reset();
    sink_.kind = sink_kind::NONE;
    rx_head_ = rx_tail_ = 0;
    rx_release_if_empty();
}

} // namespace uct::tcp
