/*
 * The connection manager: listeners, bootstrap connections and the
 * handshake state machine, on a POLL-mode async context progressed from
 * worker progress.
 */
#include "sockaddr_cm.h"

#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_wakeup.h>
#include <ucp/core/ucp_worker.h>
#include <ucs/debug/log.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace ucp::cs {

std::string to_string(const sockaddr_storage &addr)
{
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port               = 0;
    if (addr.ss_family == AF_INET) {
        const auto *in = reinterpret_cast<const sockaddr_in *>(&addr);
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        port = ntohs(in->sin_port);
    } else if (addr.ss_family == AF_INET6) {
        const auto *in6 = reinterpret_cast<const sockaddr_in6 *>(&addr);
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
        port = ntohs(in6->sin6_port);
    }
    return std::string(host) + ":" + std::to_string(port);
}

uint16_t port_of(const sockaddr_storage &addr)
{
    if (addr.ss_family == AF_INET) {
        return ntohs(reinterpret_cast<const sockaddr_in *>(&addr)->sin_port);
    }
    if (addr.ss_family == AF_INET6) {
        return ntohs(reinterpret_cast<const sockaddr_in6 *>(&addr)->sin6_port);
    }
    return 0;
}

namespace {

void local_address(int fd, sockaddr_storage *addr)
{
    socklen_t len = sizeof(*addr);
    if (getsockname(fd, reinterpret_cast<sockaddr *>(addr), &len) != 0) {
        std::memset(addr, 0, sizeof(*addr));
    }
}

void set_nodelay(int fd)
{
    int one = 1;
    /* Only latency: a failure changes nothing else. */
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Whether a ucs_status_t from a peer's reject frame is a real error code. */
ucs_status_t reject_status(int32_t value)
{
    return ((value < 0) && (value > UCS_ERR_LAST)) ? ucs_status_t(value) : UCS_ERR_REJECTED;
}

} // namespace

ucs_status_t connect_errno_status(int err)
{
    switch (err) {
    case ECONNREFUSED:
        return UCS_ERR_NOT_CONNECTED; /* what UCX 1.13 reports for no listener */
    case ETIMEDOUT:
        return UCS_ERR_ENDPOINT_TIMEOUT;
    case ENETUNREACH:
    case EHOSTUNREACH:
    case EADDRNOTAVAIL:
        return UCS_ERR_UNREACHABLE;
    case ECONNRESET:
    case EPIPE:
        return UCS_ERR_CONNECTION_RESET;
    default:
        return UCS_ERR_IO_ERROR;
    }
}

/* ---- connection manager ---------------------------------------------- */

cm::cm(ucp_worker *worker) : worker_(worker), request_timeout_(std::chrono::seconds(10))
{
}

cm::~cm()
{
    if (async_ != nullptr) {
        /* Drops every handler and timer first: the fds may be closed then. */
        async_->stop();
    }
    for (auto &[id, c] : conns_) {
        if (c->request != nullptr) {
            /* Never answered: it goes with its worker. The registry makes a
             * late answer with the handle an error, not a use after free. */
            conn_request_free(c->request);
        }
        if (c->fd >= 0) {
            ::close(c->fd);
        }
    }
    conns_.clear();
    for (auto &[id, listener] : listeners_) {
        ucs_warn("worker '%s' destroyed with a listener still open", worker_->name.c_str());
        ::close(listener->fd);
        listener->fd     = -1;
        listener->worker = nullptr;
    }
    if (wait_fd_ >= 0) {
        ucp::worker_wakeup_remove_fd(worker_, wait_fd_);
    }
    async_.reset(); /* closes wait_fd_ */
}

ucs_status_t cm::init()
{
    if (worker_->context.mds.empty()) {
        return UCS_ERR_NO_DEVICE;
    }
    placeholder_        = std::make_unique<proxy_iface>(*worker_->context.mds.front().md);
    ucs_status_t status = ucs::async_context::create(ucs::async_mode::poll, &async_);
    if (status != UCS_OK) {
        ucs_error("client-server: cannot create an async context: %s", ucs_status_string(status));
        return status;
    }
    status = async_->wait_fd(&wait_fd_);
    if (status != UCS_OK) {
        return status;
    }
    return ucp::worker_wakeup_add_fd(worker_, wait_fd_);
}

void cm::set_request_timeout(double seconds)
{
    request_timeout_ =
        std::chrono::duration_cast<steady::duration>(std::chrono::duration<double>(seconds));
}

conn *cm::find(uint64_t id)
{
    auto it = conns_.find(id);
    return (it == conns_.end()) ? nullptr : it->second.get();
}

void cm::watch(conn *c, unsigned events)
{
    if (events == 0) {
        /* Removed, not paused: not even hang-ups may make progress spin
         * (nor wake a sleeper) while the application holds the request. */
        if (c->handler != 0) {
            (void)async_->remove(c->handler);
            c->handler = 0;
        }
        return;
    }
    ucs_status_t status;
    if (c->handler != 0) {
        status = async_->modify(c->handler, events);
    } else {
        /* By id: the conn may be gone (swept) by the time the event runs. */
        const uint64_t id = c->id;
        status            = async_->add(
                       c->fd, events, [this, id](ucs::async_handler_id, int, unsigned) { on_conn_event(id); },
                       &c->handler);
    }
    if (status != UCS_OK) {
        ucs_error("client-server: cannot watch fd %d: %s", c->fd, ucs_status_string(status));
    }
}

void cm::on_conn_event(uint64_t id)
{
    conn *c = find(id);
    if ((c != nullptr) && (c->state != conn::phase::dead)) {
        on_conn(c);
    }
}

void cm::on_request_timeout(uint64_t id)
{
    conn *c = find(id);
    if (c == nullptr) {
        return;
    }
    c->timer = 0; /* a one-shot is unregistered once it fired */
    if (c->server && (c->state == conn::phase::receiving)) {
        ucs_diag("listener: %s sent no connection request in time, closing",
                 to_string(c->remote).c_str());
        close_conn(c);
    }
}

void cm::close_conn(conn *c)
{
    if (c->state == conn::phase::dead) {
        return;
    }
    watch(c, 0); /* before close: the fd number may be reused at once */
    if (c->timer != 0) {
        (void)async_->remove_timer(c->timer);
        c->timer = 0;
    }
    if (c->fd >= 0) {
        ::close(c->fd);
        c->fd = -1;
    }
    c->state = conn::phase::dead;
    dead_.push_back(c->id);
    if (!in_progress_) {
        sweep();
    }
}

void cm::sweep()
{
    for (uint64_t id : dead_) {
        conns_.erase(id);
    }
    dead_.clear();
}

bool cm::flush_tx(conn *c)
{
    while (c->tx_sent < c->tx.size()) {
        ssize_t sent = ::send(c->fd, c->tx.data() + c->tx_sent, c->tx.size() - c->tx_sent,
                              MSG_NOSIGNAL);
        if (sent > 0) {
            c->tx_sent += size_t(sent);
        } else if ((sent < 0) && (errno == EINTR)) {
            continue;
        } else {
            return (sent < 0) && ((errno == EAGAIN) || (errno == EWOULDBLOCK));
        }
    }
    return true;
}

ucs_status_t cm::add_listener(ucp_listener *listener)
{
    listener->id      = next_id_++;
    const uint64_t id = listener->id;
    ucs::async_handler_id handler;
    ucs_status_t status = async_->add(
        listener->fd, ucs::async_event::read,
        [this, id](ucs::async_handler_id, int, unsigned) {
        if (listeners_.count(id) != 0) {
            on_listener(id);
        }
        },
        &handler);
    if (status != UCS_OK) {
        ucs_error("client-server: cannot watch the listening socket: %s",
                  ucs_status_string(status));
        return UCS_ERR_IO_ERROR;
    }
    listeners_[id]         = listener;
    listener_handlers_[id] = handler;
    return UCS_OK;
}

void cm::remove_listener(ucp_listener *listener)
{
    if (listeners_.erase(listener->id) == 0) {
        return;
    }
    /* Before the caller closes the listening fd. */
    auto handler = listener_handlers_.find(listener->id);
    if (handler != listener_handlers_.end()) {
        (void)async_->remove(handler->second);
        listener_handlers_.erase(handler);
    }
    std::vector<conn *> unfinished;
    for (auto &[id, c] : conns_) {
        if (!c->server || (c->listener_id != listener->id)) {
            continue;
        }
        if (c->request != nullptr) {
            c->request->listener = nullptr; /* still answerable */
        } else if (c->state == conn::phase::receiving) {
            unfinished.push_back(c.get());
        }
    }
    for (conn *c : unfinished) {
        close_conn(c);
    }
}

uint64_t cm::start_client(ucp_ep *ep, int fd, int connect_errno, std::vector<uint8_t> request)
{
    auto owned = std::make_unique<conn>(next_id_++, fd, false,
                                        (1u << FRAME_ACCEPT) | (1u << FRAME_REJECT));
    conn *c    = owned.get();
    c->ep      = ep;
    c->tx      = std::move(request);
    c->remote  = ep->sockaddrs->remote;
    c->state   = conn::phase::connecting;
    conns_.emplace(c->id, std::move(owned));
    set_nodelay(fd);
    if ((connect_errno != 0) && (connect_errno != EINPROGRESS)) {
        c->failure = connect_errno_status(connect_errno);
        failed_.push_back(c->id); /* reported from progress, like UCX */
    } else {
        watch(c, ucs::async_event::write);
    }
    poll_now_ = true;
    return c->id;
}

void cm::forget_client(uint64_t conn_id)
{
    conn *c = find(conn_id);
    if (c != nullptr) {
        c->ep = nullptr;
        close_conn(c);
    }
}

void cm::answer(uint64_t conn_id, std::vector<uint8_t> frame)
{
    conn *c = find(conn_id);
    if ((c == nullptr) || (c->state != conn::phase::waiting)) {
        return; /* the client is gone already */
    }
    c->request = nullptr;
    c->tx      = std::move(frame);
    c->tx_sent = 0;
    c->state   = conn::phase::sending;
    if (!flush_tx(c) || (c->tx_sent == c->tx.size())) {
        close_conn(c); /* all written (or the client is gone): done */
        return;
    }
    watch(c, ucs::async_event::write);
}

void cm::on_listener(uint64_t id)
{
    ucp_listener *listener = listeners_.at(id);
    for (unsigned i = 0; i < 64; ++i) {
        sockaddr_storage addr{};
        socklen_t len = sizeof(addr);
        int fd        = accept4(listener->fd, reinterpret_cast<sockaddr *>(&addr), &len,
                                SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR) {
                continue;
            }
            if ((errno != EAGAIN) && (errno != EWOULDBLOCK)) {
                ucs_diag("listener %s: accept failed: %m", to_string(listener->bound).c_str());
            }
            return;
        }
        /* Requests the application has not answered hold a connection too:
         * unauthenticated clients must not pile them up without bound. */
        unsigned open = 0;
        for (const auto &[cid, c] : conns_) {
            open += c->server && (c->listener_id == id) &&
                    ((c->state == conn::phase::receiving) || (c->state == conn::phase::waiting));
        }
        if (open >= max_handshakes) {
            ucs_diag("listener %s: %u requests open or unanswered, refusing %s",
                     to_string(listener->bound).c_str(), open, to_string(addr).c_str());
            ::close(fd);
            continue;
        }
        auto owned     = std::make_unique<conn>(next_id_++, fd, true, 1u << FRAME_CONN_REQUEST);
        conn *c        = owned.get();
        c->state       = conn::phase::receiving;
        c->remote      = addr;
        c->listener_id = id;
        local_address(fd, &c->local);
        set_nodelay(fd);
        conns_.emplace(c->id, std::move(owned));
        watch(c, ucs::async_event::read);
        const uint64_t cid  = c->id;
        ucs_status_t status = async_->add_timer(
            std::max(request_timeout_, steady::duration(1)), ucs::timer_mode::one_shot,
            [this, cid](ucs::async_handler_id) { on_request_timeout(cid); }, &c->timer);
        if ((status != UCS_OK) || (c->handler == 0)) {
            /* Unbounded or unwatched, a handshake would hold its slot forever. */
            ucs_diag("listener %s: cannot watch %s: %s", to_string(listener->bound).c_str(),
                     to_string(addr).c_str(), ucs_status_string(status));
            close_conn(c);
        }
    }
}

