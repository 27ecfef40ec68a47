/*
 * OpenSHMEM atomics (Open MPI's atomic ucx: ucp_atomic_op_nbx): 32- and
 * 64-bit add, fetch_add, inc, fetch_inc, swap, fetch, set, bitwise, and
 * 64-bit compare_swap, all PEs hitting the same words at once; plus
 * shmem_set_lock/shmem_clear_lock around a non-atomic update.
 *
 * 32-bit compare_swap is left out: Debian's Open MPI 4.1.4 writes 8 bytes
 * into its 4-byte result ("stack smashing detected"), whatever the UCP
 * library underneath.
 */
#include "rt_shmem.h"

enum { ITERS = 50, MAX_PES = 64 };

/* The words every PE works on, on PE 0 (or 1). They are placed once in the
 * data segment (registered by the runtime with ucp_mem_map of an existing
 * address) and once in the symmetric heap (sshmem: mmap, or ucx with
 * ucp_mem_map ALLOCATE|FIXED), which transports reach differently. */
struct vars {
    int i32;
    long i64;
    unsigned long long u64;
    unsigned int u32;
    long swap64;
    int swap32;
    long cas64;
    long winner;
    long fetched[MAX_PES * ITERS]; /* on PE 0: what everyone fetched */
    long lock;
    long guarded;
};

static struct vars data_vars;
static struct vars *w; /* the placement under test */

static void reset(void)
{
    shmem_barrier_all();
    w->i32     = 0;
    w->i64     = 0;
    w->u64     = 0;
    w->u32     = 0;
    w->swap64  = -1;
    w->swap32  = -1;
    w->cas64   = 0;
    w->winner  = -1;
    w->lock    = 0;
    w->guarded = 0;
    memset(w->fetched, 0xff, sizeof(w->fetched));
    shmem_barrier_all();
}

/* On PE 0: the values fetched by all PEs are exactly 0 .. n*ITERS-1. */
static void check_permutation(const char *what)
{
    int total = g_npes * ITERS, i;
    unsigned char seen[MAX_PES * ITERS];

    shmem_barrier_all();
    if (g_me == 0) {
        memset(seen, 0, sizeof(seen));
        for (i = 0; i < total; ++i) {
            long v = w->fetched[i];
            RT_CHECK(v >= 0 && v < total, "%s: fetched %ld out of range", what, v);
            RT_CHECK(!seen[v], "%s: %ld fetched twice", what, v);
            seen[v] = 1;
        }
    }
    shmem_barrier_all();
}

static void test_add(void)
{
    long want = 0;
    int i, pe;

    reset();
    for (i = 0; i < ITERS; ++i) {
        shmem_int_atomic_add(&w->i32, g_me + 1, 0);
        shmem_long_atomic_add(&w->i64, (long)(g_me + 1) << 33, 0); /* > 32 bits */
        shmem_int_atomic_inc(&w->i32, 1);
        shmem_long_atomic_inc(&w->i64, 1);
    }
    shmem_barrier_all();
    for (pe = 0; pe < g_npes; ++pe) {
        want += (long)(pe + 1) * ITERS;
    }
    if (g_me == 0) {
        RT_CHECK(w->i32 == want, "32-bit add: %d, expected %ld", w->i32, want);
        RT_CHECK(w->i64 == (want << 33), "64-bit add: %ld, expected %ld", w->i64, want << 33);
    }
    if (g_me == 1) {
        RT_CHECK(w->i32 == g_npes * ITERS, "32-bit inc: %d", w->i32);
        RT_CHECK(w->i64 == (long)g_npes * ITERS, "64-bit inc: %ld", w->i64);
    }
    RT_STEP("add/inc 32/64-bit, %d PEs x %d", g_npes, ITERS);
}

static void test_fetch_add(void)
{
    long mine[ITERS];
    int i;

    reset();
    for (i = 0; i < ITERS; ++i) {
        mine[i] = shmem_long_atomic_fetch_add(&w->i64, 1, 0);
    }
    shmem_long_put(&w->fetched[g_me * ITERS], mine, ITERS, 0);
    check_permutation("64-bit fetch_add");

    reset();
    for (i = 0; i < ITERS; ++i) {
        mine[i] = (i % 2) ? shmem_int_atomic_fetch_add(&w->i32, 1, 0) :
                            shmem_int_atomic_fetch_inc(&w->i32, 0);
    }
    shmem_long_put(&w->fetched[g_me * ITERS], mine, ITERS, 0);
    check_permutation("32-bit fetch_add/fetch_inc");

    reset();
    for (i = 0; i < ITERS; ++i) {
        mine[i] = shmem_long_atomic_fetch_inc(&w->i64, 0);
    }
    shmem_long_put(&w->fetched[g_me * ITERS], mine, ITERS, 0);
    check_permutation("64-bit fetch_inc");
    RT_STEP("fetch_add/fetch_inc 32/64-bit: every value fetched once");
}

