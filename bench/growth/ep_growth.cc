/*
 * ucp_ep_growth: how the cost of a worker grows with its endpoints.
 *
 * Two processes (this one and a forked peer). This side connects more and
 * more endpoints (1, 64, 1024, 4096 by default) to the peer's worker, each
 * one made usable by an 8-byte tag message the peer receives, and at each
 * count measures:
 *   - the time to create and connect the new endpoints, per endpoint;
 *   - the resident memory each new endpoint costs, on this side and on the
 *     peer (which holds the other end of every connection);
 *   - the file descriptors each process has open;
 *   - the one-way latency of an 8-byte tag ping-pong on the first endpoint
 *     (`-m one`) or on every endpoint in turn (`-m spread`), while all the
 *     others stay connected.
 * At the end it closes all but the first endpoint and counts the file
 * descriptors again, straight away. Public UCX 1.13 API only: it runs on
 * Debian's UCX too (LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu), which is how
 * bench/growth/compare.py puts both in one table.
 */
#include "../common/clock.h"
#include "../common/peer.h"
#include "../common/ucp_pair.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

namespace {

constexpr ucp_tag_t TAG_HELLO = 1, TAG_PING = 2, TAG_PONG = 3;
constexpr unsigned BLOCKS = 5; /* latency blocks per count; the median is kept */

struct options {
    std::string tls = "posix,self";
    std::vector<unsigned> counts{1, 64, 1024, 4096};
    unsigned iterations = 20000; /* round trips per latency block */
    bool spread         = false; /* ping on every endpoint in turn */
    int cpus[2]         = {0, 1};
};

/* One count's figures, as one side measured them. */
struct sample {
    double create_us_per_ep = 0;
    long rss_kb             = 0;
    long fds                = 0;
    double one_way_us       = 0;
};

long rss_kb()
{
    long pages = 0, resident = 0;
    FILE *statm = std::fopen("/proc/self/statm", "r");
    if (statm != nullptr) {
        if (std::fscanf(statm, "%ld %ld", &pages, &resident) != 2) {
            resident = 0;
        }
        std::fclose(statm);
    }
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

long open_fds()
{
    DIR *dir = opendir("/proc/self/fd");
    if (dir == nullptr) {
        return -1;
    }
    long n = 0;
    while (readdir(dir) != nullptr) {
        ++n;
    }
    closedir(dir);
    return n - 3; /* ".", ".." and the directory's own descriptor */
}

/* A connection per endpoint needs a descriptor each, on both sides. */
void raise_fd_limit()
{
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
        limit.rlim_cur = limit.rlim_max;
        setrlimit(RLIMIT_NOFILE, &limit);
    }
}

std::string failed(const char *what, ucs_status_t status)
{
    return std::string(what) + ": " + ucs_status_string(status);
}

/* Progresses until every request completes; the first failure, if any. */
ucs_status_t wait_all(ucp_worker_h worker, std::vector<ucs_status_ptr_t> &requests)
{
    ucs_status_t result = UCS_OK;
    for (ucs_status_ptr_t request : requests) {
        const ucs_status_t status = perf::wait_request(worker, request);
        if ((status != UCS_OK) && (result == UCS_OK)) {
            result = status;
        }
    }
    requests.clear();
    return result;
}

class side {
public:
    side(const options &opts, perf::oob &channel) : opts_(opts), channel_(channel) {}
    ~side();

    std::string setup();
    /* Grows to `count` endpoints (this side) or answers for them (peer). */
    std::string grow(unsigned count, sample *s);
    std::string ping_pong(sample *s);
    /* Closes all but the first endpoint; the descriptors left open. */
    std::string close_extra(long *fds);

private:
    std::string send_hellos(size_t first);
    std::string recv_tagged(ucp_tag_t tag, unsigned how_many);

