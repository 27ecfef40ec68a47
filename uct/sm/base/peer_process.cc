#include <uct/sm/base/peer_process.h>

#include <ucs/debug/log.h>
#include <ucs/sys/process.h>

#include <cerrno>
#include <cstring>

#include <poll.h>
#include <unistd.h>

namespace uct::sm {

peer_process::~peer_process()
{
    if (pidfd_ >= 0) {
        ::close(pidfd_);
    }
}

ucs_status_t peer_process::open(pid_t pid, bool use_pidfd)
{
    if ((pid <= 0) || (pid_ > 0)) {
        return UCS_ERR_INVALID_PARAM;
    }
    pid_ = pid;
    if (use_pidfd) {
        pidfd_ = ucs::sys::pidfd_open(pid);
        if ((pidfd_ < 0) && (errno == ESRCH)) {
            return UCS_ERR_UNREACHABLE;
        }
        if (pidfd_ < 0) {
            ucs_debug("sm: no pidfd for pid %d (%s): watching it through /proc", int(pid),
                      strerror(errno));
        }
    }
    ucs::sys::process_state state{};
    ucs_status_t status = ucs::sys::read_process_state(pid, &state);
    if (status == UCS_ERR_NO_ELEM) {
        return UCS_ERR_UNREACHABLE;
    }
    if (status == UCS_OK) {
        start_time_ = state.start_time;
    }
    /* With a pidfd the start time read above is its process's only if
     * that process still lived after the read (else the pid may be new). */
    return alive() ? UCS_OK : UCS_ERR_UNREACHABLE;
}

ucs_status_t peer_process::verify_start_time(uint64_t start_time)
{
    if ((start_time_ == 0) || (start_time == 0)) {
        return UCS_OK; /* nothing to compare: /proc hid it */
    }
    if (start_time != start_time_) {
        ucs_debug("sm: pid %d started at %llu, not at %llu as its address says: "
                  "it is another process",
                  int(pid_), static_cast<unsigned long long>(start_time_),
                  static_cast<unsigned long long>(start_time));
        return UCS_ERR_UNREACHABLE;
    }
    return UCS_OK;
}

bool peer_process::alive() const
{
    if (pidfd_ >= 0) {
        struct pollfd pfd = {pidfd_, POLLIN, 0};
        return ::poll(&pfd, 1, 0) == 0;
    }
    ucs::sys::process_state state{};
    ucs_status_t status = ucs::sys::read_process_state(pid_, &state);
    if (status == UCS_ERR_NO_ELEM) {
        return false;
    }
    if (status != UCS_OK) {
        return true; /* unreadable: no evidence of death */
    }
    return !state.exited && ((start_time_ == 0) || (state.start_time == start_time_));
}

} // namespace uct::sm
