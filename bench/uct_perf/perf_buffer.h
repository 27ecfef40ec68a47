/*
 * Benchmark memory of this process that no md allocated: page aligned, or
 * with `huge` 2 MiB aligned and advised onto transparent huge pages (fewer
 * TLB misses in a copy, and far fewer pages for the kernel to pin per CMA
 * call). Whether the kernel really backs it with huge pages depends on
 * /sys/kernel/mm/transparent_hugepage; the advice failing is only a warning.
 */
#ifndef BENCH_UCT_PERF_PERF_BUFFER_H
#define BENCH_UCT_PERF_PERF_BUFFER_H

#include <cstddef>

namespace perf {

class host_buffer {
public:
    static constexpr size_t SMALL_PAGE = 4096;
    static constexpr size_t HUGE_PAGE  = size_t(2) << 20;

    host_buffer(size_t size, bool huge);
    ~host_buffer();

    host_buffer(const host_buffer &)            = delete;
    host_buffer &operator=(const host_buffer &) = delete;

    /* nullptr when the memory could not be had. */
    void *address() const { return address_; }

private:
    void   *address_    = nullptr;
    void   *map_        = nullptr;  /* the whole mapping (huge), else nullptr */
    size_t map_length_  = 0;
};

} // namespace perf

#endif
