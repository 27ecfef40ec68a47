#include <ucs/memory/memtype_registry.h>

#include <ucs/debug/log.h>

#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <memory>
#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <shared_mutex>
#include <utility>
#include <vector>

namespace ucs::memtype {

namespace detail {

std::atomic<bool> g_have_detectors{false};

} // namespace detail

namespace {

/* An immutable snapshot of the registered detectors, ordered by type. */
struct detector_table {
    std::vector<std::pair<ucs_memory_type_t, detector>> entries;
};

std::atomic<const detector_table *> g_table{nullptr};
std::mutex g_update_lock;
std::atomic<copier> g_copiers[UCS_MEMORY_TYPE_LAST];
std::atomic<const async_copier *> g_async_copiers[UCS_MEMORY_TYPE_LAST];
std::atomic<const host_allocator *> g_bounce_allocator{nullptr};

/* Bounce buffers a provider gave, with what bounce_free needs; malloc'ed
 * ones are not listed. Kept aside, not in front of the buffer, so that a
 * provider is asked for exactly the length (its size classes fit). */
struct provided_block {
    size_t length;
    const host_allocator *owner;
};
std::mutex g_bounce_lock;
std::unordered_map<void *, provided_block> g_provided_blocks;
std::atomic<bool> g_blocks_provided{false};

/*
 * Readers use a snapshot without any lock or reference count, so a replaced
 * snapshot is never freed; updates are rare (module load and unload). The
 * list is never destroyed either, so a detect() racing process exit is safe.
 */
std::vector<std::unique_ptr<detector_table>> &retired_tables()
{
    static auto *tables = new std::vector<std::unique_ptr<detector_table>>();
    return *tables;
}

bool is_detectable_type(ucs_memory_type_t type)
{
    return (type > UCS_MEMORY_TYPE_HOST) && (type < UCS_MEMORY_TYPE_LAST);
}

/* Whose copier moves a copy: the destination's type unless it is host. */
ucs_memory_type_t copier_type(ucs_memory_type_t dest_type, ucs_memory_type_t src_type)
{
    return (dest_type != UCS_MEMORY_TYPE_HOST) ? dest_type : src_type;
}

/* Called with g_update_lock held. */
void publish(std::unique_ptr<detector_table> table)
{
    const bool non_empty = !table->entries.empty();
    g_table.store(table.get(), std::memory_order_release);
    retired_tables().push_back(std::move(table));
    detail::g_have_detectors.store(non_empty, std::memory_order_release);
}

/*
 * The program break when this library loaded. Memory between it and the
 * current break is the malloc heap: host memory whatever the detectors
 * would say, and said without asking them (a driver call each). Where
 * most small buffers live, this spares host traffic the detection cost.
 */
const uintptr_t g_heap_floor = reinterpret_cast<uintptr_t>(sbrk(0));

bool in_heap(const void *address, size_t length) noexcept
{
    const auto start = reinterpret_cast<uintptr_t>(address);
    const auto brk   = reinterpret_cast<uintptr_t>(sbrk(0)); /* no system call */
    return (g_heap_floor != uintptr_t(-1)) && (start >= g_heap_floor) && (start < brk) &&
           (length <= brk - start);
}

struct known_region {
    uintptr_t start;
    uintptr_t end;
    ucs_memory_type_t type;
};

/* Remembered regions, by start; read under the shared lock on every
 * detection once one exists. */
std::shared_mutex g_known_lock;
std::vector<known_region> g_known;
std::atomic<bool> g_have_known{false};

bool find_known(const void *address, size_t length, ucs_memory_type_t *type)
{
    if (!g_have_known.load(std::memory_order_acquire)) {
        return false;
    }
    const auto start = reinterpret_cast<uintptr_t>(address);
    std::shared_lock<std::shared_mutex> guard(g_known_lock);
    /* The regions starting at or before `start`, nearest first. */
    auto it = std::upper_bound(g_known.begin(), g_known.end(), start,
                               [](uintptr_t a, const known_region &r) { return a < r.start; });
    /* Overlaps are rare: the few nearest starts hold the answer if any does. */
    for (int step = 0; (step < 4) && (it != g_known.begin()); ++step) {
        --it;
        if ((start < it->end) && (length <= it->end - start)) {
            *type = it->type;
            return true;
        }
    }
    return false;
}

} // namespace

void remember(const void *address, size_t length, ucs_memory_type_t type)
{
    const auto start = reinterpret_cast<uintptr_t>(address);
    if ((length == 0) || (start + length < start) || (type >= UCS_MEMORY_TYPE_LAST)) {
        return;
    }
    std::unique_lock<std::shared_mutex> guard(g_known_lock);
    try {
        auto pos = std::upper_bound(g_known.begin(), g_known.end(), start,
                                    [](uintptr_t a, const known_region &r) { return a < r.start; });
        g_known.insert(pos, {start, start + length, type});
        g_have_known.store(true, std::memory_order_release);
    } catch (const std::bad_alloc &) {
        /* Not remembered: the detectors answer for it. */
    }
}

void forget(const void *address, size_t length)
{
    const auto start = reinterpret_cast<uintptr_t>(address);
    std::unique_lock<std::shared_mutex> guard(g_known_lock);
    auto it = std::find_if(g_known.begin(), g_known.end(), [&](const known_region &r) {
        return (r.start == start) && (r.end == start + length);
    });
    if (it != g_known.end()) {
        g_known.erase(it);
    }
    g_have_known.store(!g_known.empty(), std::memory_order_release);
}

namespace detail {

ucs_memory_type_t detect_slow(const void *address, size_t length) noexcept
{
    if (in_heap(address, length)) {
        return UCS_MEMORY_TYPE_HOST;
    }
    ucs_memory_type_t known;
    if (find_known(address, length, &known)) {
        return known;
    }
    const detector_table *table = g_table.load(std::memory_order_acquire);
    if (table == nullptr) {
        return UCS_MEMORY_TYPE_HOST;
    }

    for (const auto &[type, fn] : table->entries) {
        try {
            if (fn(address, length)) {
                return type;
            }
        } catch (...) {
            ucs_debug("%s memory detector threw for %p; treated as no", ucs_memory_type_names[type],
                      address);
        }
    }
    return UCS_MEMORY_TYPE_HOST;
}

} // namespace detail

ucs_status_t register_detector(ucs_memory_type_t type, detector fn)
{
    if (!is_detectable_type(type) || !fn) {
        return UCS_ERR_INVALID_PARAM;
    }

    std::lock_guard<std::mutex> guard(g_update_lock);
    const detector_table *current = g_table.load(std::memory_order_relaxed);
    try {
        auto table = std::make_unique<detector_table>();
        if (current != nullptr) {
            for (const auto &entry : current->entries) {
                if (entry.first == type) {
                    return UCS_ERR_ALREADY_EXISTS;
                }
            }
            table->entries = current->entries;
        }

        auto pos = table->entries.begin();
        while ((pos != table->entries.end()) && (pos->first < type)) {
            ++pos;
        }
        table->entries.emplace(pos, type, std::move(fn));
        publish(std::move(table));
    } catch (const std::bad_alloc &) {
        return UCS_ERR_NO_MEMORY;
    }

    ucs_debug("registered %s memory detector", ucs_memory_type_names[type]);
    return UCS_OK;
}

ucs_status_t unregister_detector(ucs_memory_type_t type)
{
    if (!is_detectable_type(type)) {
        return UCS_ERR_INVALID_PARAM;
    }

    std::lock_guard<std::mutex> guard(g_update_lock);
    const detector_table *current = g_table.load(std::memory_order_relaxed);
    if (current == nullptr) {
        return UCS_ERR_NO_ELEM;
    }

    try {
        auto table = std::make_unique<detector_table>();
        bool found = false;
        for (const auto &entry : current->entries) {
            if (entry.first == type) {
                found = true;
            } else {
                table->entries.push_back(entry);
            }
        }
        if (!found) {
            return UCS_ERR_NO_ELEM;
        }
        publish(std::move(table));
    } catch (const std::bad_alloc &) {
        return UCS_ERR_NO_MEMORY;
    }

    ucs_debug("unregistered %s memory detector", ucs_memory_type_names[type]);
    return UCS_OK;
}

ucs_status_t register_copier(ucs_memory_type_t type, copier fn)
{
    if (!is_detectable_type(type) || (fn == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    copier none = nullptr;
    if (!g_copiers[type].compare_exchange_strong(none, fn, std::memory_order_acq_rel)) {
        return UCS_ERR_ALREADY_EXISTS;
    }
    ucs_debug("registered %s memory copier", ucs_memory_type_names[type]);
    return UCS_OK;
}

ucs_status_t unregister_copier(ucs_memory_type_t type)
{
    if (!is_detectable_type(type)) {
        return UCS_ERR_INVALID_PARAM;
    }
    return (g_copiers[type].exchange(nullptr, std::memory_order_acq_rel) != nullptr) ?
               UCS_OK :
               UCS_ERR_NO_ELEM;
}

bool can_copy(ucs_memory_type_t type) noexcept
{
    return (type == UCS_MEMORY_TYPE_HOST) ||
           (is_detectable_type(type) &&
            (g_copiers[type].load(std::memory_order_acquire) != nullptr));
}

ucs_status_t copy(void *dest, ucs_memory_type_t dest_type, const void *src,
                  ucs_memory_type_t src_type, size_t length) noexcept
{
    if ((dest_type == UCS_MEMORY_TYPE_HOST) && (src_type == UCS_MEMORY_TYPE_HOST)) {
        std::memcpy(dest, src, length);
        return UCS_OK;
    }
    const ucs_memory_type_t type = copier_type(dest_type, src_type);
    if (!is_detectable_type(type)) {
        return UCS_ERR_INVALID_PARAM;
    }
    copier fn = g_copiers[type].load(std::memory_order_acquire);
    return (fn != nullptr) ? fn(dest, dest_type, src, src_type, length) : UCS_ERR_UNSUPPORTED;
}

ucs_status_t register_async_copier(ucs_memory_type_t type, const async_copier *fns)
{
    if (!is_detectable_type(type) || (fns == nullptr) || (fns->start == nullptr) ||
        (fns->finish == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    const async_copier *none = nullptr;
    if (!g_async_copiers[type].compare_exchange_strong(none, fns, std::memory_order_acq_rel)) {
        return UCS_ERR_ALREADY_EXISTS;
    }
    return UCS_OK;
}

ucs_status_t unregister_async_copier(ucs_memory_type_t type)
{
    if (!is_detectable_type(type)) {
        return UCS_ERR_INVALID_PARAM;
    }
    return (g_async_copiers[type].exchange(nullptr, std::memory_order_acq_rel) != nullptr) ?
               UCS_OK :
               UCS_ERR_NO_ELEM;
}

ucs_status_t copy_start(void *dest, ucs_memory_type_t dest_type, const void *src,
                        ucs_memory_type_t src_type, size_t length) noexcept
{
    const ucs_memory_type_t type = copier_type(dest_type, src_type);
    if (is_detectable_type(type)) {
        const async_copier *fns = g_async_copiers[type].load(std::memory_order_acquire);
        if (fns != nullptr) {
            return fns->start(dest, dest_type, src, src_type, length);
        }
    }
    return copy(dest, dest_type, src, src_type, length);
}

ucs_status_t copy_finish(ucs_memory_type_t type) noexcept
{
    if (!is_detectable_type(type)) {
        return UCS_OK;
    }
    const async_copier *fns = g_async_copiers[type].load(std::memory_order_acquire);
    return (fns != nullptr) ? fns->finish() : UCS_OK;
}

ucs_status_t register_bounce_allocator(const host_allocator *allocator)
{
    if ((allocator == nullptr) || (allocator->alloc == nullptr) ||
        (allocator->release == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    const host_allocator *none = nullptr;
    return g_bounce_allocator.compare_exchange_strong(none, allocator, std::memory_order_acq_rel) ?
               UCS_OK :
               UCS_ERR_ALREADY_EXISTS;
}

ucs_status_t unregister_bounce_allocator()
{
    return (g_bounce_allocator.exchange(nullptr, std::memory_order_acq_rel) != nullptr) ?
               UCS_OK :
               UCS_ERR_NO_ELEM;
}

void *bounce_alloc(size_t length) noexcept
{
    const host_allocator *provider = g_bounce_allocator.load(std::memory_order_acquire);
    if (provider != nullptr) {
        void *block = provider->alloc(length);
        if (block != nullptr) {
            try {
                std::lock_guard<std::mutex> guard(g_bounce_lock);
                g_provided_blocks.emplace(block, provided_block{length, provider});
                g_blocks_provided.store(true, std::memory_order_relaxed);
                return block;
            } catch (...) {
                provider->release(block, length); /* no memory to list it */
            }
        }
    }
    return std::malloc(length);
}

void bounce_free(void *buffer) noexcept
{
    if (buffer == nullptr) {
        return;
    }
    if (g_blocks_provided.load(std::memory_order_relaxed)) {
        provided_block block{};
        {
            std::lock_guard<std::mutex> guard(g_bounce_lock);
            auto it = g_provided_blocks.find(buffer);
            if (it != g_provided_blocks.end()) {
                block = it->second;
                g_provided_blocks.erase(it);
            }
        }
        if (block.owner != nullptr) {
            block.owner->release(buffer, block.length);
            return;
        }
    }
    std::free(buffer);
}

} // namespace ucs::memtype
