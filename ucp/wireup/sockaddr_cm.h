/*
 * The per-worker connection manager of client-server connections: the
 * listeners' sockets and the bootstrap connections, all non-blocking, are
 * fd handlers of a POLL-mode ucs::async_context owned by the manager; the
 * request timeouts are its one-shot timers. The context's wait_fd() joins
 * the worker's wakeup set, so a sleeping worker wakes for a connection
 * request or handshake data.
 *
 * The context is progressed inside ucp_worker_progress (never blocking):
 * every call while a handshake is in flight, every idle_poll_interval-th
 * call while only listeners wait (and at once after ready() found events,
 * for sleepers). User
 * callbacks (conn_handler, accept_handler, error handlers) run from there,
 * and may call back into the API: connections are looked up by id after
 * each callback and freed only when the outermost progress returns.
 *
 * Hostile peers: a server connection must deliver a valid request within
 * the request timeout, at most max_handshakes are open per listener
 * (handshaking, or delivered and not answered by the application yet), and
 * every frame is validated (sockaddr_frame.h) before any callback runs.
 */
#ifndef UCP_WIREUP_SOCKADDR_CM_H
#define UCP_WIREUP_SOCKADDR_CM_H

#include "proxy_ep.h"
#include "sockaddr_frame.h"

#include <ucp/core/ucp_listener.h>
#include <uct/base/uct_iface.h>
#include <ucs/async/async_context.h>

#include <chrono>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <sys/socket.h>

struct ucp_ep;

namespace ucp::cs {

using steady = std::chrono::steady_clock;

constexpr unsigned max_handshakes     = 512; /* open or unanswered per listener */
constexpr unsigned idle_poll_interval = 128; /* progress calls */

/* One bootstrap TCP connection carrying a handshake. */
struct conn {
    enum class phase : uint8_t {
        connecting, /* client: connect() in flight */
        sending,    /* writing our frame */
        receiving,  /* reading the peer's frame */
        waiting,    /* server: the application has the request */
        dead        /* closed; freed by the next sweep */
    };

    conn(uint64_t id_, int fd_, bool server_, unsigned accepted) :
        id(id_), fd(fd_), server(server_), reader(accepted)
    {
    }

    uint64_t id;
    int fd;
    bool server;
    phase state = phase::dead;
    frame_reader reader;
    std::vector<uint8_t> tx;
    size_t tx_sent = 0;
    sockaddr_storage local{};
    sockaddr_storage remote{};
    ucs::async_handler_id handler = 0;      /* fd handler; 0: not watched */
    ucs::async_handler_id timer   = 0;      /* server: request timeout */
    ucs_status_t failure          = UCS_OK; /* client: failed before any event */
    /* Server side. */
    uint64_t listener_id      = 0;
    ucp_conn_request *request = nullptr;
    /* Client side. */
    ucp_ep *ep = nullptr;
};

class cm;

/* md_index of a connecting client's placeholder lane (a wireup proxy,
 * ucp/wireup/proxy_ep.h): matches no memory domain. */
constexpr uint16_t no_md = 0xffff; /* beyond max_resources */

class cm {
public:
    explicit cm(ucp_worker *worker);
    ~cm();
    cm(const cm &)            = delete;
    cm &operator=(const cm &) = delete;

    ucs_status_t init();

    unsigned progress();
    /* True when progress() has something to do now (for ucp_worker_arm). */
    bool ready();

    ucs_status_t add_listener(ucp_listener *listener);
    /* Closes the listener's pending handshakes; its requests stay valid. */
    void remove_listener(ucp_listener *listener);

    /*
     * Takes `fd` (a socket whose connect() returned `connect_errno`, 0 or
     * EINPROGRESS) and sends `request` once connected. Returns the conn id.
     */
    uint64_t start_client(ucp_ep *ep, int fd, int connect_errno, std::vector<uint8_t> request);
    /* The client ep went away before the handshake finished. */
    void forget_client(uint64_t conn_id);

    /* Sends the answer of a request (ACCEPT or REJECT frame) and closes. */
    void answer(uint64_t conn_id, std::vector<uint8_t> frame);

    proxy_iface &placeholder() { return *placeholder_; }
    void set_request_timeout(double seconds);

private:
    conn *find(uint64_t id);
    /* Watches c->fd for ucs::async_event bits (0: not at all). */
    void watch(conn *c, unsigned events);
    void on_conn_event(uint64_t id);
    void on_request_timeout(uint64_t id);
    void close_conn(conn *c);
    void sweep();
    void on_listener(uint64_t id);
    void on_conn(conn *c);
    void on_client(conn *c);
    void on_server(conn *c);
    bool flush_tx(conn *c);
    void client_failed(conn *c, ucs_status_t status);
    void client_accepted(conn *c);
    void deliver_request(conn *c);

    ucp_worker *worker_;
    std::unique_ptr<ucs::async_context> async_;
    int wait_fd_      = -1; /* async_'s */
    uint64_t next_id_ = 1;
    std::unordered_map<uint64_t, ucp_listener *> listeners_;
    std::unordered_map<uint64_t, ucs::async_handler_id> listener_handlers_;
    std::unordered_map<uint64_t, std::unique_ptr<conn>> conns_;
    std::vector<uint64_t> dead_;
    std::vector<uint64_t> failed_; /* clients to fail */
    std::unique_ptr<proxy_iface> placeholder_;
    steady::duration request_timeout_;
    unsigned tick_    = 0;
    bool poll_now_    = false;
    bool in_progress_ = false;
};

/* The worker's cm, created (and added to its wakeup set) on first use. */
ucs_status_t get_cm(ucp_worker *worker, cm **cm_p);

/*
 * Server: creates on `worker` the ep of a connection request, answers the
 * client with that worker's address and frees the request. On failure the
 * client gets a reject with the reason, and the request is freed too.
 */
ucs_status_t accept_request(ucp_worker *worker, ucp_conn_request *request, ucp_ep **ep_p);

/* Answers a connection request with a reject and frees it. */
ucs_status_t reject_request(ucp_conn_request *request, ucs_status_t reason);

/* Completes a client ep once the server's address arrived (sockaddr_ep.cc). */
void client_connected(ucp_ep *ep, const std::vector<uint8_t> &server_address);

/* "host:port" of an IPv4/IPv6 address, for messages and names. */
std::string to_string(const sockaddr_storage &addr);

/* The port of an IPv4/IPv6 address in host order; 0 for other families. */
uint16_t port_of(const sockaddr_storage &addr);

/* Maps a socket errno of a failed connect to a status. */
ucs_status_t connect_errno_status(int err);

} // namespace ucp::cs

#endif
