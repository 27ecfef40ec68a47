/*
 * Endpoints of client-server connections.
 *
 * Client: ucp_ep_create(SOCK_ADDR) starts a non-blocking TCP connect and
 * returns at once an ep whose only lane is a wireup proxy (flag CONNECTING,
 * ucp/wireup/proxy_ep.h): sends find no resources there and queue in order.
 * When the server's address arrives, the real lanes replace the placeholder
 * lane, and the sends stay held until the server's wireup REQUEST is
 * answered (ucp/wireup/wireup.h): the client's ep is the passive side of
 * the handshake. A refused or rejected connection fails the ep instead
 * (error handler, queued sends complete with the error).
 *
 * Server: ucp_ep_create(CONN_REQUEST) creates the ep from the client's
 * address at once (sending its wireup REQUEST, naming the client's port),
 * then answers the client with our address.
 */
#include "sockaddr.h"
#include "sockaddr_cm.h"

#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_listener.h>
#include <ucp/core/ucp_worker.h>
#include <ucp/wireup/wireup.h>
#include <ucs/debug/log.h>

#include <netinet/in.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace ucp::cs {

namespace {

/* Copies a caller's socket address after checking its family and length. */
ucs_status_t copy_sockaddr(const ucs_sock_addr_t &in, const char *what, sockaddr_storage *out,
                           socklen_t *length_p)
{
    if ((in.addr == nullptr) || (in.addrlen < sizeof(sa_family_t))) {
        ucs_error("%s: no socket address given", what);
        return UCS_ERR_INVALID_PARAM;
    }
    const sa_family_t family = in.addr->sa_family;
    const socklen_t need     = (family == AF_INET)  ? sizeof(sockaddr_in) :
                               (family == AF_INET6) ? sizeof(sockaddr_in6) :
                                                      0;
    if ((need == 0) || (in.addrlen < need)) {
        ucs_error("%s: socket address family %d (length %u) is not IPv4 or IPv6", what, int(family),
                  unsigned(in.addrlen));
        return UCS_ERR_INVALID_PARAM;
    }
    std::memset(out, 0, sizeof(*out));
    std::memcpy(out, in.addr, need);
    *length_p = need;
    return UCS_OK;
}

/* Our packed worker address as a frame of `type`. */
ucs_status_t address_frame(ucp_worker *worker, frame_type type, uint8_t flags, uint64_t client_id,
                           std::vector<uint8_t> *frame)
{
    void *address;
    size_t length;
    ucs_status_t status = pack_address(worker->address(false), &address, &length);
    if (status != UCS_OK) {
        return status;
    }
    *frame = make_frame(type, UCS_OK, flags, client_id, address, length);
    std::free(address);
    return UCS_OK;
}

/* A client ep: its placeholder lane, its id, thresholds from the placeholder. */
ucs_status_t new_connecting_ep(ucp_worker *worker, cm &manager, ucp_ep **ep_p)
{
    auto ep    = std::make_unique<ucp_ep>();
    ep->worker = worker;
    ep->flags  = ep_flag::USER | ep_flag::CONNECTING | ep_flag::CLIENT;
    if (!ep->lanes.resize(1)) {
        return UCS_ERR_NO_MEMORY;
    }
    auto *lane = new proxy_ep(manager.placeholder());
    /* iface 0: code that looks a lane's iface up finds a real one. */
    ep->lanes[0]  = {lane, 0, no_md, false, 0};
    ep->num_lanes = 1;
    ep->am_lane   = 0;
    ep->am_ep     = lane;
    ep->proxy     = lane;
    ep_config_attach(ep.get());
    ucs_status_t status = worker->register_ep(ep.get());
    if (status != UCS_OK) {
        delete lane;
        return status;
    }
    *ep_p = ep.release();
    return UCS_OK;
}

ucs_status_t create_client_ep(ucp_worker *worker, const ucp_ep_params_t &params, ucp_ep **ep_p)
{
    sockaddr_storage remote, local;
    socklen_t remote_len, local_len = 0;
    ucs_status_t status = copy_sockaddr(params.sockaddr, "ucp_ep_create", &remote, &remote_len);
    if (status != UCS_OK) {
        return status;
    }
    const bool bind_local = (params.field_mask & UCP_EP_PARAM_FIELD_LOCAL_SOCK_ADDR);
    if (bind_local) {
        status = copy_sockaddr(params.local_sockaddr, "ucp_ep_create (local address)", &local,
                               &local_len);
        if (status != UCS_OK) {
            return status;
        }
    }
    if (worker->ifaces.empty()) {
        return UCS_ERR_NO_DEVICE;
    }
    cm *manager;
    status = get_cm(worker, &manager);
    if (status != UCS_OK) {
        return status;
    }
    const bool send_id = (params.field_mask & UCP_EP_PARAM_FIELD_FLAGS) &&
                         (params.flags & UCP_EP_PARAMS_FLAGS_SEND_CLIENT_ID);
    std::vector<uint8_t> request;
    status = address_frame(worker, FRAME_CONN_REQUEST, send_id ? frame_flag::CLIENT_ID : 0,
                           send_id ? worker->client_id : 0, &request);
    if (status != UCS_OK) {
        return status;
    }

    int fd = ::socket(remote.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        ucs_error("ucp_ep_create: socket() failed: %m");
        return UCS_ERR_IO_ERROR;
    }
    if (bind_local && (::bind(fd, reinterpret_cast<sockaddr *>(&local), local_len) != 0)) {
        ucs_error("ucp_ep_create: cannot bind the local address: %m");
        ::close(fd);
        return (errno == EADDRINUSE) ? UCS_ERR_BUSY : UCS_ERR_INVALID_ADDR;
    }
    int connect_errno = 0;
    if (::connect(fd, reinterpret_cast<sockaddr *>(&remote), remote_len) != 0) {
        connect_errno = errno;
        if ((connect_errno == EAFNOSUPPORT) || (connect_errno == EINVAL)) {
            ::close(fd);
            ucs_error("ucp_ep_create: cannot connect to that address: %s",
                      std::strerror(connect_errno));
            return UCS_ERR_INVALID_PARAM;
        }
    }

    ucp_ep *ep;
    status = new_connecting_ep(worker, *manager, &ep);
    if (status != UCS_OK) {
        ::close(fd);
        return status;
    }
    ep->sockaddrs         = std::make_unique<ep_sockaddrs>();
    ep->sockaddrs->remote = remote;
    ep->peer_name         = to_string(remote); /* until the server's name is known */
    socklen_t len         = sizeof(ep->sockaddrs->local);
    (void)getsockname(fd, reinterpret_cast<sockaddr *>(&ep->sockaddrs->local), &len);
    const uint64_t conn_id = manager->start_client(ep, fd, connect_errno, std::move(request));
    ep->proxy->on_destroy  = [manager, conn_id] { manager->forget_client(conn_id); };
    ucs_debug("worker '%s': ep %u connecting to a listener", worker->name.c_str(), ep->id);
    *ep_p = ep;
    return UCS_OK;
}

} // namespace

