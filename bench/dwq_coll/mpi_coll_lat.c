/*
 * MPI_Barrier and an 8-byte MPI_Allreduce, timed per operation: what
 * ucp_dwq_coll is set against (bench/dwq_coll/compare.sh runs both).
 *
 *   mpirun -np N mpi_coll_lat [iterations]
 *
 * Rank 0 prints "barrier_us X" and "allreduce8_us Y": the median over
 * blocks of 100 operations of the time per operation. Every sum is checked.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define BLOCK 100

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *values, int count)
{
    qsort(values, (size_t)count, sizeof(double), compare_doubles);
    return values[count / 2];
}

int main(int argc, char **argv)
{
    int iterations = (argc > 1) ? atoi(argv[1]) : 2000;
    int rank, nranks;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (iterations < BLOCK) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int blocks  = iterations / BLOCK;
    double *barrier   = malloc(sizeof(double) * (size_t)blocks);
    double *allreduce = malloc(sizeof(double) * (size_t)blocks);
    if ((barrier == NULL) || (allreduce == NULL)) {
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int b = 0; b < blocks; ++b) {
        const double t0 = MPI_Wtime();
        for (int i = 0; i < BLOCK; ++i) {
            MPI_Barrier(MPI_COMM_WORLD);
        }
        barrier[b] = (MPI_Wtime() - t0) * 1e6 / BLOCK;
    }
    for (int b = 0; b < blocks; ++b) {
        const double t0 = MPI_Wtime();
        for (int i = 0; i < BLOCK; ++i) {
            const int64_t iteration = (int64_t)b * BLOCK + i + 1;
            int64_t value = (int64_t)(rank + 1) * iteration, sum = 0;
            MPI_Allreduce(&value, &sum, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
            if (sum != (int64_t)nranks * (nranks + 1) / 2 * iteration) {
                fprintf(stderr, "mpi_coll_lat: wrong sum\n");
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        }
        allreduce[b] = (MPI_Wtime() - t0) * 1e6 / BLOCK;
    }
    if (rank == 0) {
        printf("ranks %d iterations %d\nbarrier_us %.3f\nallreduce8_us %.3f\n", nranks,
               blocks * BLOCK, median(barrier, blocks), median(allreduce, blocks));
    }
    free(barrier);
    free(allreduce);
    MPI_Finalize();
    return 0;
}
