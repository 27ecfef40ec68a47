/*
 * ucx_perftest's MPI bootstrap, built with mpicc where it exists. Under
 * mpirun, ranks 0 and 1 pass a test's setup bytes (parameters, worker
 * addresses, remote keys, barriers) through MPI instead of a socket.
 * ucx_perftest opens this module only when it finds itself under mpirun.
 */
#include <limits.h>
#include <mpi.h>
#include <stddef.h>

#define PERFTEST_MPI_TAG 0x5054
#define CHUNK            ((size_t)INT_MAX)

static int peer_rank = -1;

int perftest_mpi_init(int *rank, int *size)
{
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized && (MPI_Init(NULL, NULL) != MPI_SUCCESS)) {
        return -1;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    peer_rank = (*rank == 0) ? 1 : 0;
    return 0;
}

/* Both sides split a buffer into the same chunks, and a zero-length buffer
 * is still one (empty) message, so sends and receives always pair up. */
int perftest_mpi_send(const void *data, size_t length)
{
    const char *p = (const char *)data;
    do {
        size_t n = (length < CHUNK) ? length : CHUNK;
        if (MPI_Send(p, (int)n, MPI_BYTE, peer_rank, PERFTEST_MPI_TAG, MPI_COMM_WORLD) !=
            MPI_SUCCESS) {
            return -1;
        }
        p += n;
        length -= n;
    } while (length > 0);
    return 0;
}

int perftest_mpi_recv(void *data, size_t length)
{
    char *p = (char *)data;
    do {
        size_t n = (length < CHUNK) ? length : CHUNK;
        if (MPI_Recv(p, (int)n, MPI_BYTE, peer_rank, PERFTEST_MPI_TAG, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            return -1;
        }
        p += n;
        length -= n;
    } while (length > 0);
    return 0;
}

int perftest_mpi_ready(void)
{
    int flag = 0;
    MPI_Iprobe(peer_rank, PERFTEST_MPI_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    return flag;
}

void perftest_mpi_finalize(void)
{
    MPI_Finalize();
}
