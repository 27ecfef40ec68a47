/*
 * ucx_perftest: UCX's benchmark command line over ucx-ng. UCP tests use the
 * public UCP API only (they run on UCX 1.13 too); uct tests measure one
 * transport with the code of uct_perf. See usage() and bench/README.md.
 */
#include "batch.h"
#include "mpi_oob.h"
#include "options.h"
#include "runner.h"
#include "sock.h"
#include "sweep.h"

#include "../common/peer.h"

#include <clocale>
#include <cstdio>
#include <memory>

#include <sched.h>

namespace {

using namespace perftest;

bool pin_to_list(const std::vector<int> &cpus)
{
    if (cpus.empty()) {
        return true;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : cpus) {
        CPU_SET(cpu, &set);
    }
    return sched_setaffinity(0, sizeof(set), &set) == 0;
}

/* The tests the client runs: the batch file's, the sweep's or the one. */
bool stages_of(const cli &opts, int argc, char **argv, std::vector<test_spec> *stages)
{
    if (!opts.batch_file.empty()) {
        return read_batch(opts, argc, argv, stages);
    }
    *stages = opts.sweep ? sweep_stages(opts) : std::vector<test_spec>{opts.spec};
    return true;
}

int run_mpi(const cli &opts, const std::vector<test_spec> &stages)
{
    std::string error;
    std::unique_ptr<mpi_oob> channel = mpi_oob::open(&error);
    if (!channel) {
        std::fprintf(stderr, "ucx_perftest: %s\n", error.c_str());
        return 1;
    }
    if (!pin_to_list(opts.cpus)) {
        std::perror("ucx_perftest: sched_setaffinity");
        return 1;
    }
    if (channel->rank() != 0) {
        return serve(*channel, nullptr);
    }
    if (!opts.have_test && !opts.sweep && opts.batch_file.empty()) {
        std::fprintf(stderr, "ucx_perftest: -t TEST is required\n");
        channel->send_blob({});
        return 2;
    }
    printer out(opts, opts.sweep);
    return run_client(*channel, stages, opts, out, true);
}

int run_tcp(const cli &opts, const std::vector<test_spec> &stages)
{
    if (!pin_to_list(opts.cpus)) {
        std::perror("ucx_perftest: sched_setaffinity");
        return 1;
    }
    std::string error;
    const bool server   = opts.host.empty();
    const bool announce = (opts.format == output_format::TABLE);
    int fd              = server ? accept_client(opts.port, opts.ipv6, announce, &error) :
                                   connect_server(opts.host, opts.port, opts.ipv6, &error);
    if (fd < 0) {
        std::fprintf(stderr, "ucx_perftest: %s\n", error.c_str());
        return 1;
    }
    perf::fd_oob channel(fd, !server);
    printer out(opts, opts.sweep);
    if (server) {
        return serve(channel, &out);
    }
    return run_client(channel, stages, opts, out, false);
}

} // namespace

int main(int argc, char **argv)
{
    cli opts;
    int exit_code;
    if (!parse_cli(argc, argv, &opts, &exit_code)) {
        return exit_code;
    }
    std::vector<test_spec> stages;
    if (!stages_of(opts, argc, argv, &stages)) {
        return 2;
    }
    if (opts.numeric) {
        std::setlocale(LC_NUMERIC, "");
    }
    if (opts.loopback) {
        printer out(opts, opts.sweep);
        return run_loopback(stages, opts, out);
    }
    if ((launcher_rank() >= 0) && opts.host.empty()) {
        return run_mpi(opts, stages);
    }
    return run_tcp(opts, stages);
}
