/*
 * The main thread sets the sessions up one after the other (each agrees
 * its steps with the peer over the out-of-band channel, in the same order
 * on both sides) and keeps the barriers between phases, progressing every
 * worker while it waits, as a single-threaded run does; the threads run
 * the phases, each on its own worker.
 */
#include "threads.h"

#include "engine.h"

#include <memory>
#include <thread>
#include <vector>

namespace perftest::ucp {

namespace {

/* One thread's engine, whatever its command. */
class part {
public:
    virtual ~part()                                                        = default;
    virtual bool begin(bool initiator, perf::timeline *tl)                 = 0;
    virtual bool phase(bool initiator, uint64_t count, perf::timeline *tl) = 0;
    virtual bool end()                                                     = 0;
};

template <ucp_cmd CMD>
class part_of final : public part {
public:
    part_of(session &s, const test_spec &spec, std::string *error) : e_(s, spec, error) {}
    bool begin(bool initiator, perf::timeline *tl) override { return e_.begin(initiator, tl); }
    bool phase(bool initiator, uint64_t count, perf::timeline *tl) override
    {
        return e_.phase(initiator, count, tl);
    }
    bool end() override { return e_.end(); }

private:
    engine<CMD> e_;
};

std::unique_ptr<part> make_part(session &s, const test_spec &spec, std::string *error)
{
    // clang-format off
    switch (spec.info().cmd) {
    case ucp_cmd::TAG:       return std::make_unique<part_of<ucp_cmd::TAG>>(s, spec, error);
    case ucp_cmd::TAG_SYNC:  return std::make_unique<part_of<ucp_cmd::TAG_SYNC>>(s, spec, error);
    case ucp_cmd::PUT:       return std::make_unique<part_of<ucp_cmd::PUT>>(s, spec, error);
    case ucp_cmd::GET:       return std::make_unique<part_of<ucp_cmd::GET>>(s, spec, error);
    case ucp_cmd::PUT_FLUSH: return std::make_unique<part_of<ucp_cmd::PUT_FLUSH>>(s, spec, error);
    case ucp_cmd::ADD:       return std::make_unique<part_of<ucp_cmd::ADD>>(s, spec, error);
    case ucp_cmd::FADD:      return std::make_unique<part_of<ucp_cmd::FADD>>(s, spec, error);
    case ucp_cmd::SWAP:      return std::make_unique<part_of<ucp_cmd::SWAP>>(s, spec, error);
    case ucp_cmd::CSWAP:     return std::make_unique<part_of<ucp_cmd::CSWAP>>(s, spec, error);
    case ucp_cmd::STREAM:    return std::make_unique<part_of<ucp_cmd::STREAM>>(s, spec, error);
    case ucp_cmd::AM:        return std::make_unique<part_of<ucp_cmd::AM>>(s, spec, error);
    }
    // clang-format on
    return nullptr;
}

using sessions = std::vector<std::unique_ptr<session>>;

/* A barrier that keeps every worker progressing (the peer may need them),
 * or with `idle` (-o on the responder) one that does not. */
bool barrier_all(perf::oob &channel, sessions &all, bool idle)
{
    if (idle) {
        return channel.barrier();
    }
    if (!channel.send_byte(1)) {
        return false;
    }
    for (;;) {
        for (auto &s : all) {
            for (int i = 0; i < 16; ++i) {
                ucp_worker_progress(s->worker());
            }
        }
        if (channel.ready()) {
            uint8_t byte;
            return channel.recv_byte(&byte);
        }
    }
}

/* The errors of the threads: each writes only its own. */
struct thread_errors {
    std::vector<std::string> why;
    std::string first() const
    {
        for (const std::string &w : why) {
            if (!w.empty()) {
                return w;
            }
        }
        return "a thread failed";
    }
};

run_status run_parts(run_context *ctx, sessions &all, std::vector<std::unique_ptr<part>> &parts,
                     thread_errors &errors)
{
    const test_spec &spec = *ctx->spec;
    const bool initiator  = ctx->initiator;
    const bool idle       = spec.responder_idle && !initiator;
    auto tl_of            = [&](size_t t) -> perf::timeline            *{
        return !initiator ? nullptr : (t == 0) ? ctx->tl : &ctx->thread_tls[t - 1];
    };
    for (size_t t = 0; t < parts.size(); ++t) {
        if (!parts[t]->begin(initiator, tl_of(t))) {
            ctx->error = errors.first();
            return run_status::FATAL;
        }
    }
    auto run_phase = [&](uint64_t count, bool timed) {
        std::vector<char> ok(parts.size(), 0);
        std::vector<std::thread> threads;
        for (size_t t = 0; t < parts.size(); ++t) {
            threads.emplace_back([&, t] {
                ok[t] = parts[t]->phase(initiator, count, timed ? tl_of(t) : nullptr);
            });
        }
        for (std::thread &th : threads) {
            th.join();
        }
        for (char o : ok) {
            if (!o) {
                ctx->error = errors.first();
                return false;
            }
        }
        return true;
    };
    if (!barrier_all(*ctx->channel, all, false)) {
        ctx->error = "the peer went away before the test";
        return run_status::FATAL;
    }
    if (spec.warmup > 0) {
        if (!run_phase(spec.warmup, false)) {
            return run_status::FATAL;
        }
        if (!barrier_all(*ctx->channel, all, idle)) {
            ctx->error = "the peer went away after the warm-up";
            return run_status::FATAL;
        }
    }
    if (!run_phase(spec.iters, true)) {
        return run_status::FATAL;
    }
    if (spec.responder_idle && !barrier_all(*ctx->channel, all, idle)) {
        ctx->error = "the peer went away during the test";
        return run_status::FATAL;
    }
    for (auto &p : parts) {
        if (!p->end()) {
            ctx->error = errors.first();
            return run_status::FATAL;
        }
    }
    return run_status::OK;
}

} // namespace

run_status run_threads(run_context *ctx)
{
    const test_spec &spec = *ctx->spec;
    perf::oob &channel    = *ctx->channel;
    ucp_context_h context = nullptr;
    std::string why       = create_context(spec, true, &context);
    bool ok_there         = false;
    std::string why_there;
    if (!channel.agree(why.empty(), why, &ok_there, &why_there)) {
        ctx->error = "the out-of-band channel to the peer broke";
        return run_status::FATAL;
    }
    if (!why.empty() || !ok_there) {
        ctx->error = why.empty() ? "peer: " + why_there : why;
        if (context != nullptr) {
            ucp_cleanup(context);
        }
        return run_status::SKIPPED;
    }

    run_status status = run_status::OK;
    {
        sessions all;
        thread_errors errors;
        errors.why.resize(spec.threads);
        std::vector<std::unique_ptr<part>> parts;
        for (unsigned t = 0; (t < spec.threads) && (status == run_status::OK); ++t) {
            all.push_back(std::make_unique<session>(spec, channel, context));
            status = all.back()->setup(&ctx->error);
            if (status == run_status::OK) {
                parts.push_back(make_part(*all.back(), spec, &errors.why[t]));
            }
        }
        if (ctx->initiator) {
            ctx->thread_tls.resize(spec.threads - 1);
        }
        if (status == run_status::OK) {
            status = run_parts(ctx, all, parts, errors);
        }
        parts.clear();
        for (auto &s : all) {
            if ((status == run_status::OK) && (s->close(&ctx->error) != run_status::OK)) {
                status = run_status::FATAL;
            }
        }
    }
    ucp_cleanup(context);
    return status;
}

} // namespace perftest::ucp
