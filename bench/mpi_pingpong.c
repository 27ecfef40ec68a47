/*
 * An MPI ping-pong between ranks 0 and 1, built with mpicc: what an MPI
 * application sees of the UCP library under it. bench/compare runs it once
 * on UCX 1.13 and once on ucx-ng (LD_LIBRARY_PATH), with Open MPI's UCX
 * PML forced so it cannot quietly fall back to another transport.
 *
 *   mpirun -np 2 mpi_pingpong [iterations]
 *
 * Rank 0 prints one line per size: "size <bytes> latency_us <one-way
 * median> bandwidth_mbs <bytes per one-way time, MB = 2^20>".
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    static const int sizes[] = {8, 1024, 65536, 1048576};
    int iterations           = (argc > 1) ? atoi(argv[1]) : 1000;
    int rank, nranks;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if ((nranks != 2) || (iterations < 1)) {
        if (rank == 0) {
            fprintf(stderr, "mpi_pingpong: run with 2 ranks and iterations >= 1\n");
        }
        MPI_Finalize();
        return 1;
    }
    const int peer = 1 - rank;
    char *buffer   = malloc(sizes[sizeof(sizes) / sizeof(sizes[0]) - 1]);
    double *rtt    = malloc(sizeof(double) * (size_t)iterations);
    if ((buffer == NULL) || (rtt == NULL)) {
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(buffer, 0x5a, sizes[sizeof(sizes) / sizeof(sizes[0]) - 1]);
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); ++s) {
        int size   = sizes[s];
        int count  = (size >= 65536) ? ((iterations + 9) / 10) : iterations;
        int warmup = count / 10 + 1;
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = -warmup; i < count; ++i) {
            double t0 = MPI_Wtime();
            if (rank == 0) {
                MPI_Send(buffer, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                MPI_Recv(buffer, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(buffer, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buffer, size, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            }
            if (i >= 0) {
                rtt[i] = MPI_Wtime() - t0;
            }
        }
        if (rank == 0) {
            qsort(rtt, (size_t)count, sizeof(double), compare_doubles);
            double one_way = rtt[count / 2] / 2;
            printf("size %d latency_us %.3f bandwidth_mbs %.2f\n", size, one_way * 1e6,
                   size / one_way / (1024.0 * 1024.0));
            fflush(stdout);
        }
    }
    free(rtt);
    free(buffer);
    MPI_Finalize();
    return 0;
}
