/*
 * OpenSHMEM remote memory access (Open MPI's spml ucx over UCP): put and get
 * of every protocol size up to 16 MiB, typed and strided forms, shmem_p/g,
 * non-blocking forms with shmem_quiet, ordering by shmem_fence, a private
 * context, and shmem_ptr (direct load/store through ucp_rkey_ptr).
 */
#include "rt_shmem.h"

static const size_t sizes[] = {
    1, 7, 8, 64, 255, 1024, 4095, 8192, 65536, 65537, 262144, 1048576, 4194304, 16777216,
};
#define NUM_SIZES (sizeof(sizes) / sizeof(sizes[0]))
#define MAX_SIZE  (16u << 20)

static unsigned char *sym_src, *sym_dst; /* symmetric */
static unsigned char *local_buf;         /* private */

static void test_put_get(void)
{
    size_t i;

    for (i = 0; i < NUM_SIZES; ++i) {
        size_t len = sizes[i];

        /* put: my data lands in the next PE's sym_dst */
        rt_fill(local_buf, len, rt_seed(g_me, rt_next_pe(), i));
        memset(sym_dst, 0, len + 1);
        shmem_barrier_all();
        shmem_putmem(sym_dst, local_buf, len, rt_next_pe());
        shmem_barrier_all(); /* implies quiet */
        RT_CHECK_DATA(sym_dst, len, rt_seed(rt_prev_pe(), g_me, i), "shmem_putmem");
        RT_CHECK(sym_dst[len] == 0, "shmem_putmem of %zu bytes wrote past the end", len);

        /* get: read the next PE's sym_src */
        rt_fill(sym_src, len, rt_seed(g_me, 0, 100 + i));
        memset(local_buf, 0, len);
        shmem_barrier_all();
        shmem_getmem(local_buf, sym_src, len, rt_next_pe());
        RT_CHECK_DATA(local_buf, len, rt_seed(rt_next_pe(), 0, 100 + i), "shmem_getmem");
    }
    shmem_barrier_all();
    RT_STEP("putmem/getmem, %zu sizes up to %u bytes", NUM_SIZES, MAX_SIZE);
}

static int sym_ints[100];
static long sym_longs[100];
static double sym_doubles[100];
static char sym_chars[16];

static void test_typed_and_scalar(void)
{
    int ints[100], i, prev = rt_prev_pe(), next = rt_next_pe();
    long longs[100];
    double doubles[100];

    for (i = 0; i < 100; ++i) {
        ints[i]    = g_me * 1000 + i;
        longs[i]   = -(long)g_me * 100000 - i;
        doubles[i] = g_me + i / 4.0;
    }
    memset(sym_ints, 0, sizeof(sym_ints));
    memset(sym_longs, 0, sizeof(sym_longs));
    memset(sym_doubles, 0, sizeof(sym_doubles));
    memset(sym_chars, 0, sizeof(sym_chars));
    shmem_barrier_all();
    shmem_int_put(sym_ints, ints, 50, next); /* elements 0..49 */
    shmem_long_put(sym_longs, longs, 100, next);
    shmem_double_put(sym_doubles, doubles, 100, next);
    for (i = 50; i < 100; ++i) { /* elements 50..99 by shmem_p */
        shmem_int_p(&sym_ints[i], ints[i], next);
    }
    shmem_char_p(&sym_chars[3], (char)('a' + g_me), next);
    shmem_barrier_all();
    for (i = 0; i < 100; ++i) {
        RT_CHECK(sym_ints[i] == prev * 1000 + i, "int put/p [%d] = %d", i, sym_ints[i]);
        RT_CHECK(sym_longs[i] == -(long)prev * 100000 - i, "long put [%d] = %ld", i, sym_longs[i]);
        RT_CHECK(sym_doubles[i] == prev + i / 4.0, "double put [%d] = %g", i, sym_doubles[i]);
    }
    RT_CHECK(sym_chars[3] == (char)('a' + prev) && sym_chars[2] == 0 && sym_chars[4] == 0,
             "char_p wrong");

    /* g and typed get read what the next PE was given by its previous (me). */
    for (i = 0; i < 100; i += 9) {
        RT_CHECK(shmem_int_g(&sym_ints[i], next) == g_me * 1000 + i, "int_g [%d]", i);
        RT_CHECK(shmem_long_g(&sym_longs[i], next) == -(long)g_me * 100000 - i, "long_g [%d]", i);
        RT_CHECK(shmem_double_g(&sym_doubles[i], next) == g_me + i / 4.0, "double_g [%d]", i);
    }
    memset(longs, 0, sizeof(longs));
    shmem_long_get(longs, sym_longs, 100, next);
    for (i = 0; i < 100; ++i) {
        RT_CHECK(longs[i] == -(long)g_me * 100000 - i, "long_get [%d] = %ld", i, longs[i]);
    }

    /* strided: every 3rd int of mine into every 2nd slot of the next PE */
    shmem_barrier_all();
    memset(sym_ints, 0, sizeof(sym_ints));
    shmem_barrier_all();
    shmem_int_iput(sym_ints, ints, 2, 3, 30, next);
    shmem_barrier_all();
    for (i = 0; i < 60; ++i) {
        int want = (i % 2 == 0) ? prev * 1000 + (i / 2) * 3 : 0;
        RT_CHECK(sym_ints[i] == want, "iput [%d] = %d, expected %d", i, sym_ints[i], want);
    }
    memset(ints, 0, sizeof(ints));
    shmem_int_iget(ints, sym_ints, 1, 2, 30, next);
    for (i = 0; i < 30; ++i) {
        RT_CHECK(ints[i] == g_me * 1000 + i * 3, "iget [%d] = %d", i, ints[i]);
    }
    shmem_barrier_all();
    RT_STEP("typed put/get, p/g, iput/iget");
}

