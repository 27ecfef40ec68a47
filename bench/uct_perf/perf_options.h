/*
 * Command line of uct_perf:
 *   uct_perf -t TEST [-x TL] [-d DEV] [-s SIZE] [-n ITERS] [-w WARMUP]
 *            [-c CPU0,CPU1] [-l] [-o] [-H] [-L] [-h]
 */
#ifndef BENCH_UCT_PERF_PERF_OPTIONS_H
#define BENCH_UCT_PERF_PERF_OPTIONS_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace perf {

enum class test_kind {
    AM_SHORT_LAT,
    AM_BCOPY_LAT,
    AM_SHORT_BW,
    AM_BCOPY_BW,
    PUT_ZCOPY_BW,
    GET_ZCOPY_BW,
    CACHELINE_LAT,
    MEMCPY_BW,
};

struct options {
    test_kind   test = test_kind::AM_SHORT_LAT;
    std::string test_name = "am_short_lat";
    std::string tl_name;
    std::string dev_name;          /* empty: the transport's first device */
    size_t      size = 8;
    uint64_t    iters = 100000;
    uint64_t    warmup = 10000;
    int         cpus[2] = {-1, -1}; /* initiator, responder; -1: not pinned */
    bool        loopback = false;  /* responder in a thread, not a process */
    bool        responder_idle = false; /* -o: put/get responder sleeps, no progress */
    bool        huge_pages = false; /* -H: our own buffers on transparent huge pages */
    bool        list = false;
};

/* Parses argv; on error or -h prints usage and returns false with *exit_code set. */
bool parse_options(int argc, char **argv, options *opts, int *exit_code);

/* Ping-pong tests: one iteration is a round trip. */
inline bool is_latency_test(test_kind kind)
{
    return (kind == test_kind::AM_SHORT_LAT) || (kind == test_kind::AM_BCOPY_LAT) ||
           (kind == test_kind::CACHELINE_LAT);
}

/* One-sided tests: the only ones with a responder -o can idle. */
inline bool is_rma_test(test_kind kind)
{
    return (kind == test_kind::PUT_ZCOPY_BW) || (kind == test_kind::GET_ZCOPY_BW);
}

} // namespace perf

#endif
