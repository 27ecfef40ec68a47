/*
 * Registration cache: keeps memory registrations of user buffers between
 * operations, so that a protocol sending from the same buffer again does
 * not pay the memory domain's registration (ibv_reg_mr, a key exchange) per
 * message. A ucs service: it knows nothing about uct. Whoever owns the
 * memory domain hands it a registrar (two callbacks) and gets back regions
 * whose handle() is what the registrar returned.
 *
 * Policy (as UCX's rcache):
 * - Regions are aligned to `alignment` (a page by default) and the regions
 *   in the cache never overlap: a std::map keyed by start address.
 * - get(addr, len) returns a cached region that covers [addr, addr+len)
 *   (a hit), or registers a new one (a miss). A new region spans the
 *   request and every cached region it overlaps; those leave the cache
 *   (merge). If registering the merged span fails, the request's own span
 *   is tried.
 * - Regions are reference counted: get() adds a reference, put() drops it.
 *   A region leaves the cache when the memory under it is unmapped
 *   (libucm's UCM_EVENT_VM_UNMAPPED: munmap, mremap, madvise(DONTNEED),
 *   brk/sbrk shrinking, shmdt), when it is merged into a larger one, or
 *   when it is evicted; it is deregistered when it has left the cache and
 *   its last reference is gone, so a registration in use by an operation
 *   is never pulled from under it.
 * - Bounded: above max_regions regions or max_size bytes in the cache,
 *   unreferenced regions are evicted, least recently used first. Regions
 *   in use are never evicted (the bound can then be exceeded until they
 *   are put).
 * - Thread-safe: one mutex around the table. The unmap handler may run on
 *   any thread, inside the allocator (glibc trims its heap with its own
 *   locks held), so it never allocates, frees or waits: it marks regions
 *   under a try-lock, or else queues the range in a fixed array that the
 *   next get() or put() drains (when the array is full, the new range is
 *   merged into the last one: more is invalidated, nothing is missed).
 *
 *   ucs::rcache_params p;
 *   p.name = "tcp"; p.registrar = &my_registrar;
 *   std::unique_ptr<ucs::rcache> cache;
 *   if (ucs::rcache::create(p, &cache) == UCS_OK) {
 *       ucs::rcache_region *r;
 *       cache->get(buf, len, &r);    // r->handle(): the md's memory handle
 *       ...
 *       cache->put(r);
 *   }
 */
#ifndef UCS_MEMORY_RCACHE_H
#define UCS_MEMORY_RCACHE_H

#include <ucs/datastruct/intrusive_list.h>
#include <ucs/type/status.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

namespace ucs {

/* How the cache's owner registers memory (e.g. a uct md). Called with the
 * cache's lock held, never from the unmap handler. */
class rcache_registrar {
public:
    virtual ~rcache_registrar()                                                 = default;
    virtual ucs_status_t mem_reg(void *address, size_t length, void **handle_p) = 0;
    virtual void mem_dereg(void *handle)                                        = 0;
};

struct rcache_params {
    const char *name            = "rcache"; /* for log messages */
    rcache_registrar *registrar = nullptr;
    size_t alignment            = 0; /* power of two; 0: the page size */
    size_t max_regions          = SIZE_MAX;
    size_t max_size             = SIZE_MAX; /* bytes of all cached regions */
    int event_priority          = 1000;     /* of the libucm handler */
    /* Refuse (UCS_ERR_UNSUPPORTED) unless the hooks also see the unmaps that
     * libc's allocator makes by itself (free() of a large block, heap trims):
     * libucm's bistro hooks. For registrations that pin pages, where a
     * stale region would move stale pages. */
    bool need_allocator_unmaps = false;
};

/* Counters since creation (for tests, benchmarks and debug logs). */
struct rcache_stats {
    uint64_t gets            = 0;
    uint64_t hits            = 0;
    uint64_t registrations   = 0; /* registrar mem_reg calls that succeeded */
    uint64_t deregistrations = 0;
    uint64_t merges          = 0; /* cached regions absorbed by a larger one */
    uint64_t invalidations   = 0; /* regions dropped because memory was unmapped */
    uint64_t evictions       = 0; /* regions dropped for the bounds */
    size_t regions           = 0; /* in the cache now */
    size_t bytes             = 0; /* in the cache now */
};

class rcache;

class rcache_region {
public:
    void *handle() const { return handle_; }
    uintptr_t start() const { return start_; }
    uintptr_t end() const { return end_; }
    size_t length() const { return end_ - start_; }

private:
    friend class rcache;

