/*
 * ucp_put_floor: how much of ucp_put_lat is the library's.
 *
 * ucp_put_lat is a ping-pong through memory: each side puts a sequence
 * number into the peer's buffer and polls its own for the answer. Over
 * shared memory the put is a store into the peer's mapping, so most of a
 * round trip is the hardware moving two cache lines between cores. This
 * tool runs, in one pair of processes and on the same buffers (the cost
 * of a cache-line transfer depends on the physical address), blocks of
 *   - "raw": memcpy into the address ucp_rkey_ptr gives, a bare spin: the
 *     floor that no library can go under;
 *   - "put": ucp_put_nbx, and ucp_worker_progress between polls, as
 *     ucx_perftest -t ucp_put_lat does;
 * alternated (raw put put raw ...) so that drift hits both alike. The
 * difference is the library's share. --split adds blocks of ucp_put_nbx
 * with a bare spin and of raw stores with progress in the spin, to tell
 * the put's part from the progress call's. It uses the public UCP API
 * only, so it also runs on UCX 1.13 (LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu).
 */
#include "../common/clock.h"
#include "../common/peer.h"

#include <ucp/api/ucp.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <dlfcn.h>

namespace {

/* What one block does: how it writes, and whether its spin progresses. */
enum block_kind { RAW, PUT, PUT_ONLY, PROGRESS_ONLY, NUM_KINDS };

constexpr bool uses_put(block_kind k)
{
    return (k == PUT) || (k == PUT_ONLY);
}
constexpr bool uses_progress(block_kind k)
{
    return (k == PUT) || (k == PROGRESS_ONLY);
}

const char *const kind_names[NUM_KINDS] = {
    "raw stores (ucp_rkey_ptr), bare spin",
    "ucp_put_nbx, ucp_worker_progress in the spin",
    "ucp_put_nbx, bare spin",
    "raw stores, ucp_worker_progress in the spin",
};
const char *const kind_columns[NUM_KINDS] = {"raw_usec", "put_usec", "put_only_usec",
                                             "progress_only_usec"};

struct options {
    size_t size         = 8;
    uint64_t iterations = 20000; /* round trips per block */
    unsigned blocks     = 40;    /* per mode */
    int cpus[2]         = {0, 1};
    bool csv            = false;
    bool split          = false; /* also PUT_ONLY and PROGRESS_ONLY blocks */
};

/* Per kind, one-way latency (seconds) of each of its blocks. */
using block_times = std::vector<double>[NUM_KINDS];

constexpr size_t MAX_SIZE          = 4096;
constexpr unsigned SPINS_PER_CHECK = 1u << 16;
constexpr auto PEER_PATIENCE       = std::chrono::seconds(10);

void usage(FILE *out)
{
    std::fprintf(
        out,
        "Usage: ucp_put_floor [-s SIZE] [-n ROUND_TRIPS] [-b BLOCKS] [-c CPU0,CPU1] [--split]\n"
        "                     [--csv]\n"
        "  Times ucp_put_lat's ping-pong against bare stores through the same\n"
        "  mapping (ucp_rkey_ptr), in alternating blocks of one pair of processes.\n"
        "  -s SIZE      bytes per put, 1..%zu (default 8)\n"
        "  -n N         round trips per block (default 20000)\n"
        "  -b BLOCKS    blocks of each kind (default 40)\n"
        "  -c A,B       CPUs of this side and of the forked peer (default 0,1; -1: unpinned)\n"
        "  --split      also time the put with a bare spin and progress with raw stores\n"
        "  --csv        one header line and one line of numbers\n"
        "  UCX_TLS must allow a transport that maps the peer's memory (posix, sysv).\n",
        MAX_SIZE);
}

bool parse_number(const char *text, uint64_t max, uint64_t *value)
{
    char *end;
    errno                = 0;
    unsigned long long v = std::strtoull(text, &end, 10);
    if ((errno != 0) || (end == text) || (*end != '\0') || (text[0] == '-') || (v == 0) ||
        (v > max)) {
        return false;
    }
    *value = v;
    return true;
}

/* 0: parsed; otherwise the exit code (2: bad command line). */
int parse(int argc, char **argv, options *opts)
{
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if ((arg == "-h") || (arg == "--help")) {
            usage(stdout);
            return -1;
        }
        if ((arg == "--csv") || (arg == "--split")) {
            ((arg == "--csv") ? opts->csv : opts->split) = true;
            continue;
        }
        if ((arg != "-s") && (arg != "-n") && (arg != "-b") && (arg != "-c")) {
            std::fprintf(stderr, "ucp_put_floor: unknown option '%s'\n", arg.c_str());
            usage(stderr);
            return 2;
        }
        if (i + 1 == argc) {
            std::fprintf(stderr, "ucp_put_floor: %s needs a value\n", arg.c_str());
            usage(stderr);
            return 2;
        }
        const char *value = argv[++i];
        uint64_t number   = 0;
        bool ok           = true;
        if (arg == "-s") {
            ok         = parse_number(value, MAX_SIZE, &number);
            opts->size = number;
        } else if (arg == "-n") {
            ok               = parse_number(value, uint64_t(1) << 40, &number);
            opts->iterations = number;
        } else if (arg == "-b") {
            ok           = parse_number(value, 100000, &number);
            opts->blocks = unsigned(number);
        } else {
            ok = (std::sscanf(value, "%d,%d", &opts->cpus[0], &opts->cpus[1]) == 2) &&
                 (opts->cpus[0] >= -1) && (opts->cpus[1] >= -1);
        }
        if (!ok) {
            std::fprintf(stderr, "ucp_put_floor: bad value '%s' for %s\n", value, arg.c_str());
            usage(stderr);
            return 2;
        }
    }
    return 0;
}

