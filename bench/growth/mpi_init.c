/*
 * mpi_init_time: how long MPI_Init and MPI_Finalize take, with a barrier
 * in between so that every rank has reached every other (the UCX PML
 * connects lazily). Rank 0 prints the slowest rank's MPI_Init and its own
 * MPI_Finalize in milliseconds. Built with Open MPI's and MPICH's mpicc;
 * bench/growth/compare.py runs it on both libraries.
 */
#include <mpi.h>

#include <stdio.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    const double start = now_ms();
    MPI_Init(&argc, &argv);
    const double init_ms = now_ms() - start;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* Every rank sends to every other once: all connections wired up. */
    int token = rank, sum = 0;
    MPI_Allreduce(&token, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int peer = 0; peer < size; ++peer) {
        if (peer != rank) {
            MPI_Sendrecv(&token, 1, MPI_INT, peer, 7, &sum, 1, MPI_INT, peer, 7, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
        }
    }
    double slowest = 0;
    MPI_Reduce(&init_ms, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    const double fin_start = now_ms();
    MPI_Finalize();
    if (rank == 0) {
        printf("init_ms %.3f finalize_ms %.3f ranks %d\n", slowest, now_ms() - fin_start, size);
    }
    return 0;
}
