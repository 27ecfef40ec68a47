#include <uct/tcp/tcp_iface.h>

#include <uct/tcp/tcp_ack_watch.h>
#include <uct/tcp/tcp_sockopt.h>

#include <uct/tcp/tcp_conn.h>
#include <uct/tcp/tcp_ep.h>
#include <uct/tcp/tcp_md.h>

#include <ucs/debug/log.h>
#include <ucs/sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <iterator>
#include <new>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

namespace uct::tcp {

namespace {

constexpr int MAX_EPOLL_EVENTS = 64;

/* Closes a descriptor unless ownership moved on (fd set to -1). */
struct fd_guard {
    int fd;

    explicit fd_guard(int value) : fd(value) {}
    fd_guard(const fd_guard &)            = delete;
    fd_guard &operator=(const fd_guard &) = delete;
    ~fd_guard()
    {
        if (fd >= 0) {
            ::close(fd);
        }
    }
};

} // namespace

tcp_iface::tcp_iface(tcp_md &md, worker &worker, const iface_params &params,
                     const tcp_config &config, const netif &nif) :
    md_(md),
    worker_(worker), config_(config), netif_(nif), err_handler_(params.err_handler),
    err_handler_arg_(params.err_handler_arg), acceptor_(io_)
{
}

ucs_status_t tcp_iface::open(tcp_md &md, worker &worker, const iface_params &params,
                             const tcp_config &config, iface **iface_p)
{
    netif nif;
    if (!find_netif(params.dev_name, &nif)) {
        ucs_debug("tcp: no usable network interface '%s'",
                  (params.dev_name != nullptr) ? params.dev_name : "(null)");
        return UCS_ERR_NO_DEVICE;
    }
    tcp_iface *iface = nullptr;
    try {
        iface = new tcp_iface(md, worker, params, config, nif);
    } catch (...) {
        return UCS_ERR_NO_MEMORY;
    }
    ucs_status_t status = iface->init();
    if (status != UCS_OK) {
        delete iface;
        return status;
    }
    *iface_p = iface;
    return UCS_OK;
}

ucs_status_t tcp_iface::init()
{
    try {
        failures_.reserve(64);
        conns_.reserve(64);
    } catch (...) {
        return UCS_ERR_NO_MEMORY;
    }

    /* Send and receive buffers, pooled: a connection holds one only while
     * data waits in it (tcp_buffers.h). */
    ucs_status_t status = rx_buffers_.init("tcp_rx_buffers", config_.rx_seg_size);
    if (status != UCS_OK) {
        return status;
    }
    status = tx_buffers_.init("tcp_tx_buffers",
                              config_.tx_buf_size +
                                  size_t(config_.rma_outstanding) * MAX_REPLY_FRAME);
    if (status != UCS_OK) {
        return status;
    }

    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epfd_ < 0) {
        ucs_error("tcp: epoll_create1() failed: %m");
        return UCS_ERR_IO_ERROR;
    }

    boost::system::error_code ec;
    boost::asio::ip::tcp::endpoint local(make_address(netif_.family, netif_.ip), 0);
    acceptor_.open(local.protocol(), ec);
    if (!ec && (config_.rcvbuf > 0)) {
        /* Set before listen() so accepted sockets negotiate a fitting window. */
        acceptor_.set_option(boost::asio::socket_base::receive_buffer_size(int(config_.rcvbuf)),
                             ec);
    }
    if (!ec) {
        acceptor_.bind(local, ec);
    }
    if (!ec) {
        acceptor_.listen(config_.backlog, ec);
    }
    if (!ec) {
        acceptor_.non_blocking(true, ec);
    }
    if (!ec) {
        port_ = acceptor_.local_endpoint(ec).port();
    }
    if (ec) {
        ucs_error("tcp: cannot listen on %s (%s): %s", netif_.name.c_str(),
                  local.address().to_string().c_str(), ec.message().c_str());
        return UCS_ERR_IO_ERROR;
    }

