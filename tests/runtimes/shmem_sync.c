/*
 * OpenSHMEM synchronization and collectives: shmem_wait_until and
 * shmem_test on values written by other PEs, barrier_all and active-set
 * barriers, broadcast, reductions (sum, prod, min, max, and, or, xor over
 * int, long, double), collect/fcollect and alltoall; then a clean
 * shmem_finalize (the runner checks the exit code).
 */
#include "rt_shmem.h"

#define MAX_ELEMS (128 * 1024) /* 1 MiB of longs: broadcast above eager sizes */

static long psync_a[SHMEM_BCAST_SYNC_SIZE > SHMEM_REDUCE_SYNC_SIZE ? SHMEM_BCAST_SYNC_SIZE :
                                                                     SHMEM_REDUCE_SYNC_SIZE];
static long psync_b[sizeof(psync_a) / sizeof(long)];
static long psync_collect[SHMEM_COLLECT_SYNC_SIZE];
static long psync_alltoall[SHMEM_ALLTOALL_SYNC_SIZE];
static long psync_barrier[SHMEM_BARRIER_SYNC_SIZE];
static long pwrk_long[SHMEM_REDUCE_MIN_WRKDATA_SIZE + MAX_ELEMS];
static int pwrk_int[SHMEM_REDUCE_MIN_WRKDATA_SIZE + MAX_ELEMS];
static double pwrk_double[SHMEM_REDUCE_MIN_WRKDATA_SIZE + MAX_ELEMS];

static void init_psync(long *psync, size_t n)
{
    size_t i;

    for (i = 0; i < n; ++i) {
        psync[i] = SHMEM_SYNC_VALUE;
    }
}

/* Alternating pSync arrays: one may be reused only after a barrier. */
static long *next_psync(void)
{
    static int flip;

    flip = !flip;
    return flip ? psync_a : psync_b;
}

/*
 * A token goes round the ring ROUNDS times; each PE waits for it with
 * shmem_wait_until (even rounds) or polls shmem_test (odd rounds).
 *
 * The words live in the symmetric heap: Open MPI 4.1.4's shmem_test only
 * reads memory and never progresses UCP, so a put that needs the target's
 * progress (as into the data segment, which UCX cannot map between
 * processes, or anywhere over tcp) would never arrive while the target
 * polls. Where the previous PE cannot reach the heap directly (shmem_ptr
 * gives NULL: no shared-memory transport), every round waits with
 * shmem_wait_until instead; UCX 1.13 hangs there the same way.
 */
static void test_wait_until(void)
{
    enum { ROUNDS = 5 };
    int *token    = shmem_malloc(sizeof(int));
    long *counter = shmem_malloc(sizeof(long));
    int r;

    RT_CHECK(token != NULL && counter != NULL, "shmem_malloc");
    const int test_polls = shmem_ptr(token, rt_prev_pe()) != NULL;
    *token               = 0;
    *counter             = 0;
    shmem_barrier_all();
    for (r = 1; r <= ROUNDS; ++r) {
        int expect = (r - 1) * g_npes + g_me + 1;

        if (!(r == 1 && g_me == 0)) {
            int want = expect - 1; /* what the previous PE sent this round */
            if ((r % 2 == 0) || !test_polls) {
                shmem_int_wait_until(token, SHMEM_CMP_EQ, want);
            } else {
                while (!shmem_int_test(token, SHMEM_CMP_EQ, want)) {
                }
            }
            RT_CHECK(*token == want, "token %d, expected %d", *token, want);
        }
        shmem_int_p(token, expect, rt_next_pe());
    }
    /* The last pass reaches PE 0 again. */
    if (g_me == 0) {
        shmem_int_wait_until(token, SHMEM_CMP_EQ, ROUNDS * g_npes);
    }

    /* Everyone adds to PE 0's counter; PE 0 waits for >= total. */
    shmem_long_atomic_add(counter, g_me + 1, 0);
    if (g_me == 0) {
        shmem_long_wait_until(counter, SHMEM_CMP_GE, (long)g_npes * (g_npes + 1) / 2);
        RT_CHECK(*counter == (long)g_npes * (g_npes + 1) / 2, "counter %ld", *counter);
    }
    shmem_barrier_all();
    shmem_free(token);
    shmem_free(counter);
    RT_STEP("wait_until/%s: token ring x%d, counter >= total",
            test_polls ? "test" : "wait_until (heap not mapped)", ROUNDS);
}