/* Which libucp this process runs on: the file that holds ucp_put_nbx. */
std::string library_path()
{
    Dl_info info{};
    if ((dladdr(reinterpret_cast<void *>(&ucp_put_nbx), &info) != 0) &&
        (info.dli_fname != nullptr)) {
        return info.dli_fname;
    }
    return "?";
}

/* One side: context, worker, endpoint, two buffers, the peer's key. */
class side {
public:
    side(const options &opts, perf::oob &channel) : opts_(opts), channel_(channel) {}
    ~side() { teardown(); }

    /* Empty on success, else why not; both sides agree on the outcome. */
    std::string setup();
    /* Fills the per-block one-way latencies of each kind it runs. */
    std::string run(block_times &times);

private:
    std::string setup_here();
    std::string connect();
    bool wait_for(uint8_t sn, bool progress);
    void raw_store() { std::memcpy(peer_buffer_, send_, opts_.size); }
    bool put();
    /* Progresses until `request` (a ucp call's result) completes. */
    ucs_status_t wait(ucs_status_ptr_t request);
    /* Both sides learn whether both did a step; empty if so, else why not. */
    std::string agreed(const std::string &why);
    void teardown();

    const options &opts_;
    perf::oob &channel_;
    ucp_context_h context_ = nullptr;
    ucp_worker_h worker_   = nullptr;
    ucp_ep_h ep_           = nullptr;
    ucp_mem_h send_memh_ = nullptr, recv_memh_ = nullptr;
    uint8_t *send_ = nullptr, *recv_ = nullptr;
    ucp_rkey_h rkey_         = nullptr;
    uint64_t remote_address_ = 0;
    uint8_t *peer_buffer_    = nullptr; /* the peer's receive buffer, mapped here */
    std::string failure_;
    const ucp_request_param_t put_param_ = {}; /* built once, not per timed put */
};

std::string failed(const char *what, ucs_status_t status)
{
    return std::string(what) + ": " + ucs_status_string(status);
}

