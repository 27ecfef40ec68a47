/*
 * Registration cache (see rcache.h for the policy).
 *
 * States of a region, and the list its link is in:
 *   cached, not marked, unreferenced  -> m_lru
 *   cached, marked unmapped           -> m_unmapped
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
        static_cast<rcache*>(arg)->on_unmapped(start, end);
    }
};

namespace {

unsigned long self_id()
{
    return static_cast<unsigned long>(pthread_self());
}

} // namespace

rcache::rcache(const rcache_params &params) :
    m_registrar(params.registrar),
    m_alignment((params.alignment != 0) ? params.alignment : sys::page_size()),
    m_max_regions(params.max_regions),
    m_max_size(params.max_size)
{
    std::snprintf(m_name, sizeof(m_name), "%s",
                  (params.name != nullptr) ? params.name : "rcache");
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
    ucs_status_t status = ucm_set_event_handler(UCM_EVENT_VM_UNMAPPED,
                                                params.event_priority,
                                                rcache_events::unmapped, cache.get());
    if (status == UCS_OK) {
        /* The hooks exist; check that an unmap really reaches handlers. */
        status = ucm_test_events(UCM_EVENT_VM_UNMAPPED);
        if (status != UCS_OK) {
            ucm_unset_event_handler(UCM_EVENT_VM_UNMAPPED, rcache_events::unmapped,
                                    cache.get());
        }
    }
    if (status != UCS_OK) {
        ucs_debug("rcache '%s': no memory events (%s): not caching", cache->m_name,
                  ucs_status_string(status));
        return (status == UCS_ERR_NO_MEMORY) ? status : UCS_ERR_UNSUPPORTED;
    }
    cache->m_events_set = true;
    *cache_p = std::move(cache);
    return UCS_OK;
}

rcache::~rcache()
{
    if (m_events_set) {
        /* Waits for a handler running on another thread to return. */
        ucm_unset_event_handler(UCM_EVENT_VM_UNMAPPED, rcache_events::unmapped, this);
    }
    lock();
    size_t in_use = 0;
    while (!m_table.empty()) {
        rcache_region *region = m_table.begin()->second;
        remove_from_cache(region);
        if (region->m_refcount == 0) {
            release_if_unused(region);
        } else {
            ++in_use;
        }
    }
    const size_t live = m_live;
    unlock();
    if (live != 0) {
        /* Deregistering them would pull registrations from under their
         * users; their put() would touch freed memory. Left as they are. */
        ucs_warn("rcache '%s': destroyed with %zu region(s) still in use (%zu cached)",
                 m_name, live, in_use);
    }
}

void rcache::lock()
{
    m_lock.lock();
    m_owner.store(self_id(), std::memory_order_relaxed);
}

void rcache::unlock()
{
    m_owner.store(0, std::memory_order_relaxed);
    m_lock.unlock();
}

/* From the libucm handler: no allocation, no blocking (see rcache.h). */
void rcache::on_unmapped(uintptr_t start, uintptr_t end)
{
    if ((end <= m_low.load(std::memory_order_acquire)) ||
        (start >= m_high.load(std::memory_order_acquire))) {
        return;     /* no cached region has ever been there */
    }
    if ((m_owner.load(std::memory_order_relaxed) != self_id()) && m_lock.try_lock()) {
        mark_unmapped(start, end);
        m_lock.unlock();
        return;
    }
    while (m_queue_lock.test_and_set(std::memory_order_acquire)) {
        /* held only for a few stores by another thread */
    }
    if (m_queued < max_queued_unmaps) {
        m_queue[m_queued++] = {start, end};
    } else {
        unmapped_range &last = m_queue[max_queued_unmaps - 1];
        last.start = std::min(last.start, start);
        last.end   = std::max(last.end, end);
    }
    m_queue_lock.clear(std::memory_order_release);
    m_unmaps_pending.store(true, std::memory_order_release);
}

/* Under m_lock; allocates nothing (runs in the handler too). */
void rcache::mark_unmapped(uintptr_t start, uintptr_t end)
{
    auto it = m_table.upper_bound(start);
    if ((it != m_table.begin()) && (std::prev(it)->second->m_end > start)) {
        --it;
    }
    for (; (it != m_table.end()) && (it->first < end); ++it) {
        rcache_region *region = it->second;
        if (region->m_unmapped) {
            continue;
        }
        if (region->m_refcount == 0) {
            m_lru.remove(*region);
        }
        region->m_unmapped = true;
        m_unmapped.push_back(*region);
        m_unmaps_pending.store(true, std::memory_order_relaxed);
    }
}

/* Under m_lock: takes every region the handler marked or queued out of the
 * cache. */
void rcache::apply_unmaps()
{
    if (!m_unmaps_pending.exchange(false, std::memory_order_acquire)) {
        return;
    }
    unmapped_range ranges[max_queued_unmaps];
    unsigned count;
    while (m_queue_lock.test_and_set(std::memory_order_acquire)) {
    }
    count = m_queued;
    std::copy(m_queue, m_queue + count, ranges);
    m_queued = 0;
    m_queue_lock.clear(std::memory_order_release);

    for (unsigned i = 0; i < count; ++i) {
        mark_unmapped(ranges[i].start, ranges[i].end);
    }
    m_unmaps_pending.store(false, std::memory_order_relaxed);
    while (rcache_region *region = m_unmapped.front()) {
        ucs_trace("rcache '%s': region 0x%lx..0x%lx unmapped (%u users)", m_name,
                  region->m_start, region->m_end, region->m_refcount);
        remove_from_cache(region);
        ++m_stats.invalidations;
        release_if_unused(region);
    }
}

