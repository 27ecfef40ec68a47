/*
 * A fixed-size CPU bit set, part of ucp_worker_params_t (UCX 1.13 layout:
 * 1024 bits in unsigned longs).
 */
#ifndef UCS_TYPE_CPU_SET_H
#define UCS_TYPE_CPU_SET_H

#include <stddef.h>
#include <stdint.h>

typedef unsigned long int ucs_cpu_mask_t;

#define UCS_CPU_SETSIZE   1024
#define UCS_NCPUBITS      (8 * sizeof(ucs_cpu_mask_t))
#define UCS_CPUELT(_cpu)  ((_cpu) / UCS_NCPUBITS)
#define UCS_CPUMASK(_cpu) ((ucs_cpu_mask_t)1 << ((_cpu) % UCS_NCPUBITS))

typedef struct {
    ucs_cpu_mask_t ucs_bits[UCS_CPU_SETSIZE / UCS_NCPUBITS];
} ucs_cpu_set_t;

#define UCS_CPU_ZERO(_set) \
    do { \
        size_t _w; \
        for (_w = 0; _w < UCS_CPU_SETSIZE / UCS_NCPUBITS; ++_w) { \
            (_set)->ucs_bits[_w] = 0; \
        } \
    } while (0)

/* Out-of-range CPU numbers are ignored rather than written past the set. */
#define UCS_CPU_SET(_cpu, _set) \
    do { \
        size_t _c = (_cpu); \
        if (_c < UCS_CPU_SETSIZE) { \
            (_set)->ucs_bits[UCS_CPUELT(_c)] |= UCS_CPUMASK(_c); \
        } \
    } while (0)

#define UCS_CPU_CLR(_cpu, _set) \
    do { \
        size_t _c = (_cpu); \
        if (_c < UCS_CPU_SETSIZE) { \
            (_set)->ucs_bits[UCS_CPUELT(_c)] &= ~UCS_CPUMASK(_c); \
        } \
    } while (0)

/**
 * Non-zero if cpu is in the set; 0 for CPU numbers outside 0..UCS_CPU_SETSIZE-1.
 */
static inline int ucs_cpu_is_set(int cpu, const ucs_cpu_set_t *set)
{
    if ((cpu < 0) || (cpu >= UCS_CPU_SETSIZE)) {
        return 0;
    }
    return (set->ucs_bits[UCS_CPUELT(cpu)] & UCS_CPUMASK(cpu)) != 0;
}

/**
 * The lowest CPU in the set, or 0 for an empty set (as UCX).
 */
static inline int ucs_cpu_set_find_lcs(const ucs_cpu_set_t *set)
{
    int cpu;
    for (cpu = 0; cpu < UCS_CPU_SETSIZE; ++cpu) {
        if (ucs_cpu_is_set(cpu, set)) {
            return cpu;
        }
    }
    return 0;
}

#endif
