/*
 * UCP: the public C API of the framework.
 *
 * Programs built against UCX 1.13's ucp.h run on our libucp.so.0 unchanged,
 * so every structure layout, enum value, macro and prototype below is a
 * UCX 1.13 fact (checked by tests/abi). Parameter structures follow one
 * rule: field_mask says which fields the caller filled in; fields whose bit
 * is clear are never read, which is how old binaries stay compatible when
 * fields are appended.
 *
 * Return conventions:
 *  - ucs_status_t: UCS_OK or an error (ucs/type/status.h);
 *  - ucs_status_ptr_t: NULL when the operation completed at once, an error
 *    when UCS_PTR_IS_ERR(), otherwise a request that completes later (poll
 *    with ucp_request_check_status(), release with ucp_request_free()).
 */
#ifndef UCP_H_
#define UCP_H_

#include <ucp/api/ucp_def.h>
#include <ucp/api/ucp_compat.h>
#include <ucp/api/ucp_version.h>
#include <ucs/type/thread_mode.h>
#include <ucs/type/cpu_set.h>
#include <ucs/config/types.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/memory/memory_type.h>
#include <stdio.h>
#include <sys/types.h>

BEGIN_C_DECLS


/* ======================================================================
 * Context: the features an application needs and the resources behind them
 * ====================================================================== */

/* Which fields of ucp_params_t are set. */
enum ucp_params_field {
    UCP_PARAM_FIELD_FEATURES          = UCS_BIT(0),
    UCP_PARAM_FIELD_REQUEST_SIZE      = UCS_BIT(1),
    UCP_PARAM_FIELD_REQUEST_INIT      = UCS_BIT(2),
    UCP_PARAM_FIELD_REQUEST_CLEANUP   = UCS_BIT(3),
    UCP_PARAM_FIELD_TAG_SENDER_MASK   = UCS_BIT(4),
    UCP_PARAM_FIELD_MT_WORKERS_SHARED = UCS_BIT(5),
    UCP_PARAM_FIELD_ESTIMATED_NUM_EPS = UCS_BIT(6),
    UCP_PARAM_FIELD_ESTIMATED_NUM_PPN = UCS_BIT(7),
    UCP_PARAM_FIELD_NAME              = UCS_BIT(8)
};

/* Communication features requested in ucp_params_t::features. */
enum ucp_feature {
    UCP_FEATURE_TAG    = UCS_BIT(0), /* tag matching */
    UCP_FEATURE_RMA    = UCS_BIT(1), /* put/get */
    UCP_FEATURE_AMO32  = UCS_BIT(2), /* 32-bit atomics */
    UCP_FEATURE_AMO64  = UCS_BIT(3), /* 64-bit atomics */
    UCP_FEATURE_WAKEUP = UCS_BIT(4), /* event fd / ucp_worker_wait */
    UCP_FEATURE_STREAM = UCS_BIT(5), /* ordered byte streams */
    UCP_FEATURE_AM     = UCS_BIT(6)  /* active messages */
};

/* Arguments of ucp_init(). */
typedef struct ucp_params {
    uint64_t field_mask; /* ucp_params_field bits */
    uint64_t features;   /* ucp_feature bits */
    size_t request_size; /* user bytes per request */
    ucp_request_init_callback_t request_init;
    ucp_request_cleanup_callback_t request_cleanup;
    uint64_t tag_sender_mask; /* tag bits naming the sender */
    int mt_workers_shared;    /* workers on several threads */
    size_t estimated_num_eps; /* hint for resource sizing */
    size_t estimated_num_ppn; /* processes per node hint */
    const char *name;
} ucp_params_t;

/* Which fields of ucp_lib_attr_t to fill. */
enum ucp_lib_attr_field { UCP_LIB_ATTR_FIELD_MAX_THREAD_LEVEL = UCS_BIT(0) };

/* Result of ucp_lib_query(). */
typedef struct ucp_lib_attr {
    uint64_t field_mask;
    ucs_thread_mode_t max_thread_level; /* highest mode this build supports */
} ucp_lib_attr_t;

/* Which fields of ucp_context_attr_t to fill. */
enum ucp_context_attr_field {
    UCP_ATTR_FIELD_REQUEST_SIZE = UCS_BIT(0),
    UCP_ATTR_FIELD_THREAD_MODE  = UCS_BIT(1),
    UCP_ATTR_FIELD_MEMORY_TYPES = UCS_BIT(2),
    UCP_ATTR_FIELD_NAME         = UCS_BIT(3)
};

/* Result of ucp_context_query(). */
typedef struct ucp_context_attr {
    uint64_t field_mask;
    size_t request_size; /* bytes UCP keeps before the user area */
    ucs_thread_mode_t thread_mode;
    uint64_t memory_types; /* bit per ucs_memory_type_t supported */
    char name[UCP_ENTITY_NAME_MAX];
} ucp_context_attr_t;


/**
 * Reports what this build of the library supports.
 * @param attr  fields to fill, chosen by attr->field_mask
 *              (UCP_LIB_ATTR_FIELD_MAX_THREAD_LEVEL: the highest thread mode).
 * @return UCS_OK, or UCS_ERR_INVALID_PARAM for a NULL attr.
 */
ucs_status_t ucp_lib_query(ucp_lib_attr_t *attr);

/**
 * Reads the UCP settings: UCX_* environment variables (with a prefix P,
 * P_UCX_* first), the configuration file (UCX_CONFIG_FILE, or etc/ucx/ucx.conf
 * of the install), then the built-in defaults.
 * @param env_prefix  extra prefix of the variables to look at first, or NULL.
 * @param filename    a further file of NAME = value lines applied over those
 *                    values, or NULL.
 * @param config_p    receives the new configuration; free it with ucp_config_release().
 * @return UCS_OK; UCS_ERR_INVALID_PARAM when a variable holds a malformed value
 *         (the variable is named in the log); UCS_ERR_IO_ERROR when filename
 *         cannot be read; UCS_ERR_NO_MEMORY.
 */
ucs_status_t ucp_config_read(const char *env_prefix, const char *filename, ucp_config_t **config_p);

/**
 * Frees a configuration from ucp_config_read(). A context created from it
 * keeps its own copy, so this may be called right after ucp_init().
 */
void ucp_config_release(ucp_config_t *config);

/**
 * Changes one setting of a configuration, as if the variable were set.
 * @param config  configuration from ucp_config_read().
 * @param name    the setting without its UCX_ prefix ("TLS", "RNDV_THRESH").
 * @param value   its new value, in the variable's syntax.
 * @return UCS_OK; UCS_ERR_NO_ELEM for an unknown name; UCS_ERR_INVALID_PARAM
 *         for a value the setting does not accept.
 */
ucs_status_t ucp_config_modify(ucp_config_t *config, const char *name, const char *value);

/**
 * Writes a configuration as UCX_NAME=value lines.
 * @param config       configuration to print.
 * @param stream       where to write.
 * @param title        heading printed with UCS_CONFIG_PRINT_HEADER, or NULL.
 * @param print_flags  ucs_config_print_flags_t bits (documentation, hidden
 *                     settings, commented-out defaults).
 */
void ucp_config_print(const ucp_config_t *config, FILE *stream, const char *title,
                      ucs_config_print_flags_t print_flags);

/**
 * The version of the library that is actually loaded, which may be newer
 * than the UCP_API_* the caller was compiled with.
 * @param major_version   receives the major version (1).
 * @param minor_version   receives the minor version (13).
 * @param release_number  receives the release number.
 */
void ucp_get_version(unsigned *major_version, unsigned *minor_version, unsigned *release_number);

/**
 * The loaded library's version as text ("1.13.1"); a static string.
 */
const char *ucp_get_version_string(void);

