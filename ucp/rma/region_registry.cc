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
    regions_.emplace(address, region{length, secret});
    max_length_ = std::max(max_length_, length);
}

bool region_registry::remove(uintptr_t address, size_t length, uint64_t secret)
{
    auto guard = lock();
    auto range = regions_.equal_range(address);
    for (auto it = range.first; it != range.second; ++it) {
        if ((it->second.length == length) && (it->second.secret == secret)) {
            regions_.erase(it);
            return true;
        }
    }
    return false;
}

bool region_registry::contains(uint64_t address, size_t length, uint64_t secret) const
{
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