std::string side::setup_here()
{
    ucp_params_t params = {};
    params.field_mask   = UCP_PARAM_FIELD_FEATURES;
    params.features     = UCP_FEATURE_RMA;
    ucs_status_t status = ucp_init(&params, nullptr, &context_);
    if (status != UCS_OK) {
        return failed("ucp_init", status);
    }
    ucp_worker_params_t wparams = {};
    wparams.field_mask          = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode         = UCS_THREAD_MODE_SINGLE;
    if ((status = ucp_worker_create(context_, &wparams, &worker_)) != UCS_OK) {
        return failed("ucp_worker_create", status);
    }
    for (auto [memh, buffer] : {std::pair{&send_memh_, &send_}, {&recv_memh_, &recv_}}) {
        ucp_mem_map_params_t mparams = {};
        mparams.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
        mparams.length     = MAX_SIZE;
        mparams.flags      = UCP_MEM_MAP_ALLOCATE;
        if ((status = ucp_mem_map(context_, &mparams, memh)) != UCS_OK) {
            return failed("ucp_mem_map", status);
        }
        ucp_mem_attr_t attr = {};
        attr.field_mask     = UCP_MEM_ATTR_FIELD_ADDRESS;
        if ((status = ucp_mem_query(*memh, &attr)) != UCS_OK) {
            return failed("ucp_mem_query", status);
        }
        *buffer = static_cast<uint8_t *>(attr.address);
        std::memset(*buffer, 0, MAX_SIZE);
    }
    return "";
}

std::string side::connect()
{
    ucp_address_t *address;
    size_t length;
    ucs_status_t status = ucp_worker_get_address(worker_, &address, &length);
    if (status != UCS_OK) {
        return failed("ucp_worker_get_address", status);
    }
    const auto *bytes = reinterpret_cast<const uint8_t *>(address);
    std::vector<uint8_t> mine(bytes, bytes + length), theirs;
    ucp_worker_release_address(worker_, address);
    if (!channel_.exchange(mine, &theirs)) {
        return "the peer went away";
    }
    ucp_ep_params_t eparams = {};
    eparams.field_mask      = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    eparams.address         = reinterpret_cast<const ucp_address_t *>(theirs.data());
    if ((status = ucp_ep_create(worker_, &eparams, &ep_)) != UCS_OK) {
        return failed("ucp_ep_create", status);
    }

    void *packed;
    size_t packed_length;
    if ((status = ucp_rkey_pack(context_, recv_memh_, &packed, &packed_length)) != UCS_OK) {
        return failed("ucp_rkey_pack", status);
    }
    const uint64_t here = reinterpret_cast<uintptr_t>(recv_);
    mine.resize(sizeof(here) + packed_length);
    std::memcpy(mine.data(), &here, sizeof(here));
    std::memcpy(mine.data() + sizeof(here), packed, packed_length);
    ucp_rkey_buffer_release(packed);
    if (!channel_.exchange(mine, &theirs)) {
        return "the peer went away";
    }
    if (theirs.size() <= sizeof(remote_address_)) {
        return "the peer's remote key is truncated";
    }
    std::memcpy(&remote_address_, theirs.data(), sizeof(remote_address_));
    if ((status = ucp_ep_rkey_unpack(ep_, theirs.data() + sizeof(remote_address_), &rkey_)) !=
        UCS_OK) {
        return failed("ucp_ep_rkey_unpack", status);
    }
    void *mapped;
    if ((status = ucp_rkey_ptr(rkey_, remote_address_, &mapped)) != UCS_OK) {
        return failed("ucp_rkey_ptr", status) +
               " (the raw mode needs a transport that maps the peer's memory: "
               "UCX_TLS with posix or sysv)";
    }
    peer_buffer_ = static_cast<uint8_t *>(mapped);
    return "";
}

std::string side::agreed(const std::string &why)
{
    bool ok_there;
    std::string why_there;
    if (!channel_.agree(why.empty(), why, &ok_there, &why_there)) {
        return "the peer went away";
    }
    return !why.empty() ? why : ok_there ? "" : "the peer: " + why_there;
}

