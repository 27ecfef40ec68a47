/*
 * One-sided communication (Open MPI's osc ucx, MPICH's ch4 RMA over UCP):
 * put, get, accumulate, get_accumulate, fetch_and_op and compare_and_swap,
 * 32- and 64-bit, under fence, lock/unlock (exclusive and shared),
 * lock_all + flush/flush_local/flush_all, request-based Rput/Rget, and
 * post/start/complete/wait, on MPI_Win_allocate and MPI_Win_create memory.
 */
#include "rt_mpi.h"

#define MAX_RANKS 64
#define BIG       (1u << 20)

/* The window of every rank, addressed in bytes (disp_unit 1). */
struct layout {
    int64_t counter64; /* fetch_and_op / compare_and_swap on rank 0 */
    int32_t counter32;
    int32_t cas32;
    int64_t cas64;
    int64_t acc[MAX_RANKS];  /* accumulate targets */
    int64_t slot[MAX_RANKS]; /* slot[r] is written by rank r only */
    double dacc;             /* accumulate with a type that has no NIC atomic */
    unsigned char ro[4096];  /* read-only during a test: source of gets */
    unsigned char big[BIG];  /* large puts land here */
};

#define OFF(_field) ((MPI_Aint)offsetof(struct layout, _field))

static struct layout *win_mem;
static MPI_Win win;

static void open_window(int allocate)
{
    if (allocate) {
        RT_MPI(MPI_Win_allocate(sizeof(struct layout), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win_mem,
                                &win));
    } else {
        win_mem = rt_malloc(sizeof(struct layout));
        RT_MPI(MPI_Win_create(win_mem, sizeof(struct layout), 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                              &win));
    }
}

static void close_window(int allocate)
{
    RT_MPI(MPI_Win_free(&win));
    if (!allocate) {
        free(win_mem);
    }
    win_mem = NULL;
}

/* Local stores to the own window, made visible to the others by a barrier.
 * The lock around them is the portable way under the separate memory model. */
static void reset_window(void)
{
    int i;

    RT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, g_rank, 0, win));
    memset(win_mem, 0, sizeof(*win_mem));
    rt_fill(win_mem->ro, sizeof(win_mem->ro), rt_seed(g_rank, 0, 77));
    for (i = 0; i < MAX_RANKS; ++i) {
        win_mem->slot[i] = -1;
    }
    RT_MPI(MPI_Win_unlock(g_rank, win));
    RT_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

static void test_fence(int allocate)
{
    unsigned char *big = rt_malloc(BIG), *got = rt_malloc(sizeof(win_mem->ro));
    int64_t mine = 1000 + g_rank, one = 1;
    double dval = 0.5 * (g_rank + 1);
    int t, r;

    open_window(allocate);
    reset_window();
    rt_fill(big, BIG, rt_seed(g_rank, rt_right(), 1));

    RT_MPI(MPI_Win_fence(0, win));
    for (t = 0; t < g_size; ++t) {
        RT_MPI(MPI_Put(&mine, 1, MPI_INT64_T, t, OFF(slot[g_rank]), 1, MPI_INT64_T, win));
        RT_MPI(MPI_Accumulate(&one, 1, MPI_INT64_T, t, OFF(acc[0]), 1, MPI_INT64_T, MPI_SUM, win));
        RT_MPI(MPI_Accumulate(&dval, 1, MPI_DOUBLE, t, OFF(dacc), 1, MPI_DOUBLE, MPI_SUM, win));
    }
    RT_MPI(MPI_Put(big, BIG, MPI_BYTE, rt_right(), OFF(big), BIG, MPI_BYTE, win));
    RT_MPI(MPI_Get(got, sizeof(win_mem->ro), MPI_BYTE, rt_left(), OFF(ro), sizeof(win_mem->ro),
                   MPI_BYTE, win));
    RT_MPI(MPI_Win_fence(0, win));

    RT_CHECK_DATA(got, sizeof(win_mem->ro), rt_seed(rt_left(), 0, 77), "Get under fence");
    RT_CHECK_DATA(win_mem->big, BIG, rt_seed(rt_left(), g_rank, 1), "Put 1 MiB under fence");
    for (r = 0; r < g_size; ++r) {
        RT_CHECK(win_mem->slot[r] == 1000 + r, "Put under fence: slot[%d] = %ld", r,
                 (long)win_mem->slot[r]);
    }
    RT_CHECK(win_mem->acc[0] == g_size, "Accumulate under fence = %ld", (long)win_mem->acc[0]);
    RT_CHECK(win_mem->dacc == 0.25 * g_size * (g_size + 1), "double Accumulate = %g",
             win_mem->dacc);

    RT_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    close_window(allocate);
    free(big);
    free(got);
    RT_STEP("fence: put/get/accumulate, %s", allocate ? "Win_allocate" : "Win_create");
}

