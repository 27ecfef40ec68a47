/*
 * ucp_soak: a long-running two-process check of UCP tag matching. Both
 * processes send and receive at once; every byte is checked, and resident
 * memory and open descriptors must stop growing after a warm-up. Public
 * UCP API only, so the same binary runs on UCX 1.13 too
 * (LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu). See docs/reliability.md.
 */
#include "soak_options.h"
#include "soak_sampler.h"
#include "soak_traffic.h"

#include "../../bench/common/oob.h"
#include "../../bench/common/peer.h"
#include "../../bench/perftest/sock.h"
#include "../ucp/ucp_peer.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <dlfcn.h>
#include <sys/resource.h>

namespace soak {
namespace {

using clock_type = std::chrono::steady_clock;

constexpr double MiB = 1024.0 * 1024.0;
constexpr double GiB = MiB * 1024.0;

/* What one side tells the other at the end; both run the same binary. */
struct side_report {
    stream_stats tx, rx;
    double seconds      = 0;
    double cpu_seconds  = 0;  /* user + system of this process: rates on a loaded host */
    uint64_t rss[4]     = {}; /* start, after warm-up, largest after warm-up, end */
    unsigned fds[4]     = {};
    bool growth_checked = false;
    bool growth_ok      = false;
    bool stalled        = false;
};

double cpu_seconds()
{
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

double seconds_since(clock_type::time_point t0)
{
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

std::string library_path()
{
    Dl_info info;
    if ((dladdr(reinterpret_cast<void *>(&ucp_init_version), &info) != 0) &&
        (info.dli_fname != nullptr)) {
        return info.dli_fname;
    }
    return "?";
}

/* The transports of the endpoint's lanes, from ucp_ep_print_info. */
std::string ep_info(ucp_ep_h ep)
{
    char *text  = nullptr;
    size_t size = 0;
    FILE *f     = open_memstream(&text, &size);
    if (f == nullptr) {
        return "";
    }
    ucp_ep_print_info(ep, f);
    std::fclose(f);
    std::string result(text, size);
    std::free(text);
    return result;
}

void on_ep_error(void *arg, ucp_ep_h, ucs_status_t status)
{
    static_cast<failure_record *>(arg)->note(status, "ep error callback");
}

void print_side(char name, const side_report &r, bool allow_missing_imm_info)
{
    const stream_stats &t = r.tx, &x = r.rx;
    std::printf("soak %c: sent %llu msgs, %.3f GiB (%llu sync); received %llu msgs, %.3f GiB "
                "[exact %llu, wildcard %llu, unexpected %llu, probe %llu, cancel %llu]\n",
                name, (unsigned long long)t.messages, double(t.bytes) / GiB,
                (unsigned long long)t.sync_sends, (unsigned long long)x.messages,
                double(x.bytes) / GiB, (unsigned long long)x.by_kind[0],
                (unsigned long long)x.by_kind[1], (unsigned long long)x.by_kind[2],
                (unsigned long long)x.by_kind[3], (unsigned long long)x.by_kind[4]);
    std::printf("soak %c: cancelled receives: %llu before a match (message went to the next "
                "receive), %llu too late (had matched, kept the data), %llu at the end "
                "(never sent)\n",
                name, (unsigned long long)x.cancelled, (unsigned long long)x.cancel_too_late,
                (unsigned long long)x.cancelled_at_end);
    std::printf("soak %c: errors: corrupt_bytes=%llu guard_bytes=%llu canary_bytes=%llu "
                "length=%llu tag=%llu status=%llu imm_info_missing=%llu%s\n",
                name, (unsigned long long)x.corrupt_bytes, (unsigned long long)x.guard_bytes,
                (unsigned long long)x.canary_bytes, (unsigned long long)x.length_errors,
                (unsigned long long)x.tag_errors, (unsigned long long)x.status_errors,
                (unsigned long long)x.imm_info_missing,
                ((x.imm_info_missing > 0) && allow_missing_imm_info) ? " (allowed)" : "");
    std::printf("soak %c: rss MiB start %.1f, after warm-up %.1f, max after %.1f, end %.1f; "
                "fds start %u, after warm-up %u, max after %u, end %u; growth %s\n",
                name, double(r.rss[0]) / MiB, double(r.rss[1]) / MiB, double(r.rss[2]) / MiB,
                double(r.rss[3]) / MiB, r.fds[0], r.fds[1], r.fds[2], r.fds[3],
                !r.growth_checked ? "not checked (run shorter than the warm-up)" :
                r.growth_ok       ? "within bounds" :
                                    "TOO LARGE");
}

class side {
public:
    side(perf::oob &channel, const options &opts, char name) :
        channel_(channel), opts_(opts), name_(name), sampler_(opts.sample_s)
    {
    }

    int run();

private:
    bool setup();
    bool traffic();
    int after_failure();
    void finish_report();
    void progress_line(double now);

    perf::oob &channel_;
    const options &opts_;
    char name_;
    failure_record failure_;
    resource_sampler sampler_;
    side_report report_;
    std::unique_ptr<sender> tx_;
    std::unique_ptr<receiver> rx_;
    /* Last, so it goes first: callbacks of requests that closing the ep or
     * the worker ends still find their slots. */
    ucp_test::peer ucp_;
};

bool side::setup()
{
    std::string tls = opts_.tls;
    if (tls.empty()) {
        const char *env = std::getenv("UCX_TLS");
        tls             = (env != nullptr) ? env : "all";
    }
    ucs_status_t status = ucp_.init(tls.c_str());
    std::vector<uint8_t> remote;
    bool ok_there = false;
    std::string why_there;
    if (!channel_.agree(status == UCS_OK, std::string("ucp init: ") + ucs_status_string(status),
                        &ok_there, &why_there) ||
        (status != UCS_OK) || !ok_there) {
        std::fprintf(stderr, "soak %c: setup failed: %s%s\n", name_,
                     (status != UCS_OK) ? ucs_status_string(status) : "peer: ",
                     (status != UCS_OK) ? "" : why_there.c_str());
        return false;
    }
    if (!channel_.exchange(ucp_.address(), &remote)) {
        return false;
    }
    status = ucp_.connect(remote,
                          opts_.peer_errors ? UCP_ERR_HANDLING_MODE_PEER :
                                              UCP_ERR_HANDLING_MODE_NONE,
                          opts_.peer_errors ? on_ep_error : nullptr, &failure_);
    if (!channel_.agree(status == UCS_OK, ucs_status_string(status), &ok_there, &why_there) ||
        (status != UCS_OK) || !ok_there) {
        std::fprintf(stderr, "soak %c: ucp_ep_create failed\n", name_);
        return false;
    }

    const uint64_t seed_a = opts_.seed * 2, seed_b = opts_.seed * 2 + 1;
    traffic_config config{};
    config.tx_seed                = channel_.leader() ? seed_a : seed_b;
    config.rx_seed                = channel_.leader() ? seed_b : seed_a;
    config.max_size               = opts_.max_size;
    config.window                 = opts_.window;
    config.allow_missing_imm_info = opts_.allow_missing_imm_info;
    tx_                           = std::make_unique<sender>(ucp_.ep, config, &failure_);
    rx_                           = std::make_unique<receiver>(ucp_.worker, config, &failure_);
    return channel_.barrier();
}

void side::progress_line(double now)
{
    resource_sample s{};
    sample_resources(&s);
    std::printf("soak %c: %.0f s: sent %.3f GiB / %llu msgs, received %.3f GiB / %llu msgs, "
                "errors %llu, rss %.1f MiB, fds %u\n",
                name_, now, double(tx_->stats().bytes) / GiB,
                (unsigned long long)tx_->stats().messages, double(rx_->stats().bytes) / GiB,
                (unsigned long long)rx_->stats().messages,
                (unsigned long long)rx_->stats().error_count(), double(s.rss_bytes) / MiB, s.fds);
    std::fflush(stdout);
}

/* The main loop: false on a stall or a failure. */
bool side::traffic()
{
    const auto t0             = clock_type::now();
    const double cpu_at_start = cpu_seconds();
    sampler_.sample_now(0);
    bool total_sent = false, total_known = false, quiet_reported = false;
    double next_report = opts_.report_s, last_change = 0;
    uint64_t last_count = 0;
    unsigned iteration  = 0;

    for (;;) {
        ucp_worker_progress(ucp_.worker);
        const double elapsed = seconds_since(t0);
        const bool quiet     = (opts_.quiet_after_s > 0) && (elapsed >= opts_.quiet_after_s);
        const bool more      = !total_sent &&
                          ((opts_.duration_s == 0) || (elapsed < opts_.duration_s)) &&
                          ((opts_.volume == 0) || (tx_->issued_bytes() < opts_.volume));
        tx_->start_sends(more && !quiet);
        if (quiet && !quiet_reported && tx_->idle()) {
            std::printf("soak %c: quiet: every send completed, waiting on an idle "
                        "connection\n",
                        name_);
            quiet_reported = true;
        }
        rx_->advance();
        if (failure_.seen) {
            return false;
        }
        if (!more && !total_sent) {
            if (opts_.expect_failure) {
                std::fprintf(stderr, "soak %c: no failure reported within %.0f s\n", name_,
                             opts_.duration_s);
                return false;
            }
            const uint64_t issued = tx_->issued();
            if (!channel_.send(&issued, sizeof(issued))) {
                return false;
            }
            total_sent = true;
        }
        if (total_sent && total_known && tx_->idle() && rx_->done()) {
            break;
        }
        if ((++iteration % 64) != 0) {
            continue;
        }
        const double now = seconds_since(t0);
        if (!total_known && channel_.ready()) {
            uint64_t total;
            if (!channel_.recv(&total, sizeof(total))) {
                std::fprintf(stderr, "soak %c: the peer went away\n", name_);
                return false;
            }
            rx_->set_total(total);
            total_known = true;
        }
        sampler_.maybe_sample(now);
        if ((opts_.report_s > 0) && (now >= next_report)) {
            progress_line(now);
            next_report += opts_.report_s;
        }
        const uint64_t count = tx_->stats().messages + rx_->completed() + tx_->issued();
        if (count != last_count) {
            last_count  = count;
            last_change = now;
        } else if (!opts_.expect_failure && (now - last_change > opts_.stall_s)) {
            /* (Waiting for a failure, a stall is the point: --duration bounds it.) */
            std::fprintf(stderr,
                         "soak %c: STALL: nothing completed for %.0f s (sent %llu of "
                         "%llu issued, received %llu, peer total %s)\n",
                         name_, opts_.stall_s, (unsigned long long)tx_->stats().messages,
                         (unsigned long long)tx_->issued(), (unsigned long long)rx_->completed(),
                         total_known ? "known" : "not known yet");
            report_.stalled = true;
            return false;
        }
    }
    report_.seconds     = seconds_since(t0);
    report_.cpu_seconds = cpu_seconds() - cpu_at_start;
    sampler_.sample_now(report_.seconds);
    return true;
}

void side::finish_report()
{
    report_.tx          = tx_->stats();
    report_.rx          = rx_->stats();
    const double warmup = (opts_.warmup_s >= 0) ? opts_.warmup_s : report_.seconds / 5;
    const auto g        = sampler_.growth_after(warmup);
    report_.rss[0]      = g.first.rss_bytes;
    report_.rss[3]      = g.last.rss_bytes;
    report_.fds[0]      = g.first.fds;
    report_.fds[3]      = g.last.fds;
    /* Needs a sample at the warm-up and at least one after it. */
    report_.growth_checked = g.valid && (g.last.seconds > g.at_warmup.seconds);
    if (g.valid) {
        report_.rss[1]    = g.at_warmup.rss_bytes;
        report_.rss[2]    = g.rss_max_after;
        report_.fds[1]    = g.at_warmup.fds;
        report_.fds[2]    = g.fds_max_after;
        report_.growth_ok = (g.rss_max_after <= g.at_warmup.rss_bytes + opts_.rss_growth) &&
                            (g.fds_max_after <= g.at_warmup.fds + opts_.fd_growth);
    }
}

/* The peer is gone: every request must still end, and soon. */
int side::after_failure()
{
    std::printf("soak %c: failure: %s (%s) failure_unix_time=%.6f\n", name_,
                ucs_status_string(failure_.status), failure_.where.c_str(), failure_.unix_time);
    rx_->cancel_all();
    const auto t0 = clock_type::now();
    while (!(tx_->idle() && rx_->quiet()) && (seconds_since(t0) < opts_.drain_s)) {
        ucp_worker_progress(ucp_.worker);
        rx_->advance();
    }
    const bool drained = tx_->idle() && rx_->quiet();
    if (drained) {
        std::printf("soak %c: every request ended %.3f s after the failure was reported\n", name_,
                    seconds_since(t0));
    } else {
        std::printf("soak %c: requests still pending %.0f s after the failure\n", name_,
                    opts_.drain_s);
    }
    std::fflush(stdout);
    report_.tx    = tx_->stats();
    report_.rx    = rx_->stats();
    const bool ok = opts_.expect_failure && drained &&
                    (report_.rx.failure_count(opts_.allow_missing_imm_info) == 0);
    std::printf("soak %c: result=%s sent_msgs=%llu received_msgs=%llu corrupt_bytes=%llu\n", name_,
                ok ? "PASS" : "FAIL", (unsigned long long)report_.tx.messages,
                (unsigned long long)report_.rx.messages,
                (unsigned long long)report_.rx.corrupt_bytes);
    return ok ? 0 : 1;
}

int side::run()
{
    if (!setup()) {
        return 1;
    }
    if (channel_.leader()) {
        std::printf("soak: libucp %s (%s)\n", library_path().c_str(), ucp_get_version_string());
        std::fflush(stdout);
    }
    const bool finished = traffic();
    if (!finished && failure_.seen) {
        const int code = after_failure();
        ucp_.close();
        return code;
    }
    if (!finished) {
        return 1;
    }
    finish_report();
    if (opts_.print_lanes) {
        std::printf("soak %c: endpoint:\n%s", name_, ep_info(ucp_.ep).c_str());
    }

    side_report peer_report;
    if (!channel_.send(&report_, sizeof(report_)) ||
        !channel_.recv(&peer_report, sizeof(peer_report))) {
        std::fprintf(stderr, "soak %c: cannot exchange reports\n", name_);
        return 1;
    }
    channel_.barrier();
    ucp_.close();

    const bool allow = opts_.allow_missing_imm_info;
    const bool ok    = (report_.rx.failure_count(allow) == 0) && (report_.rx.messages > 0) &&
                    (!report_.growth_checked || report_.growth_ok);
    if (channel_.leader()) {
        const side_report &a = report_, &b = peer_report;
        print_side('A', a, allow);
        print_side('B', b, allow);
        const bool both = ok && (b.rx.failure_count(allow) == 0) && (b.rx.messages > 0) &&
                          (!b.growth_checked || b.growth_ok);
        std::printf("soak: result=%s seconds=%.1f cpu_seconds=%.1f+%.1f messages=%llu "
                    "bytes=%llu a_to_b_bytes=%llu b_to_a_bytes=%llu corrupt_bytes=%llu "
                    "errors=%llu growth_checked=%d\n",
                    both ? "PASS" : "FAIL", a.seconds, a.cpu_seconds, b.cpu_seconds,
                    (unsigned long long)(a.rx.messages + b.rx.messages),
                    (unsigned long long)(a.rx.bytes + b.rx.bytes), (unsigned long long)b.rx.bytes,
                    (unsigned long long)a.rx.bytes,
                    (unsigned long long)(a.rx.corrupt_bytes + b.rx.corrupt_bytes),
                    (unsigned long long)(a.rx.failure_count(allow) + b.rx.failure_count(allow)),
                    int(a.growth_checked && b.growth_checked));
        /* Sent and received must agree across the two sides. */
        if ((a.tx.messages != b.rx.messages) || (b.tx.messages != a.rx.messages)) {
            std::printf("soak: FAIL: sent and received message counts differ\n");
            return 1;
        }
        return both ? 0 : 1;
    }
    return ok ? 0 : 1;
}

int run_loopback(const options &opts)
{
    perf::peer child(false, [&](perf::oob &channel) { return side(channel, opts, 'B').run(); });
    if (!child.started()) {
        return 1;
    }
    int code      = side(child.channel(), opts, 'A').run();
    int peer_code = child.join(int(opts.drain_s * 1000) + 10000);
    if (peer_code != 0) {
        std::fprintf(stderr, "soak: the peer process exited with %d\n", peer_code);
    }
    return ((code == 0) && (peer_code == 0)) ? 0 : 1;
}

int run_remote(const options &opts)
{
    std::string error;
    const bool server = (opts.server_port > 0);
    int fd = server ? perftest::accept_client(uint16_t(opts.server_port), false, false, &error) :
                      perftest::connect_server(opts.client_host, uint16_t(opts.client_port), false,
                                               &error);
    if (fd < 0) {
        std::fprintf(stderr, "ucp_soak: %s\n", error.c_str());
        return 1;
    }
    perf::fd_oob channel(fd, !server);
    return side(channel, opts, server ? 'B' : 'A').run();
}

} // namespace
} // namespace soak

int main(int argc, char **argv)
{
    soak::options opts;
    if (!soak::parse_options(argc, argv, &opts)) {
        soak::usage(stderr);
        return 2;
    }
    if (opts.sample_s == 0) {
        const double run = (opts.duration_s > 0) ? opts.duration_s : 60;
        opts.sample_s    = std::min(10.0, std::max(0.1, run / 40));
    }
    std::signal(SIGPIPE, SIG_IGN); /* a peer that died shows as a failed write */
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    return ((opts.server_port > 0) || !opts.client_host.empty()) ? soak::run_remote(opts) :
                                                                   soak::run_loopback(opts);
}