void cm::deliver_request(conn *c)
{
    auto it = listeners_.find(c->listener_id);
    if (it == listeners_.end()) {
        close_conn(c);
        return;
    }
    ucp_listener *listener = it->second;
    watch(c, 0);
    if (c->timer != 0) {
        (void)async_->remove_timer(c->timer); /* the application decides now */
        c->timer = 0;
    }
    c->state = conn::phase::waiting;

    ucp_conn_request *req = conn_request_new();
    req->worker           = worker_;
    req->listener         = listener;
    req->conn_id          = c->id;
    req->client_sockaddr  = c->remote;
    req->local_sockaddr   = c->local;
    if (c->reader.header().flags & frame_flag::CLIENT_ID) {
        req->client_id = c->reader.header().client_id;
    }
    req->client_address = c->reader.body();
    c->request          = req;
    ucs_debug("listener %s: connection request from %s", to_string(listener->bound).c_str(),
              to_string(c->remote).c_str());

    /* The callbacks may destroy the listener or answer at once: neither
     * `listener` nor `c` is used after them. */
    if (listener->conn_handler.cb != nullptr) {
        listener->conn_handler.cb(req, listener->conn_handler.arg);
        return;
    }
    const ucp_listener_accept_handler_t accept = listener->accept_handler;
    ucp_ep *ep                                 = nullptr;
    ucs_status_t status                        = accept_request(worker_, req, &ep);
    if (status != UCS_OK) {
        ucs_diag("listener: cannot accept a connection: %s", ucs_status_string(status));
        return;
    }
    if (accept.cb != nullptr) {
        accept.cb(ep, accept.arg);
    }
}

