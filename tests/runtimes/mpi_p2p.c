/*
 * Point-to-point data over every protocol size (0 B to 16 MiB): blocking,
 * non-blocking, persistent, send-receive, and many messages in flight whose
 * order must be kept across eager and rendezvous sizes.
 */
#include "rt_mpi.h"

/* Around each protocol switch point of UCX-like libraries: short, bcopy,
 * zcopy, rendezvous, pipelined rendezvous. */
static const size_t sizes[] = {
    0,     1,      2,      7,      8,       63,      64,      255,      256,
    1000,  1024,   2047,   4096,   8191,    8192,    16384,   32767,    65536,
    65537, 131072, 262144, 524288, 1048576, 1048579, 4194304, 16777216,
};
#define NUM_SIZES (sizeof(sizes) / sizeof(sizes[0]))
#define MAX_SIZE  (16u << 20)
#define GUARD     64 /* bytes after each receive buffer that must stay untouched */

static unsigned char *recv_a, *recv_b, *send_a, *send_b;

static void check_recv(const unsigned char *buf, size_t len, uint64_t seed, const MPI_Status *st,
                       int src, int tag, const char *what)
{
    int count, i;

    RT_MPI(MPI_Get_count(st, MPI_BYTE, &count));
    RT_CHECK((size_t)count == len, "%s: count %d, expected %zu", what, count, len);
    RT_CHECK(st->MPI_SOURCE == src, "%s: source %d, expected %d", what, st->MPI_SOURCE, src);
    RT_CHECK(st->MPI_TAG == tag, "%s: tag %d, expected %d", what, st->MPI_TAG, tag);
    RT_CHECK_DATA(buf, len, seed, what);
    for (i = 0; i < GUARD; ++i) {
        RT_CHECK(buf[len + i] == 0xA5, "%s: %zu bytes, wrote past the end (+%d)", what, len, i);
    }
}

static void clear_recv(unsigned char *buf, size_t len)
{
    memset(buf, 0x5A, len);
    memset(buf + len, 0xA5, GUARD);
}

/* Ring: send right, receive from left; even ranks send first. */
static void test_blocking(void)
{
    size_t i;

    for (i = 0; i < NUM_SIZES; ++i) {
        size_t len = sizes[i];
        int tag    = (int)i;
        MPI_Status st;

        rt_fill(send_a, len, rt_seed(g_rank, rt_right(), i));
        clear_recv(recv_a, len);
        if (g_rank % 2 == 0) {
            RT_MPI(MPI_Send(send_a, (int)len, MPI_BYTE, rt_right(), tag, MPI_COMM_WORLD));
            RT_MPI(MPI_Recv(recv_a, (int)len + GUARD, MPI_BYTE, rt_left(), tag, MPI_COMM_WORLD,
                            &st));
        } else {
            RT_MPI(MPI_Recv(recv_a, (int)len + GUARD, MPI_BYTE, rt_left(), tag, MPI_COMM_WORLD,
                            &st));
            RT_MPI(MPI_Send(send_a, (int)len, MPI_BYTE, rt_right(), tag, MPI_COMM_WORLD));
        }
        check_recv(recv_a, len, rt_seed(rt_left(), g_rank, i), &st, rt_left(), tag,
                   "blocking send/recv");
    }
    RT_STEP("blocking send/recv, %zu sizes up to %u bytes", NUM_SIZES, MAX_SIZE);
}

/* Both directions at once; completion by Waitall, Testall or Waitany. */
static void test_nonblocking(void)
{
    size_t i;

    for (i = 0; i < NUM_SIZES; ++i) {
        size_t len   = sizes[i];
        int to_right = (int)(2 * i), to_left = (int)(2 * i + 1);
        MPI_Request req[4];
        MPI_Status st[4];
        int done = 0, idx, k;

        rt_fill(send_a, len, rt_seed(g_rank, rt_right(), 100 + i));
        rt_fill(send_b, len, rt_seed(g_rank, rt_left(), 200 + i));
        clear_recv(recv_a, len);
        clear_recv(recv_b, len);
        RT_MPI(MPI_Irecv(recv_a, (int)len + GUARD, MPI_BYTE, rt_left(), to_right, MPI_COMM_WORLD,
                         &req[0]));
        RT_MPI(MPI_Irecv(recv_b, (int)len + GUARD, MPI_BYTE, rt_right(), to_left, MPI_COMM_WORLD,
                         &req[1]));
        RT_MPI(MPI_Isend(send_a, (int)len, MPI_BYTE, rt_right(), to_right, MPI_COMM_WORLD,
                         &req[2]));
        RT_MPI(MPI_Isend(send_b, (int)len, MPI_BYTE, rt_left(), to_left, MPI_COMM_WORLD, &req[3]));
        switch (i % 3) {
        case 0:
            RT_MPI(MPI_Waitall(4, req, st));
            break;
        case 1:
            while (!done) {
                RT_MPI(MPI_Testall(4, req, &done, st));
            }
            break;
        default:
            for (k = 0; k < 4; ++k) {
                MPI_Status one;
                RT_MPI(MPI_Waitany(4, req, &idx, &one));
                RT_CHECK(idx >= 0 && idx < 4, "Waitany index %d", idx);
                st[idx] = one;
            }
            break;
        }
        check_recv(recv_a, len, rt_seed(rt_left(), g_rank, 100 + i), &st[0], rt_left(), to_right,
                   "Irecv from left");
        check_recv(recv_b, len, rt_seed(rt_right(), g_rank, 200 + i), &st[1], rt_right(), to_left,
                   "Irecv from right");
    }
    RT_STEP("non-blocking send/recv both directions, %zu sizes", NUM_SIZES);
}