/**
 * Creates a context: the transports and memory domains that provide the
 * requested features, filtered by the configuration. Called through
 * ucp_init(), which passes the API version the caller was built with.
 * @param api_major_version  UCP_API_MAJOR of the caller; a newer major is refused.
 * @param api_minor_version  UCP_API_MINOR of the caller.
 * @param params             features and options; features must name at least
 *                           one UCP_FEATURE_*.
 * @param config             settings from ucp_config_read(), or NULL to read them now.
 * @param context_p          receives the context; destroy it with ucp_cleanup().
 * @return UCS_OK; UCS_ERR_INVALID_PARAM for missing or unknown features or a
 *         bad configuration; UCS_ERR_NO_DEVICE when no transport is left after
 *         UCX_TLS and the device lists (the log says which exist);
 *         UCS_ERR_UNSUPPORTED for a newer API major version.
 */
ucs_status_t ucp_init_version(unsigned api_major_version, unsigned api_minor_version,
                              const ucp_params_t *params, const ucp_config_t *config,
                              ucp_context_h *context_p);

/**
 * Creates a context (see ucp_init_version()); inline so that the caller's
 * compile-time API version reaches the library.
 */
static inline ucs_status_t ucp_init(const ucp_params_t *params, const ucp_config_t *config,
                                    ucp_context_h *context_p)
{
    return ucp_init_version(UCP_API_MAJOR, UCP_API_MINOR, params, config, context_p);
}

/**
 * Destroys a context. Its workers must have been destroyed first; memory it
 * still maps is released.
 */
void ucp_cleanup(ucp_context_h context_p);

/**
 * Reports properties of a context.
 * @param context_p  the context.
 * @param attr       fields to fill, chosen by attr->field_mask: the request
 *                   size UCP reserves, the thread mode, the memory types it
 *                   can handle, its name.
 * @return UCS_OK, or UCS_ERR_INVALID_PARAM.
 */
ucs_status_t ucp_context_query(ucp_context_h context_p, ucp_context_attr_t *attr);

/**
 * Prints a context's features, thread mode, endpoint estimates, memory
 * domains and transport resources as # comment lines (ucx_info -p).
 */
void ucp_context_print_info(const ucp_context_h context, FILE *stream);


/* ======================================================================
 * Operation parameters (the *_nbx calls) and requests
 * ====================================================================== */

/* Bits of ucp_request_param_t::op_attr_mask: fields set (low 16 bits) and
 * behaviour flags (high bits). */
typedef enum {
    UCP_OP_ATTR_FIELD_REQUEST      = UCS_BIT(0),
    UCP_OP_ATTR_FIELD_CALLBACK     = UCS_BIT(1),
    UCP_OP_ATTR_FIELD_USER_DATA    = UCS_BIT(2),
    UCP_OP_ATTR_FIELD_DATATYPE     = UCS_BIT(3),
    UCP_OP_ATTR_FIELD_FLAGS        = UCS_BIT(4),
    UCP_OP_ATTR_FIELD_REPLY_BUFFER = UCS_BIT(5),
    UCP_OP_ATTR_FIELD_MEMORY_TYPE  = UCS_BIT(6),
    UCP_OP_ATTR_FIELD_RECV_INFO    = UCS_BIT(7),
    UCP_OP_ATTR_FIELD_MEMH         = UCS_BIT(8),

    /* clang-format off */
    UCP_OP_ATTR_FLAG_NO_IMM_CMPL    = UCS_BIT(16), /* always return a request */
    UCP_OP_ATTR_FLAG_FAST_CMPL      = UCS_BIT(17), /* complete early, may copy */
    UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL = UCS_BIT(18), /* complete now or fail */
    UCP_OP_ATTR_FLAG_MULTI_SEND     = UCS_BIT(19)  /* tune for bandwidth of many
                                                      operations in flight */
} ucp_op_attr_t;
/* clang-format on */

/* Common argument of all *_nbx calls. */
typedef struct {
    uint32_t op_attr_mask; /* ucp_op_attr_t bits */
    uint32_t flags;        /* call-specific flags */
    void *request;         /* caller's request (FIELD_REQUEST) */
    union {
        ucp_send_nbx_callback_t send;
        ucp_tag_recv_nbx_callback_t recv;
        ucp_stream_recv_nbx_callback_t recv_stream;
        ucp_am_recv_data_nbx_callback_t recv_am;
    } cb;
    ucp_datatype_t datatype; /* default: ucp_dt_make_contig(1) */
    void *user_data;         /* passed to the callback */
    void *reply_buffer;      /* result of fetching atomics */
    ucs_memory_type_t memory_type;
    union {
        size_t *length;                /* stream receive */
        ucp_tag_recv_info_t *tag_info; /* tag receive */
    } recv_info;                       /* filled when the call completes at once */
    ucp_mem_h memh;                    /* buffer is already registered here */
} ucp_request_param_t;

/* Which fields of ucp_request_attr_t to fill. */
typedef enum {
    UCP_REQUEST_ATTR_FIELD_INFO_STRING      = UCS_BIT(0),
    UCP_REQUEST_ATTR_FIELD_INFO_STRING_SIZE = UCS_BIT(1),
    UCP_REQUEST_ATTR_FIELD_STATUS           = UCS_BIT(2),
    UCP_REQUEST_ATTR_FIELD_MEM_TYPE         = UCS_BIT(3)
} ucp_req_attr_field;

/* Result of ucp_request_query(). */
typedef struct {
    uint64_t field_mask;
    char *debug_string; /* caller's buffer */
    size_t debug_string_size;
    ucs_status_t status;
    ucs_memory_type_t mem_type;
} ucp_request_attr_t;


/**
 * Reports a request's state.
 * @param request  a request returned by a *_nb/_nbx call.
 * @param attr     fields to fill, chosen by attr->field_mask: its status, its
 *                 memory type, a description written into the caller's
 *                 debug_string buffer.
 * @return UCS_OK, or UCS_ERR_INVALID_PARAM.
 */
ucs_status_t ucp_request_query(void *request, ucp_request_attr_t *attr);

/**
 * Polls a request: UCS_INPROGRESS until it completes, then its final status.
 */
ucs_status_t ucp_request_check_status(void *request);

/**
 * Polls a tag receive request; when it has completed, fills info with the
 * sender's tag and the message length.
 * @return UCS_INPROGRESS, or the final status.
 */
ucs_status_t ucp_tag_recv_request_test(void *request, ucp_tag_recv_info_t *info);

/**
 * Polls a stream receive request; when it has completed, stores the received
 * byte count in *length_p.
 * @return UCS_INPROGRESS, or the final status.
 */
ucs_status_t ucp_stream_recv_request_test(void *request, size_t *length_p);

/**
 * Cancels a tag receive that has not matched a message yet: it completes
 * with UCS_ERR_CANCELED (its callback runs). Sends, and receives already
 * matched, are left to finish.
 */
void ucp_request_cancel(ucp_worker_h worker, void *request);

/**
 * Gives a request back to UCP. A request still in progress is released when
 * it completes; its callback still runs.
 */
void ucp_request_free(void *request);

/**
 * Not implemented (as in UCX 1.13): returns NULL. Callers that want their
 * own request memory pass it with UCP_OP_ATTR_FIELD_REQUEST.
 */
void *ucp_request_alloc(ucp_worker_h worker);


/* ======================================================================
 * Worker: progress engine, owner of endpoints and handlers
 * ====================================================================== */

/* Which fields of ucp_worker_params_t are set. */
enum ucp_worker_params_field {
    UCP_WORKER_PARAM_FIELD_THREAD_MODE  = UCS_BIT(0),
    UCP_WORKER_PARAM_FIELD_CPU_MASK     = UCS_BIT(1),
    UCP_WORKER_PARAM_FIELD_EVENTS       = UCS_BIT(2),
    UCP_WORKER_PARAM_FIELD_USER_DATA    = UCS_BIT(3),
    UCP_WORKER_PARAM_FIELD_EVENT_FD     = UCS_BIT(4),
    UCP_WORKER_PARAM_FIELD_FLAGS        = UCS_BIT(5),
    UCP_WORKER_PARAM_FIELD_NAME         = UCS_BIT(6),
    UCP_WORKER_PARAM_FIELD_AM_ALIGNMENT = UCS_BIT(7),
    UCP_WORKER_PARAM_FIELD_CLIENT_ID    = UCS_BIT(8)
};

