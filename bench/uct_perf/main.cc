/*
 * uct_perf: uct-level benchmarks for any transport, between this process
 * and a peer it forks (or a thread, with -l). See perf_options.cc for the
 * command line and bench/README.md for results.
 */
#include "perf_options.h"
#include "perf_peer.h"
#include "perf_tests.h"
#include "perf_transport.h"

#include <cstdio>

namespace {

bool is_am_test(perf::test_kind kind)
{
    return (kind == perf::test_kind::AM_SHORT_LAT) ||
           (kind == perf::test_kind::AM_BCOPY_LAT) ||
           (kind == perf::test_kind::AM_SHORT_BW) || (kind == perf::test_kind::AM_BCOPY_BW);
}

int run_side(const perf::options &opts, int fd, bool initiator)
{
    if (!perf::pin_to_cpu(opts.cpus[initiator ? 0 : 1])) {
        std::fprintf(stderr, "uct_perf: cannot pin to CPU %d\n",
                     opts.cpus[initiator ? 0 : 1]);
        return 1;
    }
    perf::transport t;
    if (!t.open(opts.tl_name, opts.dev_name) || !t.connect_peer(fd)) {
        return 1;
    }
    if (is_am_test(opts.test)) {
        return initiator ? perf::am_initiator(t, opts, fd)
                         : perf::am_responder(t, opts, fd);
    }
    return initiator ? perf::rma_initiator(t, opts, fd) : perf::rma_responder(t, opts, fd);
}

} // namespace

int main(int argc, char **argv)
{
    perf::options opts;
    int exit_code;
    if (!perf::parse_options(argc, argv, &opts, &exit_code)) {
        return exit_code;
    }
    if (opts.list) {
        perf::list_transports();
        return 0;
    }
    if (opts.test == perf::test_kind::CACHELINE_LAT) {
        return perf::cacheline_latency(opts);
    }
    if (opts.test == perf::test_kind::MEMCPY_BW) {
        if (!perf::pin_to_cpu(opts.cpus[0])) {
            std::fprintf(stderr, "uct_perf: cannot pin to CPU %d\n", opts.cpus[0]);
            return 1;
        }
        return perf::memcpy_bandwidth(opts);
    }

    perf::peer responder(opts.loopback,
                         [&opts](int fd) { return run_side(opts, fd, false); });
    if (!responder.started()) {
        return 1;
    }
    int result = run_side(opts, responder.fd(), true);
    int peer_result = responder.join();
    if ((result == 0) && (peer_result != 0)) {
        std::fprintf(stderr, "uct_perf: the responder failed (%d)\n", peer_result);
        result = 1;
    }
    return result;
}
