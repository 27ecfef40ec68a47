#include <ucs/sys/process.h>

#include <ucs/sys/read_file.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <string>

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace ucs::sys {

bool parse_process_stat(std::string_view text, process_state *state)
{
    /* "pid (comm) S ppid ...": comm may hold blanks and parentheses, so
     * the fields start after the last ')'. */
    const size_t paren = text.rfind(')');
    if ((paren == std::string_view::npos) || (paren + 2 >= text.size())) {
        return false;
    }
    std::string_view rest = text.substr(paren + 2);
    /* rest[0] is field 3 (the state); field 22 (start time) is 19 further. */
    const char run_state = rest[0];
    for (int field = 3; field < 22; ++field) {
        const size_t blank = rest.find(' ');
        if (blank == std::string_view::npos) {
            return false;
        }
        rest.remove_prefix(blank + 1);
    }
    uint64_t start = 0;
    size_t digits  = 0;
    for (char c : rest) {
        if ((c < '0') || (c > '9')) {
            break;
        }
        if (start > (UINT64_MAX - 9) / 10) {
            return false;
        }
        start = start * 10 + uint64_t(c - '0');
        ++digits;
    }
    if (digits == 0) {
        return false;
    }
    state->start_time = start;
    /* Z: zombie, X: dead. */
    state->exited = (run_state == 'Z') || (run_state == 'X');
    return true;
}

ucs_status_t read_process_state(pid_t pid, process_state *state)
{
    if ((pid <= 0) || (state == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    char path[32];
    std::snprintf(path, sizeof(path), "/proc/%d/stat", int(pid));
    std::string text;
    ucs_status_t status = read_file_string(path, &text, 4096);
    if (status != UCS_OK) {
        return status;
    }
    return parse_process_stat(text, state) ? UCS_OK : UCS_ERR_IO_ERROR;
}

uint64_t self_start_time()
{
    /* Cached per pid: a forked child must not publish its parent's. */
    static std::atomic<pid_t> cached_pid{0};
    static std::atomic<uint64_t> cached_start{0};
    const pid_t pid = getpid();
    if (cached_pid.load(std::memory_order_acquire) == pid) {
        return cached_start.load(std::memory_order_relaxed);
    }
    process_state state{};
    const uint64_t start = (read_process_state(pid, &state) == UCS_OK) ? state.start_time : 0;
    cached_start.store(start, std::memory_order_relaxed);
    cached_pid.store(pid, std::memory_order_release);
    return start;
}

int pidfd_open(pid_t pid)
{
#ifdef SYS_pidfd_open
    /* pidfds are close-on-exec always. */
    return int(syscall(SYS_pidfd_open, pid, 0));
#else
    (void)pid;
    errno = ENOSYS;
    return -1;
#endif
}

} // namespace ucs::sys
