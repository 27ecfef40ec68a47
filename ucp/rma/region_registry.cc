/*
 * Registry of mapped regions (see region_registry.h).
 */
#include "region_registry.h"

#include <ucs/sys/random.h>
#include <ucs/type/wire_reader.h>

#include <algorithm>

namespace ucp {

void region_registry::add(uintptr_t address, size_t length, uint64_t secret)
{
    auto guard = lock();
    regions_.emplace(address, region{length, secret, {}});
    generation_.fetch_add(1, std::memory_order_release);
    max_length_ = std::max(max_length_, length);
}

template <typename Action>
bool region_registry::with_instance(uintptr_t address, size_t length, uint64_t secret,
                                    Action &&action)
{
    auto guard = lock();
    auto range = regions_.equal_range(address);
    for (auto it = range.first; it != range.second; ++it) {
        if ((it->second.length == length) && (it->second.secret == secret)) {
            action(it);
            generation_.fetch_add(1, std::memory_order_release);
            return true;
        }
    }
    return false;
}

bool region_registry::remove(uintptr_t address, size_t length, uint64_t secret)
{
    return with_instance(address, length, secret, [this](auto it) { regions_.erase(it); });
}

bool region_registry::bind(uintptr_t address, size_t length, uint64_t secret,
                           region_counter counter)
{
    return with_instance(address, length, secret,
                         [counter](auto it) { it->second.counter = counter; });
}

bool region_registry::contains(lookup_cache &cache, uint64_t address, size_t length,
                               uint64_t secret, region_counter *counter) const
{
    if ((cache.generation == generation_.load(std::memory_order_acquire)) &&
        ucs::range_inside(address, length, cache.start, cache.length) &&
        ucs::sys::secret_equal(&secret, &cache.secret, sizeof(secret))) {
        if (counter != nullptr) {
            *counter = cache.counter;
        }
        return true;
    }
    auto guard = lock();
    /* Candidates start at or before `address`, and no earlier than the
     * longest region could reach from. */
    auto it = regions_.upper_bound(uintptr_t(address));
    while (it != regions_.begin()) {
        --it;
        const uintptr_t start = it->first;
        if (address - start > max_length_) {
            break;
        }
        if (ucs::range_inside(address, length, start, it->second.length) &&
            ucs::sys::secret_equal(&secret, &it->second.secret, sizeof(secret))) {
            if (counter != nullptr) {
                *counter = it->second.counter;
            }
            cache = {generation_.load(std::memory_order_relaxed), start, it->second.length,
                     it->second.secret, it->second.counter};
            return true;
        }
    }
    return false;
}

size_t region_registry::size() const
{
    auto guard = lock();
    return regions_.size();
}

} // namespace ucp
