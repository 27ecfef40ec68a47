/*
 * uct_perf: uct-level benchmarks for any transport, between this process
 * and a peer it forks (or a thread, with -l). See perf_options.cc for the
 * command line and bench/README.md for results.
 */
#include "perf_options.h"
#include "perf_report.h"
#include "perf_tests.h"
#include "perf_transport.h"

#include "../common/peer.h"

#include <cstdio>

namespace {

int run_side(const perf::options &opts, perf::oob &channel, bool initiator)
{
    if (!perf::pin_to_cpu(opts.cpus[initiator ? 0 : 1])) {
        std::fprintf(stderr, "uct_perf: cannot pin to CPU %d\n", opts.cpus[initiator ? 0 : 1]);
        return 1;
    }
    perf::transport t;
    if (!t.open(opts.tl_name, opts.dev_name) || !t.connect_peer(channel)) {
        return 1;
    }
    perf::timeline tl;
    int result;
    if (initiator) {
        perf::print_header(opts, t.description().c_str());
        std::fflush(stdout);
        result = perf::run_initiator(t, opts, channel, &tl);
    } else {
        result = perf::run_responder(t, opts, channel);
    }
    /* Neither side tears its endpoint down while the other still
     * progresses (a peer that vanishes is an error to tcp). */
    if ((result == 0) && !channel.barrier()) {
        result = 1;
    }
    if (initiator && (result == 0)) {
        perf::print_result(opts, tl);
    }
    return result;
}

/* Opened and closed again before anything forks. */
bool reaches_only_itself(const perf::options &opts)
{
    perf::transport probe;
    return probe.open(opts.tl_name, opts.dev_name) && probe.self_only();
}

/* A transport that reaches only its own iface: this process sends to itself. */
int run_self(const perf::options &opts)
{
    perf::transport t;
    if (!perf::pin_to_cpu(opts.cpus[0]) || !t.open(opts.tl_name, opts.dev_name) ||
        !t.connect_self()) {
        return 1;
    }
    perf::print_header(opts, (t.description() + ", to itself").c_str());
    std::fflush(stdout);
    perf::timeline tl;
    int result = perf::run_self(t, opts, &tl);
    if (result == 0) {
        perf::print_result(opts, tl);
    }
    return result;
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
        perf::print_header(opts, "one shared cache line");
        std::fflush(stdout);
        perf::timeline tl;
        int result = perf::cacheline_latency(opts, &tl);
        if (result == 0) {
            perf::print_result(opts, tl);
        }
        return result;
    }

    if (opts.test == perf::test_kind::MEMCPY_BW) {
        if (!perf::pin_to_cpu(opts.cpus[0])) {
            std::fprintf(stderr, "uct_perf: cannot pin to CPU %d\n", opts.cpus[0]);
            return 1;
        }
        perf::print_header(opts, "memcpy in this process");
        std::fflush(stdout);
        perf::timeline tl;
        int result = perf::memcpy_bandwidth(opts, &tl);
        if (result == 0) {
            perf::print_result(opts, tl);
        }
        return result;
    }

    if (reaches_only_itself(opts)) {
        return run_self(opts);
    }
    perf::peer responder(opts.loopback,
                         [&opts](perf::oob &channel) { return run_side(opts, channel, false); });
    if (!responder.started()) {
        return 1;
    }
    int result      = run_side(opts, responder.channel(), true);
    int peer_result = responder.join();
    if ((result == 0) && (peer_result != 0)) {
        std::fprintf(stderr, "uct_perf: the responder failed (%d)\n", peer_result);
        result = 1;
    }
    return result;
}
