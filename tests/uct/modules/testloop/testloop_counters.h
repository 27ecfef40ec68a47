/*
 * What the testloop module counts, read by tests and the rcache benchmark
 * through dlsym(TESTLOOP_GET_COUNTERS) on the loaded module.
 */
#ifndef TESTS_UCT_MODULES_TESTLOOP_COUNTERS_H
#define TESTS_UCT_MODULES_TESTLOOP_COUNTERS_H

#include <stdint.h>

struct testloop_counters {
    uint64_t registrations; /* mem_reg calls that succeeded */
    int64_t live;           /* registrations not deregistered */
    uint64_t bad_memh;      /* zcopy entries without a covering handle */
    uint64_t bad_rkey;      /* get/put outside the key, or no key */
};

typedef const struct testloop_counters *(*testloop_get_counters_fn)(void);

#define TESTLOOP_GET_COUNTERS "testloop_get_counters"

#endif
