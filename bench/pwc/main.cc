/*
 * ucp_pwc_lat: a signalled put (put with completion ids, ucp/api/ucp_pwc.h)
 * against the pattern a UCX 1.13 user writes for it today.
 *
 *   ucp_pwc_lat -m MODE [-x TLS] [-s SIZE] [-n ITERATIONS] [-w WARMUP]
 *
 * Latency modes, a ping-pong between this process and a forked peer: each
 * side writes SIZE bytes into the other's region and tells it, and the
 * other answers the same way once it knows the data is there.
 *   pwc      ucp_pwc_put with a remote id; the target probes for it
 *            (ucx-ng only);
 *   pattern  ucp_put_nbx, ucp_worker_fence, then ucp_am_send_nbx carrying
 *            the id, which the target's AM handler records (UCX 1.13 too);
 *   note     the AM with the id alone, no data: the floor of any
 *            notification (UCX 1.13 too).
 * WARMUP rounds (as many as ITERATIONS, at most 10000: ucx_perftest's
 * warm-up) run before the clock:
 * the first rounds pay the wireup, first-touch page faults and the two
 * processes settling on their cores, which ITERATIONS would otherwise
 * average in (tens of microseconds a round at first).
 * Bandwidth modes, ITERATIONS puts of SIZE bytes one way:
 *   bw-pwc   ucp_pwc_put with both ids, until every local completion came
 *            and the target probed every remote one;
 *   bw-put   ucp_put_nbx, then ucp_ep_flush_nbx.
 *
 * Prints "MODE SIZE one_way_us X" or "MODE SIZE MBps X"; the data the
 * target ends with is checked. bench/pwc/compare.py runs them on both
 * libraries. The extension calls are looked up at run time, so the tool
 * starts on UCX 1.13 (where only pattern and bw-put run).
 */
#include "../common/peer.h"
#include "../common/ucp_pair.h"

#include <ucp/api/ucp.h>
#include <ucp/api/ucp_pwc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <dlfcn.h>

namespace {

enum class mode { PWC, PATTERN, NOTE_ONLY, BW_PWC, BW_PUT };

struct options {
    mode m           = mode::PWC;
    const char *name = "pwc";
    const char *tls  = nullptr;
    size_t size      = 8;
    unsigned iters   = 10000;
    int warmup       = -1; /* latency modes: untimed rounds first; -1: default */
};

constexpr unsigned notify_am_id = 7;
constexpr unsigned warmup_puts  = 8; /* bandwidth modes, before the clock */

/* The extension calls, found at run time (absent on UCX 1.13). */
struct pwc_api {
    decltype(&ucp_pwc_put) put     = nullptr;
    decltype(&ucp_pwc_probe) probe = nullptr;

    bool load()
    {
        put   = reinterpret_cast<decltype(put)>(dlsym(RTLD_DEFAULT, "ucp_pwc_put"));
        probe = reinterpret_cast<decltype(probe)>(dlsym(RTLD_DEFAULT, "ucp_pwc_probe"));
        return (put != nullptr) && (probe != nullptr);
    }
};

/* Message `round`: every byte the same, so writing and checking it costs
 * a memset and a scan, not a loop of arithmetic the transfer would hide in. */
uint8_t round_byte(uint64_t round)
{
    return uint8_t(round * 7 + 1);
}

class side {
public:
    side(const options &opts, perf::oob &channel) : opts_(opts), channel_(channel) {}

    ~side()
    {
        if (rkey_ != nullptr) {
            ucp_rkey_destroy(rkey_);
        }
        if (memh_ != nullptr) {
            ucp_mem_unmap(pair_.context, memh_);
        }
    }

