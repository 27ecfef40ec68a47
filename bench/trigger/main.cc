/*
 * ucp_trigger_lat: what starting an operation from a counter costs, against
 * the application starting it when it sees the counter move.
 *
 *   ucp_trigger_lat [-x TLS] [-s SIZE] [-n ROUND_TRIPS] [-b BLOCKS] [--check]
 *
 * A tag ping-pong between this process and a forked peer. Each block
 * pre-posts its ROUND_TRIPS receives, counted on a completion counter
 * `got`, then runs the round trips one of two ways:
 *   - "direct": the application spins on ucp_cntr_read(got) and, when it
 *     reaches the next value, posts the reply with ucp_tag_send_nbx;
 *   - "triggered": every reply is posted before the block, triggered by
 *     got (UCP_EXT_PARAM_FIELD_TRIGGER); the application only spins on
 *     ucp_cntr_read(got) (which progresses) until the last one arrived.
 * Blocks alternate (direct triggered triggered direct ...) so that drift
 * hits both alike. The table gives the median one-way latency of each and
 * their ratio; --check fails when triggered/direct exceeds 1.2 (issue
 * 17's goal). Extension API: runs on ucx-ng only.
 */
#include "../common/peer.h"
#include "../common/ucp_pair.h"

#include <ucp/api/ucp.h>
#include <ucp/api/ucp_ext.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct options {
    const char *tls = nullptr; /* UCX_TLS as set, if not given */
    size_t size     = 8;
    unsigned iters  = 5000;
    unsigned blocks = 10; /* per mode */
    bool check      = false;
};

enum mode { DIRECT, TRIGGERED };
const char *const mode_names[] = {"direct: posted when the application sees the counter",
                                  "triggered: posted before, started by the counter"};

constexpr ucp_tag_t ping_tag = 1;
constexpr double goal_ratio  = 1.2;

class side {
public:
    side(const options &opts, perf::oob &channel) : opts_(opts), channel_(channel) {}

    ~side()
    {
        if (got_ != nullptr) {
            ucp_cntr_destroy(got_);
        }
    }

    /* Empty on success, else why not. */
    std::string setup()
    {
        std::string why = pair_.setup(channel_, opts_.tls, UCP_FEATURE_TAG);
        if (!why.empty()) {
            return why;
        }
        ucp_cntr_params_t cp{};
        if (ucp_cntr_create(pair_.worker, &cp, &got_) != UCS_OK) {
            return "ucp_cntr_create failed (not ucx-ng?)";
        }
        send_.assign(opts_.size, 0x5a);
        recv_.assign(opts_.size, 0);
        return "";
    }

    /* One block; the leader returns its one-way latency in seconds, or a
     * negative value on failure. */
    double run_block(mode m)
    {
        const bool leader   = channel_.leader();
        const uint64_t base = ucp_cntr_read(got_);
        ucp_ext_request_param_t counted{};
        counted.base.op_attr_mask = UCP_OP_ATTR_FIELD_EXT;
        counted.ext_field_mask    = UCP_EXT_PARAM_FIELD_CNTR;
        counted.cntr              = got_;
        for (unsigned i = 0; i < opts_.iters; ++i) {
            if (!posted(ucp_tag_recv_nbx(pair_.worker, recv_.data(), recv_.size(), ping_tag,
                                         ~ucp_tag_t(0), &counted.base))) {
                return -1;
            }
        }
        /* The leader sends i after receiving i replies; the peer answers
         * i after receiving i + 1 pings. */
        const uint64_t lag = leader ? 0 : 1;
        /* Triggered: all but the leader's first ping, which starts the
         * block after the barrier as in direct mode. */
        const unsigned first_triggered = leader ? 1 : 0;
        if (m == TRIGGERED) {
            for (unsigned i = first_triggered; i < opts_.iters; ++i) {
                ucp_ext_request_param_t t{};
                t.base.op_attr_mask = UCP_OP_ATTR_FIELD_EXT;
                t.ext_field_mask    = UCP_EXT_PARAM_FIELD_TRIGGER;
                t.trigger_cntr      = got_;
                t.trigger_threshold = base + i + lag;
                if (!posted(ucp_tag_send_nbx(pair_.ep, send_.data(), send_.size(), ping_tag,
                                             &t.base))) {
                    return -1;
                }
            }
        }
        if (!channel_.barrier()) {
            return -1;
        }
        const ucp_request_param_t plain{};
        const auto start = std::chrono::steady_clock::now();
        for (unsigned i = 0; i < opts_.iters; ++i) {
            while (ucp_cntr_read(got_) < base + i + lag) {
            }
            if (((m == DIRECT) || (i < first_triggered)) &&
                !posted(ucp_tag_send_nbx(pair_.ep, send_.data(), send_.size(), ping_tag, &plain))) {
                return -1;
            }
        }
        while (ucp_cntr_read(got_) < base + opts_.iters) {
        }
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if ((ucp_cntr_read_err(got_) != 0) || !channel_.barrier()) {
            return -1;
        }
        return seconds / (2.0 * opts_.iters);
    }

private:
    /* Requests complete by themselves (counted): let them go. */
    static bool posted(ucs_status_ptr_t r)
    {
        if (UCS_PTR_IS_ERR(r)) {
            return false;
        }
        ucp_request_free(r);
        return true;
    }

