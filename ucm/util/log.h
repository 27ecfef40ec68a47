/*
 * Minimal stderr logging for libucm. libucm sits below libucs (ucs links
 * ucm, not the reverse), so it cannot use ucs logging; the level comes from
 * ucm_global_opts.log_level. Formatting uses the stack only: messages may
 * be printed from inside memory hooks, where allocating is not allowed.
 */
#ifndef UCM_UTIL_LOG_H_
#define UCM_UTIL_LOG_H_

#include <ucm/api/ucm.h>

namespace ucm {

bool log_enabled(ucs_log_level_t level);
void log_print(ucs_log_level_t level, const char *format, ...) UCS_F_PRINTF(2, 3);

} // namespace ucm

#define ucm_log(_level, ...) \
    do { \
        if (ucm::log_enabled(_level)) { \
            ucm::log_print(_level, __VA_ARGS__); \
        } \
    } while (0)

#define ucm_error(...) ucm_log(UCS_LOG_LEVEL_ERROR, __VA_ARGS__)
#define ucm_warn(...)  ucm_log(UCS_LOG_LEVEL_WARN, __VA_ARGS__)
#define ucm_diag(...)  ucm_log(UCS_LOG_LEVEL_DIAG, __VA_ARGS__)
#define ucm_debug(...) ucm_log(UCS_LOG_LEVEL_DEBUG, __VA_ARGS__)
#define ucm_trace(...) ucm_log(UCS_LOG_LEVEL_TRACE, __VA_ARGS__)

#endif