/* Every PE swaps its number into PE 0's word once: the old values returned,
 * plus what is left, are the initial -1 and each PE exactly once. */
static void test_swap(void)
{
    long got64;
    int got32, i;

    reset();
    got64 = shmem_long_atomic_swap(&w->swap64, g_me, 0);
    got32 = shmem_int_atomic_swap(&w->swap32, g_me, 0);
    shmem_long_p(&w->fetched[g_me], got64, 0);
    shmem_long_p(&w->fetched[MAX_PES + g_me], got32, 0);
    shmem_barrier_all();
    if (g_me == 0) {
        int k;
        for (k = 0; k < 2; ++k) {
            unsigned char seen[MAX_PES + 1];
            long final = k ? w->swap32 : w->swap64;

            memset(seen, 0, sizeof(seen));
            RT_CHECK(final >= 0 && final < g_npes, "swap: final %ld", final);
            seen[final + 1] = 1;
            for (i = 0; i < g_npes; ++i) {
                long v = w->fetched[k * MAX_PES + i];
                RT_CHECK(v >= -1 && v < g_npes, "%d-bit swap returned %ld", k ? 32 : 64, v);
                RT_CHECK(!seen[v + 1], "%d-bit swap: %ld seen twice", k ? 32 : 64, v);
                seen[v + 1] = 1;
            }
        }
    }
    /* fetch and set */
    shmem_barrier_all();
    if (g_me == 1) {
        shmem_long_atomic_set(&w->swap64, 0x123456789aL, 0);
        shmem_int_atomic_set(&w->swap32, 0x1234567, 0);
    }
    shmem_barrier_all();
    RT_CHECK(shmem_long_atomic_fetch(&w->swap64, 0) == 0x123456789aL, "64-bit fetch");
    RT_CHECK(shmem_int_atomic_fetch(&w->swap32, 0) == 0x1234567, "32-bit fetch");
    shmem_barrier_all();
    RT_STEP("swap/set/fetch 32/64-bit");
}

/* Non-fetching or/and/xor always; the fetching forms only where the UCP
 * library gets them right: UCX 1.13 applies the wrong operand to fetching
 * AND/OR/XOR on its shared-memory and self transports (seen with a plain
 * ucp_atomic_op_nbx + reply_buffer: fetch-OR(6, 3) leaves 6, fetch-XOR(6, 3)
 * leaves 0), so the runner skips them on Debian's UCX. */
static void test_bitwise(void)
{
    unsigned long long mine64 = 1ull << (g_me + 32), old;
    unsigned int mine32       = 1u << g_me, old32;
    int fetching              = !rt_skip_ucx113_bugs();

    reset();
    shmem_ulonglong_atomic_or(&w->u64, mine64, 0);
    shmem_uint_atomic_or(&w->u32, mine32, 0);
    shmem_barrier_all();
    if (g_me == 0) {
        unsigned long long all = ((1ull << g_npes) - 1) << 32;
        RT_CHECK(w->u64 == all, "64-bit or: %llx", w->u64);
        RT_CHECK(w->u32 == (unsigned)((1ull << g_npes) - 1), "32-bit or: %x", w->u32);
    }
    shmem_barrier_all();
    shmem_ulonglong_atomic_and(&w->u64, ~mine64, 0);
    shmem_uint_atomic_xor(&w->u32, mine32, 0);
    shmem_barrier_all();
    if (g_me == 0) {
        RT_CHECK(w->u64 == 0, "64-bit and: %llx", w->u64);
        RT_CHECK(w->u32 == 0, "32-bit xor: %x", w->u32);
    }
    shmem_barrier_all();
    if (!fetching) {
        RT_STEP("or/and/xor 32/64-bit (fetching forms skipped: UCX 1.13 bug)");
        return;
    }

    /* Fetching forms: each PE sees its own bit in the state it expects. */
    old = shmem_ulonglong_atomic_fetch_or(&w->u64, mine64, 0);
    RT_CHECK(!(old & mine64), "fetch_or: my bit was already set (%llx)", old);
    old32 = shmem_uint_atomic_fetch_xor(&w->u32, mine32, 0);
    RT_CHECK(!(old32 & mine32), "fetch_xor: my bit was already set (%x)", old32);
    shmem_barrier_all();
    if (g_me == 0) {
        RT_CHECK(w->u64 == ((1ull << g_npes) - 1) << 32, "64-bit fetch_or: %llx", w->u64);
        RT_CHECK(w->u32 == (unsigned)((1ull << g_npes) - 1), "32-bit fetch_xor: %x", w->u32);
    }
    shmem_barrier_all();
    old = shmem_ulonglong_atomic_fetch_and(&w->u64, ~mine64, 0);
    RT_CHECK(old & mine64, "fetch_and: my bit was already clear (%llx)", old);
    old32 = shmem_uint_atomic_fetch_and(&w->u32, ~mine32, 0);
    RT_CHECK(old32 & mine32, "32-bit fetch_and: my bit was already clear (%x)", old32);
    shmem_barrier_all();
    if (g_me == 0) {
        RT_CHECK(w->u64 == 0, "64-bit fetch_and: %llx", w->u64);
        RT_CHECK(w->u32 == 0, "32-bit fetch_and: %x", w->u32);
    }
    shmem_barrier_all();
    RT_STEP("or/and/xor and fetch_or/fetch_and/fetch_xor 32/64-bit");
}

