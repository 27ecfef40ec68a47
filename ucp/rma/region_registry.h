/*
 * The regions an application exposed with ucp_mem_map, per context. A peer
 * that asks us to execute an emulated put, get or atomic names a raw
 * address; the request is served only if [address, address + length) lies
 * inside one of these regions, so a forged or stale key cannot reach the
 * rest of our memory.
 *
 * Locked only when the context is shared by threads (mt_workers_shared):
 * otherwise mapping and serving happen on the application's one thread.
 */
#ifndef UCP_RMA_REGION_REGISTRY_H
#define UCP_RMA_REGION_REGISTRY_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

namespace ucp {

class region_registry {
public:
    void set_shared(bool shared) { shared_ = shared; }

    /* Adds one instance of a region (the same range may be mapped twice). */
    void add(uintptr_t address, size_t length);

    /* Removes one instance added with the same range; false if none. */
    bool remove(uintptr_t address, size_t length);

    /* [address, address + length) lies inside one region (overflow-safe). */
    bool contains(uint64_t address, size_t length) const;

    size_t size() const;

private:
    std::unique_lock<std::mutex> lock() const
    {
        return shared_ ? std::unique_lock<std::mutex>(mutex_) : std::unique_lock<std::mutex>();
    }

    /* start -> length; several entries may share a start. */
    std::multimap<uintptr_t, size_t> regions_;
    /* The longest region ever added: how far back a containing one may start. */
    size_t                           max_length_ = 0;
    bool                             shared_ = false;
    mutable std::mutex               mutex_;
};

} // namespace ucp

#endif
