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

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

struct ucp_cntr;

namespace ucp {

/* A counter bound to a region (ucp_mem_bind_cntr): what it counts there. */
struct region_counter {
    ucp_cntr *cntr  = nullptr;
    uint64_t events = 0; /* UCP_MEM_CNTR_REMOTE_* */
};

class region_registry {
public:
    void set_shared(bool shared) { shared_ = shared; }

    /* Adds one instance of a region (the same range may be mapped twice,
     * each with its own secret). */
    void add(uintptr_t address, size_t length, uint64_t secret);

    /* Removes the instance added with the same range and secret; false if none. */
    bool remove(uintptr_t address, size_t length, uint64_t secret);

    /* The instance a worker's last lookup matched: a peer's puts land in
     * the same region mostly, and checking it again costs a compare, not a
     * tree walk and the lock. Any change to the registry makes it stale. */
    struct lookup_cache {
        uint64_t generation = 0; /* of the registry when filled; 0: empty */
        uintptr_t start     = 0;
        size_t length       = 0;
        uint64_t secret     = 0;
        region_counter counter;
    };

    /* [address, address + length) lies inside a region with this secret
     * (overflow-safe); *counter (if given) is what counts there. Tries
     * `cache` first, and refills it on a miss. */
    bool contains(lookup_cache &cache, uint64_t address, size_t length, uint64_t secret,
                  region_counter *counter = nullptr) const;

    /* Binds `counter` to the instance with this range and secret (a null
     * counter unbinds); false if none. */
    bool bind(uintptr_t address, size_t length, uint64_t secret, region_counter counter);

    size_t size() const;

private:
    /* Runs action(iterator) on the instance with this range and secret. */
    template <typename Action>
    bool with_instance(uintptr_t address, size_t length, uint64_t secret, Action &&action);

    std::unique_lock<std::mutex> lock() const
    {
        return shared_ ? std::unique_lock<std::mutex>(mutex_) : std::unique_lock<std::mutex>();
    }

    struct region {
        size_t length;
        uint64_t secret;
        region_counter counter;
    };

    /* start -> region; several entries may share a start. */
    std::multimap<uintptr_t, region> regions_;
    /* Bumped by every change (under the lock); lookup caches compare it. */
    std::atomic<uint64_t> generation_{1};
    /* The longest region ever added: how far back a containing one may start. */
    size_t max_length_ = 0;
    bool shared_       = false;
    mutable std::mutex mutex_;
};

} // namespace ucp

#endif
