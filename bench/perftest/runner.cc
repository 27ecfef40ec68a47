#include "runner.h"

#include "modules.h"

#include "../common/clock.h"
#include "../common/peer.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <set>

namespace perftest {

namespace {

constexpr double PROGRESS_INTERVAL_S = 1.0;

struct progress_state {
    meter *m;
    printer *out;
    double seconds_per_tick;
};

void on_progress(void *arg, const perf::timeline &tl)
{
    auto *state = static_cast<progress_state *>(arg);
    state->out->progress(state->m->progress(tl, state->seconds_per_tick));
}

/* Both sides open the test's module and say whether they could. */
module_run_fn agree_on_module(perf::oob &channel, const test_spec &spec, std::string *error,
                              bool *channel_ok)
{
    std::string why;
    module_run_fn fn = load_test_module(spec.info().api, &why);
    bool ok_there    = false;
    std::string why_there;
    *channel_ok = channel.agree(fn != nullptr, why, &ok_there, &why_there);
    if (!*channel_ok) {
        *error = "the connection to the peer broke";
        return nullptr;
    }
    if (fn == nullptr) {
        *error = why;
        return nullptr;
    }
    if (!ok_there) {
        *error = "peer: " + why_there;
        return nullptr;
    }
    return fn;
}

std::string describe(const test_spec &spec)
{
    return transport_of(spec) + " " + spec.info().name + " " + std::to_string(spec.message_size()) +
           " B";
}

} // namespace

result run_client_test(perf::oob &channel, const test_spec &spec, const cli &opts, printer &out)
{
    meter m(spec, opts.percentile);
    if (!channel.send_blob(pack_spec(spec))) {
        return m.failure("failed", "the connection to the peer broke");
    }
    std::string error;
    bool channel_ok;
    module_run_fn fn = agree_on_module(channel, spec, &error, &channel_ok);
    if (fn == nullptr) {
        return m.failure(channel_ok ? "skipped" : "failed", error);
    }

    perf::timeline tl;
    progress_state state{&m, &out, perf::estimate_seconds_per_tick()};
    if (out.wants_progress() && (state.seconds_per_tick > 0)) {
        tl.set_reporter(on_progress, &state,
                        uint64_t(PROGRESS_INTERVAL_S / state.seconds_per_tick));
    }
    run_context ctx;
    ctx.spec      = &spec;
    ctx.channel   = &channel;
    ctx.initiator = true;
    ctx.tl        = &tl;
    switch (run_status(fn(&ctx))) {
    case run_status::OK:
        if (!ctx.thread_tls.empty()) {
            std::vector<const perf::timeline *> all{&tl};
            for (const perf::timeline &t : ctx.thread_tls) {
                all.push_back(&t);
            }
            return m.final_threads(all);
        }
        return m.final(tl);
    case run_status::SKIPPED:
        return m.failure("skipped", ctx.error);
    default:
        return m.failure("failed", ctx.error);
    }
}

namespace {

using stage_fn = std::function<result(const test_spec &spec)>;

/* Runs the stages in order. In a sweep, a transport whose first stage was
 * skipped (not available here) has its other stages left out. */
int run_stages(const std::vector<test_spec> &stages, const cli &opts, printer &out,
               const stage_fn &run_one, bool stop_on_failure, bool with_box)
{
    std::set<std::string> unavailable;
    int code = 0;
    out.start();
    for (size_t i = 0; i < stages.size(); ++i) {
        const test_spec &spec = stages[i];
        if (opts.sweep && unavailable.count(spec.tls)) {
            continue;
        }
        if (!opts.sweep) {
            if (with_box) {
                out.info_box(spec, false);
            }
            out.begin_test(spec);
        }
        auto t0  = std::chrono::steady_clock::now();
        result r = run_one(spec);
        out.end_test(r);
        if (opts.sweep) {
            std::fprintf(
                stderr, "sweep [%zu/%zu] %s: %s (%.2f s)\n", i + 1, stages.size(),
                describe(spec).c_str(), r.status.c_str(),
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
            if (r.status == "skipped") {
                std::fprintf(stderr,
                             "sweep: UCX_TLS=%s does not work here; leaving out "
                             "its other stages\n",
                             spec.tls);
                unavailable.insert(spec.tls);
            }
        }
        if ((r.status == "failed") || ((r.status == "skipped") && !opts.sweep)) {
            code = 1;
        }
        if ((r.status == "failed") && stop_on_failure) {
            break;
        }
    }
    out.finish();
    return code;
}

} // namespace

int run_client(perf::oob &channel, const std::vector<test_spec> &stages, const cli &opts,
               printer &out, bool with_box)
{
    bool in_step = true;
    int code     = run_stages(
            stages, opts, out,
            [&](const test_spec &spec) {
        result r = run_client_test(channel, spec, opts, out);
        in_step  = (r.status != "failed");
        return r;
        },
            true, with_box);
    if (in_step) {
        channel.send_blob({});
    }
    return code;
}

int serve(perf::oob &channel, printer *out)
{
    for (;;) {
        std::vector<uint8_t> blob;
        if (!channel.recv_blob(&blob) || blob.empty()) {
            return 0; /* the client is done (or gone) */
        }
        test_spec spec;
        if (!unpack_spec(blob, &spec)) {
            std::fprintf(stderr, "ucx_perftest: the client sent a test this build does not "
                                 "understand (another version?)\n");
            return 1;
        }
        if (out != nullptr) {
            out->info_box(spec, true);
        }
        std::string error;
        bool channel_ok;
        module_run_fn fn = agree_on_module(channel, spec, &error, &channel_ok);
        if (fn == nullptr) {
            if (out != nullptr) {
                std::fprintf(stderr, "ucx_perftest: %s\n", error.c_str());
            }
            if (!channel_ok) {
                return 1;
            }
            continue;
        }
        run_context ctx;
        ctx.spec          = &spec;
        ctx.channel       = &channel;
        ctx.initiator     = false;
        run_status status = run_status(fn(&ctx));
        if ((status != run_status::OK) && (out != nullptr)) {
            std::fprintf(stderr, "ucx_perftest: %s\n", ctx.error.c_str());
        }
        if (status == run_status::FATAL) {
            return 1;
        }
    }
}

int run_loopback(const std::vector<test_spec> &stages, const cli &opts, printer &out)
{
    const int my_cpu   = opts.cpus.empty() ? -1 : opts.cpus[0];
    const int peer_cpu = (opts.cpus.size() > 1) ? opts.cpus[1] : -1;
    if (!perf::pin_to_cpu(my_cpu)) {
        std::fprintf(stderr, "ucx_perftest: cannot pin to CPU %d\n", my_cpu);
        return 1;
    }
    return run_stages(
        stages, opts, out,
        [&](const test_spec &spec) {
        perf::peer responder(false, [peer_cpu](perf::oob &channel) {
            if (!perf::pin_to_cpu(peer_cpu)) {
                std::fprintf(stderr, "ucx_perftest: cannot pin the peer to CPU %d\n", peer_cpu);
                return 1;
            }
            return serve(channel, nullptr);
        });
        meter m(spec, opts.percentile);
        if (!responder.started()) {
            return m.failure("failed", "cannot start the peer");
        }
        result r = run_client_test(responder.channel(), spec, opts, out);
        if (r.status != "failed") {
            responder.channel().send_blob({});
        }
        /* A peer stuck after a failure gets a few seconds to notice. */
        int peer_code = responder.join((r.status == "failed") ? 5000 : -1);
        if ((r.status == "ok") && (peer_code != 0)) {
            r = m.failure("failed", "the peer exited with code " + std::to_string(peer_code));
        }
        return r;
        },
        false, true);
}

} // namespace perftest