/* Values of ucp_worker_params_t::flags. */
typedef enum {
    UCP_WORKER_FLAG_IGNORE_REQUEST_LEAK = UCS_BIT(0) /* no warning at destroy */
} ucp_worker_flags_t;

/* Arguments of ucp_worker_create(). */
typedef struct ucp_worker_params {
    uint64_t field_mask; /* ucp_worker_params_field bits */
    ucs_thread_mode_t thread_mode;
    ucs_cpu_set_t cpu_mask; /* CPUs to place worker resources near */
    unsigned events;        /* ucp_wakeup_event_t bits */
    void *user_data;
    int event_fd;   /* external epoll fd to add our fd to */
    uint64_t flags; /* ucp_worker_flags_t bits */
    const char *name;
    size_t am_alignment; /* alignment of AM data given to handlers */
    uint64_t client_id;  /* sent to servers in connection requests */
} ucp_worker_params_t;

/* Which fields of ucp_worker_attr_t to fill. */
enum ucp_worker_attr_field {
    UCP_WORKER_ATTR_FIELD_THREAD_MODE     = UCS_BIT(0),
    UCP_WORKER_ATTR_FIELD_ADDRESS         = UCS_BIT(1),
    UCP_WORKER_ATTR_FIELD_ADDRESS_FLAGS   = UCS_BIT(2),
    UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER   = UCS_BIT(3),
    UCP_WORKER_ATTR_FIELD_NAME            = UCS_BIT(4),
    UCP_WORKER_ATTR_FIELD_MAX_INFO_STRING = UCS_BIT(5)
};

/* Values of ucp_worker_attr_t::address_flags. */
typedef enum {
    UCP_WORKER_ADDRESS_FLAG_NET_ONLY = UCS_BIT(0) /* leave out shm/loopback */
} ucp_worker_address_flags_t;

/* Result of ucp_worker_query(). */
typedef struct ucp_worker_attr {
    uint64_t field_mask;
    ucs_thread_mode_t thread_mode;
    uint32_t address_flags; /* in: ucp_worker_address_flags_t */
    ucp_address_t *address; /* free with ucp_worker_release_address */
    size_t address_length;
    size_t max_am_header; /* largest header ucp_am_send_nbx takes */
    char name[UCP_ENTITY_NAME_MAX];
    size_t max_debug_string; /* size for ucp_request_query strings */
} ucp_worker_attr_t;

/* Which fields of ucp_worker_address_attr_t to fill. */
enum ucp_worker_address_attr_field { UCP_WORKER_ADDRESS_ATTR_FIELD_UID = UCS_BIT(0) };

/* Result of ucp_worker_address_query(). */
typedef struct ucp_worker_address_attr {
    uint64_t field_mask;
    uint64_t worker_uid; /* unique id of the worker that packed the address */
} ucp_worker_address_attr_t;


/**
 * Creates a worker: the progress engine through which endpoints, listeners
 * and handlers communicate. A thread calls into a worker according to its
 * thread mode.
 * @param context   the context.
 * @param params    thread mode, wakeup events, name, client id... (field_mask).
 * @param worker_p  receives the worker; destroy it with ucp_worker_destroy().
 * @return UCS_OK; UCS_ERR_INVALID_PARAM; UCS_ERR_UNSUPPORTED for a thread mode
 *         the context cannot give; UCS_ERR_NO_MEMORY; UCS_ERR_IO_ERROR when no
 *         transport interface could be opened.
 */
ucs_status_t ucp_worker_create(ucp_context_h context, const ucp_worker_params_t *params,
                               ucp_worker_h *worker_p);

/**
 * Destroys a worker. Close its endpoints and destroy its listeners first;
 * what is left is released with it, and requests still in progress are
 * dropped without completing.
 */
void ucp_worker_destroy(ucp_worker_h worker);

/**
 * Reports a worker's properties.
 * @param worker  the worker.
 * @param attr    fields to fill, chosen by attr->field_mask: thread mode, a
 *                packed address (free it with ucp_worker_release_address()),
 *                the largest AM header, the name, the debug string size.
 * @return UCS_OK, UCS_ERR_INVALID_PARAM or UCS_ERR_NO_MEMORY.
 */
ucs_status_t ucp_worker_query(ucp_worker_h worker, ucp_worker_attr_t *attr);

/**
 * Prints a worker's name, id, thread mode and interfaces as # comment lines
 * (ucx_info -w).
 */
void ucp_worker_print_info(ucp_worker_h worker, FILE *stream);

/**
 * Packs the worker's address: what a peer passes to ucp_ep_create() to reach
 * it. The bytes may be copied and sent anywhere.
 * @param worker            the worker.
 * @param address_p         receives the address.
 * @param address_length_p  receives its length in bytes.
 * @return UCS_OK, UCS_ERR_INVALID_PARAM or UCS_ERR_NO_MEMORY.
 */
ucs_status_t ucp_worker_get_address(ucp_worker_h worker, ucp_address_t **address_p,
                                    size_t *address_length_p);

/**
 * Frees an address from ucp_worker_get_address() or ucp_worker_query().
 */
void ucp_worker_release_address(ucp_worker_h worker, ucp_address_t *address);

/**
 * Reads facts out of a packed worker address (the unique id of the worker
 * that packed it, UCP_WORKER_ADDRESS_ATTR_FIELD_UID).
 * @return UCS_OK, or UCS_ERR_INVALID_PARAM for a NULL or malformed address.
 */
ucs_status_t ucp_worker_address_query(ucp_address_t *address, ucp_worker_address_attr_t *attr);

/**
 * Moves all of the worker's communication forward: polls its transports,
 * runs completion callbacks and handlers, retries queued sends.
 * @return the number of events handled; 0 when there was nothing to do.
 */
unsigned ucp_worker_progress(ucp_worker_h worker);

/**
 * The file descriptor that becomes readable when the worker has events
 * (UCP_FEATURE_WAKEUP). Before sleeping on it, call ucp_worker_arm().
 * @return UCS_OK; UCS_ERR_INVALID_PARAM without the wakeup feature;
 *         UCS_ERR_UNSUPPORTED when the worker was given an event_fd of the
 *         application's (its events go there).
 */
ucs_status_t ucp_worker_get_efd(ucp_worker_h worker, int *fd);

/**
 * Blocks until the worker has an event: arms the worker and sleeps on its
 * file descriptor, unless events are already pending.
 * @return UCS_OK, or an error (UCS_ERR_INVALID_PARAM without UCP_FEATURE_WAKEUP).
 */
ucs_status_t ucp_worker_wait(ucp_worker_h worker);

/**
 * Waits briefly for a store to the word at address (a hint: on x86 a short
 * pause). The caller re-reads the memory afterwards and calls again.
 */
void ucp_worker_wait_mem(ucp_worker_h worker, void *address);

/**
 * Prepares the worker's file descriptor to signal the next event.
 * @return UCS_OK when it is safe to sleep on the fd; UCS_ERR_BUSY when events
 *         are already pending: call ucp_worker_progress() and try again;
 *         UCS_ERR_INVALID_PARAM without UCP_FEATURE_WAKEUP.
 */
ucs_status_t ucp_worker_arm(ucp_worker_h worker);

/**
 * Wakes a thread sleeping in ucp_worker_wait() or on the worker's fd; safe
 * from any thread.
 * @return UCS_OK, or UCS_ERR_INVALID_PARAM without UCP_FEATURE_WAKEUP.
 */
ucs_status_t ucp_worker_signal(ucp_worker_h worker);

/**
 * Orders the worker's one-sided operations: those issued before the fence
 * complete at their targets before any issued after it.
 * @return UCS_OK, or an error.
 */
