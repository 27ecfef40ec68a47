/*
 * Public configuration-related types. Layouts and values are UCX 1.13's
 * (they appear in ucp.h signatures and in runtimes' compiled code).
 */
#ifndef UCS_CONFIG_TYPES_H
#define UCS_CONFIG_TYPES_H

#include <ucs/sys/compiler_def.h>
#include <sys/socket.h>

typedef enum {
    UCS_LOG_LEVEL_FATAL, /* print and abort */
    UCS_LOG_LEVEL_ERROR, /* an error status goes back to the caller */
    UCS_LOG_LEVEL_WARN,  /* something is off, work continues */
    UCS_LOG_LEVEL_DIAG,  /* silent adjustments, handled internal errors */
    UCS_LOG_LEVEL_INFO,
    UCS_LOG_LEVEL_DEBUG,       /* low volume */
    UCS_LOG_LEVEL_TRACE,       /* high volume */
    UCS_LOG_LEVEL_TRACE_REQ,   /* every request */
    UCS_LOG_LEVEL_TRACE_DATA,  /* every transport message */
    UCS_LOG_LEVEL_TRACE_ASYNC, /* the async engine */
    UCS_LOG_LEVEL_TRACE_FUNC,  /* function entries */
    UCS_LOG_LEVEL_TRACE_POLL,  /* polling loops */
    UCS_LOG_LEVEL_LAST,
    UCS_LOG_LEVEL_PRINT /* unconditional output */
} ucs_log_level_t;

typedef enum {
    UCS_ASYNC_MODE_SIGNAL,
    UCS_ASYNC_MODE_THREAD,
    UCS_ASYNC_MODE_THREAD_SPINLOCK = UCS_ASYNC_MODE_THREAD,
    UCS_ASYNC_MODE_THREAD_MUTEX,
    UCS_ASYNC_MODE_POLL,
    UCS_ASYNC_MODE_LAST
} ucs_async_mode_t;

#ifdef __cplusplus
extern "C" {
#endif
extern const char *ucs_async_mode_names[];
#ifdef __cplusplus
}
#endif

typedef enum ucs_ternary_auto_value {
    UCS_NO   = 0,
    UCS_YES  = 1,
    UCS_TRY  = 2,
    UCS_AUTO = 3,
    UCS_TERNARY_LAST
} ucs_ternary_auto_value_t;

typedef enum ucs_on_off_auto_value {
    UCS_CONFIG_OFF  = 0,
    UCS_CONFIG_ON   = 1,
    UCS_CONFIG_AUTO = 2,
    UCS_CONFIG_ON_OFF_LAST
} ucs_on_off_auto_value_t;

typedef enum {
    UCS_HANDLE_ERROR_BACKTRACE,
    UCS_HANDLE_ERROR_FREEZE,
    UCS_HANDLE_ERROR_DEBUG,
    UCS_HANDLE_ERROR_NONE,
    UCS_HANDLE_ERROR_LAST
} ucs_handle_error_t;

/* What a configuration printer shows. */
typedef enum {
    UCS_CONFIG_PRINT_CONFIG          = UCS_BIT(0), /* name=value lines */
    UCS_CONFIG_PRINT_HEADER          = UCS_BIT(1), /* a title line */
    UCS_CONFIG_PRINT_DOC             = UCS_BIT(2), /* each field's description */
    UCS_CONFIG_PRINT_HIDDEN          = UCS_BIT(3), /* internal fields too */
    UCS_CONFIG_PRINT_COMMENT_DEFAULT = UCS_BIT(4)  /* comment out default values */
} ucs_config_print_flags_t;

#define UCS_CONFIG_ARRAY_FIELD(_type, _array_name) \
    struct { \
        _type *_array_name; \
        unsigned count; \
        unsigned pad; \
    }

#define UCS_CONFIG_STRING_ARRAY_FIELD(_array_name) UCS_CONFIG_ARRAY_FIELD(char *, _array_name)

typedef UCS_CONFIG_STRING_ARRAY_FIELD(names) ucs_config_names_array_t;

typedef enum {
    UCS_CONFIG_ALLOW_LIST_ALLOW_ALL,
    UCS_CONFIG_ALLOW_LIST_ALLOW,
    UCS_CONFIG_ALLOW_LIST_NEGATE
} ucs_config_allow_list_mode_t;

typedef struct {
    ucs_config_names_array_t array;
    ucs_config_allow_list_mode_t mode;
} ucs_config_allow_list_t;

typedef struct ucs_sock_addr {
    const struct sockaddr *addr;
    socklen_t addrlen;
} ucs_sock_addr_t;

typedef struct ucs_log_component_config {
    ucs_log_level_t log_level;
    char name[16];
    const char *file_filter;
} ucs_log_component_config_t;

#endif
