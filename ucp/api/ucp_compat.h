/*
 * Deprecated parts of the UCP API, kept because compiled runtimes still
 * call them (Open MPI's osc/common, MPICH ch4, OpenSHMEM). New code should
 * use the *_nb / *_nbx calls in ucp.h. Signatures are UCX 1.13's.
 */
#ifndef UCP_COMPAT_H_
#define UCP_COMPAT_H_

#include <ucp/api/ucp_def.h>
#include <ucs/sys/compiler_def.h>

BEGIN_C_DECLS

/* Old listener handler: UCP creates the endpoint before calling cb. */
typedef struct ucp_listener_accept_handler {
    ucp_listener_accept_callback_t cb;
    void *arg; /* passed back to cb */
} ucp_listener_accept_handler_t;


/**
 * Deprecated: non-zero once the request has completed.
 */
int ucp_request_is_completed(void *request);

/**
 * Deprecated: the same as ucp_request_free().
 */
void ucp_request_release(void *request);

/**
 * Deprecated: the same as ucp_tag_recv_request_test().
 */
ucs_status_t ucp_request_test(void *request, ucp_tag_recv_info_t *info);


/**
 * Deprecated: closes the endpoint with a flush and waits for it.
 */
void ucp_ep_destroy(ucp_ep_h ep);

/**
 * Deprecated: the same as ucp_ep_close_nb(ep, UCP_EP_CLOSE_MODE_FLUSH).
 */
ucs_status_ptr_t ucp_disconnect_nb(ucp_ep_h ep);

/**
 * Changes parameters of an existing endpoint: its error handler and user
 * data. Changing whom it reaches or its error handling mode is refused.
 * @return NULL when done, or an error pointer (UCS_ERR_NOT_IMPLEMENTED for the
 *         fields that cannot change).
 */
ucs_status_ptr_t ucp_ep_modify_nb(ucp_ep_h ep, const ucp_ep_params_t *params);


/**
 * Deprecated: flushes the endpoint and waits (ucp_ep_flush_nbx()).
 */
ucs_status_t ucp_ep_flush(ucp_ep_h ep);

/**
 * Deprecated: flushes the worker and waits (ucp_worker_flush_nbx()).
 */
ucs_status_t ucp_worker_flush(ucp_worker_h worker);


/**
 * Deprecated: ucp_put_nbx() and a wait until the buffer may be reused.
 */
ucs_status_t ucp_put(ucp_ep_h ep, const void *buffer, size_t length, uint64_t remote_addr,
                     ucp_rkey_h rkey);

/**
 * Deprecated: ucp_get_nbx() and a wait until the data has arrived.
 */
ucs_status_t ucp_get(ucp_ep_h ep, void *buffer, size_t length, uint64_t remote_addr,
                     ucp_rkey_h rkey);


/**
 * Deprecated: adds add to the 32-bit word at remote_addr.
 */
ucs_status_t ucp_atomic_add32(ucp_ep_h ep, uint32_t add, uint64_t remote_addr, ucp_rkey_h rkey);

/**
 * Deprecated: adds add to the 64-bit word at remote_addr.
 */
ucs_status_t ucp_atomic_add64(ucp_ep_h ep, uint64_t add, uint64_t remote_addr, ucp_rkey_h rkey);

/**
 * Deprecated: adds add to the 32-bit word at remote_addr, waits, and stores
 * its previous value in *result.
 */
ucs_status_t ucp_atomic_fadd32(ucp_ep_h ep, uint32_t add, uint64_t remote_addr, ucp_rkey_h rkey,
                               uint32_t *result);

/**
 * Deprecated: the 64-bit ucp_atomic_fadd32().
 */
ucs_status_t ucp_atomic_fadd64(ucp_ep_h ep, uint64_t add, uint64_t remote_addr, ucp_rkey_h rkey,
                               uint64_t *result);

/**
 * Deprecated: writes swap to the 32-bit word at remote_addr, waits, and
 * stores its previous value in *result.
 */
ucs_status_t ucp_atomic_swap32(ucp_ep_h ep, uint32_t swap, uint64_t remote_addr, ucp_rkey_h rkey,
                               uint32_t *result);

/**
 * Deprecated: the 64-bit ucp_atomic_swap32().
 */
ucs_status_t ucp_atomic_swap64(ucp_ep_h ep, uint64_t swap, uint64_t remote_addr, ucp_rkey_h rkey,
                               uint64_t *result);

/**
 * Deprecated: writes swap to the 32-bit word at remote_addr if it equals
 * compare, waits, and stores its previous value in *result.
 */
ucs_status_t ucp_atomic_cswap32(ucp_ep_h ep, uint32_t compare, uint32_t swap, uint64_t remote_addr,
                                ucp_rkey_h rkey, uint32_t *result);

/**
 * Deprecated: the 64-bit ucp_atomic_cswap32().
 */
ucs_status_t ucp_atomic_cswap64(ucp_ep_h ep, uint64_t compare, uint64_t swap, uint64_t remote_addr,
                                ucp_rkey_h rkey, uint64_t *result);

END_C_DECLS

#endif