std::string side::setup()
{
    std::string why = agreed(setup_here());
    return why.empty() ? agreed(connect()) : why;
}

/* Polls the last byte of our buffer for `sn`; false after PEER_PATIENCE
 * without it (a lost put) or when the peer is gone. */
bool side::wait_for(uint8_t sn, bool progress)
{
    volatile uint8_t *last = recv_ + opts_.size - 1;
    std::chrono::steady_clock::time_point deadline{}; /* set at the first check */
    for (;;) {
        for (unsigned spin = 0; spin < SPINS_PER_CHECK; ++spin) {
            if (*last == sn) {
                return true;
            }
            if (progress) {
                ucp_worker_progress(worker_);
            }
        }
        const auto now = std::chrono::steady_clock::now();
        if (deadline == std::chrono::steady_clock::time_point{}) {
            deadline = now + PEER_PATIENCE;
        } else if (now > deadline) {
            failure_ = "sequence number " + std::to_string(sn) + " never arrived";
            return false;
        }
        if (channel_.peer_gone()) {
            failure_ = "the peer went away";
            return false;
        }
    }
}

ucs_status_t side::wait(ucs_status_ptr_t request)
{
    if (!UCS_PTR_IS_PTR(request)) {
        return UCS_PTR_STATUS(request);
    }
    ucs_status_t status;
    while ((status = ucp_request_check_status(request)) == UCS_INPROGRESS) {
        ucp_worker_progress(worker_);
    }
    ucp_request_free(request);
    return status;
}

bool side::put()
{
    ucs_status_ptr_t request = ucp_put_nbx(ep_, send_, opts_.size, remote_address_, rkey_,
                                           &put_param_);
    if (ucs_likely(request == nullptr)) {
        return true;
    }
    /* Not done at once (no shared mapping for this put): wait, as the
     * perftest's completion callback would. */
    ucs_status_t status = wait(request);
    if (status != UCS_OK) {
        failure_ = failed("ucp_put_nbx", status);
        return false;
    }
    return true;
}

std::string side::run(block_times &times)
{
    const unsigned kinds = opts_.split ? NUM_KINDS : 2;
    const bool leader    = channel_.leader();
    uint8_t sn           = 0;
    if (!channel_.barrier()) {
        return "the peer went away";
    }
    perf::tick_rate rate;
    rate.start();
    std::vector<uint64_t> ticks[NUM_KINDS];
    for (unsigned block = 0; block < kinds * opts_.blocks; ++block) {
        /* 0 1 .. k-1, then k-1 .. 0, and again: drift weighs on all alike. */
        const unsigned step  = block % (2 * kinds);
        const auto kind      = block_kind((step < kinds) ? step : 2 * kinds - 1 - step);
        const uint64_t start = perf::ticks();
        for (uint64_t i = 0; i < opts_.iterations; ++i) {
            for (int turn = 0; turn < 2; ++turn) {
                sn = uint8_t(sn % 254 + 1); /* 1..254: never the buffer's initial 0 */
                if ((turn == 0) == leader) {
                    send_[opts_.size - 1] = sn;
                    if (!uses_put(kind)) {
                        raw_store();
                    } else if (!put()) {
                        return failure_;
                    }
                } else if (!wait_for(sn, uses_progress(kind))) {
                    return failure_;
                }
            }
        }
        ticks[kind].push_back(perf::ticks() - start);
    }
    rate.stop();
    const double seconds = rate.seconds_per_tick() / double(2 * opts_.iterations);
    for (unsigned k = 0; k < kinds; ++k) {
        for (uint64_t t : ticks[k]) {
            times[k].push_back(double(t) * seconds);
        }
    }
    return channel_.barrier() ? "" : "the peer went away";
}

