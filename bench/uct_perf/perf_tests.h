/*
 * The uct-level benchmarks, shared by uct_perf and ucx_perftest's uct mode.
 * Each test has an initiator, which measures into a timeline (one iteration
 * per round trip or per message) and a responder, which echoes or sinks.
 * Both return 0 on success and print why otherwise (prefixed by tool_name).
 */
#ifndef BENCH_UCT_PERF_PERF_TESTS_H
#define BENCH_UCT_PERF_PERF_TESTS_H

#include "perf_buffer.h"
#include "perf_options.h"
#include "perf_transport.h"

#include "../common/oob.h"
#include "../common/timeline.h"

namespace perf {

/* Error messages start with this; each tool sets its own name. */
extern const char *tool_name;

/* Waiting loops look for a vanished peer once per this many polls. */
constexpr unsigned PEER_CHECK_SPINS = 1u << 14;

/* The side of a test over a connected transport (or to itself), whatever
 * its kind: these pick the loop below. */
int run_initiator(transport &t, const options &opts, oob &channel, timeline *tl);
int run_responder(transport &t, const options &opts, oob &channel);
int run_self(transport &t, const options &opts, timeline *tl);

/* AM tests (is_am_test): short, bcopy, zcopy, short iov; latency and
 * bandwidth. */
int am_initiator(transport &t, const options &opts, oob &channel, timeline *tl);
int am_responder(transport &t, const options &opts, oob &channel);

/* One-sided streams (is_rma_test: put short/bcopy/zcopy, get bcopy/zcopy,
 * add_mr, fadd, swap, cswap; -H: huge pages; -o: the responder only waits
 * for the end, without progressing). */
int rma_initiator(transport &t, const options &opts, oob &channel, timeline *tl);
int rma_responder(transport &t, const options &opts, oob &channel);

/* Ping-pong through memory (put_*_lat, add_lat): both sides run it. */
int memory_pingpong(transport &t, const options &opts, oob &channel, bool initiator, timeline *tl);

/* The same tests on a transport that reaches only its own iface (self):
 * this side sends to itself, no peer involved. */
int am_self(transport &t, const options &opts, timeline *tl);
int rma_self(transport &t, const options &opts, timeline *tl);
int memory_pingpong_self(transport &t, const options &opts, timeline *tl);

/* The address of `buffer`, then its packed key: what a peer needs to reach
 * it. */
std::vector<uint8_t> describe_target(transport &t, md_buffer &buffer);

/* uct::mem_flag bits for the test's buffers (-B: NONBLOCK). */
unsigned mem_flags(const options &opts);

/* Two processes bouncing one value on one shared cache line (forks its own
 * peer; pins to opts.cpus). */
int cacheline_latency(const options &opts, timeline *tl);

/* memcpy between two buffers of this process: the copy ceiling (runs in
 * the caller's thread, wherever it is pinned). */
int memcpy_bandwidth(const options &opts, timeline *tl);

/* Keeps the transport progressing until the peer sends its closing byte. */
bool progress_until_peer_done(transport &t, oob &channel);


} // namespace perf

#endif
