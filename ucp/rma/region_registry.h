/*
 * The regions an application exposed with ucp_mem_map, per context. A peer
 * that asks us to execute an emulated put, get or atomic names a raw
 * address and the secret of the key it holds; the request is served only
 * if [address, address + length) lies inside a region mapped with that
 * secret. So a forged or stale key cannot reach the rest of our memory,
 * and a key of one region (or none: UCX's empty key) does not open
 * another.
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

    /* Adds one instance of a region (the same range may be mapped twice,
     * each with its own secret). */
    void add(uintptr_t address, size_t length, uint64_t secret);

    /* Removes the instance added with the same range and secret; false if none. */
    bool remove(uintptr_t address, size_t length, uint64_t secret);

    /* [address, address + length) lies inside a region with this secret
     * (overflow-safe). */
    bool contains(uint64_t address, size_t length, uint64_t secret) const;

    size_t size() const;

private:
    std::unique_lock<std::mutex> lock() const
    {
        return shared_ ? std::unique_lock<std::mutex>(mutex_) : std::unique_lock<std::mutex>();
    }

    struct region {
        size_t   length;
        uint64_t secret;
    };

    /* start -> region; several entries may share a start. */
    std::multimap<uintptr_t, region> regions_;
    /* The longest region ever added: how far back a containing one may start. */
    size_t                           max_length_ = 0;
    bool                             shared_ = false;
    mutable std::mutex               mutex_;
};

} // namespace ucp

#endif