static int sym_arrivals[64];

/* Every PE puts into PE 0 before the barrier; after it PE 0 sees them all
 * (shmem_barrier_all completes outstanding puts). */
static void test_barriers(void)
{
    enum { ROUNDS = 10 };
    int r, i;

    RT_CHECK(g_npes <= 64, "at most 64 PEs");
    for (r = 1; r <= ROUNDS; ++r) {
        shmem_int_p(&sym_arrivals[g_me], r, 0);
        shmem_barrier_all();
        if (g_me == 0) {
            for (i = 0; i < g_npes; ++i) {
                RT_CHECK(sym_arrivals[i] == r, "barrier round %d: PE %d put %d", r, i,
                         sym_arrivals[i]);
            }
        }
        shmem_barrier_all();
    }

    /* Active-set barrier over the even PEs. */
    init_psync(psync_barrier, SHMEM_BARRIER_SYNC_SIZE);
    shmem_barrier_all();
    if (g_me % 2 == 0) {
        shmem_int_p(&sym_arrivals[g_me], -1, 0);
        shmem_barrier(0, 1, (g_npes + 1) / 2, psync_barrier);
        if (g_me == 0) {
            for (i = 0; i < g_npes; i += 2) {
                RT_CHECK(sym_arrivals[i] == -1, "active-set barrier: PE %d", i);
            }
        }
    }
    shmem_barrier_all();
    RT_STEP("barrier_all x%d, active-set barrier", ROUNDS);
}

static void test_broadcast(size_t nelems)
{
    long *src = shmem_malloc(nelems * sizeof(long));
    long *dst = shmem_malloc(nelems * sizeof(long));
    int root;
    size_t i;

    RT_CHECK(src != NULL && dst != NULL, "shmem_malloc");
    for (root = 0; root < g_npes; ++root) {
        long *psync = next_psync();

        init_psync(psync, SHMEM_BCAST_SYNC_SIZE);
        for (i = 0; i < nelems; ++i) {
            src[i] = (long)root * 1000000 + (long)i;
            dst[i] = -7;
        }
        shmem_barrier_all();
        shmem_broadcast64(dst, src, nelems, root, 0, 0, g_npes, psync);
        shmem_barrier_all();
        for (i = 0; i < nelems; ++i) {
            /* The root's own dst is not written by broadcast. */
            long want = (g_me == root) ? -7 : (long)root * 1000000 + (long)i;
            RT_CHECK(dst[i] == want, "broadcast64 from %d: [%zu] = %ld", root, i, dst[i]);
        }
    }
    /* 32-bit form once */
    {
        int *s32 = (int *)src, *d32 = (int *)dst;
        long *psync = next_psync();

        init_psync(psync, SHMEM_BCAST_SYNC_SIZE);
        for (i = 0; i < nelems; ++i) {
            s32[i] = (int)i * 3;
            d32[i] = -1;
        }
        shmem_barrier_all();
        shmem_broadcast32(d32, s32, nelems, 1, 0, 0, g_npes, psync);
        shmem_barrier_all();
        if (g_me != 1) {
            for (i = 0; i < nelems; ++i) {
                RT_CHECK(d32[i] == (int)i * 3, "broadcast32 [%zu] = %d", i, d32[i]);
            }
        }
    }
    shmem_barrier_all();
    shmem_free(src);
    shmem_free(dst);
    RT_STEP("broadcast32/64 from every root, %zu elements", nelems);
}

