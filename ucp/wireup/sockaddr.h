/*
 * Client-server connections: what the rest of UCP calls.
 *
 * A listener and every client ep created from a socket address share one
 * per-worker connection manager (sockaddr_cm.h), created on first use and
 * polled from ucp_worker_progress (never blocking). The bootstrap TCP
 * connection carries one handshake each way (sockaddr_frame.h) and closes;
 * lanes are then chosen from the exchanged worker addresses as for any ep.
 */
#ifndef UCP_WIREUP_SOCKADDR_H
#define UCP_WIREUP_SOCKADDR_H

#include <ucp/api/ucp.h>

struct ucp_worker;
struct ucp_ep;

namespace ucp {

/*
 * ucp_ep_create with UCP_EP_PARAM_FIELD_SOCK_ADDR (client: returns at once
 * an ep whose sends queue until the server answers) or
 * UCP_EP_PARAM_FIELD_CONN_REQUEST (server: accepts the request). The
 * caller applies the common ep parameters (error handler, ...) afterwards.
 */
ucs_status_t ep_create_sockaddr(ucp_worker *worker, const ucp_ep_params_t &params, ucp_ep **ep_p);

/* ucp_ep_query's LOCAL/REMOTE_SOCKADDR fields. */
ucs_status_t ep_query_sockaddr(const ucp_ep *ep, ucp_ep_attr_t *attr);

/* For ucp_worker_arm: UCS_ERR_BUSY when handshake work is ready. */
ucs_status_t sockaddr_arm(ucp_worker *worker);

/* Worker destruction, after its eps are gone: closes every socket. */
void sockaddr_cleanup(ucp_worker *worker);

/* Tests: seconds a server waits for a client's request (default 10). */
void sockaddr_set_request_timeout(ucp_worker *worker, double seconds);

} // namespace ucp

#endif
