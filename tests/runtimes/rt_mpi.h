/*
 * Start and end of every MPI test program: rank, size, the libucp mapping
 * check, and the "PASS" line the runner looks for.
 */
#ifndef RT_MPI_H
#define RT_MPI_H

#include <mpi.h>

static int g_rank = -1;
static int g_size = 0;

#define RT_ABORT() MPI_Abort(MPI_COMM_WORLD, 1)
#define RT_RANK()  g_rank

#include "rt_common.h"

static inline void rt_mpi_init(int *argc, char ***argv)
{
    RT_MPI(MPI_Init(argc, argv));
    RT_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &g_rank));
    RT_MPI(MPI_Comm_size(MPI_COMM_WORLD, &g_size));
    rt_check_ucx_mapping();
    RT_CHECK(g_size >= 2, "needs at least 2 processes, got %d", g_size);
}

static inline void rt_mpi_finish(const char *name)
{
    RT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    RT_MPI(MPI_Finalize());
    if (g_rank == 0) {
        printf("PASS %s (%d processes)\n", name, g_size);
        fflush(stdout);
    }
}

static inline int rt_right(void)
{
    return (g_rank + 1) % g_size;
}

static inline int rt_left(void)
{
    return (g_rank + g_size - 1) % g_size;
}

/* Seed of a message: who sent it, to whom, and which message it is. */
static inline uint64_t rt_seed(int src, int dst, uint64_t what)
{
    return ((uint64_t)src << 48) ^ ((uint64_t)dst << 32) ^ what;
}

#endif