    std::string setup()
    {
        const bool needs_pwc = (opts_.m == mode::PWC) || (opts_.m == mode::BW_PWC);
        if (needs_pwc && !api_.load()) {
            return "this library has no ucp_pwc_put (not ucx-ng?)";
        }
        std::string why = pair_.setup(channel_, opts_.tls, UCP_FEATURE_RMA | UCP_FEATURE_AM);
        if (!why.empty()) {
            return why;
        }
        ucp_mem_map_params_t mp{};
        mp.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
        mp.length     = opts_.size;
        mp.flags      = UCP_MEM_MAP_ALLOCATE;
        if (ucp_mem_map(pair_.context, &mp, &memh_) != UCS_OK) {
            memh_ = nullptr;
            return "ucp_mem_map failed";
        }
        ucp_mem_attr_t attr{};
        attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
        if (ucp_mem_query(memh_, &attr) != UCS_OK) {
            return "ucp_mem_query failed";
        }
        region_ = static_cast<uint8_t *>(attr.address);
        std::memset(region_, 0, opts_.size);
        void *key;
        size_t key_length;
        if (ucp_rkey_pack(pair_.context, memh_, &key, &key_length) != UCS_OK) {
            return "ucp_rkey_pack failed";
        }
        std::vector<uint8_t> mine(static_cast<uint8_t *>(key),
                                  static_cast<uint8_t *>(key) + key_length),
            theirs;
        ucp_rkey_buffer_release(key);
        uint64_t address = reinterpret_cast<uintptr_t>(region_);
        mine.insert(mine.end(), reinterpret_cast<uint8_t *>(&address),
                    reinterpret_cast<uint8_t *>(&address) + sizeof(address));
        if (!channel_.exchange(mine, &theirs) || (theirs.size() < sizeof(uint64_t))) {
            return "key exchange failed";
        }
        std::memcpy(&remote_, theirs.data() + theirs.size() - sizeof(uint64_t), sizeof(remote_));
        if (ucp_ep_rkey_unpack(pair_.ep, theirs.data(), &rkey_) != UCS_OK) {
            rkey_ = nullptr;
            return "ucp_ep_rkey_unpack failed";
        }
        source_.resize(opts_.size);
        if ((opts_.m == mode::PATTERN) || (opts_.m == mode::NOTE_ONLY)) {
            ucp_am_handler_param_t hp{};
            hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                            UCP_AM_HANDLER_PARAM_FIELD_ARG;
            hp.id  = notify_am_id;
            hp.cb  = on_notify;
            hp.arg = this;
            if (ucp_worker_set_am_recv_handler(pair_.worker, &hp) != UCS_OK) {
                return "ucp_worker_set_am_recv_handler failed";
            }
        }
        return "";
    }

    /* The leader's result: one-way microseconds or MB/s; negative: failed. */
    double run()
    {
        if (!channel_.barrier()) {
            return -1;
        }
        switch (opts_.m) {
        case mode::PWC:
        case mode::PATTERN:
        case mode::NOTE_ONLY:
            return ping_pong();
        case mode::BW_PWC:
        case mode::BW_PUT:
            return bandwidth();
        }
        return -1;
    }

private:
    static ucs_status_t on_notify(void *arg, const void *header, size_t header_length, void *,
                                  size_t, const ucp_am_recv_param_t *)
    {
        auto *self = static_cast<side *>(arg);
        if (header_length == sizeof(uint64_t)) {
            std::memcpy(&self->notified_, header, sizeof(uint64_t));
        }
        return UCS_OK;
    }

    static void release(ucs_status_ptr_t request)
    {
        if (UCS_PTR_IS_PTR(request)) {
            ucp_request_free(request);
        }
    }

    /* Writes message `round` to the peer and tells it. */
    bool send_round(uint64_t round)
    {
        std::memset(source_.data(), round_byte(round), opts_.size);
        if (opts_.m == mode::PWC) {
            const ucp_cid_t id{round, nullptr, 0};
            return api_.put(pair_.ep, source_.data(), opts_.size, remote_, rkey_, nullptr, &id,
                            UCP_PWC_FLAG_NO_LCE) == UCS_OK;
        }
        ucp_request_param_t param{};
        if (opts_.m == mode::PATTERN) {
            ucs_status_ptr_t put = ucp_put_nbx(pair_.ep, source_.data(), opts_.size, remote_, rkey_,
                                               &param);
            if (UCS_PTR_IS_ERR(put)) {
                return false;
            }
            /* The put completes locally only: the fence orders the note after it. */
            release(put);
            if (ucp_worker_fence(pair_.worker) != UCS_OK) {
                return false;
            }
        }
        ucs_status_ptr_t note = ucp_am_send_nbx(pair_.ep, notify_am_id, &round, sizeof(round),
                                                nullptr, 0, &param);
        if (UCS_PTR_IS_ERR(note)) {
            return false;
        }
        release(note);
        return true;
    }

    /* Waits until the peer's message `round` is here. */
    bool await_round(uint64_t round)
    {
        if (opts_.m == mode::PWC) {
            ucp_pwc_probe_params_t params{};
            params.field_mask = UCP_PWC_PROBE_FIELD_FLAGS;
            params.flags      = UCP_PWC_PROBE_REMOTE;
            for (;;) {
                ucp_pwc_completion_t c;
                size_t count;
                if (api_.probe(pair_.worker, &params, &c, 1, &count, nullptr) != UCS_OK) {
                    return false;
                }
                if (count == 1) {
                    return c.cid.u64 == round;
                }
            }
        }
        while (notified_ != round) {
            ucp_worker_progress(pair_.worker);
        }
        return true;
    }