void rcache::remove_from_cache(rcache_region *region)
{
    if (region->m_unmapped) {
        m_unmapped.remove(*region);
    } else if (region->m_refcount == 0) {
        m_lru.remove(*region);
    }
    m_table.erase(region->m_start);
    m_bytes         -= region->length();
    region->m_cached = false;
}

void rcache::release_if_unused(rcache_region *region)
{
    if (region->m_cached || (region->m_refcount != 0)) {
        return;
    }
    m_registrar->mem_dereg(region->m_handle);
    ++m_stats.deregistrations;
    --m_live;
    delete region;
}

void rcache::evict_over_bounds()
{
    while (((m_table.size() > m_max_regions) || (m_bytes > m_max_size)) &&
           !m_lru.empty()) {
        rcache_region *region = m_lru.front();
        remove_from_cache(region);
        ++m_stats.evictions;
        release_if_unused(region);
    }
}

ucs_status_t rcache::create_region(uintptr_t start, uintptr_t end,
                                   rcache_region **region_p)
{
    void *handle;
    ucs_status_t status = m_registrar->mem_reg(reinterpret_cast<void*>(start),
                                               end - start, &handle);
    if (status != UCS_OK) {
        return status;
    }
    auto *region = new (std::nothrow) rcache_region;
    bool inserted = false;
    if (region != nullptr) {
        try {
            inserted = m_table.emplace(start, region).second;
        } catch (...) {
        }
    }
    if (!inserted) {    /* no memory (the table never holds an overlap) */
        delete region;
        m_registrar->mem_dereg(handle);
        return UCS_ERR_NO_MEMORY;
    }
    region->m_start    = start;
    region->m_end      = end;
    region->m_handle   = handle;
    region->m_refcount = 1;
    region->m_cached   = true;
    m_bytes           += end - start;
    ++m_live;
    ++m_stats.registrations;
    if (start < m_low.load(std::memory_order_relaxed)) {
        m_low.store(start, std::memory_order_release);
    }
    if (end > m_high.load(std::memory_order_relaxed)) {
        m_high.store(end, std::memory_order_release);
    }
    *region_p = region;
    return UCS_OK;
}

/* A miss: one region over [start, end) and every cached region it overlaps. */
ucs_status_t rcache::register_region(uintptr_t start, uintptr_t end,
                                     rcache_region **region_p)
{
    uintptr_t merged_start = start;
    uintptr_t merged_end   = end;
    auto it = m_table.upper_bound(start);
    if ((it != m_table.begin()) && (std::prev(it)->second->m_end > start)) {
        --it;
    }
    while ((it != m_table.end()) && (it->first < end)) {
        rcache_region *old = (it++)->second;
        merged_start = std::min(merged_start, old->m_start);
        merged_end   = std::max(merged_end, old->m_end);
        remove_from_cache(old);
        ++m_stats.merges;
        release_if_unused(old);
    }
    ucs_status_t status = create_region(merged_start, merged_end, region_p);
    if ((status != UCS_OK) && ((merged_start != start) || (merged_end != end))) {
        /* The merged span may cross memory the md cannot register (a hole,
         * other permissions); the request's own span overlaps nothing now. */
        ucs_debug("rcache '%s': registering merged 0x%lx..0x%lx failed (%s), "
                  "registering 0x%lx..0x%lx", m_name, merged_start, merged_end,
                  ucs_status_string(status), start, end);
        status = create_region(start, end, region_p);
    }
    return status;
}

ucs_status_t rcache::get(const void *address, size_t length, rcache_region **region_p)
{
    const auto addr = reinterpret_cast<uintptr_t>(address);
    uintptr_t last;
    if ((region_p == nullptr) || (length == 0) ||
        __builtin_add_overflow(addr, length - 1, &last) ||
        (last > UINTPTR_MAX - m_alignment)) {
        return UCS_ERR_INVALID_PARAM;
    }
    const uintptr_t start = addr & ~(m_alignment - 1);
    const uintptr_t end   = (last | (m_alignment - 1)) + 1;

    lock();
    ++m_stats.gets;
    apply_unmaps();
    auto it = m_table.upper_bound(start);
    if (it != m_table.begin()) {
        rcache_region *region = std::prev(it)->second;
        if (region->m_end >= end) {
            if (region->m_refcount++ == 0) {
                m_lru.remove(*region);
            }
            ++m_stats.hits;
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
        ucs_debug("rcache '%s': registering %p+%zu failed: %s", m_name, address, length,
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
    if (region->m_refcount == 0) {
        unlock();
        ucs_error("rcache '%s': put of region 0x%lx..0x%lx that has no users", m_name,
                  region->m_start, region->m_end);
        return;
    }
    apply_unmaps();
    if (--region->m_refcount == 0) {
        if (region->m_cached) {
            m_lru.push_back(*region);    /* most recently used */
            evict_over_bounds();
        } else {
            release_if_unused(region);
        }
    }
    unlock();
}

rcache_stats rcache::stats() const
{
    std::lock_guard<std::mutex> guard(m_lock);
    rcache_stats s = m_stats;
    s.regions      = m_table.size();
    s.bytes        = m_bytes;
    return s;
}

} // namespace ucs
