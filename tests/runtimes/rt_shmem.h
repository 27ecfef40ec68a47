/*
 * Start and end of every OpenSHMEM test program: PE number, the libucp
 * mapping check, and the "PASS" line the runner looks for.
 */
#ifndef RT_SHMEM_H
#define RT_SHMEM_H

#include <shmem.h>

static int g_me = -1;
static int g_npes = 0;

#define RT_ABORT() shmem_global_exit(1)
#define RT_RANK()  g_me

#include "rt_common.h"

static inline void rt_shmem_init(void)
{
    shmem_init();
    g_me   = shmem_my_pe();
    g_npes = shmem_n_pes();
    rt_check_ucx_mapping();
    RT_CHECK(g_npes >= 2, "needs at least 2 PEs, got %d", g_npes);
}

/* shmem_finalize must return and the process must exit 0: the runner
 * checks both (the PASS line comes after shmem_finalize). */
static inline void rt_shmem_finish(const char *name)
{
    int me = g_me, npes = g_npes;

    shmem_barrier_all();
    shmem_finalize();
    if (me == 0) {
        printf("PASS %s (%d PEs)\n", name, npes);
        fflush(stdout);
    }
}

static inline int rt_next_pe(void)
{
    return (g_me + 1) % g_npes;
}

static inline int rt_prev_pe(void)
{
    return (g_me + g_npes - 1) % g_npes;
}

static inline uint64_t rt_seed(int src, int dst, uint64_t what)
{
    return ((uint64_t)src << 48) ^ ((uint64_t)dst << 32) ^ what;
}

#endif