    /* Progresses until our operations are over. */
    bool drain()
    {
        if (opts_.m == mode::PWC) {
            size_t count, pending = 1;
            while (pending != 0) {
                if (api_.probe(pair_.worker, nullptr, nullptr, 0, &count, &pending) != UCS_OK) {
                    return false;
                }
            }
            return true;
        }
        const ucp_request_param_t param{};
        return pair_.wait(ucp_ep_flush_nbx(pair_.ep, &param)) == UCS_OK;
    }

    bool region_holds(uint64_t round) const
    {
        const uint8_t expected = round_byte(round);
        return std::all_of(region_, region_ + opts_.size,
                           [expected](uint8_t b) { return b == expected; });
    }

    /* Ping-pong rounds first .. last; the leader sends first. */
    bool rounds(uint64_t first, uint64_t last)
    {
        const bool leader = channel_.leader();
        for (uint64_t round = first; round <= last; ++round) {
            if (leader) {
                if (!send_round(round) || !await_round(round)) {
                    return false;
                }
            } else if (!await_round(round) || !send_round(round)) {
                return false;
            }
        }
        return true;
    }

    double ping_pong()
    {
        const uint64_t last = uint64_t(opts_.warmup) + opts_.iters;
        if (!rounds(1, opts_.warmup)) {
            return -1;
        }
        const auto start = std::chrono::steady_clock::now();
        if (!rounds(uint64_t(opts_.warmup) + 1, last)) {
            return -1;
        }
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        /* Both ended with the other's last message in place, and their own
         * last one gone (its steps need our progress: a flush, the id). */
        if (((opts_.m != mode::NOTE_ONLY) && !region_holds(last)) || !drain() ||
            !channel_.barrier()) {
            return -1;
        }
        return seconds * 1e6 / (2.0 * opts_.iters);
    }

    /* `count` puts of SIZE bytes, until all are complete (bare: flushed;
     * pwc: every local completion in, each after its data reached the
     * target and its id went out). */
    bool stream(unsigned count)
    {
        if (opts_.m == mode::BW_PUT) {
            ucp_request_param_t param{};
            for (unsigned i = 0; i < count; ++i) {
                ucs_status_ptr_t put = ucp_put_nbx(pair_.ep, source_.data(), opts_.size, remote_,
                                                   rkey_, &param);
                if (UCS_PTR_IS_ERR(put)) {
                    return false;
                }
                release(put);
            }
            return pair_.wait(ucp_ep_flush_nbx(pair_.ep, &param)) == UCS_OK;
        }
        for (unsigned i = 0; i < count; ++i) {
            const ucp_cid_t id{i, nullptr, 0};
            ucs_status_t status;
            while ((status = api_.put(pair_.ep, source_.data(), opts_.size, remote_, rkey_, &id,
                                      &id, 0)) == UCS_ERR_NO_RESOURCE) {
                size_t n;
                api_.probe(pair_.worker, nullptr, nullptr, 0, &n, nullptr);
            }
            if (status != UCS_OK) {
                return false;
            }
        }
        ucp_pwc_probe_params_t params{};
        params.field_mask = UCP_PWC_PROBE_FIELD_FLAGS;
        params.flags      = UCP_PWC_PROBE_LOCAL;
        std::vector<ucp_pwc_completion_t> batch(64);
        for (unsigned done = 0; done < count;) {
            size_t n;
            if (api_.probe(pair_.worker, &params, batch.data(), batch.size(), &n, nullptr) !=
                UCS_OK) {
                return false;
            }
            for (size_t i = 0; i < n; ++i) {
                if (batch[i].status != UCS_OK) {
                    return false;
                }
            }
            done += unsigned(n);
        }
        return true;
    }

    double bandwidth()
    {
        if (!channel_.leader()) {
            return target_side();
        }
        std::memset(source_.data(), round_byte(1), opts_.size);
        /* Untimed first: the endpoint wires up (sends that name the peer's
         * ep wait for it), the pages are touched. */
        if (!stream(warmup_puts)) {
            return -1;
        }
        const auto start = std::chrono::steady_clock::now();
        if (!stream(opts_.iters)) {
            return -1;
        }
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        uint8_t ok = 0;
        if (!channel_.send_byte(1) || !channel_.recv_byte(&ok) || (ok != 1)) {
            return -1;
        }
        return double(opts_.size) * opts_.iters / seconds / 1e6;
    }

    /* One probe for remote ids; adds how many came to *ids. */
    bool take_ids(unsigned *ids)
    {
        ucp_pwc_completion_t batch[64];
        size_t count;
        ucp_pwc_probe_params_t params{};
        params.field_mask = UCP_PWC_PROBE_FIELD_FLAGS;
        params.flags      = UCP_PWC_PROBE_REMOTE;
        if (api_.probe(pair_.worker, &params, batch, 64, &count, nullptr) != UCS_OK) {
            return false;
        }
        *ids += unsigned(count);
        return true;
    }

