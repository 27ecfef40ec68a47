/*
 * A lock taken with shmem_test_lock in a spin, the counters it guards on
 * data-segment words (issue 24, shape 1). Open MPI's lock keeps its state at
 * a "home" PE and the home PE's own tests of the lock are compare-and-swaps
 * on its own memory: they complete inside the UCP call, without progress.
 * When another PE holds the lock, its atomic adds to the home PE's counter
 * and its release (a compare-and-swap at home) need the home PE's progress:
 * before the fix, the home PE spun in shmem_test_lock for ever.
 *
 * Each round: every PE resets `lock` and `lock_cnt` (data segment), barrier,
 * then loops while lock_cnt < npes: the PE that gets the lock adds 1 to
 * lock_cnt on every PE, releases it and waits until its own lock_cnt
 * reaches npes. So every PE takes the lock exactly once per round.
 *
 * In the first half of the rounds whoever is fastest takes the lock first
 * (the shape users wrote); in the second half PE (round % npes) takes it
 * first and the others start testing only once it holds it, so the home PE
 * loses the lock to another PE in some rounds on every run.
 *
 * Checks: the lock excludes (a holder count at PE 0, kept with fetching
 * atomics, is 0 when taken and 1 when released), lock_cnt == npes on every
 * PE after each round, and every PE took the lock once per round.
 */
#include "rt_shmem.h"

#define ROUNDS 40

long lock;
int lock_cnt;
int holders;     /* at PE 0: PEs inside the critical section */
int first_taken; /* round + 1 once that round's first taker holds the lock */

static void take_once(int round, int ordered, long *failed_tests)
{
    const int first = round % g_npes;

    if (ordered && (g_me != first)) {
        shmem_int_wait_until(&first_taken, SHMEM_CMP_GT, round);
    }
    while (lock_cnt < g_npes) {
        if (shmem_test_lock(&lock) != 0) {
            ++*failed_tests;
            continue;
        }
        const int others = shmem_int_atomic_fetch_inc(&holders, 0);
        RT_CHECK(others == 0, "round %d: PE %d took the lock while %d other PE(s) held it", round,
                 g_me, others);
        if (ordered && (g_me == first)) {
            for (int pe = 0; pe < g_npes; ++pe) {
                if (pe != g_me) {
                    shmem_int_atomic_set(&first_taken, round + 1, pe);
                }
            }
        }
        for (int pe = 0; pe < g_npes; ++pe) {
            shmem_int_atomic_add(&lock_cnt, 1, pe);
        }
        /* A fetching decrement: done at PE 0 before the lock is released.
         * (Open MPI 4.1's clear_lock, a compare-and-swap at the lock's home,
         * does not quiet first, so a posted -1 could still be in flight when
         * the next holder's increment arrives over another connection; that
         * ordering through quiet is tested at the UCP level, ucp_amo.) */
        const int inside = shmem_int_atomic_fetch_add(&holders, -1, 0);
        RT_CHECK(inside == 1, "round %d: PE %d released the lock with %d PEs inside", round, g_me,
                 inside);
        shmem_clear_lock(&lock);
        shmem_int_wait_until(&lock_cnt, SHMEM_CMP_GE, g_npes);
    }
}

int main(void)
{
    long failed_tests = 0;

    rt_shmem_init();
    for (int round = 0; round < ROUNDS; ++round) {
        lock     = 0;
        lock_cnt = 0;
        shmem_barrier_all();
        take_once(round, round >= ROUNDS / 2, &failed_tests);
        RT_CHECK(lock_cnt == g_npes, "round %d: lock_cnt %d, expected %d", round, lock_cnt, g_npes);
        shmem_barrier_all();
    }
    RT_CHECK(holders == 0 || g_me != 0, "holder count %d after the last round", holders);
    if (g_me == 0) {
        printf("  lock tested and found held %ld times on PE 0\n", failed_tests);
    }
    rt_shmem_finish("shmem_lock_spin");
    return 0;
}
