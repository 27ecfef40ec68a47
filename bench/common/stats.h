/* Order statistics of per-iteration durations. */
#ifndef BENCH_COMMON_STATS_H
#define BENCH_COMMON_STATS_H

#include <cstdint>
#include <vector>

namespace perf {

/* The value at percentile `rank` (0..100, nearest rank; 50 is the upper
 * median of an even count). Reorders `values`; 0 when empty. */
uint64_t percentile(std::vector<uint64_t> &values, double rank);

/* Durations of iterations [first, last) of a timeline (those it kept). */
class timeline;
std::vector<uint64_t> durations(const timeline &t, uint64_t first, uint64_t last);

} // namespace perf

#endif