ucs_status_t ucp_worker_fence(ucp_worker_h worker);

/**
 * Old form of ucp_worker_flush_nbx() with a callback without user data.
 */
ucs_status_ptr_t ucp_worker_flush_nb(ucp_worker_h worker, unsigned flags, ucp_send_callback_t cb);

/**
 * Completes every operation of the worker, on all its endpoints, at the
 * remote side (RMA and atomics included).
 * @param worker  the worker.
 * @param param   callback, user data, request memory (op_attr_mask).
 * @return NULL when everything had completed, a request to wait on, or an
 *         error pointer.
 */
ucs_status_ptr_t ucp_worker_flush_nbx(ucp_worker_h worker, const ucp_request_param_t *param);


/* ======================================================================
 * Listener: accepts client-server connections on a socket address
 * ====================================================================== */

/* Which fields of ucp_listener_params_t are set. */
enum ucp_listener_params_field {
    UCP_LISTENER_PARAM_FIELD_SOCK_ADDR      = UCS_BIT(0),
    UCP_LISTENER_PARAM_FIELD_ACCEPT_HANDLER = UCS_BIT(1),
    UCP_LISTENER_PARAM_FIELD_CONN_HANDLER   = UCS_BIT(2)
};

/* Arguments of ucp_listener_create(). */
typedef struct ucp_listener_params {
    uint64_t field_mask;
    ucs_sock_addr_t sockaddr;                     /* address to listen on */
    ucp_listener_accept_handler_t accept_handler; /* deprecated */
    ucp_listener_conn_handler_t conn_handler;
} ucp_listener_params_t;

/* Which fields of ucp_listener_attr_t to fill. */
enum ucp_listener_attr_field { UCP_LISTENER_ATTR_FIELD_SOCKADDR = UCS_BIT(0) };

/* Result of ucp_listener_query(): the bound address (port 0 resolved). */
typedef struct ucp_listener_attr {
    uint64_t field_mask;
    struct sockaddr_storage sockaddr;
} ucp_listener_attr_t;

/* Which fields of ucp_conn_request_attr_t to fill. */
enum ucp_conn_request_attr_field {
    UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR = UCS_BIT(0),
    UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ID   = UCS_BIT(1)
};

/* Result of ucp_conn_request_query(). */
typedef struct ucp_conn_request_attr {
    uint64_t field_mask;
    struct sockaddr_storage client_address;
    uint64_t client_id; /* the client worker's client_id */
} ucp_conn_request_attr_t;


/**
 * Listens on a socket address for client endpoints (client-server
 * connections). Each incoming connection is reported to the conn_handler,
 * which accepts it with ucp_ep_create(UCP_EP_PARAM_FIELD_CONN_REQUEST) or
 * refuses it with ucp_listener_reject().
 * @param worker      the worker that will own the accepted endpoints.
 * @param params      the address (port 0: any free port) and the handler.
 * @param listener_p  receives the listener; destroy it with ucp_listener_destroy().
 * @return UCS_OK; UCS_ERR_INVALID_PARAM; UCS_ERR_BUSY when the port is taken;
 *         UCS_ERR_INVALID_ADDR when the address is not one of this host's;
 *         UCS_ERR_IO_ERROR.
 */
ucs_status_t ucp_listener_create(ucp_worker_h worker, const ucp_listener_params_t *params,
                                 ucp_listener_h *listener_p);

/**
 * Stops listening and closes the listening socket.
 */
void ucp_listener_destroy(ucp_listener_h listener);

/**
 * Reports the address the listener is bound to (with the port it chose when
 * asked for port 0).
 * @return UCS_OK, or UCS_ERR_INVALID_PARAM.
 */
ucs_status_t ucp_listener_query(ucp_listener_h listener, ucp_listener_attr_t *attr);

/**
 * Refuses a connection request; the client's endpoint fails with
 * UCS_ERR_REJECTED.
 * @return UCS_OK, or UCS_ERR_INVALID_PARAM for an unknown listener or request.
 */
ucs_status_t ucp_listener_reject(ucp_listener_h listener, ucp_conn_request_h conn_request);

/**
 * Reports facts about a connection request: the client's address and the
 * client id its worker sent.
 * @return UCS_OK, or UCS_ERR_INVALID_PARAM.
 */
ucs_status_t ucp_conn_request_query(ucp_conn_request_h conn_request, ucp_conn_request_attr_t *attr);


/* ======================================================================
 * Endpoint: a connection to one remote worker
 * ====================================================================== */

/* Which fields of ucp_ep_params_t (ucp_def.h) are set. */
enum ucp_ep_params_field {
    UCP_EP_PARAM_FIELD_REMOTE_ADDRESS    = UCS_BIT(0),
    UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE = UCS_BIT(1),
    UCP_EP_PARAM_FIELD_ERR_HANDLER       = UCS_BIT(2),
    UCP_EP_PARAM_FIELD_USER_DATA         = UCS_BIT(3),
    UCP_EP_PARAM_FIELD_SOCK_ADDR         = UCS_BIT(4),
    UCP_EP_PARAM_FIELD_FLAGS             = UCS_BIT(5),
    UCP_EP_PARAM_FIELD_CONN_REQUEST      = UCS_BIT(6),
    UCP_EP_PARAM_FIELD_NAME              = UCS_BIT(7),
    UCP_EP_PARAM_FIELD_LOCAL_SOCK_ADDR   = UCS_BIT(8)
};

/* Values of ucp_ep_params_t::flags. */
enum ucp_ep_params_flags_field {
    UCP_EP_PARAMS_FLAGS_CLIENT_SERVER  = UCS_BIT(0), /* connect via sockaddr */
    UCP_EP_PARAMS_FLAGS_NO_LOOPBACK    = UCS_BIT(1), /* not to itself */
    UCP_EP_PARAMS_FLAGS_SEND_CLIENT_ID = UCS_BIT(2)  /* send worker client_id */
};

/* ucp_request_param_t::flags for ucp_ep_close_nbx(). */
typedef enum {
    UCP_EP_CLOSE_FLAG_FORCE = UCS_BIT(0) /* drop without flushing */
} ucp_ep_close_flags_t;

/* The mode argument of ucp_ep_close_nb(). */
enum ucp_ep_close_mode { UCP_EP_CLOSE_MODE_FORCE = 0, UCP_EP_CLOSE_MODE_FLUSH = 1 };

/* Which fields of ucp_ep_attr_t to fill. */
enum ucp_ep_attr_field {
    UCP_EP_ATTR_FIELD_NAME            = UCS_BIT(0),
    UCP_EP_ATTR_FIELD_LOCAL_SOCKADDR  = UCS_BIT(1),
    UCP_EP_ATTR_FIELD_REMOTE_SOCKADDR = UCS_BIT(2)
};

/* Result of ucp_ep_query(). */
typedef struct ucp_ep_attr {
    uint64_t field_mask;
    char name[UCP_ENTITY_NAME_MAX];
    struct sockaddr_storage local_sockaddr;
    struct sockaddr_storage remote_sockaddr;
} ucp_ep_attr_t;

/* Which fields of ucp_ep_evaluate_perf_param_t are set. */
typedef enum ucp_ep_perf_param_field {
    UCP_EP_PERF_PARAM_FIELD_MESSAGE_SIZE = UCS_BIT(0)
} ucp_ep_perf_param_field_t;

/* Which fields of ucp_ep_evaluate_perf_attr_t to fill. */
typedef enum ucp_ep_perf_attr_field {
    UCP_EP_PERF_ATTR_FIELD_ESTIMATED_TIME = UCS_BIT(0)
} ucp_ep_perf_attr_field_t;

typedef struct {
    uint64_t field_mask;
    size_t message_size;
} ucp_ep_evaluate_perf_param_t;

typedef struct {
    uint64_t field_mask;
    double estimated_time; /* seconds for one message of message_size */
} ucp_ep_evaluate_perf_attr_t;


