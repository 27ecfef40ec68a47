#include "perf_options.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

namespace perf {

namespace {

struct test_name {
    const char *name;
    test_kind kind;
    const char *what;
};

const test_name tests[] = {
    {"am_short_lat", test_kind::AM_SHORT_LAT, "AM short ping-pong, one-way latency"},
    {"am_bcopy_lat", test_kind::AM_BCOPY_LAT, "AM bcopy ping-pong, one-way latency"},
    {"am_short_bw", test_kind::AM_SHORT_BW, "AM short streaming: bandwidth, message rate"},
    {"am_bcopy_bw", test_kind::AM_BCOPY_BW, "AM bcopy streaming: bandwidth, message rate"},
    {"put_zcopy_bw", test_kind::PUT_ZCOPY_BW, "put zcopy streaming: bandwidth, message rate"},
    {"get_zcopy_bw", test_kind::GET_ZCOPY_BW, "get zcopy streaming: bandwidth, message rate"},
    {"am_zcopy_lat", test_kind::AM_ZCOPY_LAT, "AM zcopy ping-pong, one-way latency"},
    {"am_zcopy_bw", test_kind::AM_ZCOPY_BW, "AM zcopy streaming: bandwidth, message rate"},
    {"am_shortiov_lat", test_kind::AM_SHORTIOV_LAT, "AM short iov ping-pong, one-way latency"},
    {"am_shortiov_bw", test_kind::AM_SHORTIOV_BW, "AM short iov streaming"},
    {"put_short_lat", test_kind::PUT_SHORT_LAT, "put short ping-pong through memory"},
    {"put_bcopy_lat", test_kind::PUT_BCOPY_LAT, "put bcopy ping-pong through memory"},
    {"put_zcopy_lat", test_kind::PUT_ZCOPY_LAT, "put zcopy ping-pong through memory"},
    {"put_short_bw", test_kind::PUT_SHORT_BW, "put short streaming"},
    {"put_bcopy_bw", test_kind::PUT_BCOPY_BW, "put bcopy streaming"},
    {"get_bcopy_bw", test_kind::GET_BCOPY_BW, "get bcopy streaming"},
    {"add_lat", test_kind::ADD_LAT, "atomic add ping-pong through memory (-s 4|8)"},
    {"add_mr", test_kind::ADD_MR, "posted atomic adds: message rate (-s 4|8)"},
    {"fadd", test_kind::FADD, "fetch-and-add, one at a time (-s 4|8)"},
    {"swap", test_kind::SWAP, "atomic swap, one at a time (-s 4|8)"},
    {"cswap", test_kind::CSWAP, "compare-and-swap, one at a time (-s 4|8)"},
    {"cacheline_lat", test_kind::CACHELINE_LAT,
     "two processes ping-pong one cache line: "
     "the floor of shared-memory latency"},
    {"memcpy_bw", test_kind::MEMCPY_BW,
     "memcpy of SIZE bytes between two buffers of "
     "this process: the copy ceiling"},
};

void usage(FILE *out)
{
    std::fprintf(out, "Usage: uct_perf -t TEST [-x TL] [-d DEV] [-s SIZE] [-n ITERS] [-w WARMUP]\n"
                      "                [-c CPU0,CPU1] [-l] [-o] [-H] [-L]\n"
                      "Runs a uct-level benchmark between this process and a peer it forks.\n\n"
                      "  -t TEST     test to run:\n");
    for (const auto &t : tests) {
        std::fprintf(out, "      %-14s %s\n", t.name, t.what);
    }
    std::fprintf(out,
                 "  -x TL       transport name (posix, sysv, cma, tcp, self, ...)\n"
                 "  -d DEV      device (default: the transport's first device)\n"
                 "  -s SIZE     message size in bytes, AM header included (default 8)\n"
                 "  -n ITERS    measured iterations (default 100000)\n"
                 "  -w WARMUP   warm-up iterations (default 10000)\n"
                 "  -c A,B      pin the initiator to CPU A and the responder to CPU B\n"
                 "  -l          the responder is a thread of this process, not a child\n"
                 "              (a transport that reaches only itself, as self, always runs\n"
                 "              in this process, sending to itself)\n"
                 "  -o          put/get: the responder sleeps instead of progressing (for\n"
                 "              transports whose RMA needs no target progress: cma, posix, sysv)\n"
                 "  -H          put/get/memcpy: our own buffers (those no md allocates) on\n"
                 "              transparent huge pages (2 MiB aligned, madvise)\n"
                 "  -L          list the transports this build has and exit\n"
                 "  -h          this help\n\n"
                 "Latency is one-way (round trip / 2) in microseconds; bandwidth in MB/s\n"
                 "(2^20 bytes), message rate in messages per second.\n");
}

bool parse_count(const char *text, uint64_t *value)
{
    char *end            = nullptr;
    errno                = 0;
    unsigned long long v = std::strtoull(text, &end, 0);
    if ((errno != 0) || (end == text) || (*end != '\0') || (text[0] == '-')) {
        return false;
    }
    *value = v;
    return true;
}

bool parse_cpus(const char *text, int cpus[2])
{
    int a, b;
    char tail;
    if ((std::sscanf(text, "%d,%d%c", &a, &b, &tail) != 2) || (a < 0) || (b < 0)) {
        return false;
    }
    cpus[0] = a;
    cpus[1] = b;
    return true;
}

} // namespace

bool parse_options(int argc, char **argv, options *opts, int *exit_code)
{
    bool have_test = false;
    int c;
    uint64_t value;
    *exit_code = 1;
    while ((c = getopt(argc, argv, "t:x:d:s:n:w:c:loHLh")) != -1) {
        switch (c) {
        case 't':
            have_test = false;
            for (const auto &t : tests) {
                if (std::strcmp(optarg, t.name) == 0) {
                    opts->test      = t.kind;
                    opts->test_name = t.name;
                    have_test       = true;
                }
            }
            if (!have_test) {
                std::fprintf(stderr, "uct_perf: unknown test '%s'\n", optarg);
                usage(stderr);
                return false;
            }
            break;
        case 'x':
            opts->tl_name = optarg;
            break;
        case 'd':
            opts->dev_name = optarg;
            break;
        case 's':
            if (!parse_count(optarg, &value) || (value == 0)) {
                std::fprintf(stderr, "uct_perf: bad size '%s'\n", optarg);
                return false;
            }
            opts->size = size_t(value);
            break;
        case 'n':
            if (!parse_count(optarg, &value) || (value == 0)) {
                std::fprintf(stderr, "uct_perf: bad iteration count '%s'\n", optarg);
                return false;
            }
            opts->iters = value;
            break;
        case 'w':
            if (!parse_count(optarg, &value)) {
                std::fprintf(stderr, "uct_perf: bad warm-up count '%s'\n", optarg);
                return false;
            }
            opts->warmup = value;
            break;
        case 'c':
            if (!parse_cpus(optarg, opts->cpus)) {
                std::fprintf(stderr, "uct_perf: -c wants two CPU numbers, e.g. 0,1\n");
                return false;
            }
            break;
        case 'l':
            opts->loopback = true;
            break;
        case 'o':
            opts->responder_idle = true;
            break;
        case 'H':
            opts->huge_pages = true;
            break;
        case 'L':
            opts->list = true;
            *exit_code = 0;
            return true;
        case 'h':
            usage(stdout);
            *exit_code = 0;
            return false;
        default:
            usage(stderr);
            return false;
        }
    }
    if (optind != argc) {
        std::fprintf(stderr, "uct_perf: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return false;
    }
    if (!have_test) {
        std::fprintf(stderr, "uct_perf: -t TEST is required\n");
        usage(stderr);
        return false;
    }
    const bool local_only = (opts->test == test_kind::CACHELINE_LAT) ||
                            (opts->test == test_kind::MEMCPY_BW);
    if (!local_only && opts->tl_name.empty()) {
        std::fprintf(stderr, "uct_perf: -x TL is required for %s\n", opts->test_name.c_str());
        return false;
    }
    if ((opts->test == test_kind::CACHELINE_LAT) && opts->loopback) {
        std::fprintf(stderr, "uct_perf: cacheline_lat always uses two processes\n");
        return false;
    }
    if ((opts->test == test_kind::MEMCPY_BW) && (opts->loopback || !opts->tl_name.empty())) {
        std::fprintf(stderr, "uct_perf: memcpy_bw runs in this process alone: "
                             "no -x or -l\n");
        return false;
    }
    if (opts->responder_idle && !is_rma_test(opts->test)) {
        std::fprintf(stderr,
                     "uct_perf: -o is for the one-sided streams (put/get "
                     "*_bw, add_mr, fadd, swap, cswap), not %s\n",
                     opts->test_name.c_str());
        return false;
    }
    if (opts->huge_pages && !is_rma_test(opts->test) && (opts->test != test_kind::MEMCPY_BW)) {
        std::fprintf(stderr,
                     "uct_perf: -H is for the one-sided streams and "
                     "memcpy_bw, not %s\n",
                     opts->test_name.c_str());
        return false;
    }
    *exit_code = 0;
    return true;
}

} // namespace perf
