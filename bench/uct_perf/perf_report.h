/* Results of a run, and how they are printed. */
#ifndef BENCH_UCT_PERF_PERF_REPORT_H
#define BENCH_UCT_PERF_PERF_REPORT_H

#include "perf_options.h"

#include <cstdint>
#include <vector>

namespace perf {

struct latency_result {
    double median_us = 0;     /* one-way */
    double average_us = 0;
    double min_us = 0;
    double p99_us = 0;
};

struct bandwidth_result {
    double mbytes_per_s = 0;  /* 2^20 bytes */
    double msgs_per_s = 0;
};

/* One-way latencies from per-iteration round-trip tick deltas. */
latency_result latency_from_round_trips(std::vector<uint64_t> &round_trip_ticks,
                                        double seconds_per_tick);

bandwidth_result bandwidth_from(uint64_t messages, size_t size, double seconds);

void print_header(const options &opts, const char *transport_desc);
void print_latency(const options &opts, const latency_result &r);
void print_bandwidth(const options &opts, const bandwidth_result &r);

} // namespace perf

#endif
