#include "perf_report.h"

#include "../common/stats.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

namespace perf {

latency_result latency_from_round_trips(const timeline &tl)
{
    latency_result r;
    std::vector<uint64_t> rtt = durations(tl, 0, tl.done());
    if (rtt.empty()) {
        return r;
    }
    const double to_us = tl.seconds_per_tick() * 1e6 / 2; /* round trip -> one way */
    double sum         = double(std::accumulate(rtt.begin(), rtt.end(), uint64_t(0)));
    r.average_us       = sum / double(rtt.size()) * to_us;
    r.min_us           = double(*std::min_element(rtt.begin(), rtt.end())) * to_us;
    r.p99_us           = double(percentile(rtt, 99)) * to_us;
    r.median_us        = double(percentile(rtt, 50)) * to_us;
    return r;
}

bandwidth_result bandwidth_from(uint64_t messages, size_t size, double seconds)
{
    bandwidth_result r;
    if (seconds > 0) {
        r.msgs_per_s   = double(messages) / seconds;
        r.mbytes_per_s = double(messages) * double(size) / seconds / (1024.0 * 1024.0);
    }
    return r;
}

void print_header(const options &opts, const char *transport_desc)
{
    std::printf("# uct_perf %s over %s: size %zu, %llu iterations, %llu warm-up",
                opts.test_name.c_str(), transport_desc, opts.size, (unsigned long long)opts.iters,
                (unsigned long long)opts.warmup);
    if (opts.cpus[0] >= 0) {
        std::printf(", cpus %d,%d", opts.cpus[0], opts.cpus[1]);
    }
    std::printf("%s%s%s\n", opts.loopback ? ", loopback thread" : "",
                opts.huge_pages ? ", huge pages" : "",
                opts.responder_idle ? ", responder idle" : "");
}

void print_result(const options &opts, const timeline &tl)
{
    if (is_latency_test(opts.test)) {
        latency_result r = latency_from_round_trips(tl);
        std::printf("%-14s one-way latency usec: median %.3f  average %.3f  min %.3f  "
                    "p99 %.3f\n",
                    opts.test_name.c_str(), r.median_us, r.average_us, r.min_us, r.p99_us);
        return;
    }
    bandwidth_result r = bandwidth_from(tl.done(), opts.size, tl.elapsed_s());
    std::printf("%-14s bandwidth %.2f MB/s  message rate %.0f msg/s\n", opts.test_name.c_str(),
                r.mbytes_per_s, r.msgs_per_s);
}

} // namespace perf