/* Checks that the values fetched by all ranks are exactly 0 .. n*iters-1:
 * an atomic that lost or doubled an update shows here. */
static void check_fetched_permutation(const int64_t *fetched, int iters, const char *what)
{
    int total           = iters * g_size, i;
    int64_t *all        = rt_malloc(sizeof(int64_t) * (size_t)total);
    unsigned char *seen = rt_malloc((size_t)total);

    RT_MPI(MPI_Allgather(fetched, iters, MPI_INT64_T, all, iters, MPI_INT64_T, MPI_COMM_WORLD));
    memset(seen, 0, (size_t)total);
    for (i = 0; i < total; ++i) {
        RT_CHECK(all[i] >= 0 && all[i] < total, "%s: fetched %ld out of range", what, (long)all[i]);
        RT_CHECK(!seen[all[i]], "%s: value %ld fetched twice", what, (long)all[i]);
        seen[all[i]] = 1;
    }
    free(all);
    free(seen);
}

static void test_lock_unlock(void)
{
    enum { ITERS = 30, CAS_WINS = 10 };
    int64_t fetched[ITERS], one = 1, seen64, next64;
    int32_t one32  = 1, seen32, next32, fetched32;
    int64_t *check = rt_malloc(sizeof(int64_t) * ITERS);
    int i, t;

    open_window(1);
    reset_window();

    /* Exclusive lock: fetch_and_op on rank 0, 64- and 32-bit. */
    for (i = 0; i < ITERS; ++i) {
        RT_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        RT_MPI(MPI_Fetch_and_op(&one, &fetched[i], MPI_INT64_T, 0, OFF(counter64), MPI_SUM, win));
        RT_MPI(MPI_Fetch_and_op(&one32, &fetched32, MPI_INT32_T, 0, OFF(counter32), MPI_SUM, win));
        RT_MPI(MPI_Win_unlock(0, win));
        check[i] = fetched32;
    }
    check_fetched_permutation(fetched, ITERS, "64-bit Fetch_and_op under lock");
    check_fetched_permutation(check, ITERS, "32-bit Fetch_and_op under lock");

    /* Shared lock: compare_and_swap increments, retried until they win. */
    for (i = 0; i < CAS_WINS; ++i) {
        RT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        do {
            RT_MPI(MPI_Fetch_and_op(NULL, &seen64, MPI_INT64_T, 0, OFF(cas64), MPI_NO_OP, win));
            RT_MPI(MPI_Win_flush(0, win));
            next64 = seen64 + 1;
            RT_MPI(MPI_Compare_and_swap(&next64, &seen64, &fetched[0], MPI_INT64_T, 0, OFF(cas64),
                                        win));
            RT_MPI(MPI_Win_flush(0, win));
        } while (fetched[0] != seen64);
        do {
            RT_MPI(MPI_Fetch_and_op(NULL, &seen32, MPI_INT32_T, 0, OFF(cas32), MPI_NO_OP, win));
            RT_MPI(MPI_Win_flush(0, win));
            next32 = seen32 + 1;
            RT_MPI(MPI_Compare_and_swap(&next32, &seen32, &fetched32, MPI_INT32_T, 0, OFF(cas32),
                                        win));
            RT_MPI(MPI_Win_flush(0, win));
        } while (fetched32 != seen32);
        RT_MPI(MPI_Win_unlock(0, win));
    }

    /* Shared lock on every target: put my slot, then read it back. */
    for (t = 0; t < g_size; ++t) {
        int64_t val = 7000 + g_rank * 10 + t, back = -2;

        RT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win));
        RT_MPI(MPI_Put(&val, 1, MPI_INT64_T, t, OFF(slot[g_rank]), 1, MPI_INT64_T, win));
        RT_MPI(MPI_Win_unlock(t, win));
        RT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win));
        RT_MPI(MPI_Get(&back, 1, MPI_INT64_T, t, OFF(slot[g_rank]), 1, MPI_INT64_T, win));
        RT_MPI(MPI_Win_unlock(t, win));
        RT_CHECK(back == val, "lock/unlock: read back %ld from %d, wrote %ld", (long)back, t,
                 (long)val);
    }
    RT_MPI(MPI_Barrier(MPI_COMM_WORLD));

    RT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, g_rank, 0, win));
    if (g_rank == 0) {
        RT_CHECK(win_mem->counter64 == (int64_t)ITERS * g_size, "counter64 = %ld",
                 (long)win_mem->counter64);
        RT_CHECK(win_mem->counter32 == ITERS * g_size, "counter32 = %d", win_mem->counter32);
        RT_CHECK(win_mem->cas64 == (int64_t)CAS_WINS * g_size, "cas64 = %ld", (long)win_mem->cas64);
        RT_CHECK(win_mem->cas32 == CAS_WINS * g_size, "cas32 = %d", win_mem->cas32);
    }
    for (t = 0; t < g_size; ++t) {
        RT_CHECK(win_mem->slot[t] == 7000 + t * 10 + g_rank, "slot[%d] = %ld", t,
                 (long)win_mem->slot[t]);
    }
    RT_MPI(MPI_Win_unlock(g_rank, win));
    close_window(1);
    free(check);
    RT_STEP("lock/unlock: fetch_and_op and compare_and_swap, 32/64-bit, put/get");
}