    /* Progresses (and with pwc, probes every id) until the leader is done. */
    double target_side()
    {
        unsigned ids = 0;
        /* The channel is a socket: looking at it is a system call, so only
         * now and then. */
        for (unsigned spin = 0; ((++spin % 256) != 0) || !channel_.ready();) {
            if (opts_.m != mode::BW_PWC) {
                ucp_worker_progress(pair_.worker);
            } else if (!take_ids(&ids)) {
                return -1;
            }
        }
        uint8_t done;
        if (!channel_.recv_byte(&done)) {
            return -1;
        }
        /* The leader's local completions come after the ids went out: the
         * last ones may still be on their way. */
        while ((opts_.m == mode::BW_PWC) && (ids < warmup_puts + opts_.iters)) {
            if (!take_ids(&ids)) {
                return -1;
            }
        }
        const bool ok = region_holds(1) &&
                        ((opts_.m != mode::BW_PWC) || (ids == warmup_puts + opts_.iters));
        return channel_.send_byte(ok ? 1 : 0) ? 0 : -1;
    }

    const options &opts_;
    perf::oob &channel_;
    perf::ucp_pair pair_;
    pwc_api api_;
    ucp_mem_h memh_  = nullptr;
    uint8_t *region_ = nullptr;
    ucp_rkey_h rkey_ = nullptr;
    uint64_t remote_ = 0;
    std::vector<uint8_t> source_;
    uint64_t notified_ = 0; /* set by on_notify, inside progress */
};

int run_side(const options &opts, perf::oob &channel, double *result)
{
    side s(opts, channel);
    const std::string why = s.setup();
    bool ok_there;
    std::string why_there;
    if (!channel.agree(why.empty(), why, &ok_there, &why_there) || !why.empty() || !ok_there) {
        std::fprintf(stderr, "ucp_pwc_lat: %s\n", !why.empty() ? why.c_str() : why_there.c_str());
        return 1;
    }
    const double value = s.run();
    if (value < 0) {
        std::fprintf(stderr, "ucp_pwc_lat: the run failed\n");
        return 1;
    }
    if (result != nullptr) {
        *result = value;
    }
    return 0;
}

bool parse(int argc, char **argv, options *opts)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string arg = argv[i], value = argv[i + 1];
        if (arg == "-m") {
            opts->name = argv[i + 1];
            if (value == "pwc") {
                opts->m = mode::PWC;
            } else if (value == "pattern") {
                opts->m = mode::PATTERN;
            } else if (value == "note") {
                opts->m = mode::NOTE_ONLY;
            } else if (value == "bw-pwc") {
                opts->m = mode::BW_PWC;
            } else if (value == "bw-put") {
                opts->m = mode::BW_PUT;
            } else {
                return false;
            }
        } else if (arg == "-x") {
            opts->tls = argv[i + 1];
        } else if ((arg == "-s") && (std::atol(argv[i + 1]) > 0)) {
            opts->size = size_t(std::atol(argv[i + 1]));
        } else if ((arg == "-n") && (std::atol(argv[i + 1]) > 0)) {
            opts->iters = unsigned(std::atol(argv[i + 1]));
        } else if ((arg == "-w") && (std::atol(argv[i + 1]) >= 0)) {
            opts->warmup = int(std::atol(argv[i + 1]));
        } else {
            return false;
        }
    }
    if (opts->warmup < 0) {
        opts->warmup = int(std::min(opts->iters, 10000u));
    }
    return (argc % 2) == 1;
}

} // namespace

int main(int argc, char **argv)
{
    options opts;
    if (!parse(argc, argv, &opts)) {
        std::fprintf(stderr, "usage: ucp_pwc_lat [-m pwc|pattern|note|bw-pwc|bw-put] [-x TLS] "
                             "[-s SIZE] [-n ITERATIONS] [-w WARMUP]\n");
        return 2;
    }
    perf::peer other(false,
                     [&opts](perf::oob &channel) { return run_side(opts, channel, nullptr); });
    if (!other.started()) {
        std::fprintf(stderr, "ucp_pwc_lat: cannot start the peer\n");
        return 1;
    }
    double value   = 0;
    const int rc   = run_side(opts, other.channel(), &value);
    const int peer = other.join(30000);
    if ((rc != 0) || (peer != 0)) {
        return 1;
    }
    const bool bw = (opts.m == mode::BW_PWC) || (opts.m == mode::BW_PUT);
    std::printf("%s %zu %s %.3f\n", opts.name, opts.size, bw ? "MBps" : "one_way_us", value);
    return 0;
}
