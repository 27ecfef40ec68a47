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
#include <vector>

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
    AM_ZCOPY_LAT, /* AM with an 8-byte header and the payload sent in place */
    AM_ZCOPY_BW,
    AM_SHORTIOV_LAT, /* AM short gathered from iov entries */
    AM_SHORTIOV_BW,
    PUT_SHORT_LAT, /* ping-pong through memory: put, the peer polls, puts back */
    PUT_BCOPY_LAT,
    PUT_ZCOPY_LAT,
    PUT_SHORT_BW, /* a stream of puts into the peer's buffer */
    PUT_BCOPY_BW,
    GET_BCOPY_BW, /* a stream of gets from the peer's buffer */
    ADD_LAT,      /* ping-pong through atomic adds on each other's counter */
    ADD_MR,       /* a stream of posted atomic adds */
    FADD,         /* a stream of fetching atomics */
    SWAP,
    CSWAP,
};

struct options {
    test_kind test        = test_kind::AM_SHORT_LAT;
    std::string test_name = "am_short_lat";
    std::string tl_name;
    std::string dev_name; /* empty: the transport's first device */
    size_t size         = 8;
    uint64_t iters      = 100000;
    uint64_t warmup     = 10000;
    int cpus[2]         = {-1, -1}; /* initiator, responder; -1: not pinned */
    bool loopback       = false;    /* responder in a thread, not a process */
    bool responder_idle = false;    /* -o: put/get responder sleeps, no progress */
    bool huge_pages     = false;    /* -H: our own buffers on transparent huge pages */
    bool list           = false;
    /* Shortiov and zcopy AM: the message split into these entries (empty:
     * one entry of `size`). */
    std::vector<size_t> iov_sizes;
    unsigned fc_window   = 0;     /* AM streams: most unacknowledged messages; 0: no limit */
    unsigned outstanding = 0;     /* one-sided streams: most in flight; 0: the test's own */
    bool nonblock_reg    = false; /* memory registered/allocated with NONBLOCK */
    bool async_thread    = false; /* the worker gets an async context with a thread */
};

/* Parses argv; on error or -h prints usage and returns false with *exit_code set. */
bool parse_options(int argc, char **argv, options *opts, int *exit_code);

/* Active-message tests: short, bcopy, zcopy and short iov. */
inline bool is_am_test(test_kind kind)
{
    switch (kind) {
    case test_kind::AM_SHORT_LAT:
    case test_kind::AM_BCOPY_LAT:
    case test_kind::AM_ZCOPY_LAT:
    case test_kind::AM_SHORTIOV_LAT:
    case test_kind::AM_SHORT_BW:
    case test_kind::AM_BCOPY_BW:
    case test_kind::AM_ZCOPY_BW:
    case test_kind::AM_SHORTIOV_BW:
        return true;
    default:
        return false;
    }
}

/* Ping-pong tests through memory the peer polls (put_lat, add_lat). */
inline bool is_memory_pingpong_test(test_kind kind)
{
    return (kind == test_kind::PUT_SHORT_LAT) || (kind == test_kind::PUT_BCOPY_LAT) ||
           (kind == test_kind::PUT_ZCOPY_LAT) || (kind == test_kind::ADD_LAT);
}

/* Ping-pong tests: one iteration is a round trip. */
inline bool is_latency_test(test_kind kind)
{
    return (kind == test_kind::AM_SHORT_LAT) || (kind == test_kind::AM_BCOPY_LAT) ||
           (kind == test_kind::AM_ZCOPY_LAT) || (kind == test_kind::AM_SHORTIOV_LAT) ||
           (kind == test_kind::CACHELINE_LAT) || is_memory_pingpong_test(kind);
}

/* Atomic operations on the peer's memory: 4 or 8 bytes. */
inline bool is_atomic_test(test_kind kind)
{
    return (kind == test_kind::ADD_LAT) || (kind == test_kind::ADD_MR) ||
           (kind == test_kind::FADD) || (kind == test_kind::SWAP) || (kind == test_kind::CSWAP);
}

/* One-sided streams: the responder only exposes memory, so it is the one
 * -o can idle. */
inline bool is_rma_test(test_kind kind)
{
    return (kind == test_kind::PUT_ZCOPY_BW) || (kind == test_kind::GET_ZCOPY_BW) ||
           (kind == test_kind::PUT_SHORT_BW) || (kind == test_kind::PUT_BCOPY_BW) ||
           (kind == test_kind::GET_BCOPY_BW) || (kind == test_kind::ADD_MR) ||
           (kind == test_kind::FADD) || (kind == test_kind::SWAP) || (kind == test_kind::CSWAP);
}

} // namespace perf

#endif