void client_connected(ucp_ep *ep, const std::vector<uint8_t> &server_address)
{
    proxy_ep *gate              = ep->proxy;
    const lane placeholder_lane = ep->lanes[0];
    gate->on_destroy            = nullptr; /* the handshake is over */
    ep->flags &= ~ep_flag::CONNECTING;
    const std::string address_name = to_string(ep->sockaddrs->remote);
    if (ep->peer_name == address_name) {
        ep->peer_name.clear(); /* not named by the application: take the server's */
    }

    ep->lanes[0]        = {};
    ep->num_lanes       = 0;
    ep->am_lane         = no_lane;
    ep->am_ep           = nullptr;
    ep->proxy           = nullptr;
    ucs_status_t status = ep_connect_to_address(ep, server_address.data(), server_address.size());
    if (status != UCS_OK) {
        /* Keep the placeholder: failing the ep fails the queued sends through
         * it. The ep has room for a lane still (the failed attempt's or
         * the placeholder's). */
        ep->lanes[0]  = placeholder_lane;
        ep->num_lanes = 1;
        ep->am_lane   = 0;
        ep->am_ep     = gate;
        ep->proxy     = gate;
        if (ep->peer_name.empty()) {
            ep->peer_name = address_name;
        }
        ep_set_failed(ep, status);
        return;
    }
    ucs_debug("worker '%s': client ep %u connected to '%s', waiting for its wireup",
              ep->worker->name.c_str(), ep->id, ep->peer_name.c_str());
    /* Held until the server's REQUEST is answered, by a proxy of the real
     * AM lane now; the REQUEST may be here already. */
    ep->proxy = gate;
    ep->am_ep = gate;
    ep_rehome_proxy(ep);
    ep->worker->schedule(deferred::WIREUPS);
}

