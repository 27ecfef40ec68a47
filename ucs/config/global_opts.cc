/*
 * The ucs global options table and its loading at library start.
 */
#include "ucx_ng_config.h"

#include <ucs/config/global_opts.h>
#include <ucs/config/registry.h>
#include <ucs/debug/error_signals.h>
#include <ucs/debug/log.h>

#include <cstring>
#include <iterator>
#include <mutex>
#include <string>
#include <vector>

namespace ucs {

namespace {

/* Indexed by ucs_handle_error_t. */
const char *const handle_error_names[] = {"bt", "freeze", "debug", "none"};
static_assert(std::size(handle_error_names) == UCS_HANDLE_ERROR_LAST);

constexpr config::field global_fields[] = {
    UCS_CONFIG_FIELD(global_options, log_level, "LOG_LEVEL", "warn",
                     "Logging level: messages of this level and more severe are printed.",
                     config::type_enum(log_level_names)),

    UCS_CONFIG_FIELD(global_options, log_file, "LOG_FILE", "",
                     "Write log messages to this file instead of stdout.\n"
                     "\"stderr\" names the error stream; %h is replaced by the host name\n"
                     "and %p by the process id.",
                     config::type_string),

    UCS_CONFIG_FIELD(global_options, memtype_cache, "MEMTYPE_CACHE", "y",
                     "Remember the memory type (host or device) of address ranges, so\n"
                     "that it is not detected again for every operation (yes, no, or\n"
                     "try as in UCX 1.13).",
                     config::type_ternary, config::field_no_effect),

    UCS_CONFIG_FIELD(global_options, async_max_events, "ASYNC_MAX_EVENTS", "1024",
                     "Most events (file descriptors and timers) one async context handles.",
                     config::type_uint, config::field_no_effect),

    UCS_CONFIG_FIELD(global_options, handle_errors, "HANDLE_ERRORS", "bt",
                     "What to do when the process receives one of UCX_ERROR_SIGNALS:\n"
                     "'none' installs no handler; otherwise a combination of\n"
                     " bt     - print \"Caught signal\" and the symbolised backtrace\n"
                     " freeze - print \"Process frozen...\" and wait for a debugger or a kill\n"
                     " debug  - UCX attaches a debugger; this build prints the backtrace\n"
                     "          instead (no debugger is started)\n"
                     "The signal is then raised again for the previous handler.",
                     config::type_bitmap(handle_error_names)),

    UCS_CONFIG_FIELD(global_options, error_signals, "ERROR_SIGNALS", "ILL,SEGV,BUS,FPE",
                     "Signals that UCX_HANDLE_ERRORS handles: names (SEGV or SIGSEGV)\n"
                     "or numbers.",
                     config::type_string_list),

    UCS_CONFIG_FIELD(global_options, warn_unused_env_vars, "WARN_UNUSED_ENV_VARS", "y",
                     "Warn once about UCX_* environment variables that no setting reads.",
                     config::type_bool),

    UCS_CONFIG_FIELD(global_options, module_dir, "MODULE_DIR", UCX_NG_MODULE_DIR,
                     "Directory to search for loadable modules (libuct_<name>.so), after\n"
                     "the \"ucx\" directory next to the libraries themselves. A directory\n"
                     "that does not exist is skipped.",
                     config::type_string),

    UCS_CONFIG_FIELD(global_options, modules, "MODULES", "all",
                     "Comma-separated glob patterns of the modules to load, or \"all\";\n"
                     "a leading '^' loads all but those. The order is not meaningful:\n"
                     " *     - load all modules\n"
                     " ^cu*  - do not load modules whose names begin with \"cu\"",
                     config::type_allow_list),

    UCS_CONFIG_FIELD(global_options, module_log_level, "MODULE_LOG_LEVEL", "trace",
                     "Logging level of the messages of the module loader (which files it\n"
                     "found, loaded or skipped). Errors are always reported.",
                     config::type_enum(log_level_names)),
};

std::mutex load_lock;
std::once_flag init_once;
global_options current_opts;
bool current_filled         = false;
ucs_status_t current_status = UCS_OK;

void apply(const global_options &opts, ucs_status_t &status)
{
    log_set_level(opts.log_level);
    if (log_set_file(opts.log_file) != UCS_OK) {
        status = UCS_ERR_IO_ERROR; /* log_set_file printed why */
    }
}

} // namespace

/* UCX 1.13's ucs options that have no counterpart here. */
constexpr const char *global_no_effect[] = {
    "LOG_FILE_FILTER",     "LOG_BUFFER",        "LOG_DATA_SIZE",   "LOG_PRINT_ENABLE",
    "ERROR_MAIL_TO",       "ERROR_MAIL_FOOTER", "GDB_COMMAND",     "DEBUG_SIGNO",
    "LOG_LEVEL_TRIGGER",   "ASYNC_SIGNO",       "MEMTRACK_LIMIT",  "RCACHE_CHECK_PFN",
    "TOPO_PRIO",           "LOG_FILE_SIZE",     "LOG_FILE_ROTATE", "VFS_ENABLE",
    "VFS_THREAD_AFFINITY", "MEMTRACK_DEST",     "PROFILE_MODE",    "PROFILE_FILE",
    "PROFILE_LOG_SIZE",    "RCACHE_STAT_MIN",   "RCACHE_STAT_MAX", "BUILTIN_MEMCPY_MIN",
    "BUILTIN_MEMCPY_MAX",
};

/* constinit: the library constructor may run before dynamic initialisation. */
constinit const config::table global_opts_table = {"UCS global options",   "", global_fields,
                                                   sizeof(global_options), {}, global_no_effect};

UCS_CONFIG_REGISTER_TABLE(global_opts_table);

ucs_status_t global_opts_load()
{
    std::lock_guard<std::mutex> guard(load_lock);

    global_options opts;
    ucs_status_t status = config::fill(&opts, global_opts_table);
    if (status == UCS_OK) {
        apply(opts, status);
    } else if (config::fill_defaults(&opts, global_opts_table) != UCS_OK) {
        /* Only a memory shortage gets here: the defaults are well-formed. */
        std::memset(&opts, 0, sizeof(opts));
        opts.log_level = UCS_LOG_LEVEL_WARN;
    }

    if (current_filled) {
        config::release(&current_opts, global_opts_table);
    }
    current_opts   = opts;
    current_filled = true;
    current_status = status;
    return status;
}

void global_init()
{
    std::call_once(init_once, [] {
        global_opts_load();
        std::vector<std::string> signals(current_opts.error_signals.names,
                                         current_opts.error_signals.names +
                                             current_opts.error_signals.count);
        debug::error_signals_install(current_opts.handle_errors, signals);
    });
}

const global_options &global_opts()
{
    global_init();
    return current_opts;
}

ucs_status_t global_opts_status()
{
    global_init();
    std::lock_guard<std::mutex> guard(load_lock);
    return current_status;
}

} // namespace ucs

/* Read the options and install the error signal handlers when libucs is
 * loaded, before any layer's code runs (as UCX does). */
UCS_F_CTOR static void ucs_global_opts_ctor()
{
    ucs::global_init();
}

/* A libucs that is unloaded leaves no handler pointing into it. */
UCS_F_DTOR static void ucs_global_opts_dtor()
{
    ucs::debug::error_signals_restore();
}