static void test_reductions(int n)
{
    long *lsrc   = shmem_malloc((size_t)n * sizeof(long));
    long *ldst   = shmem_malloc((size_t)n * sizeof(long));
    int *isrc    = shmem_malloc((size_t)n * sizeof(int));
    int *idst    = shmem_malloc((size_t)n * sizeof(int));
    double *dsrc = shmem_malloc((size_t)n * sizeof(double));
    double *ddst = shmem_malloc((size_t)n * sizeof(double));
    long sum_pe  = (long)g_npes * (g_npes - 1) / 2;
    long *psync;
    int i;

    RT_CHECK(lsrc && ldst && isrc && idst && dsrc && ddst, "shmem_malloc");
    for (i = 0; i < n; ++i) {
        lsrc[i] = (long)i * 10 + g_me;
        isrc[i] = (i % 7) - g_me;
        dsrc[i] = 0.5 * g_me + i;
    }

#define REDUCE(_call) \
    do { \
        psync = next_psync(); \
        init_psync(psync, SHMEM_REDUCE_SYNC_SIZE); \
        shmem_barrier_all(); \
        _call; \
        shmem_barrier_all(); \
    } while (0)

    REDUCE(shmem_long_sum_to_all(ldst, lsrc, n, 0, 0, g_npes, pwrk_long, psync));
    for (i = 0; i < n; ++i) {
        long want = (long)i * 10 * g_npes + sum_pe;
        RT_CHECK(ldst[i] == want, "long sum [%d] = %ld, expected %ld", i, ldst[i], want);
    }
    REDUCE(shmem_long_max_to_all(ldst, lsrc, n, 0, 0, g_npes, pwrk_long, psync));
    for (i = 0; i < n; ++i) {
        RT_CHECK(ldst[i] == (long)i * 10 + g_npes - 1, "long max [%d] = %ld", i, ldst[i]);
    }
    REDUCE(shmem_int_min_to_all(idst, isrc, n, 0, 0, g_npes, pwrk_int, psync));
    for (i = 0; i < n; ++i) {
        RT_CHECK(idst[i] == (i % 7) - (g_npes - 1), "int min [%d] = %d", i, idst[i]);
    }
    REDUCE(shmem_int_sum_to_all(idst, isrc, n, 0, 0, g_npes, pwrk_int, psync));
    for (i = 0; i < n; ++i) {
        RT_CHECK(idst[i] == (i % 7) * g_npes - (int)sum_pe, "int sum [%d] = %d", i, idst[i]);
    }
    REDUCE(shmem_double_sum_to_all(ddst, dsrc, n, 0, 0, g_npes, pwrk_double, psync));
    for (i = 0; i < n; ++i) {
        double want = 0.5 * (double)sum_pe + (double)i * g_npes;
        RT_CHECK(ddst[i] == want, "double sum [%d] = %g, expected %g", i, ddst[i], want);
    }
    REDUCE(shmem_double_max_to_all(ddst, dsrc, n, 0, 0, g_npes, pwrk_double, psync));
    for (i = 0; i < n; ++i) {
        RT_CHECK(ddst[i] == 0.5 * (g_npes - 1) + i, "double max [%d] = %g", i, ddst[i]);
    }

    /* Bitwise and product on small values */
    for (i = 0; i < n; ++i) {
        lsrc[i] = (1L << g_me) | (1L << 40);
        isrc[i] = (i % 3) + 1;
    }
    REDUCE(shmem_long_or_to_all(ldst, lsrc, n, 0, 0, g_npes, pwrk_long, psync));
    for (i = 0; i < n; ++i) {
        RT_CHECK(ldst[i] == (((1L << g_npes) - 1) | (1L << 40)), "long or [%d] = %lx", i, ldst[i]);
    }
    REDUCE(shmem_long_and_to_all(ldst, lsrc, n, 0, 0, g_npes, pwrk_long, psync));
    for (i = 0; i < n; ++i) {
        RT_CHECK(ldst[i] == (1L << 40), "long and [%d] = %lx", i, ldst[i]);
    }
    REDUCE(shmem_long_xor_to_all(ldst, lsrc, n, 0, 0, g_npes, pwrk_long, psync));
    for (i = 0; i < n; ++i) {
        long want = ((1L << g_npes) - 1) | ((g_npes % 2) ? (1L << 40) : 0);
        RT_CHECK(ldst[i] == want, "long xor [%d] = %lx", i, ldst[i]);
    }
    REDUCE(shmem_int_prod_to_all(idst, isrc, n, 0, 0, g_npes, pwrk_int, psync));
    for (i = 0; i < n; ++i) {
        int want = 1, k;
        for (k = 0; k < g_npes; ++k) {
            want *= (i % 3) + 1;
        }
        RT_CHECK(idst[i] == want, "int prod [%d] = %d", i, idst[i]);
    }
#undef REDUCE

    shmem_free(lsrc);
    shmem_free(ldst);
    shmem_free(isrc);
    shmem_free(idst);
    shmem_free(dsrc);
    shmem_free(ddst);
    RT_STEP("reductions sum/max/min/prod/or/and/xor, %d elements", n);
}

