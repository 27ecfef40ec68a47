/*
 * The objects behind ucp_listener_h and ucp_conn_request_h. Both are
 * handed to the application, so every public call first checks that the
 * handle is alive (a process-wide registry), and a stale or foreign
 * pointer gets UCS_ERR_INVALID_PARAM instead of a crash.
 */
#ifndef UCP_CORE_UCP_LISTENER_H
#define UCP_CORE_UCP_LISTENER_H

#include <ucp/api/ucp.h>

#include <cstdint>
#include <vector>

#include <sys/socket.h>

struct ucp_worker;

struct ucp_listener {
    ucp_worker *worker = nullptr;
    uint64_t id        = 0; /* in the worker's cm */
    int fd             = -1;
    sockaddr_storage bound{}; /* port 0 resolved */
    ucp_listener_accept_handler_t accept_handler{nullptr, nullptr};
    ucp_listener_conn_handler_t conn_handler{nullptr, nullptr};
};

struct ucp_conn_request {
    ucp_worker *worker     = nullptr; /* the listener's */
    ucp_listener *listener = nullptr; /* nullptr once it is destroyed */
    uint64_t conn_id       = 0;       /* bootstrap connection in the cm */
    sockaddr_storage client_sockaddr{};
    sockaddr_storage local_sockaddr{}; /* our end of the connection */
    uint64_t client_id = 0;
    std::vector<uint8_t> client_address; /* validated packed worker address */
};

namespace ucp {

/* The registry of live handles (thread-safe). */
void listener_register(const ucp_listener *listener);
void listener_unregister(const ucp_listener *listener);
bool listener_alive(const ucp_listener *listener);

ucp_conn_request *conn_request_new();
/* Unregisters and frees. */
void conn_request_free(ucp_conn_request *request);
bool conn_request_alive(const ucp_conn_request *request);

} // namespace ucp

#endif