/**
 * Creates an endpoint: a connection to a remote worker, given by its packed
 * address, a socket address (client side of a listener) or a connection
 * request (server side).
 * @param worker  the worker that owns the endpoint.
 * @param params  the peer and options: error handling mode, error handler,
 *                user data, name (field_mask).
 * @param ep_p    receives the endpoint; close it with ucp_ep_close_nbx().
 * @return UCS_OK; UCS_ERR_INVALID_PARAM; UCS_ERR_UNREACHABLE when no transport
 *         reaches the peer (with UCP_ERR_HANDLING_MODE_PEER: none that can
 *         detect its failure); UCS_ERR_NO_MEMORY.
 */
ucs_status_t ucp_ep_create(ucp_worker_h worker, const ucp_ep_params_t *params, ucp_ep_h *ep_p);

/**
 * Old form of ucp_ep_close_nbx(): mode UCP_EP_CLOSE_MODE_FLUSH completes
 * outstanding operations first, UCP_EP_CLOSE_MODE_FORCE drops them.
 */
ucs_status_ptr_t ucp_ep_close_nb(ucp_ep_h ep, unsigned mode);

/**
 * Closes an endpoint: by default after its operations completed remotely;
 * with UCP_EP_CLOSE_FLAG_FORCE in param->flags at once, failing what is
 * outstanding.
 * @return NULL when closed, a request to wait on, or an error pointer.
 */
ucs_status_ptr_t ucp_ep_close_nbx(ucp_ep_h ep, const ucp_request_param_t *param);

/**
 * Prints an endpoint's peer, error mode, lanes and, per message size, the
 * protocol tag sends take (ucx_info -e).
 */
void ucp_ep_print_info(ucp_ep_h ep, FILE *stream);

/**
 * Reports an endpoint's name and, for client-server endpoints, the local and
 * remote socket addresses.
 * @return UCS_OK, UCS_ERR_INVALID_PARAM, or UCS_ERR_NOT_CONNECTED for socket
 *         addresses of an endpoint that has none.
 */
ucs_status_t ucp_ep_query(ucp_ep_h ep, ucp_ep_attr_t *attr);

/**
 * Old form of ucp_ep_flush_nbx() with a callback without user data.
 */
ucs_status_ptr_t ucp_ep_flush_nb(ucp_ep_h ep, unsigned flags, ucp_send_callback_t cb);

/**
 * Completes every operation of the endpoint at the remote side.
 * @return NULL when everything had completed, a request to wait on, or an
 *         error pointer.
 */
ucs_status_ptr_t ucp_ep_flush_nbx(ucp_ep_h ep, const ucp_request_param_t *param);

/**
 * Estimates how long one message of param->message_size bytes takes on this
 * endpoint, from the transports' performance models and the protocol that
 * size selects.
 * @return UCS_OK; UCS_ERR_INVALID_PARAM without a message size;
 *         UCS_ERR_NOT_CONNECTED for an endpoint still connecting.
 */
ucs_status_t ucp_ep_evaluate_perf(ucp_ep_h ep, const ucp_ep_evaluate_perf_param_t *param,
                                  ucp_ep_evaluate_perf_attr_t *attr);


/* ======================================================================
 * Memory: registration, remote keys
 * ====================================================================== */

/* Which fields of ucp_mem_map_params_t are set. */
enum ucp_mem_map_params_field {
    UCP_MEM_MAP_PARAM_FIELD_ADDRESS     = UCS_BIT(0),
    UCP_MEM_MAP_PARAM_FIELD_LENGTH      = UCS_BIT(1),
    UCP_MEM_MAP_PARAM_FIELD_FLAGS       = UCS_BIT(2),
    UCP_MEM_MAP_PARAM_FIELD_PROT        = UCS_BIT(3),
    UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE = UCS_BIT(4)
};

/* Values of ucp_mem_map_params_t::flags. */
enum {
    UCP_MEM_MAP_NONBLOCK = UCS_BIT(0), /* map pages lazily, on first use */
    UCP_MEM_MAP_ALLOCATE = UCS_BIT(1), /* UCP allocates the memory */
    UCP_MEM_MAP_FIXED    = UCS_BIT(2)  /* allocate exactly at address */
};

/* Values of ucp_mem_map_params_t::prot. */
enum {
    UCP_MEM_MAP_PROT_LOCAL_READ   = UCS_BIT(0),
    UCP_MEM_MAP_PROT_LOCAL_WRITE  = UCS_BIT(1),
    UCP_MEM_MAP_PROT_REMOTE_READ  = UCS_BIT(8),
    UCP_MEM_MAP_PROT_REMOTE_WRITE = UCS_BIT(9)
};

/* Arguments of ucp_mem_map(). */
typedef struct ucp_mem_map_params {
    uint64_t field_mask; /* ucp_mem_map_params_field bits */
    void *address;
    size_t length;
    unsigned flags; /* UCP_MEM_MAP_* */
    unsigned prot;  /* UCP_MEM_MAP_PROT_* */
    ucs_memory_type_t memory_type;
} ucp_mem_map_params_t;

/* Which fields of ucp_mem_advise_params_t are set. */
enum ucp_mem_advise_params_field {
    UCP_MEM_ADVISE_PARAM_FIELD_ADDRESS = UCS_BIT(0),
    UCP_MEM_ADVISE_PARAM_FIELD_LENGTH  = UCS_BIT(1),
    UCP_MEM_ADVISE_PARAM_FIELD_ADVICE  = UCS_BIT(2)
};

typedef enum ucp_mem_advice {
    UCP_MADV_NORMAL = 0, /* no special treatment */
    UCP_MADV_WILLNEED    /* about to be accessed: map it now */
} ucp_mem_advice_t;

/* Arguments of ucp_mem_advise(). */
typedef struct ucp_mem_advise_params {
    uint64_t field_mask;
    void *address;
    size_t length;
    ucp_mem_advice_t advice;
} ucp_mem_advise_params_t;


/**
 * Maps memory for communication: registers the caller's buffer, or with
 * UCP_MEM_MAP_ALLOCATE has UCP allocate it where the transports reach it
 * best, so that it can be the target of RMA (ucp_rkey_pack()) and zero-copy
 * transfers.
 * @param context  the context.
 * @param params   address, length, flags, protection, memory type (field_mask).
 * @param memh_p   receives the handle; release it with ucp_mem_unmap().
 * @return UCS_OK; UCS_ERR_INVALID_PARAM (no length, unknown flags);
 *         UCS_ERR_NO_MEMORY; UCS_ERR_UNSUPPORTED for memory types not handled.
 */
ucs_status_t ucp_mem_map(ucp_context_h context, const ucp_mem_map_params_t *params,
                         ucp_mem_h *memh_p);

/**
 * Releases a mapping from ucp_mem_map() (and frees memory UCP allocated).
 * Remote keys packed from it must no longer be used.
 */
ucs_status_t ucp_mem_unmap(ucp_context_h context, ucp_mem_h memh);

/**
 * Reports a mapping's address, length and memory type (field_mask).
 * @return UCS_OK, or UCS_ERR_INVALID_PARAM.
 */
ucs_status_t ucp_mem_query(const ucp_mem_h memh, ucp_mem_attr_t *attr);

/**
 * Allocates mem_size bytes as ucp_mem_map(UCP_MEM_MAP_ALLOCATE) would,
 * prints how and where they were allocated and registered, and frees them
 * (ucx_info -m). mem_size takes the settings' size syntax ("64k", "1m").
 */
void ucp_mem_print_info(const char *mem_size, ucp_context_h context, FILE *stream);

/**
 * Tells UCP how a mapped range will be used: UCP_MADV_WILLNEED maps its
 * pages now, UCP_MADV_NORMAL undoes that hint.
 * @return UCS_OK, or UCS_ERR_INVALID_PARAM (missing fields, a range outside
 *         the mapping).
 */
ucs_status_t ucp_mem_advise(ucp_context_h context, ucp_mem_h memh, ucp_mem_advise_params_t *params);

