/*
 * Runs tests between the two sides. The client (the side with the command
 * line's test) sends each test's spec to the server, both open the module
 * of the test's API and run it, and the client reports what it measured.
 * An empty spec ends the session.
 */
#ifndef BENCH_PERFTEST_RUNNER_H
#define BENCH_PERFTEST_RUNNER_H

#include "report.h"

#include "../common/oob.h"

#include <vector>

namespace perftest {

/* Client side of one test; the result says ok, skipped or failed. A failed
 * test leaves the channel out of step: end the session after it. */
result run_client_test(perf::oob &channel, const test_spec &spec, const cli &opts, printer &out);

/* Client side of a session: every stage, then the end marker. Returns the
 * exit code: 0 when every test ran (or, in a sweep, was skipped because a
 * transport is not available). `with_box` prints UCX's box before each
 * table (as UCX's tool does in loopback and MPI runs, not on a client). */
int run_client(perf::oob &channel, const std::vector<test_spec> &stages, const cli &opts,
               printer &out, bool with_box);

/* Server side: runs the client's tests until it ends the session. `out`
 * prints each test's box (nullptr: quiet). Returns the exit code. */
int serve(perf::oob &channel, printer *out);

/* --loopback: a forked peer serves each stage (a new one per stage, so a
 * failed stage does not stop a sweep). */
int run_loopback(const std::vector<test_spec> &stages, const cli &opts, printer &out);

} // namespace perftest

#endif
