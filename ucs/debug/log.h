/*
 * Logging for every layer. A disabled level costs one predictable branch on a
 * global; formatting happens only when the message is emitted.
 */
#ifndef UCS_DEBUG_LOG_H
#define UCS_DEBUG_LOG_H

#include <ucs/config/types.h>
#include <ucs/type/status.h>

#include <cstdarg>
#include <cstdio>

namespace ucs {

/* Current threshold; messages above it are dropped before formatting. */
extern ucs_log_level_t g_log_level;

/* The most detailed level a build logs: release builds (NDEBUG) stop at
 * debug, as UCX's do, so that the trace levels (a request's life, data,
 * polling) cost nothing on the hot paths; debug builds log every level. */
#ifdef NDEBUG
inline constexpr ucs_log_level_t max_log_level = UCS_LOG_LEVEL_DEBUG;
#else
inline constexpr ucs_log_level_t max_log_level = UCS_LOG_LEVEL_TRACE_POLL;
#endif

inline bool log_enabled(ucs_log_level_t level)
{
    return (level <= max_log_level) && ucs_unlikely(level <= g_log_level);
}

void log_dispatch(const char *file, unsigned line, const char *function, ucs_log_level_t level,
                  const char *format, ...) UCS_F_PRINTF(5, 6);

void log_vdispatch(const char *file, unsigned line, const char *function, ucs_log_level_t level,
                   const char *format, va_list ap);

[[noreturn]] void log_fatal(const char *file, unsigned line, const char *function,
                            const char *format, ...) UCS_F_PRINTF(4, 5);

/* Level names as accepted in UCX_LOG_LEVEL ("fatal" .. "poll"), indexed by level. */
extern const char *const log_level_names[UCS_LOG_LEVEL_LAST];

/* Parses a level name (case-insensitive); false when the name is unknown. */
bool log_level_from_string(const char *name, ucs_log_level_t *level);

void log_set_level(ucs_log_level_t level);

/*
 * Sends output to a file. "stdout"/"stderr" name the streams; "%h" is
 * replaced by the host name and "%p" by the process id. An empty path means
 * stdout. Returns an error if the file cannot be opened (output unchanged).
 */
ucs_status_t log_set_file(const char *path);

/* The stream messages currently go to. */
FILE *log_stream();

/* "host:pid", computed once. */
const char *log_process_id();

/* The host name up to the first dot, as in every log line. */
const char *log_host_name();

/* This thread's number in log lines: 0 for the first thread that logs. */
unsigned log_thread_number();

} // namespace ucs

#define ucs_log(_level, _fmt, ...) \
    do { \
        if (ucs::log_enabled(_level)) { \
            ucs::log_dispatch(__FILE__, __LINE__, __func__, (_level), _fmt, ##__VA_ARGS__); \
        } \
    } while (0)

#define ucs_fatal(_fmt, ...) ucs::log_fatal(__FILE__, __LINE__, __func__, _fmt, ##__VA_ARGS__)

#define ucs_error(_fmt, ...)       ucs_log(UCS_LOG_LEVEL_ERROR, _fmt, ##__VA_ARGS__)
#define ucs_warn(_fmt, ...)        ucs_log(UCS_LOG_LEVEL_WARN, _fmt, ##__VA_ARGS__)
#define ucs_diag(_fmt, ...)        ucs_log(UCS_LOG_LEVEL_DIAG, _fmt, ##__VA_ARGS__)
#define ucs_info(_fmt, ...)        ucs_log(UCS_LOG_LEVEL_INFO, _fmt, ##__VA_ARGS__)
#define ucs_debug(_fmt, ...)       ucs_log(UCS_LOG_LEVEL_DEBUG, _fmt, ##__VA_ARGS__)
#define ucs_trace(_fmt, ...)       ucs_log(UCS_LOG_LEVEL_TRACE, _fmt, ##__VA_ARGS__)
#define ucs_trace_req(_fmt, ...)   ucs_log(UCS_LOG_LEVEL_TRACE_REQ, _fmt, ##__VA_ARGS__)
#define ucs_trace_data(_fmt, ...)  ucs_log(UCS_LOG_LEVEL_TRACE_DATA, _fmt, ##__VA_ARGS__)
#define ucs_trace_async(_fmt, ...) ucs_log(UCS_LOG_LEVEL_TRACE_ASYNC, _fmt, ##__VA_ARGS__)
#define ucs_trace_func(_fmt, ...)  ucs_log(UCS_LOG_LEVEL_TRACE_FUNC, _fmt, ##__VA_ARGS__)
#define ucs_trace_poll(_fmt, ...)  ucs_log(UCS_LOG_LEVEL_TRACE_POLL, _fmt, ##__VA_ARGS__)

#endif
