/*
 * What ucx_perftest loads to run a test. The UCP tests and the uct tests
 * live in modules opened with dlopen, so the tool itself links no UCX
 * library: the UCP module needs nothing but the public UCP API (it runs on
 * UCX 1.13 as well as on ours, and refuses to load, saying which function
 * is missing, on a libucp that lacks part of it), and the uct module needs
 * ucx-ng's libuct.
 */
#ifndef BENCH_PERFTEST_MODULE_H
#define BENCH_PERFTEST_MODULE_H

#include "spec.h"

#include "../common/oob.h"
#include "../common/timeline.h"

#include <string>
#include <vector>

namespace perftest {

enum class run_status : int {
    OK      = 0, /* measured (initiator) or served (responder) */
    SKIPPED = 1, /* both sides agreed it cannot run; the channel is in step */
    FATAL   = 2, /* failed half way: the channel is out of step, end the session */
};

struct run_context {
    const test_spec *spec = nullptr;
    perf::oob *channel    = nullptr;
    bool initiator        = false;
    perf::timeline *tl    = nullptr;        /* initiator: one iteration per op/round trip */
    std::vector<perf::timeline> thread_tls; /* -T: threads 1..N-1 of the initiator */
    std::string error;                      /* why, when not OK (our side or the peer's) */
};

/* Both modules export this, with C linkage so dlsym finds it by name. */
using module_run_fn                     = int (*)(run_context *ctx);
constexpr const char *MODULE_RUN_SYMBOL = "perftest_module_run";

} // namespace perftest

#endif
