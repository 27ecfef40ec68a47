/* Which test loop runs a test kind, for both tools. */
#include "perf_tests.h"

namespace perf {

int run_initiator(transport &t, const options &opts, oob &channel, timeline *tl)
{
    if (is_am_test(opts.test)) {
        return am_initiator(t, opts, channel, tl);
    }
    if (is_memory_pingpong_test(opts.test)) {
        return memory_pingpong(t, opts, channel, true, tl);
    }
    return rma_initiator(t, opts, channel, tl);
}

int run_responder(transport &t, const options &opts, oob &channel)
{
    if (is_am_test(opts.test)) {
        return am_responder(t, opts, channel);
    }
    if (is_memory_pingpong_test(opts.test)) {
        return memory_pingpong(t, opts, channel, false, nullptr);
    }
    return rma_responder(t, opts, channel);
}

int run_self(transport &t, const options &opts, timeline *tl)
{
    if (is_am_test(opts.test)) {
        return am_self(t, opts, tl);
    }
    if (is_memory_pingpong_test(opts.test)) {
        return memory_pingpong_self(t, opts, tl);
    }
    return rma_self(t, opts, tl);
}

} // namespace perf
