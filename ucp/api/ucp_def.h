/*
 * Basic UCP types: opaque handles, callback signatures and the few
 * structures other headers need early. Everything here is part of the
 * UCX 1.13 ABI: field order, enum values and signatures must not change.
 */
#ifndef UCP_DEF_H_
#define UCP_DEF_H_

#include <ucs/memory/memory_type.h>
#include <ucs/type/status.h>
#include <ucs/config/types.h>
#include <stddef.h>
#include <stdint.h>


/* Longest name (with the terminating NUL) of a context, worker or endpoint. */
#define UCP_ENTITY_NAME_MAX 32


/* ---- Opaque handles: applications only ever hold pointers to these. ---- */

typedef struct ucp_context *ucp_context_h;           /* one per application */
typedef struct ucp_config ucp_config_t;              /* parsed UCX_* settings */
typedef struct ucp_worker *ucp_worker_h;             /* progress engine */
typedef struct ucp_ep *ucp_ep_h;                     /* connection to a peer */
typedef struct ucp_conn_request *ucp_conn_request_h; /* incoming connection */
typedef struct ucp_listener *ucp_listener_h;         /* accepts connections */
typedef struct ucp_address ucp_address_t;            /* packed worker address */
typedef struct ucp_rkey *ucp_rkey_h;                 /* unpacked remote key */
typedef struct ucp_mem *ucp_mem_h;                   /* registered memory */
typedef struct ucp_recv_desc *ucp_tag_message_h;     /* probed tag message */

/* Defined in ucp.h; declared here because callbacks refer to them. */
typedef struct ucp_tag_recv_info ucp_tag_recv_info_t;
typedef struct ucp_am_recv_param ucp_am_recv_param_t;

/* A 64-bit tag matched against (tag & mask) on receive. */
typedef uint64_t ucp_tag_t;

/*
 * Datatype descriptor: the low UCP_DATATYPE_SHIFT bits hold the class
 * (contig, iov, generic), the rest the element size or a pointer.
 */
typedef uint64_t ucp_datatype_t;


/* What an endpoint does when its peer fails. */
typedef enum {
    UCP_ERR_HANDLING_MODE_NONE, /* no detection; the peer is assumed alive */
    UCP_ERR_HANDLING_MODE_PEER  /* detect peer failure, call err_handler */
} ucp_err_handling_mode_t;


/* Which fields of ucp_mem_attr_t ucp_mem_query() fills. */
enum ucp_mem_attr_field {
    UCP_MEM_ATTR_FIELD_ADDRESS  = UCS_BIT(0),
    UCP_MEM_ATTR_FIELD_LENGTH   = UCS_BIT(1),
    UCP_MEM_ATTR_FIELD_MEM_TYPE = UCS_BIT(2)
};

/* Result of ucp_mem_query(). */
typedef struct ucp_mem_attr {
    uint64_t field_mask; /* ucp_mem_attr_field bits to fill */
    void *address;
    size_t length;
    ucs_memory_type_t mem_type;
} ucp_mem_attr_t;


/* ---- Request lifetime and completion callbacks ---- */

/* Called once per request element when the request pool creates it. */
typedef void (*ucp_request_init_callback_t)(void *request);

/* Called once per request element when the pool is destroyed. */
typedef void (*ucp_request_cleanup_callback_t)(void *request);

/* Completion of a send started with a *_nb call. */
typedef void (*ucp_send_callback_t)(void *request, ucs_status_t status);

/* Completion of a send started with a *_nbx call. */
typedef void (*ucp_send_nbx_callback_t)(void *request, ucs_status_t status, void *user_data);

/* Completion of ucp_stream_recv_nb(); length is the received byte count. */
typedef void (*ucp_stream_recv_callback_t)(void *request, ucs_status_t status, size_t length);

typedef void (*ucp_stream_recv_nbx_callback_t)(void *request, ucs_status_t status, size_t length,
                                               void *user_data);

/* Completion of a tag receive started with a *_nb call. */
typedef void (*ucp_tag_recv_callback_t)(void *request, ucs_status_t status,
                                        ucp_tag_recv_info_t *info);

typedef void (*ucp_tag_recv_nbx_callback_t)(void *request, ucs_status_t status,
                                            const ucp_tag_recv_info_t *tag_info, void *user_data);

/* Completion of ucp_am_recv_data_nbx() (rendezvous active-message data). */
typedef void (*ucp_am_recv_data_nbx_callback_t)(void *request, ucs_status_t status, size_t length,
                                                void *user_data);


/* ---- Error handling and connection establishment ---- */

/* Called when an endpoint created with UCP_ERR_HANDLING_MODE_PEER fails. */
typedef void (*ucp_err_handler_cb_t)(void *arg, ucp_ep_h ep, ucs_status_t status);

typedef struct ucp_err_handler {
    ucp_err_handler_cb_t cb;
    void *arg; /* passed back to cb */
} ucp_err_handler_t;

/* Old-style listener callback: the endpoint is already created. */
typedef void (*ucp_listener_accept_callback_t)(ucp_ep_h ep, void *arg);

/* Listener callback: the application accepts (ucp_ep_create) or rejects. */
typedef void (*ucp_listener_conn_callback_t)(ucp_conn_request_h conn_request, void *arg);

typedef struct ucp_listener_conn_handler {
    ucp_listener_conn_callback_t cb;
    void *arg; /* passed back to cb */
} ucp_listener_conn_handler_t;


/* ---- Wakeup and active messages ---- */

/* Events that ucp_worker_arm() waits for. */
typedef enum ucp_wakeup_event_types {
    UCP_WAKEUP_RMA      = UCS_BIT(0),
    UCP_WAKEUP_AMO      = UCS_BIT(1),
    UCP_WAKEUP_TAG_SEND = UCS_BIT(2),
    UCP_WAKEUP_TAG_RECV = UCS_BIT(3),
    UCP_WAKEUP_TX       = UCS_BIT(10), /* any outgoing completion */
    UCP_WAKEUP_RX       = UCS_BIT(11), /* any incoming message */
    UCP_WAKEUP_EDGE     = UCS_BIT(16)  /* edge-triggered: only new events */
} ucp_wakeup_event_t;

/*
 * Old active-message handler (ucp_worker_set_am_handler). Returning
 * UCS_INPROGRESS keeps data (when UCP_CB_PARAM_FLAG_DATA is set) until the
 * application calls ucp_am_data_release().
 */
typedef ucs_status_t (*ucp_am_callback_t)(void *arg, void *data, size_t length, ucp_ep_h reply_ep,
                                          unsigned flags);

/* Active-message handler set with ucp_worker_set_am_recv_handler(). */
typedef ucs_status_t (*ucp_am_recv_callback_t)(void *arg, const void *header, size_t header_length,
                                               void *data, size_t length,
                                               const ucp_am_recv_param_t *param);


/* ---- Endpoint creation ---- */

/* Arguments of ucp_ep_create(); field_mask says which are set. */
typedef struct ucp_ep_params {
    uint64_t field_mask;          /* ucp_ep_params_field bits */
    const ucp_address_t *address; /* peer worker address */
    ucp_err_handling_mode_t err_mode;
    ucp_err_handler_t err_handler;
    void *user_data;                 /* given to err_handler, stream poll */
    unsigned flags;                  /* ucp_ep_params_flags_field bits */
    ucs_sock_addr_t sockaddr;        /* server to connect to */
    ucp_conn_request_h conn_request; /* from a listener callback */
    const char *name;                /* for diagnostics */
    ucs_sock_addr_t local_sockaddr;  /* client side bind address */
} ucp_ep_params_t;

#endif
