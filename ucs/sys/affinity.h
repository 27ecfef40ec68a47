/*
 * CPU affinity of a thread, in the ABI's ucs_cpu_set_t.
 */
#ifndef UCS_SYS_AFFINITY_H
#define UCS_SYS_AFFINITY_H

#include <ucs/type/cpu_set.h>
#include <ucs/type/status.h>

#include <sys/types.h>

namespace ucs::sys {

/* CPUs `tid` may run on; tid 0 is the calling thread, getpid() the main one. */
ucs_status_t get_affinity(ucs_cpu_set_t *cpus, pid_t tid = 0);

/* Restricts `tid` to `cpus`. UCS_ERR_INVALID_PARAM for an empty set or one
 * with no CPU the thread may use, UCS_ERR_NO_ELEM for an unknown thread. */
ucs_status_t set_affinity(const ucs_cpu_set_t *cpus, pid_t tid = 0);

/* Number of CPUs in the set. */
unsigned cpu_set_count(const ucs_cpu_set_t *cpus);

} // namespace ucs::sys

#endif
