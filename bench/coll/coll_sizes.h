/*
 * The operations and sizes both collective benchmarks time (ours,
 * ucp_coll_bench.cc, and the MPI one, mpi_coll_bench.c), so their lines
 * match: "<operation> <bytes> <microseconds>".
 */
#ifndef BENCH_COLL_COLL_SIZES_H
#define BENCH_COLL_COLL_SIZES_H

#include <stddef.h>

enum bench_coll_op {
    BENCH_BARRIER,
    BENCH_BCAST,
    BENCH_ALLREDUCE,
    BENCH_ALLGATHER,
    BENCH_ALLTOALL,
    BENCH_OPS
};

static const char *const bench_coll_names[BENCH_OPS] = {
    "barrier", "bcast", "allreduce", "allgather", "alltoall",
};

/* Bytes of one rank's message (barrier: none). */
static const size_t bench_coll_sizes[] = {8, 65536, 1048576};
#define BENCH_COLL_NSIZES (sizeof(bench_coll_sizes) / sizeof(bench_coll_sizes[0]))

/* Operations timed per size: fewer for large messages, so every point
 * takes about as long. */
static inline unsigned bench_coll_iterations(size_t bytes, unsigned base)
{
    return (bytes >= 1048576) ? base / 20 + 5 : (bytes >= 65536) ? base / 5 + 5 : base;
}

#endif
