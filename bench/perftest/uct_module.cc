/*
 * The uct module of ucx_perftest: runs one uct-level test (either side) on
 * the transport named by -x, with the code uct_perf uses.
 */
#include "module.h"

#include "../uct_perf/perf_tests.h"

#include <exception>

namespace {

using perftest::run_status;

perf::options options_of(const perftest::test_spec &spec)
{
    perf::options opts;
    opts.test           = spec.info().uct_kind;
    opts.test_name      = spec.info().name;
    opts.tl_name        = spec.uct_tl;
    opts.dev_name       = spec.uct_dev;
    opts.size           = spec.message_size();
    opts.iters          = spec.iters;
    opts.warmup         = spec.warmup;
    opts.responder_idle = spec.responder_idle != 0;
    opts.huge_pages     = spec.huge_pages != 0;
    opts.nonblock_reg   = spec.nonblock_reg != 0;
    opts.async_thread   = spec.async_thread != 0;
    opts.outstanding    = spec.outstanding;
    opts.fc_window      = spec.fc_window;
    if (spec.iov_count > 1) {
        opts.iov_sizes.assign(spec.sizes, spec.sizes + spec.iov_count);
    }
    return opts;
}

bool agreed(perf::oob &channel, bool ok_here, const char *why_here, std::string *error)
{
    bool ok_there = false;
    std::string why_there;
    if (!channel.agree(ok_here, why_here, &ok_there, &why_there)) {
        *error = "the out-of-band channel to the peer broke";
        return false;
    }
    if (!ok_here) {
        *error = why_here;
    } else if (!ok_there) {
        *error = "peer: " + why_there;
    }
    return ok_here && ok_there;
}

} // namespace

extern "C" int perftest_module_run(perftest::run_context *ctx)
{
    try {
        perf::tool_name          = "ucx_perftest";
        const perf::options opts = options_of(*ctx->spec);
        perf::oob &channel       = *ctx->channel;

        perf::transport t;
        if (!agreed(channel, t.open(opts.tl_name, opts.dev_name, opts.async_thread),
                    "cannot open the transport (see above)", &ctx->error)) {
            return int(run_status::SKIPPED);
        }
        int result;
        if (t.self_only()) {
            /* Reaches only its own iface: the initiator sends to itself. */
            if (!ctx->initiator) {
                return int(run_status::OK);
            }
            if (!t.connect_self()) {
                ctx->error = "cannot connect (see above)";
                return int(run_status::FATAL);
            }
            result = perf::run_self(t, opts, ctx->tl);
        } else if (!agreed(channel, t.connect_peer(channel), "cannot connect (see above)",
                           &ctx->error)) {
            return int(run_status::SKIPPED);
        } else if (ctx->initiator) {
            result = perf::run_initiator(t, opts, channel, ctx->tl);
        } else {
            result = perf::run_responder(t, opts, channel);
        }
        if (result != 0) {
            ctx->error = "the uct test failed (see above)";
            return int(run_status::FATAL);
        }
        /* Neither side tears its endpoint down while the other still
         * progresses (a peer that vanishes is an error to tcp). */
        if (!t.self_only() && !channel.barrier()) {
            ctx->error = "the peer went away at the end";
            return int(run_status::FATAL);
        }
        return int(run_status::OK);
    } catch (const std::exception &e) {
        ctx->error = e.what();
        return int(run_status::FATAL);
    }
}
