/*
 * Options of the ucs layer itself (UCX_LOG_LEVEL, UCX_LOG_FILE, ...), read
 * once when libucs is loaded.
 */
#ifndef UCS_CONFIG_GLOBAL_OPTS_H
#define UCS_CONFIG_GLOBAL_OPTS_H

#include <ucs/config/table.h>

namespace ucs {

struct global_options {
    ucs_log_level_t log_level;              /* UCX_LOG_LEVEL */
    char *log_file;                         /* UCX_LOG_FILE, "" = stdout */
    ucs_ternary_auto_value_t memtype_cache; /* UCX_MEMTYPE_CACHE */
    unsigned async_max_events;              /* UCX_ASYNC_MAX_EVENTS */
    unsigned handle_errors;                 /* UCX_HANDLE_ERRORS: bit per ucs_handle_error_t */
    ucs_config_names_array_t error_signals; /* UCX_ERROR_SIGNALS: "SEGV", ... */
    int warn_unused_env_vars;               /* UCX_WARN_UNUSED_ENV_VARS */
    char *module_dir;                       /* UCX_MODULE_DIR */
    ucs_config_allow_list_t modules;        /* UCX_MODULES */
    ucs_log_level_t module_log_level;       /* UCX_MODULE_LOG_LEVEL */
};

/* The table of global_options; registered, so ucx_info -c prints it. */
extern const config::table global_opts_table;

/*
 * Reads the global options and applies the log level and log file, once per
 * process; later calls return at once. Thread-safe. Runs from a libucs
 * constructor, so callers normally find it done.
 */
void global_init();

/* The options read by global_init() (the defaults if reading failed). */
const global_options &global_opts();

/*
 * How reading went: UCS_OK, or the error (e.g. UCS_ERR_INVALID_PARAM for
 * UCX_LOG_LEVEL=nonsense, already logged with the variable's name), so that a
 * tool can exit with it. Calls global_init() first.
 */
ucs_status_t global_opts_status();

/*
 * Reads the global options again from the environment and the file and
 * applies them (nothing is applied when a value is malformed). For tests and
 * tools; not safe while other threads read global_opts().
 */
ucs_status_t global_opts_load();

} // namespace ucs

#endif