/**
 * Packs the remote key of a mapping: the bytes a peer unpacks with
 * ucp_ep_rkey_unpack() to access the memory.
 * @param context        the context.
 * @param memh           the mapping.
 * @param rkey_buffer_p  receives the packed key; free it with ucp_rkey_buffer_release().
 * @param size_p         receives its size.
 * @return UCS_OK, UCS_ERR_INVALID_PARAM or UCS_ERR_NO_MEMORY.
 */
ucs_status_t ucp_rkey_pack(ucp_context_h context, ucp_mem_h memh, void **rkey_buffer_p,
                           size_t *size_p);

/**
 * Frees a packed key from ucp_rkey_pack().
 */
void ucp_rkey_buffer_release(void *rkey_buffer);

/**
 * Unpacks a peer's remote key for use with this endpoint's RMA and atomics.
 * @param ep           the endpoint to the memory's owner.
 * @param rkey_buffer  the packed key.
 * @param rkey_p       receives the key; destroy it with ucp_rkey_destroy().
 * @return UCS_OK; UCS_ERR_INVALID_PARAM for a malformed key; UCS_ERR_UNREACHABLE
 *         when no transport of the endpoint can use it.
 */
ucs_status_t ucp_ep_rkey_unpack(ucp_ep_h ep, const void *rkey_buffer, ucp_rkey_h *rkey_p);

/**
 * A local pointer to remote memory that this process can reach directly
 * (shared memory).
 * @param rkey    the remote key.
 * @param raddr   an address inside the remote region.
 * @param addr_p  receives the local address.
 * @return UCS_OK; UCS_ERR_INVALID_ADDR outside the region; UCS_ERR_UNREACHABLE
 *         when no transport maps that memory into this process.
 */
ucs_status_t ucp_rkey_ptr(ucp_rkey_h rkey, uint64_t raddr, void **addr_p);

/**
 * Destroys a remote key from ucp_ep_rkey_unpack().
 */
void ucp_rkey_destroy(ucp_rkey_h rkey);


/* ======================================================================
 * Datatypes
 * ====================================================================== */

/* The class bits of ucp_datatype_t. */
enum ucp_dt_type {
    UCP_DATATYPE_CONTIG     = 0, /* element size in the upper bits */
    UCP_DATATYPE_STRIDED    = 1,
    UCP_DATATYPE_IOV        = 2, /* buffer is a ucp_dt_iov_t array */
    UCP_DATATYPE_GENERIC    = 7, /* made by ucp_dt_create_generic() */
    UCP_DATATYPE_SHIFT      = 3,
    UCP_DATATYPE_CLASS_MASK = UCS_MASK(UCP_DATATYPE_SHIFT)
};

/* A contiguous datatype whose elements are _elem_size bytes long. */
#define ucp_dt_make_contig(_elem_size) \
    (((ucp_datatype_t)(_elem_size) << UCP_DATATYPE_SHIFT) | UCP_DATATYPE_CONTIG)

/* A scatter/gather datatype: count is the number of ucp_dt_iov_t entries. */
#define ucp_dt_make_iov() ((ucp_datatype_t)UCP_DATATYPE_IOV)

typedef struct ucp_dt_iov {
    void *buffer;
    size_t length;
} ucp_dt_iov_t;

/* Callbacks of a generic (application-packed) datatype. */
typedef struct ucp_generic_dt_ops {
    /* Begin packing count elements of buffer; returns a state pointer. */
    void *(*start_pack)(void *context, const void *buffer, size_t count);
    void *(*start_unpack)(void *context, void *buffer, size_t count);
    size_t (*packed_size)(void *state);
    /* Pack up to max_length bytes at offset; returns the bytes written. */
    size_t (*pack)(void *state, size_t offset, void *dest, size_t max_length);
    ucs_status_t (*unpack)(void *state, size_t offset, const void *src, size_t length);
    void (*finish)(void *state);
} ucp_generic_dt_ops_t;

/**
 * Creates a datatype packed and unpacked by the application's callbacks.
 * @param ops         the callbacks (copied).
 * @param context     passed to start_pack / start_unpack.
 * @param datatype_p  receives the datatype; destroy it with ucp_dt_destroy().
 * @return UCS_OK, UCS_ERR_INVALID_PARAM or UCS_ERR_NO_MEMORY.
 */
ucs_status_t ucp_dt_create_generic(const ucp_generic_dt_ops_t *ops, void *context,
                                   ucp_datatype_t *datatype_p);

/**
 * Destroys a generic datatype. Operations still using it must have completed.
 */
void ucp_dt_destroy(ucp_datatype_t datatype);


/* ======================================================================
 * Active messages
 * ====================================================================== */

/* Flags of ucp_worker_set_am_handler() handlers. */
enum ucp_am_cb_flags {
    UCP_AM_FLAG_WHOLE_MSG       = UCS_BIT(0), /* never split into fragments */
    UCP_AM_FLAG_PERSISTENT_DATA = UCS_BIT(1)  /* data can always be kept */
};

/* Values of ucp_request_param_t::flags for ucp_am_send_nbx(). */
enum ucp_send_am_flags {
    UCP_AM_SEND_FLAG_REPLY = UCS_BIT(0),            /* receiver gets a reply endpoint */
    UCP_AM_SEND_FLAG_EAGER = UCS_BIT(1),            /* force the eager protocol */
    UCP_AM_SEND_FLAG_RNDV  = UCS_BIT(2),            /* force the rendezvous protocol */
    UCP_AM_SEND_REPLY      = UCP_AM_SEND_FLAG_REPLY /* old name */
};

/* The flags argument of ucp_am_callback_t. */
enum ucp_cb_param_flags {
    UCP_CB_PARAM_FLAG_DATA = UCS_BIT(0) /* data may be kept (UCS_INPROGRESS) */
};

/* clang-format off */
/* Bits of ucp_am_recv_param_t::recv_attr. */
typedef enum {
    UCP_AM_RECV_ATTR_FIELD_REPLY_EP = UCS_BIT(0),
    UCP_AM_RECV_ATTR_FLAG_DATA      = UCS_BIT(16),  /* data may be kept */
    UCP_AM_RECV_ATTR_FLAG_RNDV      = UCS_BIT(17)   /* data is a descriptor for
                                                       ucp_am_recv_data_nbx */
} ucp_am_recv_attr_t;
/* clang-format on */

/* Which fields of ucp_am_handler_param_t are set. */
enum ucp_am_handler_param_field {
    UCP_AM_HANDLER_PARAM_FIELD_ID    = UCS_BIT(0),
    UCP_AM_HANDLER_PARAM_FIELD_FLAGS = UCS_BIT(1),
    UCP_AM_HANDLER_PARAM_FIELD_CB    = UCS_BIT(2),
    UCP_AM_HANDLER_PARAM_FIELD_ARG   = UCS_BIT(3)
};

/* Arguments of ucp_worker_set_am_recv_handler(). */
typedef struct ucp_am_handler_param {
    uint64_t field_mask;
    unsigned id;
    uint32_t flags;            /* ucp_am_cb_flags */
    ucp_am_recv_callback_t cb; /* NULL removes the handler */
    void *arg;
} ucp_am_handler_param_t;

/* What an ucp_am_recv_callback_t learns about the message. */
struct ucp_am_recv_param {
    uint64_t recv_attr; /* ucp_am_recv_attr_t bits */
    ucp_ep_h reply_ep;  /* valid with UCP_AM_RECV_ATTR_FIELD_REPLY_EP */
};


/**
 * Old form of ucp_worker_set_am_recv_handler(): sets (or with cb NULL
 * removes) the handler of active messages with this id, sent by
 * ucp_am_send_nb().
 */
ucs_status_t ucp_worker_set_am_handler(ucp_worker_h worker, uint16_t id, ucp_am_callback_t cb,
                                       void *arg, uint32_t flags);