void cm::on_server(conn *c)
{
    if (c->state == conn::phase::receiving) {
        ucs_status_t status = c->reader.read_from(c->fd);
        if (status == UCS_OK) {
            deliver_request(c);
        } else if (status != UCS_INPROGRESS) {
            ucs_diag("listener: dropping connection from %s: %s", to_string(c->remote).c_str(),
                     (status == UCS_ERR_INVALID_PARAM) ? "not a valid connection request" :
                                                         "closed before its request");
            close_conn(c);
        }
    } else if (c->state == conn::phase::sending) {
        if (!flush_tx(c) || (c->tx_sent == c->tx.size())) {
            close_conn(c);
        }
    }
}

void cm::client_failed(conn *c, ucs_status_t status)
{
    ucp_ep *ep = c->ep;
    c->ep      = nullptr;
    ucs_diag("client-server: connection to %s failed: %s", to_string(c->remote).c_str(),
             ucs_status_string(status));
    close_conn(c);
    if (ep == nullptr) {
        return;
    }
    ep->proxy->on_destroy = nullptr; /* the handshake is over */
    ep->flags &= ~ucp::ep_flag::CONNECTING;
    ucp::ep_set_failed(ep, status); /* may run the user's error handler */
}

void cm::client_accepted(conn *c)
{
    ucp_ep *ep                         = c->ep;
    c->ep                              = nullptr;
    const std::vector<uint8_t> address = c->reader.body();
    close_conn(c);
    if (ep != nullptr) {
        client_connected(ep, address);
    }
}