/* collect (different sizes per PE), fcollect, alltoall64 */
static void test_collect_alltoall(void)
{
    enum { PER = 100 };
    size_t max_total = (size_t)g_npes * PER;
    long *src        = shmem_malloc(PER * sizeof(long));
    long *dst        = shmem_malloc(max_total * sizeof(long));
    long *a2a_src    = shmem_malloc(max_total * sizeof(long));
    long *a2a_dst    = shmem_malloc(max_total * sizeof(long));
    size_t mine = (size_t)(g_me % 3) + 1, pos = 0;
    int pe, i;

    RT_CHECK(src && dst && a2a_src && a2a_dst, "shmem_malloc");
    for (i = 0; i < PER; ++i) {
        src[i] = g_me * 1000 + i;
    }

    init_psync(psync_collect, SHMEM_COLLECT_SYNC_SIZE);
    shmem_barrier_all();
    shmem_collect64(dst, src, mine, 0, 0, g_npes, psync_collect);
    shmem_barrier_all();
    for (pe = 0; pe < g_npes; ++pe) {
        for (i = 0; i < pe % 3 + 1; ++i, ++pos) {
            RT_CHECK(dst[pos] == pe * 1000 + i, "collect64 [%zu] = %ld", pos, dst[pos]);
        }
    }

    init_psync(psync_collect, SHMEM_COLLECT_SYNC_SIZE);
    shmem_barrier_all();
    shmem_fcollect64(dst, src, PER, 0, 0, g_npes, psync_collect);
    shmem_barrier_all();
    for (pe = 0; pe < g_npes; ++pe) {
        for (i = 0; i < PER; ++i) {
            RT_CHECK(dst[pe * PER + i] == pe * 1000 + i, "fcollect64 [%d][%d]", pe, i);
        }
    }

    for (pe = 0; pe < g_npes; ++pe) {
        for (i = 0; i < PER; ++i) {
            a2a_src[pe * PER + i] = ((long)g_me << 32) | ((long)pe << 16) | i;
        }
    }
    init_psync(psync_alltoall, SHMEM_ALLTOALL_SYNC_SIZE);
    shmem_barrier_all();
    shmem_alltoall64(a2a_dst, a2a_src, PER, 0, 0, g_npes, psync_alltoall);
    shmem_barrier_all();
    for (pe = 0; pe < g_npes; ++pe) {
        for (i = 0; i < PER; ++i) {
            long want = ((long)pe << 32) | ((long)g_me << 16) | i;
            RT_CHECK(a2a_dst[pe * PER + i] == want, "alltoall64 from %d [%d] = %lx", pe, i,
                     a2a_dst[pe * PER + i]);
        }
    }
    shmem_barrier_all();
    shmem_free(src);
    shmem_free(dst);
    shmem_free(a2a_src);
    shmem_free(a2a_dst);
    RT_STEP("collect64/fcollect64/alltoall64");
}

int main(void)
{
    rt_shmem_init();

    test_wait_until();
    test_barriers();
    test_broadcast(1);
    test_broadcast(1000);
    test_broadcast(MAX_ELEMS);
    test_reductions(1);
    test_reductions(1000);
    test_reductions(100000);
    test_collect_alltoall();

    rt_shmem_finish("shmem_sync");
    return 0;
}