/**
 * Sets, or with param->cb NULL removes, the handler of active messages with
 * param->id. The handler gets the header and the data; with
 * UCP_AM_RECV_ATTR_FLAG_DATA it may keep the data by returning UCS_INPROGRESS
 * (then release it with ucp_am_data_release()); with UCP_AM_RECV_ATTR_FLAG_RNDV
 * the data is a descriptor to fetch with ucp_am_recv_data_nbx().
 * @return UCS_OK, or UCS_ERR_INVALID_PARAM.
 */
ucs_status_t ucp_worker_set_am_recv_handler(ucp_worker_h worker,
                                            const ucp_am_handler_param_t *param);

/**
 * Old form of ucp_am_send_nbx(), without a header.
 */
ucs_status_ptr_t ucp_am_send_nb(ucp_ep_h ep, uint16_t id, const void *buffer, size_t count,
                                ucp_datatype_t datatype, ucp_send_callback_t cb, unsigned flags);

/**
 * Sends an active message: a header and data delivered to the handler of
 * id on the peer's worker.
 * @param ep             the endpoint.
 * @param id             the handler id.
 * @param header         bytes passed to the handler as its header (may be NULL).
 * @param header_length  their length (at most the worker's max_am_header).
 * @param buffer         the data, described by param->datatype.
 * @param count          elements of the datatype.
 * @param param          callback, flags (UCP_AM_SEND_FLAG_*), datatype...
 * @return NULL when sent at once, a request, or an error pointer.
 */
ucs_status_ptr_t ucp_am_send_nbx(ucp_ep_h ep, unsigned id, const void *header, size_t header_length,
                                 const void *buffer, size_t count,
                                 const ucp_request_param_t *param);

/**
 * Fetches the data of a rendezvous active message into buffer; data_desc is
 * what the handler received with UCP_AM_RECV_ATTR_FLAG_RNDV.
 * @return NULL when the data is already there, a request, or an error pointer.
 */
ucs_status_ptr_t ucp_am_recv_data_nbx(ucp_worker_h worker, void *data_desc, void *buffer,
                                      size_t count, const ucp_request_param_t *param);

/**
 * Releases active-message data a handler kept by returning UCS_INPROGRESS.
 */
void ucp_am_data_release(ucp_worker_h worker, void *data);


/* ======================================================================
 * Streams: ordered bytes per endpoint, no message boundaries
 * ====================================================================== */

/* Values of the flags argument / ucp_request_param_t::flags of receives. */
typedef enum {
    UCP_STREAM_RECV_FLAG_WAITALL = UCS_BIT(0) /* complete only when full */
} ucp_stream_recv_flags_t;

/* One entry filled by ucp_stream_worker_poll(). */
typedef struct ucp_stream_poll_ep {
    ucp_ep_h ep;
    void *user_data; /* ucp_ep_params_t::user_data of ep */
    unsigned flags;
    uint8_t reserved[16];
} ucp_stream_poll_ep_t;


/**
 * Lists the worker's endpoints that have stream data ready to receive.
 * @param worker    the worker.
 * @param poll_eps  array to fill.
 * @param max_eps   its size.
 * @param flags     reserved, 0.
 * @return the number of entries filled, or a negative ucs_status_t.
 */
ssize_t ucp_stream_worker_poll(ucp_worker_h worker, ucp_stream_poll_ep_t *poll_eps, size_t max_eps,
                               unsigned flags);

/**
 * Old form of ucp_stream_send_nbx() with an explicit datatype.
 */
ucs_status_ptr_t ucp_stream_send_nb(ucp_ep_h ep, const void *buffer, size_t count,
                                    ucp_datatype_t datatype, ucp_send_callback_t cb,
                                    unsigned flags);

/**
 * Appends data to the endpoint's byte stream to the peer (UCP_FEATURE_STREAM).
 * @return NULL when sent at once, a request, or an error pointer.
 */
ucs_status_ptr_t ucp_stream_send_nbx(ucp_ep_h ep, const void *buffer, size_t count,
                                     const ucp_request_param_t *param);

/**
 * Old form of ucp_stream_recv_nbx() with an explicit datatype.
 */
ucs_status_ptr_t ucp_stream_recv_nb(ucp_ep_h ep, void *buffer, size_t count,
                                    ucp_datatype_t datatype, ucp_stream_recv_callback_t cb,
                                    size_t *length, unsigned flags);

/**
 * Receives bytes of the endpoint's stream into buffer: whatever has arrived,
 * or with UCP_STREAM_RECV_FLAG_WAITALL exactly the buffer's size.
 * @param ep      the endpoint.
 * @param buffer  where the bytes go.
 * @param count   elements of param->datatype.
 * @param length  receives the byte count when the call completes at once.
 * @param param   callback, flags, datatype...
 * @return NULL when done at once, a request, or an error pointer.
 */
ucs_status_ptr_t ucp_stream_recv_nbx(ucp_ep_h ep, void *buffer, size_t count, size_t *length,
                                     const ucp_request_param_t *param);

/**
 * Takes stream data where UCP holds it, without a copy.
 * @param ep      the endpoint.
 * @param length  receives the byte count.
 * @return a pointer to the data (give it back with ucp_stream_data_release()),
 *         NULL when there is none, or an error pointer.
 */
ucs_status_ptr_t ucp_stream_recv_data_nb(ucp_ep_h ep, size_t *length);

/**
 * Gives back data obtained from ucp_stream_recv_data_nb().
 */
void ucp_stream_data_release(ucp_ep_h ep, void *data);


/* ======================================================================
 * Tag matching
 * ====================================================================== */

/* What a completed tag receive or a probe reports. */
struct ucp_tag_recv_info {
    ucp_tag_t sender_tag; /* the full tag the sender used */
    size_t length;        /* bytes of the message */
};


/**
 * Old form of ucp_tag_send_nbx() with an explicit datatype and a callback
 * without user data.
 */
ucs_status_ptr_t ucp_tag_send_nb(ucp_ep_h ep, const void *buffer, size_t count,
                                 ucp_datatype_t datatype, ucp_tag_t tag, ucp_send_callback_t cb);

/**
 * Sends a tagged message using request memory the caller provides (req
 * points at the user area of a request of ucp_context_attr_t::request_size).
 * @return UCS_OK when sent at once, UCS_INPROGRESS (poll req), or an error.
 */
ucs_status_t ucp_tag_send_nbr(ucp_ep_h ep, const void *buffer, size_t count,
                              ucp_datatype_t datatype, ucp_tag_t tag, void *req);

/**
 * Old form of ucp_tag_send_sync_nbx().
 */
ucs_status_ptr_t ucp_tag_send_sync_nb(ucp_ep_h ep, const void *buffer, size_t count,
                                      ucp_datatype_t datatype, ucp_tag_t tag,
                                      ucp_send_callback_t cb);

/**
 * Sends a tagged message to the endpoint's peer; it is delivered to a receive
 * whose tag matches. The buffer may be reused when the request completes.
 * @param ep      the endpoint.
 * @param buffer  the data, described by param->datatype (contiguous bytes by default).
 * @param count   elements of the datatype.
 * @param tag     the message's tag.
 * @param param   callback, user data, datatype, memory handle, flags...
 * @return NULL when sent at once, a request, or an error pointer.
 */
ucs_status_ptr_t ucp_tag_send_nbx(ucp_ep_h ep, const void *buffer, size_t count, ucp_tag_t tag,
                                  const ucp_request_param_t *param);

/**
 * Sends a tagged message that completes only once a receive on the peer has
 * matched it.
 * @return NULL, a request, or an error pointer.
 */
ucs_status_ptr_t ucp_tag_send_sync_nbx(ucp_ep_h ep, const void *buffer, size_t count, ucp_tag_t tag,
                                       const ucp_request_param_t *param);

/**
 * Old form of ucp_tag_recv_nbx() with an explicit datatype.
 */
ucs_status_ptr_t ucp_tag_recv_nb(ucp_worker_h worker, void *buffer, size_t count,
                                 ucp_datatype_t datatype, ucp_tag_t tag, ucp_tag_t tag_mask,
                                 ucp_tag_recv_callback_t cb);

