/* uct_perf's results, and how they are printed. */
#ifndef BENCH_UCT_PERF_PERF_REPORT_H
#define BENCH_UCT_PERF_PERF_REPORT_H

#include "perf_options.h"

#include "../common/timeline.h"

#include <cstdint>
#include <vector>

namespace perf {

struct latency_result {
    double median_us  = 0; /* one-way */
    double average_us = 0;
    double min_us     = 0;
    double p99_us     = 0;
};

struct bandwidth_result {
    double mbytes_per_s = 0; /* 2^20 bytes */
    double msgs_per_s   = 0;
};

/* One-way latencies from a timeline of round trips. */
latency_result latency_from_round_trips(const timeline &tl);

bandwidth_result bandwidth_from(uint64_t messages, size_t size, double seconds);

void print_header(const options &opts, const char *transport_desc);
/* The latency or the bandwidth line, whichever the test measures. */
void print_result(const options &opts, const timeline &tl);

} // namespace perf

#endif