    const options &opts_;
    perf::oob &channel_;
    perf::ucp_pair pair_;
    std::vector<ucp_ep_h> eps_; /* eps_[0] is pair_.ep */
    unsigned answered_ = 0;     /* peer: hellos received so far */
    size_t greeted_    = 0;     /* leader: eps_[0, greeted_) sent their hello */
    uint64_t payload_  = 0;
    ucp_request_param_t param_{};
};

side::~side()
{
    std::vector<ucs_status_ptr_t> requests;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    for (size_t i = 1; i < eps_.size(); ++i) {
        requests.push_back(ucp_ep_close_nbx(eps_[i], &param));
    }
    if (pair_.worker != nullptr) {
        wait_all(pair_.worker, requests);
    }
}

std::string side::setup()
{
    std::string why = pair_.setup(channel_, opts_.tls.c_str(), UCP_FEATURE_TAG);
    bool ok_there;
    std::string why_there;
    if (!channel_.agree(why.empty(), why, &ok_there, &why_there)) {
        return "the peer went away";
    }
    if (!why.empty() || !ok_there) {
        return !why.empty() ? why : "the peer: " + why_there;
    }
    eps_.push_back(pair_.ep);
    return "";
}

std::string side::send_hellos(size_t first)
{
    std::vector<ucs_status_ptr_t> requests;
    for (size_t i = first; i < eps_.size(); ++i) {
        requests.push_back(ucp_tag_send_nbx(eps_[i], &payload_, sizeof(payload_), TAG_HELLO,
                                            &param_));
    }
    ucs_status_t status = wait_all(pair_.worker, requests);
    return (status == UCS_OK) ? "" : failed("ucp_tag_send_nbx", status);
}

std::string side::recv_tagged(ucp_tag_t tag, unsigned how_many)
{
    uint64_t buffer;
    std::vector<ucs_status_ptr_t> requests(1);
    for (unsigned i = 0; i < how_many; ++i) {
        requests[0] = ucp_tag_recv_nbx(pair_.worker, &buffer, sizeof(buffer), tag, ~ucp_tag_t(0),
                                       &param_);
        ucs_status_t status = wait_all(pair_.worker, requests);
        if (status != UCS_OK) {
            return failed("ucp_tag_recv_nbx", status);
        }
        requests.resize(1);
    }
    return "";
}

std::string side::grow(unsigned count, sample *s)
{
    if (!channel_.barrier()) {
        return "the peer went away";
    }
    const auto start = std::chrono::steady_clock::now();
    std::string why;
    unsigned added;
    if (channel_.leader()) {
        const size_t first = greeted_; /* the first call greets eps_[0] too */
        ucp_ep_params_t params{};
        params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        params.address    = reinterpret_cast<const ucp_address_t *>(pair_.remote_address.data());
        while (eps_.size() < count) {
            ucp_ep_h ep;
            ucs_status_t status = ucp_ep_create(pair_.worker, &params, &ep);
            if (status != UCS_OK) {
                why = failed("ucp_ep_create", status) + " at endpoint " +
                      std::to_string(eps_.size());
                break;
            }
            eps_.push_back(ep);
        }
        added = unsigned(eps_.size() - first);
        if (why.empty()) {
            why      = send_hellos(first);
            greeted_ = eps_.size();
        }
        /* A send is complete once its buffer may be reused: a connection
         * may still need this side's progress, so progress until the peer
         * says it has every message. */
        while (!channel_.ready()) {
            ucp_worker_progress(pair_.worker);
        }
        uint8_t got_all;
        if (!channel_.recv_byte(&got_all)) {
            return "the peer went away";
        }
    } else {
        added = count - answered_; /* counts ascend, the first is >= 1 */
        why   = recv_tagged(TAG_HELLO, added);
        answered_ += added;
        if (!channel_.send_byte(why.empty())) {
            return "the peer went away";
        }
    }
    bool ok_there;
    std::string why_there;
    if (!channel_.agree(why.empty(), why, &ok_there, &why_there)) {
        return "the peer went away";
    }
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    if (!why.empty() || !ok_there) {
        return !why.empty() ? why : "the peer: " + why_there;
    }
    s->create_us_per_ep = us / std::max(added, 1u);
    s->rss_kb           = rss_kb();
    s->fds              = open_fds();
    return "";
}

std::string side::ping_pong(sample *s)
{
    std::vector<double> blocks;
    std::vector<ucs_status_ptr_t> requests(1);
    const unsigned warmup = std::max(opts_.iterations / 10, 1u);
    for (unsigned block = 0; block <= BLOCKS; ++block) { /* block 0 warms up */
        const unsigned n = (block == 0) ? warmup : opts_.iterations;
        if (!channel_.barrier()) {
            return "the peer went away";
        }
        const uint64_t start = perf::ticks();
        perf::tick_rate rate;
        rate.start();
        for (unsigned i = 0; i < n; ++i) {
            if (channel_.leader()) {
                ucp_ep_h ep = eps_[opts_.spread ? (i % eps_.size()) : 0];
                requests[0] = ucp_tag_send_nbx(ep, &payload_, sizeof(payload_), TAG_PING, &param_);
                if (wait_all(pair_.worker, requests) != UCS_OK) {
                    return "ping failed";
                }
                requests.resize(1);
                std::string why = recv_tagged(TAG_PONG, 1);
                if (!why.empty()) {
                    return why;
                }
            } else {
                std::string why = recv_tagged(TAG_PING, 1);
                if (!why.empty()) {
                    return why;
                }
                requests[0] = ucp_tag_send_nbx(pair_.ep, &payload_, sizeof(payload_), TAG_PONG,
                                               &param_);
                if (wait_all(pair_.worker, requests) != UCS_OK) {
                    return "pong failed";
                }
                requests.resize(1);
            }
        }
        rate.stop();
        if (block > 0) {
            blocks.push_back(double(perf::ticks() - start) * rate.seconds_per_tick() * 1e6 /
                             (2.0 * n));
        }
    }
    std::sort(blocks.begin(), blocks.end());
    s->one_way_us = blocks[blocks.size() / 2];
    return "";
}

std::string side::close_extra(long *fds)
{
    /* A close in flush mode may wait for the peer's answer: the peer
     * progresses until this side says its closes are done. */
    uint8_t closed = 1;
    if (channel_.leader()) {
        std::vector<ucs_status_ptr_t> requests;
        ucp_request_param_t param{}; /* flush mode: a close the peer is told of */
        for (size_t i = 1; i < eps_.size(); ++i) {
            requests.push_back(ucp_ep_close_nbx(eps_[i], &param));
        }
        ucs_status_t status = wait_all(pair_.worker, requests);
        eps_.resize(1);
        closed = (status == UCS_OK);
        if (!channel_.send_byte(closed)) {
            return "the peer went away";
        }
    } else {
        while (!channel_.ready()) {
            ucp_worker_progress(pair_.worker);
        }
        if (!channel_.recv_byte(&closed)) {
            return "the leader went away";
        }
    }
    if (!closed) {
        return "ucp_ep_close_nbx failed";
    }
    /* A round of pings on the first endpoint: more progress on both sides
     * before the descriptors are counted. */
    sample s;
    std::string why = ping_pong(&s);
    *fds            = open_fds();
    return why;
}

/* The peer's figures travel as a fixed record over the oob channel. */
struct peer_report {
    sample samples[16];
    long fds_after_close;
};

int run_peer(const options &opts, perf::oob &channel)
{
    raise_fd_limit();
    perf::pin_to_cpu(opts.cpus[1]);
    peer_report report{};
    std::string why;
    {
        side s(opts, channel);
        why = s.setup();
        for (size_t i = 0; why.empty() && (i < opts.counts.size()); ++i) {
            why = s.grow(opts.counts[i], &report.samples[i]);
            if (why.empty()) {
                why = s.ping_pong(&report.samples[i]);
            }
        }
        if (why.empty()) {
            why = s.close_extra(&report.fds_after_close);
        }
        if (why.empty() && !channel.send(&report, sizeof(report))) {
            why = "the leader went away";
        }
    }
    if (!why.empty()) {
        std::fprintf(stderr, "ucp_ep_growth (peer): %s\n", why.c_str());
        return 1;
    }
    return 0;
}

void usage()
{
    std::fprintf(stderr, "usage: ucp_ep_growth [-x TLS] [-e COUNT[,COUNT...]] [-n ITERS] "
                         "[-m one|spread] [-c CPU0,CPU1]\n"
                         "  -x  UCX_TLS for both processes (posix,self)\n"
                         "  -e  endpoint counts, ascending, at most 16 (1,64,1024,4096)\n"
                         "  -n  round trips per latency block (20000)\n"
                         "  -m  ping on the first endpoint, or on every endpoint in turn (one)\n"
                         "  -c  the two processes' CPUs (0,1)\n");
}

/* 0: run; > 0: exit with it. */
int parse(int argc, char **argv, options *opts)
{
    int c;
    while ((c = getopt(argc, argv, "x:e:n:m:c:h")) != -1) {
        switch (c) {
        case 'x':
            opts->tls = optarg;
            break;
        case 'e': {
            opts->counts.clear();
            char *end = optarg;
            do {
                unsigned long n = std::strtoul(end + (end != optarg), &end, 10);
                if ((n == 0) || (n > (1u << 20)) ||
                    (!opts->counts.empty() && (n <= opts->counts.back()))) {
                    usage();
                    return 2;
                }
                opts->counts.push_back(unsigned(n));
            } while (*end == ',');
            if ((*end != '\0') || (opts->counts.size() > 16)) {
                usage();
                return 2;
            }
            break;
        }
        case 'n':
            opts->iterations = unsigned(std::strtoul(optarg, nullptr, 10));
            if (opts->iterations == 0) {
                usage();
                return 2;
            }
            break;
        case 'm':
            if (std::strcmp(optarg, "one") != 0 && std::strcmp(optarg, "spread") != 0) {
                usage();
                return 2;
            }
            opts->spread = (std::strcmp(optarg, "spread") == 0);
            break;
        case 'c':
            if (std::sscanf(optarg, "%d,%d", &opts->cpus[0], &opts->cpus[1]) != 2) {
                usage();
                return 2;
            }
            break;
        default:
            usage();
            return 2;
        }
    }
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    options opts;
    int code = parse(argc, argv, &opts);
    if (code != 0) {
        return code;
    }
    raise_fd_limit();
    perf::peer peer(false, [&opts](perf::oob &channel) { return run_peer(opts, channel); });
    if (!peer.started()) {
        return 1;
    }
    perf::pin_to_cpu(opts.cpus[0]);
    std::vector<sample> here(opts.counts.size());
    peer_report there{};
    long fds_after_close = 0;
    std::string why;
    {
        side s(opts, peer.channel());
        why = s.setup();
        for (size_t i = 0; why.empty() && (i < opts.counts.size()); ++i) {
            why = s.grow(opts.counts[i], &here[i]);
            if (why.empty()) {
                why = s.ping_pong(&here[i]);
            }
        }
        if (why.empty()) {
            why = s.close_extra(&fds_after_close);
        }
        if (why.empty() && !peer.channel().recv(&there, sizeof(there))) {
            why = "the peer went away";
        }
    }
    const int peer_code = peer.join(10000);
    if (!why.empty() || (peer_code != 0)) {
        std::fprintf(stderr, "ucp_ep_growth: %s\n", !why.empty() ? why.c_str() : "the peer failed");
        return 1;
    }

    std::printf("# ucp_ep_growth: UCX_TLS=%s, UCP %s, 8-byte tag ping-pong on %s\n",
                opts.tls.c_str(), ucp_get_version_string(),
                opts.spread ? "every endpoint in turn" : "the first endpoint");
    std::printf("# memory per endpoint: resident growth since 1 endpoint / added endpoints\n");
    std::printf("%8s %12s %12s %12s %10s %10s %10s %8s\n", "eps", "connect_us", "kb_per_ep",
                "kb_per_ep_pr", "fds", "fds_peer", "one_way_us", "vs_1ep");
    for (size_t i = 0; i < opts.counts.size(); ++i) {
        const unsigned n   = opts.counts[i];
        const double grown = double(n - opts.counts[0]);
        const sample &s = here[i], &p = there.samples[i];
        std::printf("%8u %12.2f %12.2f %12.2f %10ld %10ld %10.4f %8.3f\n", n, s.create_us_per_ep,
                    (grown > 0) ? double(s.rss_kb - here[0].rss_kb) / grown : 0.0,
                    (grown > 0) ? double(p.rss_kb - there.samples[0].rss_kb) / grown : 0.0, s.fds,
                    p.fds, s.one_way_us, s.one_way_us / here[0].one_way_us);
    }
    std::printf("after closing all but one endpoint: fds %ld, fds_peer %ld\n", fds_after_close,
                there.fds_after_close);
    return 0;
}
