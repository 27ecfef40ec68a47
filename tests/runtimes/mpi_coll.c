/*
 * Collectives, which both runtimes build on point-to-point over UCP:
 * blocking and non-blocking, small and large, every root, and on a split
 * communicator. Each result is computed independently and compared.
 */
#include "rt_mpi.h"

static void test_barrier(void)
{
    enum { ROUNDS = 20 };
    int i;

    for (i = 0; i < ROUNDS; ++i) {
        RT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }
    RT_STEP("Barrier x%d", ROUNDS);
}

static void test_bcast(size_t len)
{
    unsigned char *buf = rt_malloc(len);
    int root;

    for (root = 0; root < g_size; ++root) {
        if (g_rank == root) {
            rt_fill(buf, len, rt_seed(root, 0, len));
        } else {
            memset(buf, 0, len);
        }
        RT_MPI(MPI_Bcast(buf, (int)len, MPI_BYTE, root, MPI_COMM_WORLD));
        RT_CHECK_DATA(buf, len, rt_seed(root, 0, len), "Bcast");
    }
    free(buf);
    RT_STEP("Bcast %zu bytes from every root", len);
}

static void test_reduce(int count)
{
    long *in       = rt_malloc(sizeof(long) * (size_t)count);
    long *out      = rt_malloc(sizeof(long) * (size_t)count);
    double *din    = rt_malloc(sizeof(double) * (size_t)count);
    double *dout   = rt_malloc(sizeof(double) * (size_t)count);
    long sum_ranks = (long)g_size * (g_size - 1) / 2;
    struct {
        double val;
        int rank;
    } loc_in, loc_out;
    int i, root = g_size - 1;

    for (i = 0; i < count; ++i) {
        in[i]  = (long)i * g_size + g_rank;
        din[i] = (g_rank == i % g_size) ? 1000.0 + i : (double)g_rank;
    }
    RT_MPI(MPI_Reduce(in, out, count, MPI_LONG, MPI_SUM, root, MPI_COMM_WORLD));
    if (g_rank == root) {
        for (i = 0; i < count; ++i) {
            long want = (long)i * g_size * g_size + sum_ranks;
            RT_CHECK(out[i] == want, "Reduce SUM[%d] = %ld, expected %ld", i, out[i], want);
        }
    }
    RT_MPI(MPI_Allreduce(din, dout, count, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    for (i = 0; i < count; ++i) {
        RT_CHECK(dout[i] == 1000.0 + i, "Allreduce MAX[%d] = %g", i, dout[i]);
    }
    memcpy(out, in, sizeof(long) * (size_t)count);
    RT_MPI(MPI_Allreduce(MPI_IN_PLACE, out, count, MPI_LONG, MPI_MIN, MPI_COMM_WORLD));
    for (i = 0; i < count; ++i) {
        RT_CHECK(out[i] == (long)i * g_size, "Allreduce in place MIN[%d] = %ld", i, out[i]);
    }
    loc_in.val  = (g_rank == 1) ? -5.0 : (double)g_rank;
    loc_in.rank = g_rank;
    RT_MPI(MPI_Allreduce(&loc_in, &loc_out, 1, MPI_DOUBLE_INT, MPI_MINLOC, MPI_COMM_WORLD));
    RT_CHECK(loc_out.val == -5.0 && loc_out.rank == 1, "MINLOC gave %g at %d", loc_out.val,
             loc_out.rank);

    free(in);
    free(out);
    free(din);
    free(dout);
    RT_STEP("Reduce/Allreduce, %d elements", count);
}

static void test_gather_scatter(int count)
{
    size_t n  = (size_t)count * (size_t)g_size;
    int *mine = rt_malloc(sizeof(int) * (size_t)count);
    int *all  = rt_malloc(sizeof(int) * n);
    int i, r, root = g_size / 2;

    for (i = 0; i < count; ++i) {
        mine[i] = g_rank * 100000 + i;
    }
    memset(all, 0xff, sizeof(int) * n);
    RT_MPI(MPI_Gather(mine, count, MPI_INT, all, count, MPI_INT, root, MPI_COMM_WORLD));
    if (g_rank == root) {
        for (r = 0; r < g_size; ++r) {
            for (i = 0; i < count; ++i) {
                RT_CHECK(all[r * count + i] == r * 100000 + i, "Gather [%d][%d] = %d", r, i,
                         all[r * count + i]);
            }
        }
    }
    memset(all, 0xff, sizeof(int) * n);
    RT_MPI(MPI_Allgather(mine, count, MPI_INT, all, count, MPI_INT, MPI_COMM_WORLD));
    for (r = 0; r < g_size; ++r) {
        for (i = 0; i < count; ++i) {
            RT_CHECK(all[r * count + i] == r * 100000 + i, "Allgather [%d][%d] = %d", r, i,
                     all[r * count + i]);
        }
    }
    /* Scatter: block r of the root's array goes to rank r. */
    for (r = 0; r < g_size; ++r) {
        for (i = 0; i < count; ++i) {
            all[r * count + i] = (g_rank == root) ? -(r * 100000 + i) : 0;
        }
    }
    memset(mine, 0, sizeof(int) * (size_t)count);
    RT_MPI(MPI_Scatter(all, count, MPI_INT, mine, count, MPI_INT, root, MPI_COMM_WORLD));
    for (i = 0; i < count; ++i) {
        RT_CHECK(mine[i] == -(g_rank * 100000 + i), "Scatter [%d] = %d", i, mine[i]);
    }
    free(mine);
    free(all);
    RT_STEP("Gather/Allgather/Scatter, %d ints per rank", count);
}

/* Alltoall and Alltoallv: rank s sends to rank d a block whose values name
 * both; in the v form block sizes differ per pair. */
static void test_alltoall(int count)
{
    size_t n  = (size_t)count * (size_t)g_size;
    int *sbuf = rt_malloc(sizeof(int) * n), *rbuf = rt_malloc(sizeof(int) * n);
    int *scounts = rt_malloc(sizeof(int) * (size_t)g_size);
    int *rcounts = rt_malloc(sizeof(int) * (size_t)g_size);
    int *sdispls = rt_malloc(sizeof(int) * (size_t)g_size);
    int *rdispls = rt_malloc(sizeof(int) * (size_t)g_size);
    int d, s, i;

    for (d = 0; d < g_size; ++d) {
        for (i = 0; i < count; ++i) {
            sbuf[d * count + i] = (g_rank << 20) ^ (d << 10) ^ i;
        }
    }
    RT_MPI(MPI_Alltoall(sbuf, count, MPI_INT, rbuf, count, MPI_INT, MPI_COMM_WORLD));
    for (s = 0; s < g_size; ++s) {
        for (i = 0; i < count; ++i) {
            RT_CHECK(rbuf[s * count + i] == ((s << 20) ^ (g_rank << 10) ^ i),
                     "Alltoall from %d [%d] = %d", s, i, rbuf[s * count + i]);
        }
    }

    /* v form: rank s sends (s + d) % count + 1 ints to rank d. */
    for (d = 0; d < g_size; ++d) {
        scounts[d] = (g_rank + d) % count + 1;
        rcounts[d] = (d + g_rank) % count + 1;
        sdispls[d] = d * count;
        rdispls[d] = d * count;
    }
    memset(rbuf, 0xff, sizeof(int) * n);
    RT_MPI(MPI_Alltoallv(sbuf, scounts, sdispls, MPI_INT, rbuf, rcounts, rdispls, MPI_INT,
                         MPI_COMM_WORLD));
    for (s = 0; s < g_size; ++s) {
        for (i = 0; i < count; ++i) {
            int want = (i < rcounts[s]) ? ((s << 20) ^ (g_rank << 10) ^ i) : -1;
            RT_CHECK(rbuf[s * count + i] == want, "Alltoallv from %d [%d] = %d", s, i,
                     rbuf[s * count + i]);
        }
    }
    free(sbuf);
    free(rbuf);
    free(scounts);
    free(rcounts);
    free(sdispls);
    free(rdispls);
    RT_STEP("Alltoall/Alltoallv, %d ints per pair", count);
}

static void test_scan_and_reduce_scatter(void)
{
    int *in     = rt_malloc(sizeof(int) * (size_t)g_size);
    int *counts = rt_malloc(sizeof(int) * (size_t)g_size);
    int val = g_rank + 1, out = -1, i;

    RT_MPI(MPI_Scan(&val, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    RT_CHECK(out == (g_rank + 1) * (g_rank + 2) / 2, "Scan = %d", out);
    RT_MPI(MPI_Exscan(&val, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    if (g_rank > 0) {
        RT_CHECK(out == g_rank * (g_rank + 1) / 2, "Exscan = %d", out);
    }
    for (i = 0; i < g_size; ++i) {
        in[i]     = g_rank * i;
        counts[i] = 1;
    }
    RT_MPI(MPI_Reduce_scatter(in, &out, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    RT_CHECK(out == g_rank * g_size * (g_size - 1) / 2, "Reduce_scatter = %d", out);
    free(in);
    free(counts);
    RT_STEP("Scan/Exscan/Reduce_scatter");
}

/* Non-blocking collectives overlapping each other. */
static void test_nonblocking(size_t len)
{
    unsigned char *buf = rt_malloc(len);
    long sum           = g_rank;
    MPI_Request req[3];
    MPI_Status st[3];

    if (g_rank == 0) {
        rt_fill(buf, len, 99);
    } else {
        memset(buf, 0, len);
    }
    RT_MPI(MPI_Ibcast(buf, (int)len, MPI_BYTE, 0, MPI_COMM_WORLD, &req[0]));
    RT_MPI(MPI_Iallreduce(MPI_IN_PLACE, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &req[1]));
    RT_MPI(MPI_Ibarrier(MPI_COMM_WORLD, &req[2]));
    RT_MPI(MPI_Waitall(3, req, st));
    RT_CHECK_DATA(buf, len, 99, "Ibcast");
    RT_CHECK(sum == (long)g_size * (g_size - 1) / 2, "Iallreduce = %ld", sum);
    free(buf);
    RT_STEP("Ibcast/Iallreduce/Ibarrier, %zu bytes", len);
}

/* Collectives on sub-communicators: split by parity, and a dup. */
static void test_split(void)
{
    MPI_Comm half, dup;
    int hrank, hsize, sum = 1, r;

    RT_MPI(MPI_Comm_split(MPI_COMM_WORLD, g_rank % 2, -g_rank, &half));
    RT_MPI(MPI_Comm_rank(half, &hrank));
    RT_MPI(MPI_Comm_size(half, &hsize));
    RT_CHECK(hsize == (g_size + 1 - g_rank % 2) / 2, "split size %d", hsize);
    /* key -rank reverses the order */
    RT_CHECK(hrank == hsize - 1 - g_rank / 2, "split rank %d", hrank);
    RT_MPI(MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_INT, MPI_SUM, half));
    RT_CHECK(sum == hsize, "Allreduce on split = %d", sum);

    RT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    r = g_rank;
    RT_MPI(MPI_Bcast(&r, 1, MPI_INT, g_size - 1, dup));
    RT_CHECK(r == g_size - 1, "Bcast on dup = %d", r);
    RT_MPI(MPI_Comm_free(&dup));
    RT_MPI(MPI_Comm_free(&half));
    RT_STEP("split and dup communicators");
}

int main(int argc, char **argv)
{
    rt_mpi_init(&argc, &argv);

    test_barrier();
    test_bcast(1);
    test_bcast(1000);
    test_bcast(100000);
    test_bcast(4u << 20);
    test_reduce(1);
    test_reduce(5000);
    test_reduce(300000);
    test_gather_scatter(1);
    test_gather_scatter(50000);
    test_alltoall(3);
    test_alltoall(40000);
    test_scan_and_reduce_scatter();
    test_nonblocking(10);
    test_nonblocking(1u << 20);
    test_split();

    rt_mpi_finish("mpi_coll");
    return 0;
}
