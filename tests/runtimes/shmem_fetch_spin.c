/*
 * A ring of atomic sets, each PE spinning on atomic fetches of its own
 * data-segment word (issue 24, shape 2): PE 0 sets its own word to npes-1;
 * every PE spins `while (fetch(&var, me) < 0)`, then sets var on the next
 * PE to its own number. A fetch of one's own word completes inside the UCP
 * call without progress, while the previous PE's set (emulated: the data
 * segment is not shared memory) needs this PE's progress to land. UCX 1.13
 * hangs here; ours must not, for every type OpenSHMEM has atomic set and
 * fetch for: int, long, long long, float, double.
 *
 * Checks: after each ring, var on every PE holds the previous PE's number.
 */
#include "rt_shmem.h"

#define ROUNDS 10

int iv        = -1;
long lv       = -1;
long long llv = -1;
float fv      = -1;
double dv     = -1;

#define RING(_name, _type, _var) \
    do { \
        for (int round = 0; round < ROUNDS; ++round) { \
            _var = -1; \
            shmem_barrier_all(); \
            if (g_me == 0) { \
                shmem_##_name##_atomic_set(&_var, (_type)(g_npes - 1), 0); \
            } \
            while (shmem_##_name##_atomic_fetch(&_var, g_me) < 0) { \
            } \
            shmem_##_name##_atomic_set(&_var, (_type)g_me, rt_next_pe()); \
            shmem_barrier_all(); \
            RT_CHECK(_var == (_type)rt_prev_pe(), #_name " round %d: %g, expected %d", round, \
                     (double)_var, rt_prev_pe()); \
        } \
        RT_STEP(#_name " ring"); \
    } while (0)

int main(void)
{
    rt_shmem_init();
    RING(int, int, iv);
    RING(long, long, lv);
    RING(longlong, long long, llv);
    RING(float, float, fv);
    RING(double, double, dv);
    rt_shmem_finish("shmem_fetch_spin");
    return 0;
}