    epoll_event ev{};
    ev.events   = EPOLLIN;
    ev.data.ptr = nullptr; /* the acceptor */
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, acceptor_.native_handle(), &ev) != 0) {
        ucs_error("tcp: epoll_ctl() failed: %m");
        return UCS_ERR_IO_ERROR;
    }
    if ((config_.user_timeout_ms > 0) && (init_ack_timer() != UCS_OK)) {
        return UCS_ERR_IO_ERROR;
    }

    handshake_.magic   = HANDSHAKE_MAGIC;
    handshake_.version = HANDSHAKE_VERSION;
    handshake_.family  = uint8_t(netif_.family);
    std::memcpy(handshake_.ip, netif_.ip, ip_length(netif_.family));
    handshake_.port = port_;
    if (ucs::sys::random_bytes(&handshake_.initiator_key, sizeof(handshake_.initiator_key)) !=
        UCS_OK) {
        return UCS_ERR_IO_ERROR;
    }

    init_attr();
    worker_.progress_register(this);
    ucs_debug("tcp: iface %p listening on %s port %u", static_cast<void *>(this),
              netif_.name.c_str(), unsigned(port_));
    return UCS_OK;
}

void tcp_iface::init_attr()
{
    attr_.flags = iface_flag::AM_SHORT | iface_flag::AM_BCOPY | iface_flag::AM_ZCOPY |
                  iface_flag::PENDING | iface_flag::PUT_SHORT | iface_flag::PUT_BCOPY |
                  iface_flag::PUT_ZCOPY | iface_flag::GET_BCOPY | iface_flag::GET_ZCOPY |
                  iface_flag::ATOMIC_CPU | iface_flag::ERRHANDLE_PEER_FAILURE |
                  iface_flag::CONNECT_TO_IFACE | iface_flag::CB_SYNC;
    attr_.event_flags = event_flag::RECV | event_flag::SEND_COMP | event_flag::FD;

    attr_.am.max_short       = config_.max_short;
    attr_.am.max_bcopy       = config_.tx_seg_size;
    attr_.am.min_zcopy       = 0;
    attr_.am.max_zcopy       = config_.max_zcopy;
    attr_.am.opt_zcopy_align = 1;
    attr_.am.max_iov         = config_.max_iov;
    attr_.am.max_hdr         = config_.max_am_hdr;

    attr_.put.max_short       = config_.max_short;
    attr_.put.max_bcopy       = config_.tx_seg_size;
    attr_.put.max_zcopy       = config_.max_zcopy;
    attr_.put.opt_zcopy_align = 1;
    attr_.put.max_iov         = config_.max_iov;

    attr_.get.max_bcopy       = config_.tx_seg_size;
    attr_.get.max_zcopy       = config_.max_zcopy;
    attr_.get.opt_zcopy_align = 1;
    attr_.get.max_iov         = config_.max_get_iov;

    uint64_t post = atomic_op_bit(atomic_op::ADD) | atomic_op_bit(atomic_op::AND) |
                    atomic_op_bit(atomic_op::OR) | atomic_op_bit(atomic_op::XOR);
    uint64_t fetch      = post | atomic_op_bit(atomic_op::SWAP) | atomic_op_bit(atomic_op::CSWAP);
    attr_.atomic32_post = attr_.atomic64_post = post;
    attr_.atomic32_fetch = attr_.atomic64_fetch = fetch;

    attr_.device_addr_len = sizeof(device_addr_hdr) + ip_length(netif_.family);
    attr_.iface_addr_len  = sizeof(iface_addr);
    attr_.ep_addr_len     = 0;
    attr_.max_num_eps     = SIZE_MAX;

    attr_.perf.latency_s       = netif_.latency_s;
    attr_.perf.bandwidth_Bps   = netif_.bandwidth_Bps;
    attr_.perf.send_overhead_s = 1e-6; /* one send system call */
    attr_.perf.recv_overhead_s = 1e-6;
    attr_.priority             = 0;

    max_am_frame_ = std::max({config_.max_short, config_.tx_seg_size,
                              config_.max_am_hdr + config_.max_zcopy});
}