ucs_status_t accept_request(ucp_worker *worker, ucp_conn_request *req, ucp_ep **ep_p)
{
    ucp_worker *owner      = req->worker; /* holds the bootstrap connection */
    const uint64_t conn_id = req->conn_id;
    ucp_ep *ep             = nullptr;
    /* Our wireup request names the client's port: its ep, still waiting
     * for the answer below, takes it as its own instead of making another. */
    ucs_status_t status = wireup::connect(worker, req->client_address.data(),
                                          req->client_address.size(), port_of(req->client_sockaddr),
                                          &ep);
    std::vector<uint8_t> answer;
    if (status == UCS_OK) {
        ep->sockaddrs = std::make_unique<ep_sockaddrs>(ep_sockaddrs{req->local_sockaddr,
                                                                    req->client_sockaddr});
        status        = address_frame(worker, FRAME_ACCEPT, 0, 0, &answer);
        if (status != UCS_OK) {
            ep_destroy(ep);
        }
    }
    if (status != UCS_OK) {
        answer = make_frame(FRAME_REJECT, status, 0, 0, nullptr, 0);
    }
    conn_request_free(req);
    if ((owner != nullptr) && (owner->sockaddr_cm != nullptr)) {
        ucp::worker_guard guard(owner);
        owner->sockaddr_cm->answer(conn_id, std::move(answer));
    }
    if (status == UCS_OK) {
        *ep_p = ep;
    }
    return status;
}

ucs_status_t reject_request(ucp_conn_request *req, ucs_status_t reason)
{
    ucp_worker *owner      = req->worker;
    const uint64_t conn_id = req->conn_id;
    conn_request_free(req);
    if ((owner != nullptr) && (owner->sockaddr_cm != nullptr)) {
        ucp::worker_guard guard(owner);
        owner->sockaddr_cm->answer(conn_id, make_frame(FRAME_REJECT, reason, 0, 0, nullptr, 0));
    }
    return UCS_OK;
}

} // namespace ucp::cs

namespace ucp {

ucs_status_t ep_create_sockaddr(ucp_worker *worker, const ucp_ep_params_t &params, ucp_ep **ep_p)
{
    const uint64_t mask    = params.field_mask;
    const bool by_sockaddr = (mask & UCP_EP_PARAM_FIELD_SOCK_ADDR);
    const bool by_request  = (mask & UCP_EP_PARAM_FIELD_CONN_REQUEST);
    if (by_sockaddr == by_request) {
        ucs_error("ucp_ep_create: give either a socket address or a connection request");
        return UCS_ERR_INVALID_PARAM;
    }
    if (by_sockaddr) {
        return cs::create_client_ep(worker, params, ep_p);
    }
    ucp_conn_request *req = params.conn_request;
    if (!conn_request_alive(req)) {
        ucs_error("ucp_ep_create: not a pending connection request");
        return UCS_ERR_INVALID_PARAM;
    }
    return cs::accept_request(worker, req, ep_p);
}

ucs_status_t ep_query_sockaddr(const ucp_ep *ep, ucp_ep_attr_t *attr)
{
    if ((ep->sockaddrs == nullptr) || !ep->usable()) {
        return UCS_ERR_NOT_CONNECTED; /* as UCX: no (working) client-server connection */
    }
    if (attr->field_mask & UCP_EP_ATTR_FIELD_LOCAL_SOCKADDR) {
        attr->local_sockaddr = ep->sockaddrs->local;
    }
    if (attr->field_mask & UCP_EP_ATTR_FIELD_REMOTE_SOCKADDR) {
        attr->remote_sockaddr = ep->sockaddrs->remote;
    }
    return UCS_OK;
}

} // namespace ucp
