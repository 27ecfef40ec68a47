/*
 * The ceiling of any copy on this machine: memcpy of SIZE bytes between two
 * buffers of one process, nothing else. A cma get (a kernel copy between
 * processes) or a bcopy can only approach it.
 */
#include "perf_buffer.h"
#include "perf_tests.h"

#include <cstdio>
#include <cstring>

namespace perf {

int memcpy_bandwidth(const options &opts, timeline *tl)
{
    host_buffer source(opts.size, opts.huge_pages);
    host_buffer dest(opts.size, opts.huge_pages);
    if ((source.address() == nullptr) || (dest.address() == nullptr)) {
        std::fprintf(stderr, "%s: cannot allocate 2 x %zu bytes\n", tool_name, opts.size);
        return 1;
    }
    /* Touch both first: page faults are not part of a copy. */
    std::memset(source.address(), 0x3c, opts.size);
    std::memset(dest.address(), 0xc3, opts.size);

    auto copy = [&] {
        std::memcpy(dest.address(), source.address(), opts.size);
        /* The compiler may neither merge nor drop copies nobody reads. */
        asm volatile("" : : "r"(dest.address()) : "memory");
    };
    tl->prepare(opts.iters);
    for (uint64_t i = 0; i < opts.warmup; ++i) {
        copy();
    }
    tl->start();
    for (uint64_t i = 0; i < opts.iters; ++i) {
        copy();
        tl->iteration_done();
    }
    tl->stop();
    if (std::memcmp(dest.address(), source.address(), opts.size) != 0) {
        std::fprintf(stderr, "%s: memcpy_bw: the destination differs from the source\n", tool_name);
        return 1;
    }
    return 0;
}

} // namespace perf
