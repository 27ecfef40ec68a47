#include "options.h"

#include "mpi_oob.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <getopt.h>

#include <algorithm>
#include <iterator>

namespace perftest {

namespace {

constexpr int OPT_LOOPBACK  = 1000;
constexpr int OPT_SWEEP     = 1001;
constexpr int OPT_SWEEP_TLS = 1002;
constexpr int OPT_CSV       = 1003;
constexpr int OPT_JSON      = 1004;
constexpr int OPT_HUGE      = 1005;

const struct option long_options[] = {
    {"loopback", no_argument, nullptr, OPT_LOOPBACK},
    {"sweep", no_argument, nullptr, OPT_SWEEP},
    {"sweep-tls", required_argument, nullptr, OPT_SWEEP_TLS},
    {"csv", no_argument, nullptr, OPT_CSV},
    {"json", no_argument, nullptr, OPT_JSON},
    {"huge-pages", no_argument, nullptr, OPT_HUGE},
    {"help", no_argument, nullptr, 'h'},
    {nullptr, 0, nullptr, 0},
};

bool parse_u64(const char *text, uint64_t *value)
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

std::vector<std::string> split(const char *text, char sep)
{
    std::vector<std::string> parts;
    std::string current;
    for (const char *p = text;; ++p) {
        if ((*p == sep) || (*p == '\0')) {
            parts.push_back(current);
            current.clear();
            if (*p == '\0') {
                break;
            }
        } else {
            current += *p;
        }
    }
    return parts;
}

bool copy_string(char *dest, size_t size, const char *src)
{
    if (std::strlen(src) >= size) {
        return false;
    }
    std::strcpy(dest, src);
    return true;
}

/* What the command line said, before the test is known. */
struct raw_args {
    std::string test;
    std::string layout;
    std::string tl;
    std::string dev;
    std::string mem; /* -m */
    bool window_given    = false;
    bool fc_window_given = false; /* -W */
    bool async_given     = false; /* -A */
};

bool bad(const char *fmt, const char *arg)
{
    std::fprintf(stderr, "ucx_perftest: ");
    std::fprintf(stderr, fmt, arg);
    std::fprintf(stderr, "\n");
    return false;
}

bool parse_layouts(const std::string &text, test_spec *spec)
{
    std::vector<std::string> parts = split(text.c_str(), ',');
    if (parts.size() > 2) {
        return false;
    }
    layout l[2] = {layout::CONTIG, layout::CONTIG};
    for (size_t i = 0; i < parts.size(); ++i) {
        if (parts[i] == "contig") {
            l[i] = layout::CONTIG;
        } else if (parts[i] == "iov") {
            l[i] = layout::IOV;
        } else {
            return false;
        }
    }
    spec->send_layout = l[0];
    spec->recv_layout = (parts.size() == 2) ? l[1] : l[0];
    return true;
}

/* -m <send>[,<recv>]: UCX's memory type names, as ucs_memory_type_t values. */
bool parse_memory_types(const std::string &text, test_spec *spec)
{
    static const char *const names[] = {"host", "cuda", "cuda-managed", "rocm", "rocm-managed"};
    std::vector<std::string> parts   = split(text.c_str(), ',');
    if (parts.empty() || (parts.size() > 2)) {
        return false;
    }
    uint8_t types[2] = {0, 0};
    for (size_t i = 0; i < parts.size(); ++i) {
        const auto *found = std::find(std::begin(names), std::end(names), parts[i]);
        if (found == std::end(names)) {
            return false;
        }
        types[i] = uint8_t(found - std::begin(names));
    }
    spec->send_mem = types[0];
    spec->recv_mem = (parts.size() == 2) ? types[1] : types[0];
    return true;
}

/* Settles the test and checks what depends on it. */
bool resolve_test(const raw_args &raw, cli *out)
{
    const test_info *test = find_test(raw.test.c_str());
    const bool ucx_name   = (test == nullptr) && is_ucx_uct_name(raw.test.c_str());
    if (ucx_name) {
        std::string layout = raw.layout.empty() ? "short" : raw.layout;
        test               = find_ucx_uct_alias(raw.test.c_str(), layout.c_str());
        if (test == nullptr) {
            std::fprintf(stderr,
                         "ucx_perftest: UCX's uct test '%s' with -D %s is not "
                         "implemented here (no such operation in ucx-ng's uct); the uct "
                         "tests are listed by -h\n",
                         raw.test.c_str(), layout.c_str());
            return false;
        }
    }
    if (test == nullptr) {
        return bad("unknown test '%s'", raw.test.c_str());
    }
    if ((test->api == api_kind::UCT) && !ucx_name && !raw.layout.empty() &&
        !(perf::is_atomic_test(test->uct_kind) && (raw.layout == "short"))) {
        return bad("-D %s: %s names its data layout itself (UCX's names take -D: "
                   "am_lat, am_bw, put_lat, put_bw, get)",
                   raw.layout.c_str());
    }
    test_spec base = out->spec;
    out->spec      = make_spec(test);
    /* Keep what the options set; the window default comes from the test. */
    test_spec &s = out->spec;
    std::memcpy(s.sizes, base.sizes, sizeof(s.sizes));
    s.iov_count        = base.iov_count;
    s.iov_stride       = base.iov_stride;
    s.iters            = base.iters;
    s.warmup           = base.warmup;
    s.am_header        = base.am_header;
    s.wildcard         = base.wildcard;
    s.err_handling     = base.err_handling;
    s.sleep_wait       = base.sleep_wait;
    s.prereg           = base.prereg;
    s.wakeup           = base.wakeup;
    s.thread_mode      = base.thread_mode;
    s.responder_idle   = base.responder_idle;
    s.huge_pages       = base.huge_pages;
    s.nonblock_reg     = base.nonblock_reg;
    s.async_thread     = base.async_thread;
    s.tag_probe        = base.tag_probe;
    s.stream_recv_data = base.stream_recv_data;
    s.threads          = base.threads;
    s.send_mem         = base.send_mem;
    s.recv_mem         = base.recv_mem;
    s.fc_window        = base.fc_window;
    if (raw.window_given) {
        s.window = base.window;
    }

    if (test->api == api_kind::UCT) {
        const perf::test_kind kind = test->uct_kind;
        if (!raw.mem.empty() &&
            (!parse_memory_types(raw.mem, &s) || (s.send_mem != 0) || (s.recv_mem != 0))) {
            return bad("-m %s: the uct tests use host memory", raw.mem.c_str());
        }
        if (raw.tl.empty()) {
            return bad("-x TL is required for the uct test %s", test->name);
        }
        if ((s.iov_count != 1) && (kind != perf::test_kind::AM_ZCOPY_LAT) &&
            (kind != perf::test_kind::AM_ZCOPY_BW) && (kind != perf::test_kind::AM_SHORTIOV_LAT) &&
            (kind != perf::test_kind::AM_SHORTIOV_BW)) {
            return bad("%s takes one size, not a list (lists are for zcopy and short iov "
                       "active messages)",
                       test->name);
        }
        if (s.tag_probe || s.stream_recv_data || (s.threads != 1)) {
            return bad("-U, -r and -T are for UCP tests, not %s", test->name);
        }
        if (raw.fc_window_given && !perf::is_am_test(kind)) {
            return bad("-W is for the uct active-message tests, not %s", test->name);
        }
        if (raw.window_given) {
            if (!perf::is_rma_test(kind)) {
                return bad("-O is for the uct one-sided streams (put/get *_bw, add_mr, "
                           "fadd, swap, cswap), not %s",
                           test->name);
            }
            s.outstanding = s.window;
        }
        if (!copy_string(s.uct_tl, sizeof(s.uct_tl), raw.tl.c_str()) ||
            !copy_string(s.uct_dev, sizeof(s.uct_dev), raw.dev.c_str())) {
            return bad("transport or device name too long: %s", raw.tl.c_str());
        }
        if (s.responder_idle && !perf::is_rma_test(kind)) {
            return bad("-o is for the one-sided tests (put/get *_bw, add_mr, fadd, swap, "
                       "cswap), not %s",
                       test->name);
        }
        if (s.huge_pages && !perf::is_rma_test(kind)) {
            return bad("--huge-pages is for the one-sided uct tests (put/get *_bw, "
                       "add_mr, fadd, swap, cswap), not %s",
                       test->name);
        }
        if (perf::is_atomic_test(kind) && (s.message_size() != 4) && (s.message_size() != 8)) {
            return bad("%s operates on 4 or 8 bytes (-s 4 or -s 8)", test->name);
        }
        s.window = 1;
        return true;
    }
    if (s.huge_pages) {
        return bad("--huge-pages is implemented for the uct one-sided tests only, not for "
                   "UCP tests%s",
                   "");
    }
    if (raw.fc_window_given || raw.async_given) {
        return bad("%s is for uct tests; UCP tests have no such setting",
                   raw.fc_window_given ? "-W" : "-A");
    }
    if (s.responder_idle && (!is_one_sided(test->cmd) || (test->pat != pattern::STREAM_UNI))) {
        return bad("-o is for the one-sided UCP streams (ucp_put_bw, ucp_get, ucp_add, "
                   "ucp_fadd, ucp_swap, ucp_cswap), not %s",
                   test->name);
    }
    if (s.tag_probe && (test->cmd != ucp_cmd::TAG) && (test->cmd != ucp_cmd::TAG_SYNC)) {
        return bad("-U (receive through tag probe) is for tag tests, not %s", test->name);
    }
    if (s.stream_recv_data && (test->cmd != ucp_cmd::STREAM)) {
        return bad("-r is for stream tests, not %s", test->name);
    }

    if (!raw.tl.empty() || !raw.dev.empty()) {
        std::fprintf(stderr, "ucx_perftest: -x/-d are for uct tests; UCP tests use "
                             "UCX_TLS and UCX_*_DEVICES (ignored)\n");
    }
    if (!raw.mem.empty() && !parse_memory_types(raw.mem, &s)) {
        return bad("bad memory type '%s' (host, cuda, cuda-managed[,...])", raw.mem.c_str());
    }
    if (is_one_sided(test->cmd) && ((s.send_mem != 0) || (s.recv_mem != 0))) {
        return bad("%s: RMA and atomics on device memory are not supported yet (-m host)",
                   test->name);
    }
    if (!raw.layout.empty() && !parse_layouts(raw.layout, &s)) {
        return bad("bad data layout '%s' (contig or iov[,contig or iov])", raw.layout.c_str());
    }
    if ((s.iov_count > 1) && (s.send_layout == layout::CONTIG) &&
        (s.recv_layout == layout::CONTIG) && (s.iov_stride != 0)) {
        return bad("-i needs the iov layout (-D iov)%s", "");
    }
    if (is_one_sided(test->cmd) &&
        ((s.send_layout != layout::CONTIG) || (s.recv_layout != layout::CONTIG))) {
        return bad("%s takes contiguous data only", test->name);
    }
    if (is_atomic(test->cmd) && (s.message_size() != 4) && (s.message_size() != 8)) {
        return bad("%s operates on 4 or 8 bytes (-s 4 or -s 8)", test->name);
    }
    if ((test->pat == pattern::PINGPONG) && (s.window != 1)) {
        return bad("%s is a ping-pong: -O must be 1", test->name);
    }
    return true;
}

} // namespace

// clang-format off
void usage(FILE *stream)
{
    std::fprintf(stream,
"Usage: ucx_perftest [server-hostname] [options]\n"
"       ucx_perftest --loopback [options]      (forks its peer)\n"
"       mpirun -np 2 ucx_perftest [options]    (addresses exchanged through MPI)\n"
"\n"
"Without a host name it is the server: it waits on -p PORT for a client, which\n"
"sends it the test to run. The client prints the results.\n"
"\n"
"  -t <test>      test to run:\n");
    for (unsigned i = 0; i < test_count(); ++i) {
        const test_info *t = test_by_index(i);
        std::fprintf(stream, "     %14s - %s %s\n", t->name,
                     (t->api == api_kind::UCP) ? "UCP" : "uct (-x TL)", t->description);
    }
    std::fprintf(stream,
"                 UCX's uct names am_lat, am_bw, put_lat, put_bw, get work with -D\n"
"                 short|shortiov|bcopy|zcopy (am_lat -D bcopy is am_bcopy_lat)\n"
"  -s <size>      message size, or a comma list of iov entry sizes (8); uct\n"
"                 lists: zcopy and short iov active messages\n"
"  -n <iters>     measured iterations (1000000)\n"
"  -w <iters>     warm-up iterations (10000)\n"
"  -p <port>      TCP port of the server (13337)\n"
"  -6             use IPv6 for the connection to the server\n"
"  -D <layout>    UCP: contig or iov, for sender[,receiver] (contig)\n"
"                 uct: short, bcopy or zcopy (with UCX's test names)\n"
"  -m <mem>[,<mem>]  memory type of the send[,receive] buffers of UCP tests:\n"
"                 host, cuda, cuda-managed (GPU memory needs the cuda module)\n"
"  -O <count>     operations in flight in bandwidth tests (per test: 1 or 32;\n"
"                 uct one-sided streams: 128, fetching atomics 1)\n"
"  -W <count>     uct active-message streams: most messages the receiver has not\n"
"                 credited back (127)\n"
"  -A <mode>      uct: the worker's async context: thread_spinlock or thread_mutex\n"
"                 (both: a thread of its own); signal is not supported\n"
"  -B             map and register buffers with the NONBLOCK flag (pages on first use)\n"
"  -b <file>      run the tests of a file: a line per test, its name first, then\n"
"                 its options (added to this command line's); '#' starts a comment\n"
"  -i <stride>    distance between iov entries (0: back to back)\n"
"  -c <cpus>      pin to these CPUs; with --loopback the first is this side's,\n"
"                 the second the peer's\n"
"  -x <tl>        transport of a uct test (posix, sysv, cma, tcp, self, ...)\n"
"  -d <device>    device of a uct test (default: the transport's first)\n"
"  -H <size>      UCP AM header size (0)\n"
"  -C             receive tags with a wildcard mask\n"
"  -U             tag tests: receive through ucp_tag_probe_nb and\n"
"                 ucp_tag_msg_recv_nbx, so every message arrives unexpected\n"
"  -r <mode>      stream tests: recv (ucp_stream_recv_nbx, default) or recv_data\n"
"                 (ucp_stream_recv_data_nb and ucp_stream_data_release)\n"
"  -e             create endpoints with peer error handling\n"
"  -E <mode>      wait mode: poll (default) or sleep (ucp_worker_wait when idle)\n"
"  -I             create the context with the wakeup feature\n"
"  -z             pass pre-registered memory handles to the operations\n"
"  -o             one-sided streams (uct and UCP): the responder does not progress\n"
"                 (sleeps until the end; for transports whose RMA needs no target\n"
"                 progress: a UCP test that sees no completion for 10 s says so)\n"
"  --huge-pages   uct put/get: buffers the md does not allocate itself are on\n"
"                 transparent huge pages (UCX's tool allocates through\n"
"                 UCX_<TL>_ALLOC, thp by default)\n"
"  -M <mode>      worker thread mode: single, serialized or multi (single)\n"
"  -T <threads>   UCP tests: threads per side, each with its own worker and\n"
"                 endpoint (1; at most 16)\n"
"  -R <rank>      percentile reported in the latency columns (50.0)\n"
"  -l, --loopback fork the peer and talk to it over a socketpair\n"
"  --sweep        latency and bandwidth (tag_lat, tag_bw, or -t) over 8 B .. 4 MiB on\n"
"                 every available transport, one table; progress on stderr\n"
"  --sweep-tls <a;b;...>  the UCX_TLS value of each sweep stage, ';'-separated\n"
"  -f             print only the final numbers\n"
"  -v             print UCX's CSV lines (with the test description)\n"
"  --csv          CSV only: a header and one line per test\n"
"  --json         JSON only: one document with every test\n"
"  -N             thousands separators in the table\n"
"  -h, --help     this help\n"
"\n"
"Latency columns are in usec (ping-pong tests: half the round trip),\n"
"bandwidth in MB/s (2^20 bytes), message rate in messages per second.\n"
"UCP tests choose transports from UCX_TLS and UCX_*_DEVICES.\n");
}
// clang-format on

bool parse_cli(int argc, char **argv, cli *out, int *exit_code)
{
    raw_args raw;
    uint64_t value;
    int c;
    *exit_code = 2;
    opterr     = 0;
    optind     = 1;
    auto fail  = [&](const char *fmt, const char *arg) {
        bad(fmt, arg);
        usage(stderr);
        return false;
    };
    while ((c = getopt_long(argc, argv,
                            ":t:s:n:w:p:6D:m:O:i:c:x:d:H:CeE:IzoM:T:R:lfvNh"
                            "b:A:W:BUr:",
                            long_options, nullptr)) != -1) {
        char opt[2] = {char(optopt ? optopt : c), '\0'};
        switch (c) {
        case 't':
            raw.test       = optarg;
            out->have_test = true;
            break;
        case 's': {
            std::vector<std::string> parts = split(optarg, ',');
            if (parts.size() > MAX_IOV) {
                return fail("too many sizes in '%s'", optarg);
            }
            for (size_t i = 0; i < parts.size(); ++i) {
                if (!parse_u64(parts[i].c_str(), &value) || (value == 0) ||
                    (value > (uint64_t(1) << 36))) {
                    return fail("bad message size '%s'", optarg);
                }
                out->spec.sizes[i] = value;
            }
            out->spec.iov_count = uint32_t(parts.size());
            break;
        }
        case 'n':
            if (!parse_u64(optarg, &value) || (value == 0)) {
                return fail("bad iteration count '%s'", optarg);
            }
            out->spec.iters  = value;
            out->iters_given = true;
            break;
        case 'w':
            if (!parse_u64(optarg, &value)) {
                return fail("bad warm-up count '%s'", optarg);
            }
            out->spec.warmup  = value;
            out->warmup_given = true;
            break;
        case 'p':
            if (!parse_u64(optarg, &value) || (value == 0) || (value > 65535)) {
                return fail("bad port '%s'", optarg);
            }
            out->port = uint16_t(value);
            break;
        case '6':
            out->ipv6 = true;
            break;
        case 'D':
            raw.layout = optarg;
            break;
        case 'm':
            raw.mem = optarg;
            break;
        case 'O':
            if (!parse_u64(optarg, &value) || (value == 0) || (value > 1000000)) {
                return fail("bad outstanding count '%s'", optarg);
            }
            out->spec.window = uint32_t(value);
            raw.window_given = true;
            break;
        case 'i':
            if (!parse_u64(optarg, &value) || (value > (uint64_t(1) << 30))) {
                return fail("bad iov stride '%s'", optarg);
            }
            out->spec.iov_stride = value;
            break;
        case 'c':
            out->cpus.clear();
            for (const std::string &cpu : split(optarg, ',')) {
                if (!parse_u64(cpu.c_str(), &value) || (value > 4095)) {
                    return fail("bad CPU list '%s'", optarg);
                }
                out->cpus.push_back(int(value));
            }
            break;
        case 'x':
            raw.tl = optarg;
            break;
        case 'd':
            raw.dev = optarg;
            break;
        case 'H':
            if (!parse_u64(optarg, &value) || (value > 65536)) {
                return fail("bad AM header size '%s'", optarg);
            }
            out->spec.am_header = uint32_t(value);
            break;
        case 'C':
            out->spec.wildcard = 1;
            break;
        case 'e':
            out->spec.err_handling = 1;
            break;
        case 'E':
            if (std::strcmp(optarg, "poll") == 0) {
                out->spec.sleep_wait = 0;
            } else if (std::strcmp(optarg, "sleep") == 0) {
                out->spec.sleep_wait = 1;
            } else {
                return fail("bad wait mode '%s' (poll or sleep)", optarg);
            }
            break;
        case 'I':
            out->spec.wakeup = 1;
            break;
        case 'z':
            out->spec.prereg = 1;
            break;
        case 'o':
            out->spec.responder_idle = 1;
            break;
        case OPT_HUGE:
            out->spec.huge_pages = 1;
            break;
        case 'M':
            if (std::strcmp(optarg, "single") == 0) {
                out->spec.thread_mode = 0;
            } else if (std::strcmp(optarg, "serialized") == 0) {
                out->spec.thread_mode = 1;
            } else if (std::strcmp(optarg, "multi") == 0) {
                out->spec.thread_mode = 2;
            } else {
                return fail("bad thread mode '%s'", optarg);
            }
            break;
        case 'T':
            if (!parse_u64(optarg, &value) || (value == 0) || (value > MAX_THREADS)) {
                return fail("bad thread count '%s' (1 to 16)", optarg);
            }
            out->spec.threads = uint8_t(value);
            break;
        case 'W':
            if (!parse_u64(optarg, &value) || (value == 0) || (value > 65536)) {
                return fail("bad flow-control window '%s' (1 to 65536)", optarg);
            }
            out->spec.fc_window = uint32_t(value);
            raw.fc_window_given = true;
            break;
        case 'A':
            if ((std::strcmp(optarg, "thread_spinlock") == 0) ||
                (std::strcmp(optarg, "thread_mutex") == 0) ||
                (std::strcmp(optarg, "thread") == 0)) {
                out->spec.async_thread = 1;
            } else if (std::strcmp(optarg, "signal") == 0) {
                return fail("-A signal: ucx-ng's async contexts run on a thread or are "
                            "polled, never from a signal (use thread_spinlock)%s",
                            "");
            } else {
                return fail("bad async mode '%s' (thread_spinlock or thread_mutex)", optarg);
            }
            raw.async_given = true;
            break;
        case 'B':
            out->spec.nonblock_reg = 1;
            break;
        case 'U':
            out->spec.tag_probe = 1;
            break;
        case 'r':
            if (std::strcmp(optarg, "recv") == 0) {
                out->spec.stream_recv_data = 0;
            } else if (std::strcmp(optarg, "recv_data") == 0) {
                out->spec.stream_recv_data = 1;
            } else {
                return fail("bad stream receive mode '%s' (recv or recv_data)", optarg);
            }
            break;
        case 'b':
            if (optarg[0] == '\0') {
                return fail("-b needs a file name%s", "");
            }
            out->batch_file = optarg;
            break;
        case 'R': {
            char *end   = nullptr;
            double rank = std::strtod(optarg, &end);
            if ((end == optarg) || (*end != '\0') || !(rank > 0) || (rank > 100)) {
                return fail("bad percentile rank '%s' (0 < rank <= 100)", optarg);
            }
            out->percentile = rank;
            break;
        }
        case 'l':
        case OPT_LOOPBACK:
            out->loopback = true;
            break;
        case OPT_SWEEP:
            out->sweep = true;
            break;
        case OPT_SWEEP_TLS:
            out->sweep_tls.clear();
            for (const std::string &tls : split(optarg, ';')) {
                if (tls.empty() || (tls.size() >= sizeof(test_spec::tls))) {
                    return fail("bad --sweep-tls list '%s'", optarg);
                }
                out->sweep_tls.push_back(tls);
            }
            break;
        case 'f':
            out->final_only = true;
            break;
        case 'v':
            if (out->format == output_format::TABLE) {
                out->format = output_format::UCX_CSV;
            }
            break;
        case OPT_CSV:
            out->format = output_format::CSV;
            break;
        case OPT_JSON:
            out->format = output_format::JSON;
            break;
        case 'N':
            out->numeric = true;
            break;
        case 'h':
            usage(stdout);
            *exit_code = 0;
            return false;
        case ':':
            return fail("option -%s needs a value", opt);
        case '?':
            if (optopt == 0) {
                return fail("unknown option '%s'", argv[optind - 1]);
            }
            return fail("unknown option -%s", opt);
        default:
            opt[0] = char(c);
            return fail("unknown option -%s", opt);
        }
    }
    for (int i = optind; i < argc; ++i) {
        if (!out->host.empty()) {
            return fail("unexpected argument '%s' (one server host name at most)", argv[i]);
        }
        out->host = argv[i];
    }
    if (out->loopback && !out->host.empty()) {
        return fail("--loopback takes no server host name (got '%s')", out->host.c_str());
    }
    if (!out->batch_file.empty()) {
        if (out->have_test || out->sweep) {
            return fail("-b runs the tests of its file: no -t or --sweep with it%s", "");
        }
        if (out->host.empty() && !out->loopback && (launcher_rank() < 0)) {
            return fail("-b is for the client (a host name, --loopback or mpirun)%s", "");
        }
        *exit_code = 0;
        return true; /* main reads the file's tests (batch.h) */
    }
    if (out->sweep && !out->have_test) {
        raw.test = "tag_lat"; /* a placeholder: the sweep sets each stage's test */
    } else if (!out->have_test) {
        if (!out->host.empty() || out->loopback) {
            return fail("-t TEST is required%s", "");
        }
        /* The server learns the test from the client. */
        *exit_code = 0;
        return true;
    }
    if (!resolve_test(raw, out)) {
        usage(stderr);
        return false;
    }
    if (out->sweep && (out->spec.info().api != api_kind::UCP)) {
        return fail("--sweep runs UCP tests; %s is a uct test", out->spec.info().name);
    }
    *exit_code = 0;
    return true;
}

} // namespace perftest
