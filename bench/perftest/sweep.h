/*
 * --sweep: latency and bandwidth tests over message sizes from 8 B to
 * 4 MiB on every transport, one stage per (transport, test, size). Each
 * stage sets UCX_TLS through ucp_config_modify() on both sides.
 */
#ifndef BENCH_PERFTEST_SWEEP_H
#define BENCH_PERFTEST_SWEEP_H

#include "options.h"

#include <string>
#include <vector>

namespace perftest {

/* The UCX_TLS value of each stage when --sweep-tls does not say: the
 * shared-memory transports and tcp, and verbs where this machine has an
 * InfiniBand device. */
std::vector<std::string> default_sweep_transports();

/* Every stage, in order: transports, then tests, then sizes. Iterations
 * shrink as messages grow (a stage moves about 256 MiB at most), capped by
 * -n (10000 by default). */
std::vector<test_spec> sweep_stages(const cli &opts);

} // namespace perftest

#endif
