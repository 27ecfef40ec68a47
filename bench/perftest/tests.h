/*
 * The tests ucx_perftest knows: UCP tests (the public UCP API), uct tests
 * (a transport chosen with -x, through the shared uct_perf code), their
 * measuring pattern and the defaults UCX's tool uses for them.
 */
#ifndef BENCH_PERFTEST_TESTS_H
#define BENCH_PERFTEST_TESTS_H

#include "../uct_perf/perf_options.h"

#include <cstdint>

namespace perftest {

enum class api_kind : uint8_t { UCP, UCT };

/* What one iteration is: a round trip (reported halved, as one-way
 * latency) or one operation of a stream (its overhead, or with a window of
 * one its full latency). */
enum class pattern : uint8_t { PINGPONG, STREAM_UNI };

/* PUT_FLUSH: a put then an ep flush, both complete before the next. */
enum class ucp_cmd : uint8_t {
    TAG,
    TAG_SYNC,
    PUT,
    GET,
    ADD,
    FADD,
    SWAP,
    CSWAP,
    STREAM,
    AM,
    PUT_FLUSH
};

struct test_info {
    const char *name;
    api_kind api;
    ucp_cmd cmd;              /* UCP tests */
    perf::test_kind uct_kind; /* uct tests */
    pattern pat;
    const char *description;
    const char *metric; /* "latency" or "overhead" */
    unsigned window;    /* default of -O */
};

/* NULL when unknown. */
const test_info *find_test(const char *name);
const test_info *test_by_index(unsigned index);
unsigned test_index(const test_info *info);
unsigned test_count();

/* UCX's uct test names with a -D layout, mapped to ours (am_lat + short is
 * am_short_lat); NULL when the pair has no uct test here. */
const test_info *find_ucx_uct_alias(const char *ucx_name, const char *layout);
/* True if `name` is one of UCX's uct test names (am_lat, put_bw, ...). */
bool is_ucx_uct_name(const char *name);

constexpr bool is_atomic(ucp_cmd cmd)
{
    return (cmd == ucp_cmd::ADD) || (cmd == ucp_cmd::FADD) || (cmd == ucp_cmd::SWAP) ||
           (cmd == ucp_cmd::CSWAP);
}

/* Tests that need the peer's memory (address and remote key). */
constexpr bool is_one_sided(ucp_cmd cmd)
{
    return (cmd == ucp_cmd::PUT) || (cmd == ucp_cmd::PUT_FLUSH) || (cmd == ucp_cmd::GET) ||
           is_atomic(cmd);
}

} // namespace perftest

#endif