/**
 * Receives a tagged message into request memory the caller provides.
 * @return UCS_OK when received at once, UCS_INPROGRESS, or an error.
 */
ucs_status_t ucp_tag_recv_nbr(ucp_worker_h worker, void *buffer, size_t count,
                              ucp_datatype_t datatype, ucp_tag_t tag, ucp_tag_t tag_mask,
                              void *req);

/**
 * Receives the first message whose tag equals tag in the bits of tag_mask.
 * @param worker    the worker.
 * @param buffer    where the data goes, described by param->datatype.
 * @param count     elements of the datatype.
 * @param tag       tag to match.
 * @param tag_mask  bits of the tag that must match (0: any message).
 * @param param     callback, user data, datatype, recv_info...
 * @return NULL when a matching message had arrived and was received at once,
 *         a request, or an error pointer. A longer message truncates into
 *         UCS_ERR_MESSAGE_TRUNCATED.
 */
ucs_status_ptr_t ucp_tag_recv_nbx(ucp_worker_h worker, void *buffer, size_t count, ucp_tag_t tag,
                                  ucp_tag_t tag_mask, const ucp_request_param_t *param);

/**
 * Looks for an arrived message that matches, without receiving it.
 * @param worker    the worker.
 * @param tag       tag to match.
 * @param tag_mask  bits that must match.
 * @param remove    non-zero: take the message out of the queue; it must then
 *                  be received with ucp_tag_msg_recv_nbx().
 * @param info      receives its tag and length.
 * @return a message handle, or NULL when none matched.
 */
ucp_tag_message_h ucp_tag_probe_nb(ucp_worker_h worker, ucp_tag_t tag, ucp_tag_t tag_mask,
                                   int remove, ucp_tag_recv_info_t *info);

/**
 * Old form of ucp_tag_msg_recv_nbx().
 */
ucs_status_ptr_t ucp_tag_msg_recv_nb(ucp_worker_h worker, void *buffer, size_t count,
                                     ucp_datatype_t datatype, ucp_tag_message_h message,
                                     ucp_tag_recv_callback_t cb);

/**
 * Receives a message taken out with ucp_tag_probe_nb(remove != 0).
 * @return NULL when done at once, a request, or an error pointer.
 */
ucs_status_ptr_t ucp_tag_msg_recv_nbx(ucp_worker_h worker, void *buffer, size_t count,
                                      ucp_tag_message_h message, const ucp_request_param_t *param);


/* ======================================================================
 * Remote memory access and atomics
 * ====================================================================== */

/**
 * Writes length bytes to remote memory; completion is seen through a flush.
 * @return UCS_OK when done locally at once, UCS_INPROGRESS, or an error.
 */
ucs_status_t ucp_put_nbi(ucp_ep_h ep, const void *buffer, size_t length, uint64_t remote_addr,
                         ucp_rkey_h rkey);

/**
 * Old form of ucp_put_nbx() with a callback without user data.
 */
ucs_status_ptr_t ucp_put_nb(ucp_ep_h ep, const void *buffer, size_t length, uint64_t remote_addr,
                            ucp_rkey_h rkey, ucp_send_callback_t cb);

/**
 * Writes count bytes (contiguous) from buffer to remote_addr of the memory
 * described by rkey. The request completes when buffer may be reused; a flush
 * completes it remotely.
 * @return NULL, a request, or an error pointer (UCS_ERR_INVALID_ADDR outside
 *         the key's region).
 */
ucs_status_ptr_t ucp_put_nbx(ucp_ep_h ep, const void *buffer, size_t count, uint64_t remote_addr,
                             ucp_rkey_h rkey, const ucp_request_param_t *param);

/**
 * Reads length bytes of remote memory; completion is seen through a flush.
 * @return UCS_OK, UCS_INPROGRESS, or an error.
 */
ucs_status_t ucp_get_nbi(ucp_ep_h ep, void *buffer, size_t length, uint64_t remote_addr,
                         ucp_rkey_h rkey);

/**
 * Old form of ucp_get_nbx() with a callback without user data.
 */
ucs_status_ptr_t ucp_get_nb(ucp_ep_h ep, void *buffer, size_t length, uint64_t remote_addr,
                            ucp_rkey_h rkey, ucp_send_callback_t cb);

/**
 * Reads count bytes from remote_addr of the memory described by rkey into
 * buffer; the request completes when the data is there.
 * @return NULL, a request, or an error pointer.
 */
ucs_status_ptr_t ucp_get_nbx(ucp_ep_h ep, void *buffer, size_t count, uint64_t remote_addr,
                             ucp_rkey_h rkey, const ucp_request_param_t *param);

/* Opcodes of ucp_atomic_post() (no result). */
typedef enum {
    UCP_ATOMIC_POST_OP_ADD,
    UCP_ATOMIC_POST_OP_AND,
    UCP_ATOMIC_POST_OP_OR,
    UCP_ATOMIC_POST_OP_XOR,
    UCP_ATOMIC_POST_OP_LAST
} ucp_atomic_post_op_t;

/* Opcodes of ucp_atomic_fetch_nb() (returns the previous value). */
typedef enum {
    UCP_ATOMIC_FETCH_OP_FADD,
    UCP_ATOMIC_FETCH_OP_SWAP,
    UCP_ATOMIC_FETCH_OP_CSWAP,
    UCP_ATOMIC_FETCH_OP_FAND,
    UCP_ATOMIC_FETCH_OP_FOR,
    UCP_ATOMIC_FETCH_OP_FXOR,
    UCP_ATOMIC_FETCH_OP_LAST
} ucp_atomic_fetch_op_t;

/* Opcodes of ucp_atomic_op_nbx(); fetching when reply_buffer is set. */
typedef enum {
    UCP_ATOMIC_OP_ADD,
    UCP_ATOMIC_OP_SWAP,
    UCP_ATOMIC_OP_CSWAP,
    UCP_ATOMIC_OP_AND,
    UCP_ATOMIC_OP_OR,
    UCP_ATOMIC_OP_XOR,
    UCP_ATOMIC_OP_LAST
} ucp_atomic_op_t;

/**
 * Applies an atomic operation to remote memory without returning the old value.
 * @param ep           the endpoint.
 * @param opcode       add, and, or, xor.
 * @param value        the operand.
 * @param op_size      4 or 8 bytes.
 * @param remote_addr  aligned to op_size.
 * @param rkey         the remote key.
 * @return UCS_OK, UCS_INPROGRESS or an error.
 */
ucs_status_t ucp_atomic_post(ucp_ep_h ep, ucp_atomic_post_op_t opcode, uint64_t value,
                             size_t op_size, uint64_t remote_addr, ucp_rkey_h rkey);

/**
 * Applies an atomic operation to remote memory and stores the previous value
 * in result (for CSWAP, *result holds the swap value on entry and value is
 * the compared one).
 * @return NULL, a request, or an error pointer.
 */
ucs_status_ptr_t ucp_atomic_fetch_nb(ucp_ep_h ep, ucp_atomic_fetch_op_t opcode, uint64_t value,
                                     void *result, size_t op_size, uint64_t remote_addr,
                                     ucp_rkey_h rkey, ucp_send_callback_t cb);

/**
 * Applies an atomic operation to remote memory. The operand is at buffer
 * (count 1), its size (4 or 8 bytes) the element size of param->datatype;
 * with param->reply_buffer the previous value is written there (CSWAP: the
 * reply buffer holds the swap value on entry, the operand is the compared one).
 * @return NULL, a request, or an error pointer.
 */
ucs_status_ptr_t ucp_atomic_op_nbx(ucp_ep_h ep, ucp_atomic_op_t opcode, const void *buffer,
                                   size_t count, uint64_t remote_addr, ucp_rkey_h rkey,
                                   const ucp_request_param_t *param);

END_C_DECLS

#endif
