/*
 * Registration cache (see rcache.h for the policy).
 *
 * States of a region, and the list its link is in:
 *   cached, not marked, unreferenced  -> lru_
 *   cached, marked unmapped           -> unmapped_
 *   anything else                     -> no list
 * A region is deregistered and deleted once it is neither cached nor
 * referenced.
 */
#include <ucs/memory/rcache.h>

#include <ucm/api/ucm.h>
#include <ucs/debug/log.h>
#include <ucs/sys/sys_info.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <new>
#include <pthread.h>

namespace ucs {

/* The libucm handler: friend of rcache, with libucm's exact signature. */
struct rcache_events {
    static void unmapped(ucm_event_type_t, ucm_event_t *event, void *arg)
    {
        auto start = reinterpret_cast<uintptr_t>(event->vm_unmapped.address);
        uintptr_t end;
        if (__builtin_add_overflow(start, event->vm_unmapped.size, &end)) {
            end = UINTPTR_MAX;
        }
        static_cast<rcache *>(arg)->on_unmapped(start, end);
    }
};

namespace {

unsigned long self_id()
{
    return static_cast<unsigned long>(pthread_self());
}

} // namespace

rcache::rcache(const rcache_params &params) :
    registrar_(params.registrar),
    alignment_((params.alignment != 0) ? params.alignment : sys::page_size()),
    max_regions_(params.max_regions), max_size_(params.max_size)
{
    std::snprintf(name_, sizeof(name_), "%s", (params.name != nullptr) ? params.name : "rcache");
}

ucs_status_t rcache::create(const rcache_params &params, std::unique_ptr<rcache> *cache_p)
{
    if ((cache_p == nullptr) || (params.registrar == nullptr) ||
        ((params.alignment & (params.alignment - 1)) != 0)) {
        return UCS_ERR_INVALID_PARAM;
    }
    std::unique_ptr<rcache> cache(new (std::nothrow) rcache(params));
    if (cache == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    ucs_status_t status = ucm_set_event_handler(UCM_EVENT_VM_UNMAPPED, params.event_priority,
                                                rcache_events::unmapped, cache.get());
    if (status == UCS_OK) {
        /* The hooks exist; check that an unmap really reaches handlers. */
        status = ucm_test_events(UCM_EVENT_VM_UNMAPPED);
        if ((status == UCS_OK) && params.need_allocator_unmaps &&
            (ucm_get_installed_mmap_hook_mode() != UCM_MMAP_HOOK_BISTRO)) {
            ucs_debug("rcache '%s': the memory hooks miss libc's own unmaps "
                      "(UCX_MEM_MMAP_HOOK_MODE is not bistro)",
                      cache->name_);
            status = UCS_ERR_UNSUPPORTED;
        }
        if (status != UCS_OK) {
            ucm_unset_event_handler(UCM_EVENT_VM_UNMAPPED, rcache_events::unmapped, cache.get());
        }
    }
    if (status != UCS_OK) {
        ucs_debug("rcache '%s': no memory events (%s): not caching", cache->name_,
                  ucs_status_string(status));
        return (status == UCS_ERR_NO_MEMORY) ? status : UCS_ERR_UNSUPPORTED;
    }
    cache->events_set_ = true;
    *cache_p           = std::move(cache);
    return UCS_OK;
}

rcache::~rcache()
{
    if (events_set_) {
        /* Waits for a handler running on another thread to return. */
        ucm_unset_event_handler(UCM_EVENT_VM_UNMAPPED, rcache_events::unmapped, this);
    }
    lock();
    size_t in_use = 0;
    while (!table_.empty()) {
        rcache_region *region = table_.begin()->second;
        remove_from_cache(region);
        if (region->refcount_ == 0) {
            release_if_unused(region);
        } else {
            ++in_use;
        }
    }
    const size_t live = live_;
    unlock();
    if (live != 0) {
        /* Deregistering them would pull registrations from under their
         * users; their put() would touch freed memory. Left as they are. */
        ucs_warn("rcache '%s': destroyed with %zu region(s) still in use (%zu cached)", name_, live,
                 in_use);
    }
}

void rcache::lock()
{
    lock_.lock();
    owner_.store(self_id(), std::memory_order_relaxed);
}

void rcache::unlock()
{
    owner_.store(0, std::memory_order_relaxed);
    lock_.unlock();
}

/* From the libucm handler: no allocation, no blocking (see rcache.h). */
void rcache::on_unmapped(uintptr_t start, uintptr_t end)
{
    if ((end <= low_.load(std::memory_order_acquire)) ||
        (start >= high_.load(std::memory_order_acquire))) {
        return; /* no cached region has ever been there */
    }
    if ((owner_.load(std::memory_order_relaxed) != self_id()) && lock_.try_lock()) {
        mark_unmapped(start, end);
        lock_.unlock();
        return;
    }
    while (queue_lock_.test_and_set(std::memory_order_acquire)) {
        /* held only for a few stores by another thread */
    }
    if (queued_ < max_queued_unmaps) {
        queue_[queued_++] = {start, end};
    } else {
        unmapped_range &last = queue_[max_queued_unmaps - 1];
        last.start           = std::min(last.start, start);
        last.end             = std::max(last.end, end);
    }
    queue_lock_.clear(std::memory_order_release);
    unmaps_pending_.store(true, std::memory_order_release);
}

/* Under lock_; allocates nothing (runs in the handler too). */
void rcache::mark_unmapped(uintptr_t start, uintptr_t end)
{
    auto it = table_.upper_bound(start);
    if ((it != table_.begin()) && (std::prev(it)->second->end_ > start)) {
        --it;
    }
    for (; (it != table_.end()) && (it->first < end); ++it) {
        rcache_region *region = it->second;
        if (region->unmapped_) {
            continue;
        }
        if (region->refcount_ == 0) {
            lru_.remove(*region);
        }
        region->unmapped_ = true;
        unmapped_.push_back(*region);
        unmaps_pending_.store(true, std::memory_order_relaxed);
    }
}

/* Under lock_: takes every region the handler marked or queued out of the
 * cache. */
void rcache::apply_unmaps()
{
    /* A plain load first: the common case (nothing unmapped) costs no
     * read-modify-write per get and put. */
    if (!unmaps_pending_.load(std::memory_order_acquire) ||
        !unmaps_pending_.exchange(false, std::memory_order_acquire)) {
        return;
    }
    unmapped_range ranges[max_queued_unmaps];
    unsigned count;
    while (queue_lock_.test_and_set(std::memory_order_acquire)) {
    }
    count = queued_;
    std::copy(queue_, queue_ + count, ranges);
    queued_ = 0;
    queue_lock_.clear(std::memory_order_release);

    for (unsigned i = 0; i < count; ++i) {
        mark_unmapped(ranges[i].start, ranges[i].end);
    }
    /* The flag stays as it is now: clearing it here would lose an unmap
     * another thread queued after the copy above (the next get or put
     * would then hand out its stale region). At worst one empty pass. */
    while (rcache_region *region = unmapped_.front()) {
        ucs_trace("rcache '%s': region 0x%lx..0x%lx unmapped (%u users)", name_, region->start_,
                  region->end_, region->refcount_);
        remove_from_cache(region);
        ++stats_.invalidations;
        release_if_unused(region);
    }
}

void rcache::remove_from_cache(rcache_region *region)
{
    if (region->unmapped_) {
        unmapped_.remove(*region);
    } else if (region->refcount_ == 0) {
        lru_.remove(*region);
    }
    table_.erase(region->start_);
    bytes_ -= region->length();
    region->cached_ = false;
}

void rcache::release_if_unused(rcache_region *region)
{
    if (region->cached_ || (region->refcount_ != 0)) {
        return;
    }
    registrar_->mem_dereg(region->handle_);
    ++stats_.deregistrations;
    --live_;
    delete region;
}

void rcache::evict_over_bounds()
{
    while (((table_.size() > max_regions_) || (bytes_ > max_size_)) && !lru_.empty()) {
        rcache_region *region = lru_.front();
        remove_from_cache(region);
        ++stats_.evictions;
        release_if_unused(region);
    }
}

ucs_status_t rcache::create_region(uintptr_t start, uintptr_t end, rcache_region **region_p)
{
    void *handle;
    ucs_status_t status = registrar_->mem_reg(reinterpret_cast<void *>(start), end - start,
                                              &handle);
    if (status != UCS_OK) {
        return status;
    }
    auto *region  = new (std::nothrow) rcache_region;
    bool inserted = false;
    if (region != nullptr) {
        try {
            inserted = table_.emplace(start, region).second;
        } catch (...) {
        }
    }
    if (!inserted) { /* no memory (the table never holds an overlap) */
        delete region;
        registrar_->mem_dereg(handle);
        return UCS_ERR_NO_MEMORY;
    }
    region->start_    = start;
    region->end_      = end;
    region->handle_   = handle;
    region->refcount_ = 1;
    region->cached_   = true;
    bytes_ += end - start;
    ++live_;
    ++stats_.registrations;
    if (start < low_.load(std::memory_order_relaxed)) {
        low_.store(start, std::memory_order_release);
    }
    if (end > high_.load(std::memory_order_relaxed)) {
        high_.store(end, std::memory_order_release);
    }
    *region_p = region;
    return UCS_OK;
}

/* A miss: one region over [start, end) and every cached region it overlaps. */
ucs_status_t rcache::register_region(uintptr_t start, uintptr_t end, rcache_region **region_p)
{
    uintptr_t merged_start = start;
    uintptr_t merged_end   = end;
    auto it                = table_.upper_bound(start);
    if ((it != table_.begin()) && (std::prev(it)->second->end_ > start)) {
        --it;
    }
    while ((it != table_.end()) && (it->first < end)) {
        rcache_region *old = (it++)->second;
        merged_start       = std::min(merged_start, old->start_);
        merged_end         = std::max(merged_end, old->end_);
        remove_from_cache(old);
        ++stats_.merges;
        release_if_unused(old);
    }
    ucs_status_t status = create_region(merged_start, merged_end, region_p);
    if ((status != UCS_OK) && ((merged_start != start) || (merged_end != end))) {
        /* The merged span may cross memory the md cannot register (a hole,
         * other permissions); the request's own span overlaps nothing now. */
        ucs_debug("rcache '%s': registering merged 0x%lx..0x%lx failed (%s), "
                  "registering 0x%lx..0x%lx",
                  name_, merged_start, merged_end, ucs_status_string(status), start, end);
        status = create_region(start, end, region_p);
    }
    return status;
}

ucs_status_t rcache::get(const void *address, size_t length, rcache_region **region_p)
{
    const auto addr = reinterpret_cast<uintptr_t>(address);
    uintptr_t last;
    if ((region_p == nullptr) || (length == 0) || __builtin_add_overflow(addr, length - 1, &last) ||
        (last > UINTPTR_MAX - alignment_)) {
        return UCS_ERR_INVALID_PARAM;
    }
    const uintptr_t start = addr & ~(alignment_ - 1);
    const uintptr_t end   = (last | (alignment_ - 1)) + 1;

    lock();
    ++stats_.gets;
    apply_unmaps();
    auto it = table_.upper_bound(start);
    if (it != table_.begin()) {
        rcache_region *region = std::prev(it)->second;
        if (region->end_ >= end) {
            if (region->refcount_++ == 0) {
                lru_.remove(*region);
            }
            ++stats_.hits;
            unlock();
            *region_p = region;
            return UCS_OK;
        }
    }
    ucs_status_t status = register_region(start, end, region_p);
    if (status == UCS_OK) {
        evict_over_bounds();
    }
    unlock();
    if (status != UCS_OK) {
        ucs_debug("rcache '%s': registering %p+%zu failed: %s", name_, address, length,
                  ucs_status_string(status));
    }
    return status;
}

void rcache::put(rcache_region *region)
{
    if (region == nullptr) {
        return;
    }
    lock();
    if (region->refcount_ == 0) {
        unlock();
        ucs_error("rcache '%s': put of region 0x%lx..0x%lx that has no users", name_,
                  region->start_, region->end_);
        return;
    }
    apply_unmaps();
    if (--region->refcount_ == 0) {
        if (region->cached_) {
            lru_.push_back(*region); /* most recently used */
            evict_over_bounds();
        } else {
            release_if_unused(region);
        }
    }
    unlock();
}

rcache_stats rcache::stats() const
{
    std::lock_guard<std::mutex> guard(lock_);
    rcache_stats s = stats_;
    s.regions      = table_.size();
    s.bytes        = bytes_;
    return s;
}

} // namespace ucs
