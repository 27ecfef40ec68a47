/*
 * Start and end of every OpenSHMEM test program: PE number, the libucp
 * mapping check, and the "PASS" line the runner looks for.
 */
#ifndef RT_SHMEM_H
#define RT_SHMEM_H

#include <shmem.h>

static int g_me   = -1;
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

/*
 * Whether UCX_TLS lets UCP use shared memory between processes (then the
 * symmetric heap of PEs on this node is load/store reachable): unset, "all",
 * or naming sm/shm/posix/sysv; a "^" list unless it excludes those.
 */
static inline int rt_shm_transports_selected(void)
{
    const char *tls = getenv("UCX_TLS");
    const char *p;
    int negated, named = 0;

    if ((tls == NULL) || (*tls == '\0')) {
        return 1;
    }
    negated = (*tls == '^');
    for (p = tls + negated; *p != '\0';) {
        size_t len = strcspn(p, ",");
        if (((len == 2) && (strncmp(p, "sm", 2) == 0)) ||
            ((len == 3) && (strncmp(p, "shm", 3) == 0)) ||
            ((len == 5) && (strncmp(p, "posix", 5) == 0)) ||
            ((len == 4) && (strncmp(p, "sysv", 4) == 0)) ||
            (!negated && (len == 3) && (strncmp(p, "all", 3) == 0))) {
            named = 1;
        }
        p += len + (p[len] == ',');
    }
    return negated ? !named : named;
}

static inline uint64_t rt_seed(int src, int dst, uint64_t what)
{
    return ((uint64_t)src << 48) ^ ((uint64_t)dst << 32) ^ what;
}

#endif
