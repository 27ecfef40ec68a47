/*
 * The benchmark roles. Each test has an initiator (measures and prints) and
 * a responder (echoes or sinks); both return 0 on success and print why
 * otherwise.
 */
#ifndef BENCH_UCT_PERF_PERF_TESTS_H
#define BENCH_UCT_PERF_PERF_TESTS_H

#include "perf_options.h"
#include "perf_transport.h"

namespace perf {

/* AM tests: am_short_lat, am_bcopy_lat, am_short_bw, am_bcopy_bw. */
int am_initiator(transport &t, const options &opts, int fd);
int am_responder(transport &t, const options &opts, int fd);

/* One-sided tests: put_zcopy_bw, get_zcopy_bw. */
int rma_initiator(transport &t, const options &opts, int fd);
int rma_responder(transport &t, const options &opts, int fd);

/* memcpy between two buffers of this process: the copy ceiling. */
int memcpy_bandwidth(const options &opts);

/* Two processes bouncing one value on one shared cache line. */
int cacheline_latency(const options &opts);

/* Keeps the transport progressing until the peer sends its closing byte. */
bool progress_until_peer_done(transport &t, int fd);

} // namespace perf

#endif
