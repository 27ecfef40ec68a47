#include <ucs/debug/log.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <strings.h>
#include <sys/time.h>
#include <unistd.h>

namespace ucs {

ucs_log_level_t g_log_level = UCS_LOG_LEVEL_WARN;

const char *const log_level_names[UCS_LOG_LEVEL_LAST] = {
    "fatal", "error", "warn", "diag",  "info", "debug",
    "trace", "req",   "data", "async", "func", "poll",
};

namespace {

/* Level tags as UCX prints them (padded to 5 columns by the format). */
const char *const level_tags[UCS_LOG_LEVEL_LAST] = {
    "FATAL", "ERROR", "WARN", "DIAG",  "INFO", "DEBUG",
    "TRACE", "REQ",   "DATA", "ASYNC", "FUNC", "POLL",
};

std::mutex output_lock; /* keeps lines from different threads whole */
FILE *output_stream = nullptr;
bool output_owned   = false; /* we opened it, we close it */

/* Threads are numbered in the order they first log, as UCX names them. */
std::atomic<unsigned> thread_count{0};
thread_local int thread_number = -1;

const char *basename_of(const char *path)
{
    const char *slash = std::strrchr(path, '/');
    return slash ? slash + 1 : path;
}

std::string expand_path(const char *path)
{
    std::string out;
    for (const char *p = path; *p != '\0'; ++p) {
        if ((p[0] == '%') && (p[1] == 'h')) {
            char host[256] = {};
            gethostname(host, sizeof(host) - 1);
            out += host;
            ++p;
        } else if ((p[0] == '%') && (p[1] == 'p')) {
            out += std::to_string(getpid());
            ++p;
        } else {
            out += *p;
        }
    }
    return out;
}

} // namespace

FILE *log_stream()
{
    return output_stream ? output_stream : stdout;
}

const char *log_host_name()
{
    static const std::string host = [] {
        char name[256] = {};
        gethostname(name, sizeof(name) - 1);
        char *dot = std::strchr(name, '.');
        if (dot != nullptr) {
            *dot = '\0';
        }
        return std::string(name);
    }();
    return host.c_str();
}

const char *log_process_id()
{
    static const std::string id = std::string(log_host_name()) + ":" + std::to_string(getpid());
    return id.c_str();
}

unsigned log_thread_number()
{
    if (thread_number < 0) {
        thread_number = static_cast<int>(thread_count.fetch_add(1));
    }
    return static_cast<unsigned>(thread_number);
}

bool log_level_from_string(const char *name, ucs_log_level_t *level)
{
    if (name == nullptr) {
        return false;
    }
    for (int i = 0; i < UCS_LOG_LEVEL_LAST; ++i) {
        if (strcasecmp(name, log_level_names[i]) == 0) {
            *level = static_cast<ucs_log_level_t>(i);
            return true;
        }
    }
    /* UCX also accepts "trace_req" style spellings of the trace levels. */
    if (strncasecmp(name, "trace_", 6) == 0) {
        return log_level_from_string(name + 6, level) && (*level >= UCS_LOG_LEVEL_TRACE_REQ);
    }
    return false;
}

void log_set_level(ucs_log_level_t level)
{
    g_log_level = level;
}

ucs_status_t log_set_file(const char *path)
{
    FILE *stream;
    bool owned = false;

    if ((path == nullptr) || (*path == '\0') || !std::strcmp(path, "stdout")) {
        stream = stdout;
    } else if (!std::strcmp(path, "stderr")) {
        stream = stderr;
    } else {
        std::string full = expand_path(path);
        stream           = std::fopen(full.c_str(), "a");
        if (stream == nullptr) {
            std::fprintf(stderr, "[%s] UCX  ERROR cannot open log file '%s': %s\n",
                         log_process_id(), full.c_str(), std::strerror(errno));
            return UCS_ERR_IO_ERROR;
        }
        owned = true;
    }

    std::lock_guard<std::mutex> guard(output_lock);
    if (output_owned && (output_stream != nullptr)) {
        std::fclose(output_stream);
    }
    output_stream = stream;
    output_owned  = owned;
    return UCS_OK;
}

void log_vdispatch(const char *file, unsigned line, const char *function, ucs_log_level_t level,
                   const char *format, va_list ap)
{
    (void)function;
    char message[1024];
    std::vsnprintf(message, sizeof(message), format, ap);

    struct timeval tv;
    gettimeofday(&tv, nullptr);
    const char *tag = (level < UCS_LOG_LEVEL_LAST) ? level_tags[level] : "PRINT";

    /* UCX 1.13's layout, column for column, so that scripts written for its
     * logs ("UCX  ERROR", file:line right-aligned) read ours too. */
    std::lock_guard<std::mutex> guard(output_lock);
    FILE *stream = log_stream();
    std::fprintf(stream, "[%ld.%06ld] [%s:%-5d:%u] %17s:%-4u %-4s %-5s %s\n", (long)tv.tv_sec,
                 (long)tv.tv_usec, log_host_name(), static_cast<int>(getpid()), log_thread_number(),
                 basename_of(file), line, "UCX", tag, message);
    std::fflush(stream);
}

void log_dispatch(const char *file, unsigned line, const char *function, ucs_log_level_t level,
                  const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    log_vdispatch(file, line, function, level, format, ap);
    va_end(ap);
}

void log_fatal(const char *file, unsigned line, const char *function, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    log_vdispatch(file, line, function, UCS_LOG_LEVEL_FATAL, format, ap);
    va_end(ap);
    std::abort();
}

} // namespace ucs