void cm::on_client(conn *c)
{
    if (c->state == conn::phase::connecting) {
        int err       = 0;
        socklen_t len = sizeof(err);
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
            err = errno;
        }
        if (err != 0) {
            client_failed(c, connect_errno_status(err));
            return;
        }
        sockaddr_storage peer;
        socklen_t peer_len = sizeof(peer);
        if (getpeername(c->fd, reinterpret_cast<sockaddr *>(&peer), &peer_len) != 0) {
            return; /* still connecting: a spurious wakeup */
        }
        local_address(c->fd, &c->local);
        if ((c->ep != nullptr) && (c->ep->sockaddrs != nullptr)) {
            c->ep->sockaddrs->local = c->local;
        }
        c->state = conn::phase::sending;
    }
    if (c->state == conn::phase::sending) {
        if (!flush_tx(c)) {
            client_failed(c, UCS_ERR_CONNECTION_RESET);
            return;
        }
        if (c->tx_sent < c->tx.size()) {
            return; /* still watched for writing */
        }
        c->state = conn::phase::receiving;
        watch(c, ucs::async_event::read);
    }
    if (c->state == conn::phase::receiving) {
        ucs_status_t status = c->reader.read_from(c->fd);
        if (status == UCS_INPROGRESS) {
            return;
        }
        if (status != UCS_OK) {
            client_failed(c, UCS_ERR_CONNECTION_RESET);
        } else if (c->reader.header().type == FRAME_ACCEPT) {
            client_accepted(c);
        } else {
            client_failed(c, reject_status(c->reader.header().status));
        }
    }
}

