/*
 * Facts about other processes of this node, for the transports that share
 * memory with them: whether a pid still names the process it named before
 * (its start time, which a reused pid does not repeat), whether it has
 * exited, and a pidfd that turns readable when it exits.
 */
#ifndef UCS_SYS_PROCESS_H
#define UCS_SYS_PROCESS_H

#include <ucs/type/status.h>

#include <cstdint>
#include <string_view>

#include <sys/types.h>

namespace ucs::sys {

struct process_state {
    uint64_t start_time; /* clock ticks after boot (/proc/<pid>/stat field 22) */
    bool exited;         /* a zombie (or dying): it runs no more */
};

/*
 * Reads /proc/<pid>/stat. UCS_ERR_NO_ELEM when no process has that pid,
 * UCS_ERR_IO_ERROR when it cannot be read (e.g. /proc mounted hidepid).
 */
ucs_status_t read_process_state(pid_t pid, process_state *state);

/* Parses the text of a /proc/<pid>/stat file; false if it is malformed. */
bool parse_process_stat(std::string_view text, process_state *state);

/* This process's start time, read once; 0 if unreadable. */
uint64_t self_start_time();

/*
 * pidfd_open(2), close-on-exec: an fd that polls readable once `pid` exits
 * (a zombie included) and that keeps naming that process even if the pid
 * is reused. -1 with errno set otherwise: ESRCH (no such process), ENOSYS
 * (kernel before 5.3) or EPERM (blocked by a seccomp filter).
 */
int pidfd_open(pid_t pid);

} // namespace ucs::sys

#endif
