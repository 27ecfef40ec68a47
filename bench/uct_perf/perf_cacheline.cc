/*
 * The floor of any shared-memory latency on this machine: two processes
 * pass a counter back and forth through one cache line, nothing else.
 * A transport's one-way latency minus this is its software overhead.
 */
#include "perf_tests.h"

#include "../common/peer.h"

#include <atomic>
#include <cstdio>
#include <vector>

#include <sys/mman.h>

namespace perf {

namespace {

struct alignas(64) shared_line {
    uint64_t value;
};

inline void wait_for(std::atomic_ref<uint64_t> &v, uint64_t expected)
{
    while (v.load(std::memory_order_acquire) != expected) {
    }
}

} // namespace

int cacheline_latency(const options &opts, timeline *tl)
{
    void *mem = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        std::perror("mmap");
        return 1;
    }
    auto *line           = static_cast<shared_line *>(mem);
    line->value          = 0;
    const uint64_t total = opts.warmup + opts.iters;

    peer responder(false, [&](oob &) {
        pin_to_cpu(opts.cpus[1]);
        std::atomic_ref<uint64_t> v(line->value);
        for (uint64_t i = 0; i < total; ++i) {
            wait_for(v, 2 * i + 1);
            v.store(2 * i + 2, std::memory_order_release);
        }
        return 0;
    });
    if (!responder.started()) {
        munmap(mem, 4096);
        return 1;
    }
    pin_to_cpu(opts.cpus[0]);
    tl->prepare(opts.iters);

    std::atomic_ref<uint64_t> v(line->value);
    uint64_t i = 0;
    for (; i < opts.warmup; ++i) {
        v.store(2 * i + 1, std::memory_order_release);
        wait_for(v, 2 * i + 2);
    }
    tl->start();
    for (; i < total; ++i) {
        v.store(2 * i + 1, std::memory_order_release);
        wait_for(v, 2 * i + 2);
        tl->iteration_done();
    }
    tl->stop();
    int code = responder.join();
    munmap(mem, 4096);
    return code;
}

} // namespace perf
