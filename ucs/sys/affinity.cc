#include <ucs/sys/affinity.h>

#include <ucs/debug/log.h>

#include <cerrno>
#include <sched.h>

namespace ucs::sys {

namespace {

ucs_status_t status_from_errno(int err)
{
    switch (err) {
    case EINVAL:
        return UCS_ERR_INVALID_PARAM;
    case ESRCH:
        return UCS_ERR_NO_ELEM;
    default:
        return UCS_ERR_IO_ERROR;
    }
}

} // namespace

unsigned cpu_set_count(const ucs_cpu_set_t *cpus)
{
    if (cpus == nullptr) {
        return 0;
    }

    unsigned count = 0;
    for (ucs_cpu_mask_t word : cpus->ucs_bits) {
        count += static_cast<unsigned>(__builtin_popcountl(word));
    }
    return count;
}

ucs_status_t get_affinity(ucs_cpu_set_t *cpus, pid_t tid)
{
    if ((cpus == nullptr) || (tid < 0)) {
        return UCS_ERR_INVALID_PARAM;
    }

    cpu_set_t native;
    CPU_ZERO(&native);
    if (::sched_getaffinity(tid, sizeof(native), &native) != 0) {
        const int err = errno;
        ucs_debug("sched_getaffinity(%d) failed: %m", static_cast<int>(tid));
        return status_from_errno(err);
    }

    /* Bit by bit: the two layouts are not promised to match. */
    UCS_CPU_ZERO(cpus);
    for (int cpu = 0; (cpu < CPU_SETSIZE) && (cpu < UCS_CPU_SETSIZE); ++cpu) {
        if (CPU_ISSET(cpu, &native)) {
            UCS_CPU_SET(cpu, cpus);
        }
    }
    return UCS_OK;
}

ucs_status_t set_affinity(const ucs_cpu_set_t *cpus, pid_t tid)
{
    if ((cpus == nullptr) || (tid < 0) || (cpu_set_count(cpus) == 0)) {
        return UCS_ERR_INVALID_PARAM;
    }

    cpu_set_t native;
    CPU_ZERO(&native);
    for (int cpu = 0; (cpu < CPU_SETSIZE) && (cpu < UCS_CPU_SETSIZE); ++cpu) {
        if (ucs_cpu_is_set(cpu, cpus)) {
            CPU_SET(cpu, &native);
        }
    }

    if (::sched_setaffinity(tid, sizeof(native), &native) != 0) {
        const int err = errno;
        ucs_debug("sched_setaffinity(%d) failed: %m", static_cast<int>(tid));
        return status_from_errno(err);
    }
    return UCS_OK;
}

} // namespace ucs::sys
