/*
 * Results of a run and how they are printed: UCX's box and table (with a
 * line per second while a long test runs), UCX's CSV lines (-v), or for
 * scripts one CSV line or JSON object per test (--csv, --json). A sweep
 * prints one table with a row per stage.
 */
#ifndef BENCH_PERFTEST_REPORT_H
#define BENCH_PERFTEST_REPORT_H

#include "options.h"

#include "../common/timeline.h"

#include <string>
#include <vector>

namespace perftest {

struct result {
    std::string test;
    std::string api;       /* "ucp" or "uct" */
    std::string transport; /* UCX_TLS of the run, uct tl, or "default" */
    std::string metric;    /* "latency" or "overhead" */
    size_t size           = 0;
    uint64_t iters        = 0; /* iterations measured (so far) */
    double lat_percentile = 0; /* usec, one-way for ping-pong */
    double lat_average    = 0; /* since the previous report line */
    double lat_overall    = 0; /* since the start */
    double bw_average     = 0; /* MB/s (2^20 bytes) */
    double bw_overall     = 0;
    double rate_average   = 0; /* messages per second */
    double rate_overall   = 0;
    std::string status    = "ok"; /* ok, skipped, failed */
    std::string error;
};

/* Turns a timeline into results: "average" columns cover the iterations
 * since the previous report (UCX's moment values), "overall" all of them. */
class meter {
public:
    meter(const test_spec &spec, double percentile_rank);

    result progress(const perf::timeline &tl, double seconds_per_tick);
    result final(const perf::timeline &tl);
    /* -T: the threads' timelines together. Iterations add up, the
     * percentile is over every thread's iterations, bandwidth and message
     * rate add up, and the latency columns are one operation of one thread
     * (threads / total rate). */
    result final_threads(const std::vector<const perf::timeline *> &tls);
    /* A result that carries only the test's identity and an error. */
    result failure(const std::string &status, const std::string &error) const;

private:
    result make(const perf::timeline &tl, uint64_t done, uint64_t now_stamp, double spt,
                uint64_t pct_first) const;

    const test_spec &spec_;
    double rank_;
    double factor_; /* 2 for ping-pong: latency is half a round trip */
    uint64_t last_iter_  = 0;
    uint64_t last_stamp_ = 0;
    bool started_        = false;
};

class printer {
public:
    printer(const cli &opts, bool sweep);

    /* Before the first test: CSV header, sweep table header. */
    void start();
    /* UCX's box describing a test (table and -v output only); `closed`
     * adds its bottom line (the server's box; on the client the table
     * header closes it). */
    void info_box(const test_spec &spec, bool closed);
    /* A test begins: UCX's table header (single-test table and -v). */
    void begin_test(const test_spec &spec);
    /* A line while a test runs (UCX's table and -v, unless -f). */
    void progress(const result &r);
    void end_test(const result &r);
    /* After the last test: the JSON document, the sweep table's last line. */
    void finish();

    bool wants_progress() const;

private:
    void numbers_line(const char *label, const result &r);
    void csv_line(const result &r);
    void sweep_row(const result &r);

    const cli &opts_;
    bool sweep_;
    std::vector<result> done_;
};

/* The transport column of a result. */
std::string transport_of(const test_spec &spec);

} // namespace perftest

#endif