static void test_lock_all_flush(int allocate)
{
    unsigned char *big = rt_malloc(BIG), *back = rt_malloc(BIG);
    int64_t one = 1, fetched, old, sum_before;
    MPI_Request req[2];
    MPI_Status st[2];
    int t, r;

    open_window(allocate);
    reset_window();

    RT_MPI(MPI_Win_lock_all(0, win));
    for (t = 0; t < g_size; ++t) {
        int64_t val = 100 * g_rank + t, got = -2;

        RT_MPI(MPI_Put(&val, 1, MPI_INT64_T, t, OFF(slot[g_rank]), 1, MPI_INT64_T, win));
        RT_MPI(MPI_Win_flush(t, win));
        RT_MPI(MPI_Get(&got, 1, MPI_INT64_T, t, OFF(slot[g_rank]), 1, MPI_INT64_T, win));
        RT_MPI(MPI_Win_flush(t, win));
        RT_CHECK(got == val, "flush: got %ld back from %d, put %ld", (long)got, t, (long)val);

        RT_MPI(MPI_Accumulate(&one, 1, MPI_INT64_T, t, OFF(acc[1]), 1, MPI_INT64_T, MPI_SUM, win));
        RT_MPI(MPI_Fetch_and_op(&one, &fetched, MPI_INT64_T, t, OFF(acc[2]), MPI_SUM, win));
        RT_MPI(MPI_Win_flush_local(t, win));
        RT_CHECK(fetched >= 0 && fetched < g_size, "Fetch_and_op under lock_all fetched %ld",
                 (long)fetched);
        RT_MPI(MPI_Get_accumulate(&one, 1, MPI_INT64_T, &old, 1, MPI_INT64_T, t, OFF(acc[3]), 1,
                                  MPI_INT64_T, MPI_SUM, win));
        RT_MPI(MPI_Win_flush(t, win));
        RT_CHECK(old >= 0 && old < g_size, "Get_accumulate fetched %ld", (long)old);
    }
    RT_MPI(MPI_Win_flush_all(win));

    /* Large request-based put and get to the right neighbour. */
    rt_fill(big, BIG, rt_seed(g_rank, rt_right(), 2));
    memset(back, 0, BIG);
    RT_MPI(MPI_Rput(big, BIG, MPI_BYTE, rt_right(), OFF(big), BIG, MPI_BYTE, win, &req[0]));
    RT_MPI(MPI_Wait(&req[0], &st[0])); /* local completion only */
    RT_MPI(MPI_Win_flush(rt_right(), win));
    RT_MPI(MPI_Rget(back, BIG, MPI_BYTE, rt_right(), OFF(big), BIG, MPI_BYTE, win, &req[1]));
    RT_MPI(MPI_Wait(&req[1], &st[1]));
    RT_CHECK_DATA(back, BIG, rt_seed(g_rank, rt_right(), 2), "Rput then Rget 1 MiB");
    RT_MPI(MPI_Win_unlock_all(win));
    RT_MPI(MPI_Barrier(MPI_COMM_WORLD));

    RT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, g_rank, 0, win));
    for (r = 0; r < g_size; ++r) {
        RT_CHECK(win_mem->slot[r] == 100 * r + g_rank, "slot[%d] = %ld", r, (long)win_mem->slot[r]);
    }
    sum_before = win_mem->acc[1] + win_mem->acc[2] + win_mem->acc[3];
    RT_CHECK(win_mem->acc[1] == g_size && win_mem->acc[2] == g_size && win_mem->acc[3] == g_size,
             "accumulates under lock_all: %ld %ld %ld", (long)win_mem->acc[1],
             (long)win_mem->acc[2], (long)win_mem->acc[3]);
    RT_CHECK(sum_before == 3 * g_size, "sum %ld", (long)sum_before);
    RT_CHECK_DATA(win_mem->big, BIG, rt_seed(rt_left(), g_rank, 2), "Rput target");
    RT_MPI(MPI_Win_unlock(g_rank, win));
    close_window(allocate);
    free(big);
    free(back);
    RT_STEP("lock_all + flush/flush_local/flush_all, Rput/Rget, %s",
            allocate ? "Win_allocate" : "Win_create");
}

