/*
 * The process behind a shared-memory endpoint: whether it still lives, and
 * whether it is the process its address named (a pid can be reused).
 *
 * open() takes a pidfd (Linux >= 5.3), which keeps naming that process
 * whatever happens to the pid and turns readable when it exits. Where
 * pidfds are missing (ENOSYS, or EPERM from a seccomp filter) the process
 * is known by pid and start time, and alive() reads /proc/<pid>/stat.
 */
#ifndef UCT_SM_BASE_PEER_PROCESS_H
#define UCT_SM_BASE_PEER_PROCESS_H

#include <ucs/type/status.h>

#include <cstdint>

#include <sys/types.h>

namespace uct::sm {

class peer_process {
public:
    peer_process()                                = default;
    peer_process(const peer_process &)            = delete;
    peer_process &operator=(const peer_process &) = delete;
    ~peer_process();

    /* UCS_ERR_UNREACHABLE if no such process, UCS_ERR_INVALID_PARAM for a
     * pid <= 0. `use_pidfd` false: the /proc fallback (tests use it). */
    ucs_status_t open(pid_t pid, bool use_pidfd = true);

    /* The process must have started at `start_time` (what it published
     * about itself): UCS_ERR_UNREACHABLE if it did not or has exited since,
     * so its pid now names another process. A start time that /proc does
     * not show (hidepid) is not held against it. */
    ucs_status_t verify_start_time(uint64_t start_time);

    /* False once the process has exited (a zombie counts as exited). One
     * system call with a pidfd, a /proc read without. */
    bool alive() const;

    pid_t pid() const { return pid_; }
    int pidfd() const { return pidfd_; } /* -1 without one */

private:
    pid_t pid_           = -1;
    int pidfd_           = -1;
    uint64_t start_time_ = 0; /* 0: unknown */
};

} // namespace uct::sm

#endif
