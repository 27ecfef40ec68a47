/*
 * Benchmark memory of this process that no md allocated: page aligned, or
 * with `huge` 2 MiB aligned and advised onto transparent huge pages (fewer
 * TLB misses in a copy, and far fewer pages for the kernel to pin per CMA
 * call). Whether the kernel really backs it with huge pages depends on
 * /sys/kernel/mm/transparent_hugepage; the advice failing is only a warning.
 */
#ifndef BENCH_UCT_PERF_PERF_BUFFER_H
#define BENCH_UCT_PERF_PERF_BUFFER_H

#include <uct/base/uct_md.h>

#include <cstddef>
#include <memory>

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
    void *address_     = nullptr;
    void *map_         = nullptr; /* the whole mapping (huge), else nullptr */
    size_t map_length_ = 0;
};

/*
 * Memory an md can describe to a peer (or use for zero-copy): allocated by
 * the md when it can, else a host_buffer registered with it. `flags` are
 * uct::mem_flag bits (NONBLOCK: map pages lazily).
 */
class md_buffer {
public:
    md_buffer(uct::md &md, size_t size, bool huge, unsigned flags = 0);
    ~md_buffer();

    md_buffer(const md_buffer &)            = delete;
    md_buffer &operator=(const md_buffer &) = delete;

    /* nullptr when the memory could not be had. */
    void *address() const { return address_; }
    /* MEM_HANDLE_NULL when the md neither allocated nor registered it. */
    uct::mem_h memh() const { return memh_; }

private:
    uct::md &md_;
    std::unique_ptr<host_buffer> own_;
    void *address_   = nullptr;
    size_t length_   = 0;
    uct::mem_h memh_ = uct::MEM_HANDLE_NULL;
    bool allocated_  = false;
};

} // namespace perf

#endif
