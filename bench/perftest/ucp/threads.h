/*
 * -T N for UCP tests: N threads per side, each with its own worker and
 * endpoint on one shared context, running the test at the same time.
 */
#ifndef BENCH_PERFTEST_UCP_THREADS_H
#define BENCH_PERFTEST_UCP_THREADS_H

#include "../module.h"

namespace perftest::ucp {

/* Runs ctx's test on spec.threads threads; the initiator's thread 0 times
 * into ctx->tl, thread i > 0 into ctx->thread_tls[i - 1]. */
run_status run_threads(run_context *ctx);

} // namespace perftest::ucp

#endif
