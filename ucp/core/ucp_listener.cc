/*
 * ucp_listener_* and ucp_conn_request_query: a listening TCP socket whose
 * connections the worker's connection manager serves (ucp/wireup/).
 */
#include "ucp_listener.h"
#include "ucp_guard.h"
#include "ucp_worker.h"

#include <ucp/wireup/sockaddr_cm.h>
#include <ucs/debug/log.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <unordered_set>

namespace ucp {

namespace {

/* Handles the application holds, so a stale one is refused, not followed. */
struct handle_registry {
    std::mutex lock;
    std::unordered_set<const void *> live;

    void add(const void *p)
    {
        std::lock_guard<std::mutex> guard(lock);
        live.insert(p);
    }
    void remove(const void *p)
    {
        std::lock_guard<std::mutex> guard(lock);
        live.erase(p);
    }
    bool contains(const void *p)
    {
        std::lock_guard<std::mutex> guard(lock);
        return live.count(p) != 0;
    }
};

handle_registry &registry()
{
    static handle_registry instance;
    return instance;
}

ucs_status_t check_params(const ucp_listener_params_t &params, sockaddr_storage *addr,
                          socklen_t *addr_len)
{
    const uint64_t mask = params.field_mask;
    if (!(mask & UCP_LISTENER_PARAM_FIELD_SOCK_ADDR) || (params.sockaddr.addr == nullptr)) {
        ucs_error("ucp_listener_create: missing socket address");
        return UCS_ERR_INVALID_PARAM;
    }
    const bool accept = (mask & UCP_LISTENER_PARAM_FIELD_ACCEPT_HANDLER) &&
                        (params.accept_handler.cb != nullptr);
    const bool conn = (mask & UCP_LISTENER_PARAM_FIELD_CONN_HANDLER) &&
                      (params.conn_handler.cb != nullptr);
    if (accept == conn) {
        ucs_error("ucp_listener_create: exactly one of accept_handler and "
                  "conn_handler must be given");
        return UCS_ERR_INVALID_PARAM;
    }
    if (params.sockaddr.addrlen < sizeof(sa_family_t)) {
        return UCS_ERR_INVALID_PARAM;
    }
    const sa_family_t family = params.sockaddr.addr->sa_family;
    const socklen_t need     = (family == AF_INET)  ? sizeof(sockaddr_in) :
                               (family == AF_INET6) ? sizeof(sockaddr_in6) :
                                                      0;
    if ((need == 0) || (params.sockaddr.addrlen < need)) {
        ucs_error("ucp_listener_create: address family %d is not IPv4 or IPv6", int(family));
        return UCS_ERR_INVALID_PARAM;
    }
    std::memset(addr, 0, sizeof(*addr));
    std::memcpy(addr, params.sockaddr.addr, need);
    *addr_len = need;
    return UCS_OK;
}

ucs_status_t open_socket(const sockaddr_storage &addr, socklen_t len, int *fd_p)
{
    int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        ucs_error("ucp_listener_create: socket() failed: %m");
        return UCS_ERR_IO_ERROR;
    }
    int one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, reinterpret_cast<const sockaddr *>(&addr), len) != 0) {
        const int err = errno;
        ucs_error("ucp_listener_create: bind failed: %s", std::strerror(err));
        ::close(fd);
        return (err == EADDRINUSE)    ? UCS_ERR_BUSY :
               (err == EADDRNOTAVAIL) ? UCS_ERR_INVALID_ADDR :
                                        UCS_ERR_IO_ERROR;
    }
    if (::listen(fd, SOMAXCONN) != 0) {
        ucs_error("ucp_listener_create: listen failed: %m");
        ::close(fd);
        return UCS_ERR_IO_ERROR;
    }
    *fd_p = fd;
    return UCS_OK;
}

