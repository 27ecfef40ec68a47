/*
 * The UCP module of ucx_perftest: runs one UCP test (either side) through
 * the public UCP API only, so it runs on any libucp with UCX 1.13's ABI.
 */
#include "engine.h"
#include "threads.h"

#include <exception>

namespace {

using perftest::run_status;
using perftest::ucp_cmd;

template <ucp_cmd CMD>
run_status run_with(perftest::ucp::session &s, perftest::run_context *ctx)
{
    perftest::ucp::engine<CMD> e(s, *ctx->spec, &ctx->error);
    return e.run(ctx->initiator, ctx->tl);
}

run_status dispatch(perftest::ucp::session &s, perftest::run_context *ctx)
{
    switch (ctx->spec->info().cmd) {
    case ucp_cmd::TAG:
        return run_with<ucp_cmd::TAG>(s, ctx);
    case ucp_cmd::TAG_SYNC:
        return run_with<ucp_cmd::TAG_SYNC>(s, ctx);
    case ucp_cmd::PUT:
        return run_with<ucp_cmd::PUT>(s, ctx);
    case ucp_cmd::GET:
        return run_with<ucp_cmd::GET>(s, ctx);
    case ucp_cmd::PUT_FLUSH:
        return run_with<ucp_cmd::PUT_FLUSH>(s, ctx);
    case ucp_cmd::ADD:
        return run_with<ucp_cmd::ADD>(s, ctx);
    case ucp_cmd::FADD:
        return run_with<ucp_cmd::FADD>(s, ctx);
    case ucp_cmd::SWAP:
        return run_with<ucp_cmd::SWAP>(s, ctx);
    case ucp_cmd::CSWAP:
        return run_with<ucp_cmd::CSWAP>(s, ctx);
    case ucp_cmd::STREAM:
        return run_with<ucp_cmd::STREAM>(s, ctx);
    case ucp_cmd::AM:
        return run_with<ucp_cmd::AM>(s, ctx);
    }
    ctx->error = "unknown UCP command";
    return run_status::FATAL;
}

} // namespace

extern "C" int perftest_module_run(perftest::run_context *ctx)
{
    try {
        if (ctx->spec->threads > 1) {
            return int(perftest::ucp::run_threads(ctx));
        }
        perftest::ucp::session s(*ctx->spec, *ctx->channel);
        run_status status = s.setup(&ctx->error);
        if (status == run_status::OK) {
            status = dispatch(s, ctx);
        }
        if (status == run_status::OK) {
            status = s.close(&ctx->error);
        }
        return int(status);
    } catch (const std::exception &e) {
        ctx->error = e.what();
        return int(run_status::FATAL);
    }
}