void cm::on_conn(conn *c)
{
    if (c->server) {
        on_server(c);
    } else {
        on_client(c);
    }
}

unsigned cm::progress()
{
    if (in_progress_) {
        return 0; /* a callback called ucp_worker_progress */
    }
    if (conns_.empty() && failed_.empty()) {
        /* Idle listeners cost one look of the context (an epoll_wait) per
         * idle_poll_interval calls; a worker that sleeps learns of them
         * through arm() and the wakeup set instead. */
        if (listeners_.empty() || (!poll_now_ && ((++tick_ % idle_poll_interval) != 0))) {
            return 0;
        }
    }
    in_progress_   = true;
    poll_now_      = false;
    unsigned count = 0;

    std::vector<uint64_t> failed;
    failed.swap(failed_);
    for (uint64_t id : failed) {
        conn *c = find(id);
        if ((c != nullptr) && (c->state != conn::phase::dead)) {
            client_failed(c, c->failure);
            ++count;
        }
    }

    /* Ready fd handlers and due request timers run here. */
    count += async_->progress();
    in_progress_ = false;
    sweep();
    return count;
}

bool cm::ready()
{
    if (!failed_.empty()) {
        return true;
    }
    if (listeners_.empty() && conns_.empty()) {
        return false;
    }
    pollfd pfd{wait_fd_, POLLIN, 0};
    if (::poll(&pfd, 1, 0) > 0) {
        poll_now_ = true; /* the next progress looks at once */
        return true;
    }
    return false;
}

ucs_status_t get_cm(ucp_worker *worker, cm **cm_p)
{
    if (worker->sockaddr_cm == nullptr) {
        auto created        = std::make_unique<cm>(worker);
        ucs_status_t status = created->init();
        if (status != UCS_OK) {
            return status;
        }
        worker->sockaddr_cm = created.release();
        /* Polled on every progress from now on (connection requests, replies). */
        worker->sockaddr_progress_id = worker->progress_queue.add_persistent(
            [](void *arg) -> unsigned {
                return static_cast<ucp_worker *>(arg)->sockaddr_cm->progress();
            },
            worker);
    }
    *cm_p = worker->sockaddr_cm;
    return UCS_OK;
}

} // namespace ucp::cs

namespace ucp {

ucs_status_t sockaddr_arm(ucp_worker *worker)
{
    if ((worker->sockaddr_cm != nullptr) && worker->sockaddr_cm->ready()) {
        return UCS_ERR_BUSY;
    }
    return UCS_OK;
}

void sockaddr_cleanup(ucp_worker *worker)
{
    if (worker->sockaddr_progress_id != ucs::callback_queue::invalid_id) {
        worker->progress_queue.remove(worker->sockaddr_progress_id);
        worker->sockaddr_progress_id = ucs::callback_queue::invalid_id;
    }
    delete worker->sockaddr_cm;
    worker->sockaddr_cm = nullptr;
}

void sockaddr_set_request_timeout(ucp_worker *worker, double seconds)
{
    cs::cm *cm;
    if (cs::get_cm(worker, &cm) == UCS_OK) {
        cm->set_request_timeout(seconds);
    }
}

} // namespace ucp