    const options &opts_;
    perf::oob &channel_;
    perf::ucp_pair pair_;
    ucp_cntr_h got_ = nullptr;
    std::vector<uint8_t> send_, recv_;
};

/* Both sides: setup, then the blocks in the same order. */
int run_side(const options &opts, perf::oob &channel, std::vector<double> *times)
{
    side s(opts, channel);
    const std::string why = s.setup();
    bool ok_there;
    std::string why_there;
    if (!channel.agree(why.empty(), why, &ok_there, &why_there) || !why.empty() || !ok_there) {
        std::fprintf(stderr, "ucp_trigger_lat: %s\n",
                     !why.empty() ? why.c_str() : why_there.c_str());
        return 1;
    }
    for (unsigned b = 0; b < 2 * opts.blocks; ++b) {
        /* direct triggered triggered direct ... */
        const mode m   = (((b + 1) / 2) % 2 == 0) ? DIRECT : TRIGGERED;
        const double t = s.run_block(m);
        if (t < 0) {
            std::fprintf(stderr, "ucp_trigger_lat: block %u failed\n", b);
            return 1;
        }
        if (times != nullptr) {
            times[m].push_back(t);
        }
    }
    return 0;
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

bool parse(int argc, char **argv, options *opts)
{
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--check") {
            opts->check = true;
            continue;
        }
        if ((i + 1 == argc) || ((arg != "-x") && (arg != "-s") && (arg != "-n") && (arg != "-b"))) {
            return false;
        }
        const char *value = argv[++i];
        const long number = std::atol(value);
        if (arg == "-x") {
            opts->tls = value;
        } else if (number <= 0) {
            return false;
        } else if (arg == "-s") {
            opts->size = size_t(number);
        } else if (arg == "-n") {
            opts->iters = unsigned(number);
        } else {
            opts->blocks = unsigned(number);
        }
    }
    return true;
}

} // namespace

int main(int argc, char **argv)
{
    options opts;
    if (!parse(argc, argv, &opts)) {
        std::fprintf(stderr, "usage: ucp_trigger_lat [-x TLS] [-s SIZE] [-n ROUND_TRIPS] "
                             "[-b BLOCKS] [--check]\n");
        return 2;
    }
    perf::peer other(false,
                     [&opts](perf::oob &channel) { return run_side(opts, channel, nullptr); });
    if (!other.started()) {
        std::fprintf(stderr, "ucp_trigger_lat: cannot start the peer\n");
        return 1;
    }
    std::vector<double> times[2];
    const int rc   = run_side(opts, other.channel(), times);
    const int peer = other.join(10000);
    if ((rc != 0) || (peer != 0)) {
        return 1;
    }
    const double direct = median(times[DIRECT]), triggered = median(times[TRIGGERED]);
    const double ratio = triggered / direct;
    std::printf("ucp_trigger_lat: %zu-byte tag ping-pong, %u round trips x %u blocks each, "
                "UCX_TLS=%s\n",
                opts.size, opts.iters, opts.blocks,
                (opts.tls != nullptr)               ? opts.tls :
                (std::getenv("UCX_TLS") != nullptr) ? std::getenv("UCX_TLS") :
                                                      "(default)");
    std::printf("| %-55s | %12s |\n", "mode", "one-way usec");
    std::printf("| %-55s | %12s |\n", "---", "---:");
    for (mode m : {DIRECT, TRIGGERED}) {
        std::printf("| %-55s | %12.3f |\n", mode_names[m],
                    ((m == DIRECT) ? direct : triggered) * 1e6);
    }
    std::printf("triggered / direct = %.2f (goal <= %.1f)\n", ratio, goal_ratio);
    if (opts.check && (ratio > goal_ratio)) {
        std::printf("FAIL: triggered path slower than %.1fx the direct post\n", goal_ratio);
        return 1;
    }
    return 0;
}