/* 64-bit compare_swap: one election (exactly one PE wins -1 -> me) and an
 * increment loop that retries until its swap wins. */
static void test_cswap(void)
{
    long old, seen;
    int i, won;

    reset();
    old = shmem_long_atomic_compare_swap(&w->winner, -1, g_me, 0);
    won = (old == -1);
    shmem_long_p(&w->fetched[g_me], won, 0);
    shmem_barrier_all();
    if (g_me == 0) {
        long winners = 0;
        for (i = 0; i < g_npes; ++i) {
            winners += w->fetched[i];
        }
        RT_CHECK(winners == 1, "compare_swap election: %ld winners", winners);
        RT_CHECK(w->winner >= 0 && w->winner < g_npes, "winner %ld", w->winner);
        RT_CHECK(w->fetched[w->winner] == 1, "winner %ld did not see -1", w->winner);
    }
    for (i = 0; i < ITERS; ++i) {
        do {
            seen = shmem_long_atomic_fetch(&w->cas64, 0);
            old  = shmem_long_atomic_compare_swap(&w->cas64, seen, seen + 1, 0);
        } while (old != seen);
    }
    shmem_barrier_all();
    if (g_me == 0) {
        RT_CHECK(w->cas64 == (long)g_npes * ITERS, "compare_swap increments: %ld", w->cas64);
    }
    shmem_barrier_all();
    RT_STEP("64-bit compare_swap: election and increment loop");
}

/* A distributed lock guarding a get-modify-put on PE 0. */
static void test_lock(void)
{
    enum { ROUNDS = 10 };
    int i;

    reset();
    for (i = 0; i < ROUNDS; ++i) {
        long v;
        shmem_set_lock(&w->lock);
        v = shmem_long_g(&w->guarded, 0);
        shmem_long_p(&w->guarded, v + 1, 0);
        shmem_quiet();
        shmem_clear_lock(&w->lock);
    }
    shmem_barrier_all();
    if (g_me == 0) {
        RT_CHECK(w->guarded == (long)g_npes * ROUNDS, "lock-protected counter: %ld", w->guarded);
    }
    /* test_lock: PE 0 takes the free lock, the others then find it held. */
    if (g_me == 0) {
        RT_CHECK(shmem_test_lock(&w->lock) == 0, "test_lock did not take a free lock");
    }
    shmem_barrier_all();
    if (g_me != 0) {
        RT_CHECK(shmem_test_lock(&w->lock) != 0, "test_lock took a held lock");
    }
    shmem_barrier_all();
    if (g_me == 0) {
        shmem_clear_lock(&w->lock);
    }
    shmem_barrier_all();
    RT_STEP("set_lock/clear_lock/test_lock");
}

int main(void)
{
    int round;

    rt_shmem_init();
    RT_CHECK(g_npes <= 30, "at most 30 PEs (bit tests)");

    for (round = 0; round < 2; ++round) {
        w = round ? shmem_malloc(sizeof(*w)) : &data_vars;
        RT_CHECK(w != NULL, "shmem_malloc(%zu)", sizeof(*w));
        RT_STEP("words in the %s:", round ? "symmetric heap" : "data segment");
        test_add();
        test_fetch_add();
        test_swap();
        test_bitwise();
        test_cswap();
        test_lock();
        if (round) {
            shmem_barrier_all();
            shmem_free(w);
        }
    }

    rt_shmem_finish("shmem_atomics");
    return 0;
}