ucs_status_t create_listener(ucp_worker *worker, const ucp_listener_params_t &params,
                             ucp_listener_h *listener_p)
{
    sockaddr_storage addr;
    socklen_t addr_len;
    ucs_status_t status = check_params(params, &addr, &addr_len);
    if (status != UCS_OK) {
        return status;
    }
    cs::cm *manager;
    status = cs::get_cm(worker, &manager);
    if (status != UCS_OK) {
        return status;
    }
    auto listener    = std::make_unique<ucp_listener>();
    listener->worker = worker;
    if (params.field_mask & UCP_LISTENER_PARAM_FIELD_CONN_HANDLER) {
        listener->conn_handler = params.conn_handler;
    }
    if (params.field_mask & UCP_LISTENER_PARAM_FIELD_ACCEPT_HANDLER) {
        listener->accept_handler = params.accept_handler;
    }
    status = open_socket(addr, addr_len, &listener->fd);
    if (status != UCS_OK) {
        return status;
    }
    socklen_t len = sizeof(listener->bound);
    if (getsockname(listener->fd, reinterpret_cast<sockaddr *>(&listener->bound), &len) != 0) {
        listener->bound = addr;
    }
    status = manager->add_listener(listener.get());
    if (status != UCS_OK) {
        ::close(listener->fd);
        return status;
    }
    listener_register(listener.get());
    *listener_p = listener.release();
    return UCS_OK;
}

} // namespace

void listener_register(const ucp_listener *listener)
{
    registry().add(listener);
}

void listener_unregister(const ucp_listener *listener)
{
    registry().remove(listener);
}

bool listener_alive(const ucp_listener *listener)
{
    return (listener != nullptr) && registry().contains(listener);
}

ucp_conn_request *conn_request_new()
{
    auto *req = new ucp_conn_request();
    registry().add(req);
    return req;
}

void conn_request_free(ucp_conn_request *request)
{
    registry().remove(request);
    delete request;
}

bool conn_request_alive(const ucp_conn_request *request)
{
    return (request != nullptr) && registry().contains(request);
}

} // namespace ucp

extern "C" {

ucs_status_t ucp_listener_create(ucp_worker_h worker, const ucp_listener_params_t *params,
                                 ucp_listener_h *listener_p)
{
    if ((worker == nullptr) || (params == nullptr) || (listener_p == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucp::worker_guard guard(worker);
    return ucp::guarded("ucp_listener_create",
                        [&]() { return ucp::create_listener(worker, *params, listener_p); });
}

void ucp_listener_destroy(ucp_listener_h listener)
{
    if (!ucp::listener_alive(listener)) {
        return;
    }
    ucp::guarded("ucp_listener_destroy", [&]() {
        ucp::listener_unregister(listener);
        if (ucp_worker *worker = listener->worker) { /* nullptr: its worker is gone */
            ucp::worker_guard guard(worker);
            worker->sockaddr_cm->remove_listener(listener);
            ::close(listener->fd);
        }
        delete listener;
        return UCS_OK;
    });
}

ucs_status_t ucp_listener_query(ucp_listener_h listener, ucp_listener_attr_t *attr)
{
    if (!ucp::listener_alive(listener) || (attr == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (attr->field_mask & UCP_LISTENER_ATTR_FIELD_SOCKADDR) {
        attr->sockaddr = listener->bound;
    }
    return UCS_OK;
}

ucs_status_t ucp_listener_reject(ucp_listener_h listener, ucp_conn_request_h conn_request)
{
    if (!ucp::listener_alive(listener) || !ucp::conn_request_alive(conn_request)) {
        return UCS_ERR_INVALID_PARAM;
    }
    return ucp::guarded("ucp_listener_reject",
                        [&]() { return ucp::cs::reject_request(conn_request, UCS_ERR_REJECTED); });
}

ucs_status_t ucp_conn_request_query(ucp_conn_request_h conn_request, ucp_conn_request_attr_t *attr)
{
    if (!ucp::conn_request_alive(conn_request) || (attr == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (attr->field_mask & UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR) {
        attr->client_address = conn_request->client_sockaddr;
    }
    if (attr->field_mask & UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ID) {
        attr->client_id = conn_request->client_id;
    }
    return UCS_OK;
}

} // extern "C"