void side::teardown()
{
    if (rkey_ != nullptr) {
        ucp_rkey_destroy(rkey_);
    }
    if (ep_ != nullptr) {
        ucp_request_param_t param = {};
        param.op_attr_mask        = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags               = UCP_EP_CLOSE_FLAG_FORCE;
        wait(ucp_ep_close_nbx(ep_, &param));
    }
    for (ucp_mem_h memh : {send_memh_, recv_memh_}) {
        if (memh != nullptr) {
            ucp_mem_unmap(context_, memh);
        }
    }
    if (worker_ != nullptr) {
        ucp_worker_destroy(worker_);
    }
    if (context_ != nullptr) {
        ucp_cleanup(context_);
    }
}

double median(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    return values.empty() ? 0.0 : values[values.size() / 2];
}

int run_peer(const options &opts, perf::oob &channel)
{
    perf::pin_to_cpu(opts.cpus[1]);
    side s(opts, channel);
    std::string why = s.setup();
    if (why.empty()) {
        block_times times;
        why = s.run(times);
    }
    if (!why.empty()) {
        std::fprintf(stderr, "ucp_put_floor (peer): %s\n", why.c_str());
        return 1;
    }
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    options opts;
    int code = parse(argc, argv, &opts);
    if (code != 0) {
        return (code < 0) ? 0 : code;
    }
    perf::peer peer(false, [&opts](perf::oob &channel) { return run_peer(opts, channel); });
    if (!peer.started()) {
        return 1;
    }
    perf::pin_to_cpu(opts.cpus[0]);
    block_times times;
    std::string why;
    {
        side s(opts, peer.channel());
        why = s.setup();
        if (why.empty()) {
            why = s.run(times);
        }
    }
    const int peer_code = peer.join(10000);
    if (!why.empty()) {
        std::fprintf(stderr, "ucp_put_floor: %s\n", why.c_str());
        return 1;
    }
    if (peer_code != 0) {
        std::fprintf(stderr, "ucp_put_floor: the peer failed (exit %d)\n", peer_code);
        return 1;
    }

    const unsigned kinds = opts.split ? NUM_KINDS : 2;
    double usec[NUM_KINDS];
    for (unsigned k = 0; k < kinds; ++k) {
        usec[k] = median(times[k]) * 1e6;
    }
    /* Each part's share of the library's ping-pong time. */
    auto share = [&](block_kind k) { return (usec[k] - usec[RAW]) / usec[PUT] * 100.0; };
    if (opts.csv) {
        std::printf("size,round_trips_per_block,blocks");
        for (unsigned k = 0; k < kinds; ++k) {
            std::printf(",%s", kind_columns[k]);
        }
        std::printf(",library_share_pct\n%zu,%llu,%u", opts.size,
                    static_cast<unsigned long long>(opts.iterations), opts.blocks);
        for (unsigned k = 0; k < kinds; ++k) {
            std::printf(",%.4f", usec[k]);
        }
        std::printf(",%.1f\n", share(PUT));
        return 0;
    }
    std::printf("# ucp_put_floor: %zu-byte ping-pong through the peer's memory, %u blocks of "
                "%llu round trips per kind, CPUs %d,%d\n# library: %s (UCP %s)\n",
                opts.size, opts.blocks, static_cast<unsigned long long>(opts.iterations),
                opts.cpus[0], opts.cpus[1], library_path().c_str(), ucp_get_version_string());
    std::printf("%-46s %8s %14s\n", "one-way latency, median of blocks", "usec", "above raw");
    for (unsigned k = 0; k < kinds; ++k) {
        std::printf("%-46s %8.4f", kind_names[k], usec[k]);
        if (k == RAW) {
            std::printf("\n");
        } else {
            std::printf(" %+13.1f%%\n", share(block_kind(k)));
        }
    }
    std::printf("library share of the put ping-pong: %.1f%% (a library that cost nothing "
                "would take %.0f%% of this one's time)\n",
                share(PUT), 100.0 - share(PUT));
    return 0;
}