tcp_iface::~tcp_iface()
{
    worker_.progress_unregister(this);
    /* Eps must be destroyed before their iface; close whatever remains. */
    for (auto &conn : conns_) {
        conn->close();
    }
    conns_.clear();
    failures_.clear();
    boost::system::error_code ec;
    acceptor_.close(ec);
    if (ack_timer_fd_ >= 0) {
        ::close(ack_timer_fd_);
    }
    if (epfd_ >= 0) {
        ::close(epfd_);
    }
}

ucs_status_t tcp_iface::init_ack_timer()
{
    ack_timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (ack_timer_fd_ < 0) {
        ucs_error("tcp: timerfd_create() failed: %m");
        return UCS_ERR_IO_ERROR;
    }
    epoll_event ev{};
    ev.events   = EPOLLIN;
    ev.data.ptr = ack_timer_tag();
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, ack_timer_fd_, &ev) != 0) {
        ucs_error("tcp: epoll_ctl() failed: %m");
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

void tcp_iface::arm_ack_timer(bool armed)
{
    const long period_ns = long(ack_check_period_ms(config_.user_timeout_ms)) * 1000000L;
    struct itimerspec spec {};
    if (armed) {
        spec.it_value.tv_sec  = period_ns / 1000000000L;
        spec.it_value.tv_nsec = period_ns % 1000000000L;
        spec.it_interval      = spec.it_value;
    }
    if (timerfd_settime(ack_timer_fd_, 0, &spec, nullptr) != 0) {
        ucs_error("tcp: timerfd_settime() failed: %m");
        return;
    }
    ack_timer_armed_ = armed;
}

unsigned tcp_iface::check_acks()
{
    uint64_t expirations;
    if (::read(ack_timer_fd_, &expirations, sizeof(expirations)) < 0) {
        return 0; /* not due (EAGAIN): another epoll round reported it */
    }
    bool watching   = false;
    unsigned failed = 0;
    for (size_t i = 0, n = conns_.size(); i < n; ++i) {
        const tcp_conn::ack_check found = conns_[i]->check_acks(config_.user_timeout_ms);
        watching |= (found == tcp_conn::ack_check::WATCHING);
        failed += (found == tcp_conn::ack_check::FAILED);
    }
    if (!watching) {
        arm_ack_timer(false);
    }
    /* A tick that only found live peers is no event for the caller (a
     * progress loop waiting for something real must not see one). */
    return failed;
}

md &tcp_iface::owner_md() const
{
    return md_;
}

ucs_status_t tcp_iface::get_device_address(void *buffer) const
{
    if (buffer == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    device_addr_hdr hdr{};
    hdr.family  = uint8_t(netif_.family);
    hdr.flags   = netif_.loopback ? device_addr_flag::LOOPBACK : 0;
    hdr.host_id = netif_.loopback ? local_host_id() : 0;
    auto *p     = static_cast<uint8_t *>(buffer);
    std::memcpy(p, &hdr, sizeof(hdr));
    std::memcpy(p + sizeof(hdr), netif_.ip, ip_length(netif_.family));
    return UCS_OK;
}

ucs_status_t tcp_iface::get_address(void *buffer) const
{
    if (buffer == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    iface_addr addr{};
    addr.port = port_;
    addr.key  = handshake_.initiator_key;
    std::memcpy(buffer, &addr, sizeof(addr));
    return UCS_OK;
}

bool tcp_iface::parse_peer(const void *dev_addr, size_t dev_addr_len, const void *iface_addr_p,
                           size_t iface_addr_len, boost::asio::ip::tcp::endpoint *peer,
                           device_addr_hdr *hdr_out, iface_key *key_out) const
{
    if ((dev_addr == nullptr) || (iface_addr_p == nullptr) ||
        (dev_addr_len < sizeof(device_addr_hdr)) || (iface_addr_len != sizeof(iface_addr))) {
        return false;
    }
    device_addr_hdr hdr;
    std::memcpy(&hdr, dev_addr, sizeof(hdr));
    auto family = static_cast<addr_family>(hdr.family);
    if (((family != addr_family::IPV4) && (family != addr_family::IPV6)) ||
        (dev_addr_len != sizeof(hdr) + ip_length(family)) ||
        ((hdr.flags & ~device_addr_flag::LOOPBACK) != 0)) {
        return false;
    }
    iface_addr addr;
    std::memcpy(&addr, iface_addr_p, sizeof(addr));
    if ((addr.port == 0) || std::any_of(std::begin(addr.reserved), std::end(addr.reserved),
                                        [](uint8_t b) { return b != 0; })) {
        return false;
    }
    if (key_out != nullptr) {
        *key_out = addr.key;
    }
    const auto *ip = static_cast<const uint8_t *>(dev_addr) + sizeof(hdr);
    *peer          = boost::asio::ip::tcp::endpoint(make_address(family, ip), addr.port);
    if (hdr_out != nullptr) {
        *hdr_out = hdr;
    }
    return true;
}

bool tcp_iface::is_reachable(const void *dev_addr, size_t dev_addr_len, const void *iface_addr_p,
                             size_t iface_addr_len) const
{
    boost::asio::ip::tcp::endpoint peer;
    device_addr_hdr hdr;
    if (!parse_peer(dev_addr, dev_addr_len, iface_addr_p, iface_addr_len, &peer, &hdr, nullptr)) {
        return false;
    }
    bool peer_loopback = (hdr.flags & device_addr_flag::LOOPBACK) != 0;
    if (hdr.family != uint8_t(netif_.family) || (peer_loopback != netif_.loopback)) {
        return false;
    }
    /* A loopback address names the peer's own host. */
    return !peer_loopback || (hdr.host_id == local_host_id());
}

int tcp_iface::open_socket(int family)
{
    int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        ucs_error("tcp: cannot open a socket: %m");
        return -1;
    }
    if (configure_socket(fd) != UCS_OK) {
        ::close(fd);
        return -1;
    }
    return fd;
}

ucs_status_t tcp_iface::configure_socket(int fd)
{
    return tcp::configure_socket(fd, config_);
}

ucs_status_t tcp_iface::ep_create_connected(const void *dev_addr, size_t dev_addr_len,
                                            const void *iface_addr_p, size_t iface_addr_len,
                                            ep **ep_p)
{
    boost::asio::ip::tcp::endpoint peer;
    iface_key key;
    if ((ep_p == nullptr) ||
        !parse_peer(dev_addr, dev_addr_len, iface_addr_p, iface_addr_len, &peer, nullptr, &key)) {
        return UCS_ERR_INVALID_PARAM;
    }

    /* The peer's ep with our ep's serial number connected to us already:
     * share its connection, so replies travel with the acknowledgements of
     * the requests. */
    uint32_t sn;
    try {
        sn = next_conn_sn(peer);
    } catch (...) {
        return UCS_ERR_NO_MEMORY;
    }
    for (auto &conn : conns_) {
        if (conn->attachable_to(peer, sn, key)) {
            try {
                *ep_p = new tcp_ep(*this, conn.get());
            } catch (...) {
                return UCS_ERR_NO_MEMORY;
            }
            ucs_debug("tcp: ep %p shares the connection from port %u", static_cast<void *>(*ep_p),
                      unsigned(peer.port()));
            return UCS_OK;
        }
    }

    try {
        fd_guard fd(open_socket(peer.protocol().family()));
        if (fd.fd < 0) {
            return UCS_ERR_IO_ERROR;
        }

        auto conn = std::make_unique<tcp_conn>(*this, fd.fd, true);
        ucs_status_t status;
        fd.fd  = -1; /* the connection owns it */
        status = conn->init();
        if (status != UCS_OK) {
            return status;
        }
        auto ep       = std::make_unique<tcp_ep>(*this, conn.get());
        tcp_conn *raw = conn.get();
        conns_.push_back(std::move(conn));
        raw->start_connect(peer, sn, key);
        *ep_p = ep.release();
        return UCS_OK;
    } catch (...) {
        return UCS_ERR_NO_MEMORY;
    }
}

uint32_t tcp_iface::next_conn_sn(const boost::asio::ip::tcp::endpoint &peer)
{
    for (auto &entry : conn_sns_) {
        if (entry.first == peer) {
            return entry.second++;
        }
    }
    conn_sns_.emplace_back(peer, 1);
    return 0;
}

pairing tcp_iface::pair_accepted(tcp_conn &accepted)
{
    const handshake &hs = accepted.peer();
    /* Our own iface connecting to itself: both ends are one connection. */
    const int order = compare_iface_addr(handshake_, hs);
    if ((order == 0) || accepted.rx_pending()) {
        return pairing::NONE;
    }
    for (auto &conn : conns_) {
        if (!conn->pairs_with(hs)) {
            continue;
        }
        /* Both eps connected at once. The connection of the side with the
         * lower address is kept; the peer decides the same way when it reads
         * our handshake, so both keep the same one whatever the timing. */
        if (order < 0) {
            return (conn->state() == conn_state::WAIT_PEER) ? pairing::NONE : pairing::REJECT;
        }
        conn->adopt(accepted);
        return pairing::ADOPTED;
    }
    return pairing::NONE;
}

void tcp_iface::epoll_update(tcp_conn *conn, uint32_t events)
{
    uint32_t old = conn->epoll_events();
    epoll_event ev{};
    ev.events   = events;
    ev.data.ptr = conn;
    int op      = (old == 0) ? EPOLL_CTL_ADD : ((events == 0) ? EPOLL_CTL_DEL : EPOLL_CTL_MOD);
    if ((old == 0) && (events == 0)) {
        return;
    }
    if (epoll_ctl(epfd_, op, conn->fd(), &ev) != 0) {
        /* ENOENT/EBADF on DEL: the socket is going away anyway. */
        if (op != EPOLL_CTL_DEL) {
            ucs_error("tcp: epoll_ctl() failed: %m");
            conn->set_epoll_events(0);
            conn->schedule_failure(UCS_ERR_IO_ERROR, "epoll_ctl failed");
            return;
        }
    }
    conn->set_epoll_events(events);
}

/* Without connections, an iface asks epoll this many times more rarely. */
constexpr unsigned idle_epoll_factor = 16;

/* Progress calls between looks at accepted connections' handshake deadlines. */
constexpr unsigned handshake_check_period = 256;

unsigned tcp_iface::progress()
{
    ++progress_depth_;
    unsigned count;
    /* With very few sockets, trying each costs no more than asking epoll,
     * and saves a system call when data is there. epoll still runs now and
     * then for new connections and for failures of idle eps. An iface with
     * no connection at all (one of several a UCP worker opens, unused by its
     * eps) only waits for accepts: it asks epoll far more rarely, so it
     * does not put a system call into every progress of a busy worker. */
    const unsigned period = conns_.empty() ? config_.epoll_period * idle_epoll_factor :
                                             config_.epoll_period;
    const bool few        = conns_.size() <= config_.direct_poll_max;
    const bool hot        = !few && (hot_streak_ >= hot_streak_min);
    const bool direct     = (few || hot) && (connecting_ == 0) && (epoll_need_ == 0) &&
                        (++tick_ < period);
    if (direct) {
        count = hot ? poll_hot() : (conns_.empty() ? 0 : poll_direct());
    } else {
        tick_ = 0;
        count = poll_epoll();
    }
    if (ucs_unlikely(connecting_ > 0)) {
        /* Connection setup only: rejected connections that waited too long. */
        const auto now = std::chrono::steady_clock::now();
        for (size_t i = 0, n = conns_.size(); i < n; ++i) {
            conns_[i]->check_peer_wait(now);
        }
    }
    if (ucs_unlikely(handshakes_due_) &&
        ((++handshake_ticks_ & (handshake_check_period - 1)) == 0)) {
        /* Accepted connections that never proved they may connect. */
        const auto now  = std::chrono::steady_clock::now();
        handshakes_due_ = false;
        for (size_t i = 0, n = conns_.size(); i < n; ++i) {
            handshakes_due_ |= conns_[i]->check_handshake_wait(now);
        }
    }
    if (!failures_.empty()) {
        count += handle_failures();
    }
    if ((--progress_depth_ == 0) && need_sweep_) {
        sweep_closed();
    }
    return count;
}

unsigned tcp_iface::poll_direct()
{
    unsigned count = 0;
    size_t n       = conns_.size(); /* eps created by callbacks wait a round */
    for (size_t i = 0; i < n; ++i) {
        tcp_conn *conn = conns_[i].get();
        conn_state s   = conn->state();
        if ((s == conn_state::CONNECTED) || (s == conn_state::HANDSHAKE)) {
            count += conn->poll_direct();
        }
    }
    return count;
}

unsigned tcp_iface::poll_hot()
{
    if (hot_conn_->state() != conn_state::CONNECTED) {
        hot_streak_ = 0;
        return 0;
    }
    return hot_conn_->poll_direct();
}

void tcp_iface::note_reception(tcp_conn *conn)
{
    if (conn != hot_conn_) {
        hot_conn_   = conn;
        hot_streak_ = 1;
    } else if (hot_streak_ < hot_streak_min) {
        ++hot_streak_;
    }
}

void tcp_iface::forget_hot(const tcp_conn *conn)
{
    if (conn == hot_conn_) {
        hot_conn_   = nullptr;
        hot_streak_ = 0;
    }
}

unsigned tcp_iface::poll_epoll()
{
    epoll_event events[MAX_EPOLL_EVENTS];
    ++epoll_waits_;
    int n = epoll_wait(epfd_, events, MAX_EPOLL_EVENTS, 0);
    if (n <= 0) {
        if ((n < 0) && (errno != EINTR)) {
            ucs_error("tcp: epoll_wait() failed: %m");
        }
        return 0;
    }
    unsigned count = 0;
    for (int i = 0; i < n; ++i) {
        if (events[i].data.ptr == ack_timer_tag()) {
            count += check_acks();
            continue;
        }
        auto *conn = static_cast<tcp_conn *>(events[i].data.ptr);
        if (conn == nullptr) {
            count += accept_connections();
        } else if (conn->state() < conn_state::FAILED) {
            /* Connections closed earlier in this loop are still allocated
             * (freed by sweep_closed()), so the check is safe. */
            const unsigned handled = conn->handle_events(events[i].events);
            if ((handled > 0) && (events[i].events & EPOLLIN)) {
                note_reception(conn);
            }
            count += handled;
        }
    }
    return count;
}

unsigned tcp_iface::accept_connections()
{
    unsigned count = 0;
    for (unsigned i = 0; i < config_.max_poll; ++i) {
        try {
            fd_guard fd(::accept4(acceptor_.native_handle(), nullptr, nullptr,
                                  SOCK_NONBLOCK | SOCK_CLOEXEC));
            if (fd.fd < 0) {
                if (errno == ECONNABORTED) {
                    continue;
                }
                if ((errno != EAGAIN) && (errno != EWOULDBLOCK) && (errno != EINTR)) {
                    ucs_diag("tcp: accept() failed: %m");
                }
                break;
            }
            if (configure_socket(fd.fd) != UCS_OK) {
                continue;
            }
            auto conn = std::make_unique<tcp_conn>(*this, fd.fd, false);
            fd.fd     = -1; /* the connection owns it */
            if (conn->init() != UCS_OK) {
                ucs_error("tcp: no memory for an accepted connection");
                continue;
            }
            tcp_conn *raw = conn.get();
            conns_.push_back(std::move(conn));
            raw->arm();
            handshakes_due_ = true;
            ++count;
        } catch (...) {
            ucs_error("tcp: no memory for an accepted connection");
            break;
        }
    }
    return count;
}

unsigned tcp_iface::handle_failures()
{
    unsigned count = 0;
    /* Handlers may fail further connections: take the list as it grows. */
    for (size_t i = 0; i < failures_.size(); ++i) {
        tcp_conn *conn = failures_[i];
        conn->handle_failure();
        if (conn->closed()) {
            need_sweep_ = true;
        }
        ++count;
    }
    failures_.clear();
    return count;
}

void tcp_iface::report_ep_failure(ep *failed_ep, ucs_status_t status)
{
    if (err_handler_ == nullptr) {
        ucs_error("tcp: ep %p lost its peer (%s) and no error handler is set",
                  static_cast<void *>(failed_ep), ucs_status_string(status));
        return;
    }
    err_handler_(err_handler_arg_, failed_ep, status);
}

void tcp_iface::release_conn(tcp_conn *conn)
{
    conn->detach();
    if (!conn->closed()) {
        return; /* still serving the peer's ep; its end closes it */
    }
    if (progress_depth_ > 0) {
        /* An event or a failure entry for it may still be in hand: it stays
         * allocated (and is skipped as closed) until sweep_closed(). */
        need_sweep_ = true;
        return;
    }
    failures_.erase(std::remove(failures_.begin(), failures_.end(), conn), failures_.end());
    auto it = std::find_if(conns_.begin(), conns_.end(),
                           [conn](const auto &c) { return c.get() == conn; });
    if (it != conns_.end()) {
        forget_hot(conn);
        conns_.erase(it);
    }
}

void tcp_iface::sweep_closed()
{
    need_sweep_ = false;
    if ((hot_conn_ != nullptr) && hot_conn_->closed()) {
        forget_hot(hot_conn_);
    }
    conns_.erase(std::remove_if(conns_.begin(), conns_.end(),
                                [](const auto &c) { return c->closed(); }),
                 conns_.end());
}

ucs_status_t tcp_iface::flush(unsigned, completion *comp)
{
    /* All or nothing: no flush request goes out unless each ep can take one. */
    for (auto &conn : conns_) {
        if ((conn->owner_ep() != nullptr) && !conn->flush_ready()) {
            return UCS_ERR_NO_RESOURCE;
        }
    }

    flush_waiter *waiter = nullptr;
    if (comp != nullptr) {
        for (auto &w : flush_waiters_) {
            if (!w.busy) {
                waiter = &w;
                break;
            }
        }
        if (waiter == nullptr) {
            return UCS_ERR_NO_RESOURCE;
        }
        waiter->inner.func   = flush_waiter_done;
        waiter->inner.count  = 1;
        waiter->inner.status = UCS_OK;
        waiter->user         = comp;
    }

    bool outstanding = false;
    for (auto &conn : conns_) {
        if ((conn->owner_ep() == nullptr) || (conn->state() >= conn_state::FAILED)) {
            continue;
        }
        ucs_status_t status = conn->flush((waiter != nullptr) ? &waiter->inner : nullptr);
        if (status == UCS_INPROGRESS) {
            outstanding = true;
            if (waiter != nullptr) {
                ++waiter->inner.count;
            }
        }
    }
    if (!outstanding) {
        return UCS_OK;
    }
    if (waiter != nullptr) {
        waiter->busy = true;
        --waiter->inner.count; /* the count started at 1 to stay above zero */
    }
    return UCS_INPROGRESS;
}

ucs_status_t tcp_iface::fence(unsigned)
{
    for (auto &conn : conns_) {
        if ((conn->owner_ep() != nullptr) && (conn->state() < conn_state::FAILED)) {
            conn->fence();
        }
    }
    return UCS_OK;
}

void tcp_iface::flush_waiter_done(completion *self)
{
    static_assert(offsetof(flush_waiter, inner) == 0);
    auto *waiter = reinterpret_cast<flush_waiter *>(self);
    waiter->busy = false;
    invoke_completion(waiter->user, self->status);
}

size_t tcp_iface::num_connections() const
{
    return size_t(std::count_if(conns_.begin(), conns_.end(),
                                [](const auto &c) { return !c->closed(); }));
}

ucs_status_t tcp_iface::event_fd_get(int *fd_p)
{
    if (fd_p == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    *fd_p = epfd_;
    return UCS_OK;
}

ucs_status_t tcp_iface::event_arm(unsigned events)
{
    if (!failures_.empty()) {
        return UCS_ERR_BUSY;
    }
    if (events & event_flag::RECV) {
        for (auto &conn : conns_) {
            if (conn->rx_buffered()) {
                return UCS_ERR_BUSY;
            }
        }
    }
    /* Level-triggered: anything ready now means progress has work. */
    epoll_event ev;
    if (epoll_wait(epfd_, &ev, 1, 0) > 0) {
        return UCS_ERR_BUSY;
    }
    return UCS_OK;
}

} // namespace uct::tcp
