#include "log.h"

#include <cstdarg>
#include <cstdio>
#include <unistd.h>

namespace ucm {

namespace {

const char *level_name(ucs_log_level_t level)
{
    switch (level) {
    case UCS_LOG_LEVEL_FATAL:
        return "FATAL";
    case UCS_LOG_LEVEL_ERROR:
        return "ERROR";
    case UCS_LOG_LEVEL_WARN:
        return "WARN";
    case UCS_LOG_LEVEL_DIAG:
        return "DIAG";
    case UCS_LOG_LEVEL_INFO:
        return "INFO";
    case UCS_LOG_LEVEL_DEBUG:
        return "DEBUG";
    default:
        return "TRACE";
    }
}

} // namespace

bool log_enabled(ucs_log_level_t level)
{
    return level <= ucm_global_opts.log_level;
}

void log_print(ucs_log_level_t level, const char *format, ...)
{
    char line[512];
    int prefix = snprintf(line, sizeof(line), "[%d] ucm %-5s ", getpid(), level_name(level));
    if (prefix < 0) {
        return;
    }

    va_list ap;
    va_start(ap, format);
    int body = vsnprintf(line + prefix, sizeof(line) - prefix - 1, format, ap);
    va_end(ap);
    if (body < 0) {
        return;
    }

    size_t length = static_cast<size_t>(prefix) + static_cast<size_t>(body);
    if (length > sizeof(line) - 2) {
        length = sizeof(line) - 2; /* truncated message */
    }
    line[length++] = '\n';
    /* One write() so that lines from several threads do not interleave. */
    ssize_t ret = write(STDERR_FILENO, line, length);
    (void)ret;
}

} // namespace ucm