static void test_nbi(void)
{
    enum { CHUNKS = 16 };
    size_t chunk = 65536, c;

    memset(sym_dst, 0, CHUNKS * chunk);
    rt_fill(local_buf, CHUNKS * chunk, rt_seed(g_me, 0, 555));
    shmem_barrier_all();
    for (c = 0; c < CHUNKS; ++c) {
        shmem_putmem_nbi(sym_dst + c * chunk, local_buf + c * chunk, chunk, rt_next_pe());
    }
    shmem_quiet();
    shmem_barrier_all();
    RT_CHECK_DATA(sym_dst, CHUNKS * chunk, rt_seed(rt_prev_pe(), 0, 555), "putmem_nbi");

    rt_fill(sym_src, CHUNKS * chunk, rt_seed(g_me, 1, 556));
    memset(local_buf, 0, CHUNKS * chunk);
    shmem_barrier_all();
    for (c = 0; c < CHUNKS; ++c) {
        shmem_getmem_nbi(local_buf + c * chunk, sym_src + c * chunk, chunk, rt_next_pe());
    }
    shmem_quiet();
    RT_CHECK_DATA(local_buf, CHUNKS * chunk, rt_seed(rt_next_pe(), 1, 556), "getmem_nbi");
    shmem_barrier_all();
    RT_STEP("putmem_nbi/getmem_nbi + quiet");
}

static long sym_flag;

/* Data then flag, separated by shmem_fence: whoever sees the flag must see
 * the data (ucp_worker_fence). */
static void test_fence_ordering(void)
{
    enum { ROUNDS = 8 };
    size_t len = 1u << 20;
    int r;

    sym_flag = 0;
    shmem_barrier_all();
    for (r = 1; r <= ROUNDS; ++r) {
        rt_fill(local_buf, len, rt_seed(g_me, 2, (uint64_t)r));
        shmem_putmem(sym_dst, local_buf, len, rt_next_pe());
        shmem_fence();
        shmem_long_p(&sym_flag, r, rt_next_pe());
        shmem_long_wait_until(&sym_flag, SHMEM_CMP_EQ, r);
        RT_CHECK_DATA(sym_dst, len, rt_seed(rt_prev_pe(), 2, (uint64_t)r),
                      "data before a fenced flag");
        shmem_barrier_all(); /* the next round overwrites sym_dst */
    }
    RT_STEP("fence orders a 1 MiB put before the flag, %d rounds", ROUNDS);
}

static void test_context(void)
{
    shmem_ctx_t ctx;
    int rc;

    rc = shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx);
    RT_CHECK(rc == 0, "shmem_ctx_create returned %d", rc);
    rt_fill(local_buf, 100000, rt_seed(g_me, 3, 0));
    memset(sym_dst, 0, 100000);
    sym_flag = 0;
    shmem_barrier_all();
    shmem_ctx_putmem(ctx, sym_dst, local_buf, 100000, rt_next_pe());
    shmem_ctx_long_atomic_add(ctx, &sym_flag, 1, rt_next_pe());
    shmem_ctx_quiet(ctx);
    shmem_barrier_all();
    RT_CHECK_DATA(sym_dst, 100000, rt_seed(rt_prev_pe(), 3, 0), "context put");
    RT_CHECK(sym_flag == 1, "context atomic: flag %ld", sym_flag);
    shmem_ctx_destroy(ctx);
    shmem_barrier_all();
    RT_STEP("private context put + atomic + quiet");
}

/* shmem_ptr gives a pointer where the other PE's memory is load/store
 * reachable, NULL otherwise; stores through it must land there. */
static void test_shmem_ptr(void *sym_heap, const char *what, int must_map)
{
    static int sym_reachable;
    long *mine = (long *)sym_heap;
    long *peer = (long *)shmem_ptr(mine, rt_next_pe());
    long *self = (long *)shmem_ptr(mine, g_me);

    RT_CHECK(self == mine, "shmem_ptr to myself gave %p, expected %p", (void *)self, (void *)mine);
    /* UCX maps the symmetric heap of PEs on one node (ucp_rkey_ptr over
     * shared memory, when UCX_TLS allows it); the data segment it does not. */
    RT_CHECK(peer != NULL || !must_map, "shmem_ptr(%s) of the next PE is NULL", what);
    *mine = 0;
    shmem_barrier_all();
    if (peer != NULL) {
        *peer = 4242 + g_me;
    }
    /* Tell the next PE whether to expect a store. */
    shmem_int_p(&sym_reachable, peer != NULL, rt_next_pe());
    shmem_barrier_all();
    if (sym_reachable) {
        RT_CHECK(*mine == 4242 + rt_prev_pe(), "store through shmem_ptr: %ld", *mine);
    }
    shmem_barrier_all();
    RT_STEP("shmem_ptr, %s: peer memory %s", what,
            peer != NULL ? "mapped (load/store)" : "not mapped (NULL)");
}

int main(void)
{
    rt_shmem_init();
    sym_src   = shmem_malloc(MAX_SIZE + 64);
    sym_dst   = shmem_malloc(MAX_SIZE + 64);
    local_buf = rt_malloc(MAX_SIZE);
    RT_CHECK(sym_src != NULL && sym_dst != NULL, "shmem_malloc of %u bytes failed", MAX_SIZE);

    test_put_get();
    test_typed_and_scalar();
    test_nbi();
    test_fence_ordering();
    test_context();
    test_shmem_ptr(sym_dst, "shmem_malloc heap", rt_shm_transports_selected());
    test_shmem_ptr(sym_longs, "data segment", 0);

    shmem_free(sym_src);
    shmem_free(sym_dst);
    free(local_buf);
    rt_shmem_finish("shmem_rma");
    return 0;
}
