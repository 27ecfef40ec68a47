/*
 * Whether another process still exists. A SIGKILLed peer stays a zombie
 * until its parent reaps it, and kill(pid, 0) succeeds on zombies, so the
 * state letter in /proc/<pid>/stat decides; a pidfd (when the kernel has
 * them) answers the same question with one poll and cannot be fooled by
 * a reused pid.
 */
#ifndef VERBS_EMU_LIVENESS_H
#define VERBS_EMU_LIVENESS_H

#include <sys/types.h>

namespace verbs_emu {

bool process_alive(pid_t pid);

/* A pidfd for `pid`, or -1 where the kernel has none. */
int open_pidfd(pid_t pid);

/* Liveness through a pidfd from open_pidfd (it turns readable on exit). */
bool pidfd_alive(int pidfd);

} // namespace verbs_emu

#endif