/* Generalized active target: each rank exposes to its left neighbour and
 * accesses its right one. */
static void test_pscw(void)
{
    MPI_Group world, left_group, right_group;
    int left = rt_left(), right = rt_right();
    int64_t val = 5000 + g_rank;

    open_window(1);
    reset_window();
    RT_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));
    RT_MPI(MPI_Group_incl(world, 1, &left, &left_group));
    RT_MPI(MPI_Group_incl(world, 1, &right, &right_group));

    RT_MPI(MPI_Win_post(left_group, 0, win));
    RT_MPI(MPI_Win_start(right_group, 0, win));
    RT_MPI(MPI_Put(&val, 1, MPI_INT64_T, right, OFF(slot[g_rank]), 1, MPI_INT64_T, win));
    RT_MPI(MPI_Win_complete(win));
    RT_MPI(MPI_Win_wait(win));
    RT_CHECK(win_mem->slot[left] == 5000 + left, "PSCW: slot[%d] = %ld", left,
             (long)win_mem->slot[left]);

    RT_MPI(MPI_Group_free(&left_group));
    RT_MPI(MPI_Group_free(&right_group));
    RT_MPI(MPI_Group_free(&world));
    close_window(1);
    RT_STEP("post/start/complete/wait");
}

int main(int argc, char **argv)
{
    rt_mpi_init(&argc, &argv);
    RT_CHECK(g_size <= MAX_RANKS, "at most %d ranks", MAX_RANKS);

    test_fence(1);
    test_fence(0);
    test_lock_unlock();
    test_lock_all_flush(1);
    test_lock_all_flush(0);
    test_pscw();

    rt_mpi_finish("mpi_rma");
    return 0;
}