    // clang-format off
    uintptr_t start_ = 0;
    uintptr_t end_ = 0;
    void      *handle_ = nullptr;
    unsigned  refcount_ = 0;       /* get()s not yet put() */
    bool      cached_ = false;     /* in the table (found by get) */
    bool      unmapped_ = false;   /* marked by the unmap handler */
    list_link link_;               /* cached: in the LRU list while unused,
                                       in the unmapped list once marked */
};
// clang-format on

class rcache {
public:
    /*
     * UCS_ERR_UNSUPPORTED when memory events cannot be delivered
     * (UCX_MEM_EVENTS=no, or libucm's self-test of the unmap hooks fails):
     * a cache that misses unmaps would hand out stale registrations, so the
     * owner must register per operation instead.
     * UCS_ERR_INVALID_PARAM for a missing registrar or a bad alignment.
     */
    static ucs_status_t create(const rcache_params &params, std::unique_ptr<rcache> *cache_p);

    /* Deregisters everything; regions still referenced are reported. */
    ~rcache();

    rcache(const rcache &)            = delete;
    rcache &operator=(const rcache &) = delete;

    /*
     * A region covering [address, address + length), with a reference the
     * caller gives back with put(). The registrar's error when registering
     * fails; UCS_ERR_INVALID_PARAM for length 0 or a range that wraps.
     */
    ucs_status_t get(const void *address, size_t length, rcache_region **region_p);
    void put(rcache_region *region);

    rcache_stats stats() const;
    const char *name() const { return name_; }

private:
    using table_t = std::map<uintptr_t, rcache_region *>;
    using list_t  = intrusive_list<rcache_region, &rcache_region::link_>;

    /* Ranges the unmap handler could not apply at once. */
    static constexpr unsigned max_queued_unmaps = 64;
    struct unmapped_range {
        uintptr_t start;
        uintptr_t end;
    };

    explicit rcache(const rcache_params &params);

    friend struct rcache_events;

    void on_unmapped(uintptr_t start, uintptr_t end);
    void mark_unmapped(uintptr_t start, uintptr_t end);
    void apply_unmaps();
    void remove_from_cache(rcache_region *region);
    void release_if_unused(rcache_region *region);
    void evict_over_bounds();
    ucs_status_t register_region(uintptr_t start, uintptr_t end, rcache_region **region_p);
    ucs_status_t create_region(uintptr_t start, uintptr_t end, rcache_region **region_p);
    void lock();
    void unlock();

    char name_[32];
    rcache_registrar *registrar_;
    size_t alignment_;
    size_t max_regions_;
    size_t max_size_;
    bool events_set_ = false;

    mutable std::mutex lock_;
    table_t table_;   /* cached regions by start, never overlapping */
    list_t lru_;      /* cached, unreferenced; front: least recent */
    list_t unmapped_; /* cached, marked unmapped: to remove */
    size_t live_ = 0; /* regions not yet deregistered */
    /* pthread_self() of the thread holding lock_: the unmap handler may
     * run on it (from an allocation under the lock), and must not lock. */
    std::atomic<unsigned long> owner_{0};
    size_t bytes_ = 0;
    rcache_stats stats_;

    /* Written by the unmap handler (under queue_lock_, a spin flag held
     * only for a few stores), read and cleared under lock_. */
    std::atomic<bool> unmaps_pending_{false};
    std::atomic_flag queue_lock_ = ATOMIC_FLAG_INIT;
    unmapped_range queue_[max_queued_unmaps];
    unsigned queued_ = 0;
    /* Lowest and highest address any cached region has had: most unmaps
     * are of other memory and are dismissed without a lock. */
    std::atomic<uintptr_t> low_{UINTPTR_MAX};
    std::atomic<uintptr_t> high_{0};
};

} // namespace ucs

#endif
