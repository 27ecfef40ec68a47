/*
 * Dynamic windows: MPI_Win_create_dynamic, MPI_Win_attach/detach of several
 * regions, addresses exchanged with MPI_Get_address, and put, get,
 * accumulate, fetch_and_op and compare_and_swap into them under lock_all +
 * flush. Regions are detached and new ones attached several times while the
 * window lives (the remote keys of the runtime change underneath it).
 */
#include "rt_mpi.h"

struct region {
    int64_t counter;
    int64_t cas;
    int64_t acc;
    int64_t slot[64];
    unsigned char data[]; /* 'len' bytes written by the left neighbour */
};

static MPI_Aint remote_address(void *local, MPI_Aint *all)
{
    MPI_Aint mine;

    RT_MPI(MPI_Get_address(local, &mine));
    RT_MPI(MPI_Allgather(&mine, 1, MPI_AINT, all, 1, MPI_AINT, MPI_COMM_WORLD));
    return mine;
}

/* One round: attach two regions of 'len' data bytes, use them from every
 * rank, check, detach. */
static void round_trip(MPI_Win win, size_t len, int round)
{
    size_t bytes     = sizeof(struct region) + len;
    struct region *a = rt_malloc(bytes), *b = rt_malloc(bytes);
    MPI_Aint *addr_a   = rt_malloc(sizeof(MPI_Aint) * (size_t)g_size);
    MPI_Aint *addr_b   = rt_malloc(sizeof(MPI_Aint) * (size_t)g_size);
    unsigned char *src = rt_malloc(len), *back = rt_malloc(len);
    int64_t one = 1, fetched, cmp, swap, result;
    int t, r;

    memset(a, 0, bytes);
    memset(b, 0, bytes);
    for (r = 0; r < 64; ++r) {
        a->slot[r] = -1;
    }
    /* The higher region first: Open MPI 4.1.4's osc ucx searches one slot
     * past its table when attaching, so a region attached above all others
     * lands one slot too far, its own lookups then miss it and it unpacks a
     * "key" from before its buffer (whatever the heap holds there). */
    const int a_higher = (uintptr_t)a > (uintptr_t)b;
    RT_MPI(MPI_Win_attach(win, a_higher ? a : b, (MPI_Aint)bytes));
    RT_MPI(MPI_Win_attach(win, a_higher ? b : a, (MPI_Aint)bytes));
    remote_address(a, addr_a);
    remote_address(b, addr_b);
    RT_MPI(MPI_Barrier(MPI_COMM_WORLD)); /* everyone attached */

    RT_MPI(MPI_Win_lock_all(0, win));
    for (t = 0; t < g_size; ++t) {
        int64_t val = round * 1000 + g_rank * 10 + t;

        RT_MPI(MPI_Put(&val, 1, MPI_INT64_T, t,
                       addr_a[t] + (MPI_Aint)offsetof(struct region, slot[g_rank]), 1, MPI_INT64_T,
                       win));
        RT_MPI(MPI_Accumulate(&one, 1, MPI_INT64_T, t,
                              addr_b[t] + (MPI_Aint)offsetof(struct region, acc), 1, MPI_INT64_T,
                              MPI_SUM, win));
        RT_MPI(MPI_Fetch_and_op(&one, &fetched, MPI_INT64_T, t,
                                addr_a[t] + (MPI_Aint)offsetof(struct region, counter), MPI_SUM,
                                win));
        RT_MPI(MPI_Win_flush(t, win));
        RT_CHECK(fetched >= 0 && fetched < g_size, "dynamic Fetch_and_op fetched %ld",
                 (long)fetched);
        /* Only the rank whose turn it is can swap 'cas' from t-th value. */
        do {
            RT_MPI(MPI_Fetch_and_op(NULL, &cmp, MPI_INT64_T, t,
                                    addr_a[t] + (MPI_Aint)offsetof(struct region, cas), MPI_NO_OP,
                                    win));
            RT_MPI(MPI_Win_flush(t, win));
            swap = cmp + 1;
            RT_MPI(MPI_Compare_and_swap(&swap, &cmp, &result, MPI_INT64_T, t,
                                        addr_a[t] + (MPI_Aint)offsetof(struct region, cas), win));
            RT_MPI(MPI_Win_flush(t, win));
        } while (result != cmp);
    }

    /* Bulk data into the right neighbour's second region, then read back. */
    rt_fill(src, len, rt_seed(g_rank, rt_right(), (uint64_t)round));
    memset(back, 0, len);
    RT_MPI(MPI_Put(src, (int)len, MPI_BYTE, rt_right(),
                   addr_b[rt_right()] + (MPI_Aint)offsetof(struct region, data), (int)len, MPI_BYTE,
                   win));
    RT_MPI(MPI_Win_flush(rt_right(), win));
    RT_MPI(MPI_Get(back, (int)len, MPI_BYTE, rt_right(),
                   addr_b[rt_right()] + (MPI_Aint)offsetof(struct region, data), (int)len, MPI_BYTE,
                   win));
    RT_MPI(MPI_Win_flush(rt_right(), win));
    RT_CHECK_DATA(back, len, rt_seed(g_rank, rt_right(), (uint64_t)round), "dynamic put then get");
    RT_MPI(MPI_Win_unlock_all(win));
    RT_MPI(MPI_Barrier(MPI_COMM_WORLD)); /* all operations on my regions are done */

    RT_MPI(MPI_Win_lock(MPI_LOCK_SHARED, g_rank, 0, win));
    for (r = 0; r < g_size; ++r) {
        RT_CHECK(a->slot[r] == round * 1000 + r * 10 + g_rank, "dynamic slot[%d] = %ld", r,
                 (long)a->slot[r]);
    }
    RT_CHECK(a->counter == g_size, "dynamic counter = %ld", (long)a->counter);
    RT_CHECK(a->cas == g_size, "dynamic cas = %ld", (long)a->cas);
    RT_CHECK(b->acc == g_size, "dynamic acc = %ld", (long)b->acc);
    RT_CHECK_DATA(b->data, len, rt_seed(rt_left(), g_rank, (uint64_t)round), "dynamic put target");
    RT_MPI(MPI_Win_unlock(g_rank, win));

    RT_MPI(MPI_Win_detach(win, a));
    RT_MPI(MPI_Win_detach(win, b));
    RT_MPI(MPI_Barrier(MPI_COMM_WORLD));
    free(a);
    free(b);
    free(addr_a);
    free(addr_b);
    free(src);
    free(back);
}

int main(int argc, char **argv)
{
    static const size_t lens[] = {64, 100000, 1u << 20, 4096};
    MPI_Win win;
    unsigned i;

    rt_mpi_init(&argc, &argv);
    RT_CHECK(g_size <= 64, "at most 64 ranks");

    RT_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    for (i = 0; i < sizeof(lens) / sizeof(lens[0]); ++i) {
        round_trip(win, lens[i], (int)i);
        RT_STEP("dynamic window round %u: attach, rma of %zu bytes, detach", i, lens[i]);
    }
    RT_MPI(MPI_Win_free(&win));

    /* A second dynamic window after the first is gone. */
    RT_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    round_trip(win, 2000, 9);
    RT_MPI(MPI_Win_free(&win));
    RT_STEP("second dynamic window");

    rt_mpi_finish("mpi_rma_dynamic");
    return 0;
}
