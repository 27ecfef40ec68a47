/*
 * MPI_Barrier, MPI_Bcast, MPI_Allreduce (SUM of doubles), MPI_Allgather and
 * MPI_Alltoall at the sizes of coll_sizes.h, timed per operation: what
 * ucp_coll_bench is set against (bench/coll/compare.py runs both).
 *
 *   mpirun -np N mpi_coll_bench [iterations]
 *
 * Rank 0 prints "<operation> <bytes> <us>": the median over 5 blocks of the
 * time per operation, after a warm-up block. The allreduce sum is checked.
 */
#include "coll_sizes.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void run(int op, void *sbuf, void *rbuf, size_t bytes, int nranks)
{
    const int count = (int)(bytes / sizeof(double));
    switch (op) {
    case BENCH_BARRIER:
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    case BENCH_BCAST:
        MPI_Bcast(rbuf, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
        break;
    case BENCH_ALLREDUCE:
        MPI_Allreduce(sbuf, rbuf, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        break;
    case BENCH_ALLGATHER:
        MPI_Allgather(sbuf, (int)bytes, MPI_BYTE, rbuf, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
        break;
    default:
        MPI_Alltoall(sbuf, (int)bytes, MPI_BYTE, rbuf, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
        break;
    }
    (void)nranks;
}

int main(int argc, char **argv)
{
    const int base = (argc > 1) ? atoi(argv[1]) : 1000;
    int rank, nranks, op;
    size_t s;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    const size_t most = bench_coll_sizes[BENCH_COLL_NSIZES - 1] * (size_t)nranks;
    double *sbuf = malloc(most), *rbuf = malloc(most);
    for (size_t i = 0; i < most / sizeof(double); ++i) {
        sbuf[i] = rank + 1;
    }
    for (op = 0; op < BENCH_OPS; ++op) {
        for (s = 0; s < BENCH_COLL_NSIZES; ++s) {
            const size_t bytes   = (op == BENCH_BARRIER) ? 0 : bench_coll_sizes[s];
            const unsigned iters = bench_coll_iterations(bytes, (unsigned)base);
            double block_us[6];
            for (int b = 0; b < 6; ++b) {
                MPI_Barrier(MPI_COMM_WORLD);
                const double start = MPI_Wtime();
                for (unsigned i = 0; i < iters; ++i) {
                    run(op, sbuf, rbuf, bytes, nranks);
                }
                block_us[b] = (MPI_Wtime() - start) * 1e6 / iters;
            }
            if ((op == BENCH_ALLREDUCE) && (rbuf[0] != nranks * (nranks + 1) / 2.0)) {
                fprintf(stderr, "allreduce: %g, not %g\n", rbuf[0], nranks * (nranks + 1) / 2.0);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            qsort(block_us + 1, 5, sizeof(double), compare_doubles);
            if (rank == 0) {
                printf("%s %zu %.3f\n", bench_coll_names[op], bytes, block_us[3]);
                fflush(stdout);
            }
            if (op == BENCH_BARRIER) {
                break;
            }
        }
    }
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