/*
 * Messages of mixed sizes with one tag, all in flight at once: MPI's
 * non-overtaking rule says receive k gets message k even when a small eager
 * message follows a large rendezvous one.
 */
static void test_ordering(void)
{
    static const size_t mix[] = {8, 200000, 1, 70000, 3000, 0, 1048576, 16, 9000, 512};
    enum { COUNT = 40, TAG = 77 };
    size_t offsets[COUNT + 1];
    MPI_Request req[2 * COUNT];
    MPI_Status st[2 * COUNT];
    int k;

    /* Each receive has its own region, exactly the size of the message it
     * must get: an overtaking message shows as a wrong count or truncation. */
    offsets[0] = 0;
    for (k = 0; k < COUNT; ++k) {
        offsets[k + 1] = offsets[k] + mix[k % 10] + GUARD;
    }
    RT_CHECK(offsets[COUNT] <= MAX_SIZE, "mix too large");

    for (k = 0; k < COUNT / 2; ++k) {
        clear_recv(recv_a + offsets[k], mix[k % 10]);
        RT_MPI(MPI_Irecv(recv_a + offsets[k], (int)mix[k % 10], MPI_BYTE, rt_left(), TAG,
                         MPI_COMM_WORLD, &req[k]));
    }
    RT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    for (k = 0; k < COUNT; ++k) {
        rt_fill(send_a + offsets[k], mix[k % 10], rt_seed(g_rank, rt_right(), 1000 + k));
        RT_MPI(MPI_Isend(send_a + offsets[k], (int)mix[k % 10], MPI_BYTE, rt_right(), TAG,
                         MPI_COMM_WORLD, &req[COUNT + k]));
    }
    /* The second half is posted late: most of it has arrived unexpected. */
    RT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    for (k = COUNT / 2; k < COUNT; ++k) {
        clear_recv(recv_a + offsets[k], mix[k % 10]);
        RT_MPI(MPI_Irecv(recv_a + offsets[k], (int)mix[k % 10], MPI_BYTE, rt_left(), TAG,
                         MPI_COMM_WORLD, &req[k]));
    }
    RT_MPI(MPI_Waitall(2 * COUNT, req, st));
    for (k = 0; k < COUNT; ++k) {
        check_recv(recv_a + offsets[k], mix[k % 10], rt_seed(rt_left(), g_rank, 1000 + k), &st[k],
                   rt_left(), TAG, "ordering of mixed sizes");
    }
    RT_STEP("%d mixed-size messages kept their order", COUNT);
}

static void test_sendrecv_and_persistent(void)
{
    enum { ITERS = 5 };
    MPI_Request req[2];
    MPI_Status st[2];
    size_t len;
    int it;

    for (len = 1; len <= 4u << 20; len *= 64) {
        rt_fill(send_a, len, rt_seed(g_rank, rt_right(), len));
        clear_recv(recv_a, len);
        RT_MPI(MPI_Sendrecv(send_a, (int)len, MPI_BYTE, rt_right(), 5, recv_a, (int)len + GUARD,
                            MPI_BYTE, rt_left(), 5, MPI_COMM_WORLD, &st[0]));
        check_recv(recv_a, len, rt_seed(rt_left(), g_rank, len), &st[0], rt_left(), 5, "Sendrecv");

        rt_fill(send_a, len, rt_seed(g_rank, rt_right(), len + 1));
        RT_MPI(MPI_Sendrecv_replace(send_a, (int)len, MPI_BYTE, rt_right(), 6, rt_left(), 6,
                                    MPI_COMM_WORLD, &st[0]));
        RT_CHECK_DATA(send_a, len, rt_seed(rt_left(), g_rank, len + 1), "Sendrecv_replace");
    }

    len = 100000;
    RT_MPI(MPI_Recv_init(recv_a, (int)len + GUARD, MPI_BYTE, rt_left(), 9, MPI_COMM_WORLD,
                         &req[0]));
    RT_MPI(MPI_Send_init(send_a, (int)len, MPI_BYTE, rt_right(), 9, MPI_COMM_WORLD, &req[1]));
    for (it = 0; it < ITERS; ++it) {
        rt_fill(send_a, len, rt_seed(g_rank, rt_right(), 5000 + it));
        clear_recv(recv_a, len);
        RT_MPI(MPI_Startall(2, req));
        RT_MPI(MPI_Waitall(2, req, st));
        check_recv(recv_a, len, rt_seed(rt_left(), g_rank, 5000 + it), &st[0], rt_left(), 9,
                   "persistent");
        /* The next fill must not race with the left neighbour's receive. */
        RT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }
    RT_MPI(MPI_Request_free(&req[0]));
    RT_MPI(MPI_Request_free(&req[1]));
    RT_STEP("Sendrecv, Sendrecv_replace, persistent requests");
}

int main(int argc, char **argv)
{
    rt_mpi_init(&argc, &argv);
    recv_a = rt_malloc(MAX_SIZE + GUARD);
    recv_b = rt_malloc(MAX_SIZE + GUARD);
    send_a = rt_malloc(MAX_SIZE);
    send_b = rt_malloc(MAX_SIZE);

    test_blocking();
    test_nonblocking();
    test_ordering();
    test_sendrecv_and_persistent();

    free(recv_a);
    free(recv_b);
    free(send_a);
    free(send_b);
    rt_mpi_finish("mpi_p2p");
    return 0;
}
