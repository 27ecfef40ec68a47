/*
 * One test run as both sides see it. The client fills it from its command
 * line and sends it to the server (UCX's tool works the same way: the
 * server needs no test options). Plain bytes: both ends run this build.
 */
#ifndef BENCH_PERFTEST_SPEC_H
#define BENCH_PERFTEST_SPEC_H

#include "tests.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace perftest {

constexpr unsigned MAX_IOV = 32;
/* -T: more threads than this on the 2 CPUs of a test machine measure the
 * scheduler, not the library. */
constexpr unsigned MAX_THREADS = 16;

enum class layout : uint8_t { CONTIG, IOV };

struct test_spec {
    uint32_t magic           = 0;
    uint32_t spec_size       = 0;
    uint32_t test            = 0;   /* index in the test table */
    uint32_t iov_count       = 1;   /* entries of sizes[] */
    uint64_t sizes[MAX_IOV]  = {8}; /* the message is their sum */
    uint64_t iov_stride      = 0;   /* 0: entries back to back */
    uint64_t iters           = 1000000;
    uint64_t warmup          = 10000;
    uint32_t window          = 1; /* operations in flight (-O) */
    uint32_t am_header       = 0; /* UCP AM header bytes (-H) */
    layout send_layout       = layout::CONTIG;
    layout recv_layout       = layout::CONTIG;
    uint8_t wildcard         = 0;   /* -C: receive with tag mask 0 */
    uint8_t err_handling     = 0;   /* -e: endpoints with peer error handling */
    uint8_t sleep_wait       = 0;   /* -E sleep: wait for events when idle */
    uint8_t prereg           = 0;   /* -z: pass memory handles to operations */
    uint8_t wakeup           = 0;   /* -I: context with the wakeup feature */
    uint8_t thread_mode      = 0;   /* ucs_thread_mode_t of the worker (-M) */
    uint8_t responder_idle   = 0;   /* -o: uct put/get responder does not progress */
    uint8_t huge_pages       = 0;   /* --huge-pages: uct buffers on transparent huge pages */
    uint8_t nonblock_reg     = 0;   /* -B: buffers mapped/registered with NONBLOCK */
    uint8_t async_thread     = 0;   /* -A thread_*: uct worker's async context on a thread */
    uint8_t tag_probe        = 0;   /* -U: tag receives through ucp_tag_probe_nb (unexpected) */
    uint8_t stream_recv_data = 0;   /* -r recv_data: ucp_stream_recv_data_nb */
    uint8_t threads          = 1;   /* -T: UCP threads per side, a worker and ep each */
    uint8_t send_mem         = 0;   /* -m: ucs_memory_type_t of the send buffers */
    uint8_t recv_mem         = 0;   /* -m: ... and of the receive buffers */
    uint32_t fc_window       = 127; /* -W: uct AM streams, messages not credited back */
    uint32_t outstanding     = 0;   /* uct one-sided streams: -O; 0: the test's own */
    char tls[256]            = {};  /* UCP: UCX_TLS of this run ("": environment) */
    char uct_tl[64]          = {};  /* uct: transport (-x) */
    char uct_dev[64]         = {};  /* uct: device (-d, "": the first one) */

    const test_info &info() const { return *test_by_index(test); }
    /* Bytes of one message: the sum of the sizes. */
    size_t message_size() const;
    /* Bytes the buffer needs for the layout (strided entries included). */
    size_t buffer_size() const;
};

test_spec make_spec(const test_info *test);
std::vector<uint8_t> pack_spec(const test_spec &spec);
/* False when the bytes are not a spec of this build. */
bool unpack_spec(const std::vector<uint8_t> &blob, test_spec *spec);

} // namespace perftest

#endif
