/*
 * Blocks of memory that are slow to get and to give back (pinned host
 * memory: about a millisecond per few MiB each way), kept for reuse by size
 * class (powers of two from min_block). The memory of all blocks, in use and
 * idle, stays within max_total: a block that would pass it takes the room
 * of idle blocks of other sizes, else none is given (the caller falls back
 * to ordinary memory). So a window of operations that each hold a block
 * reuses the same blocks instead of getting and giving back one per
 * operation. Thread-safe; the slow calls run outside the lock.
 */
#ifndef UCS_MEMORY_BLOCK_CACHE_H
#define UCS_MEMORY_BLOCK_CACHE_H

#include <cstddef>
#include <mutex>
#include <unordered_map>

namespace ucs {

class block_cache {
public:
    struct limits {
        size_t min_block; /* smaller requests get no block; at least 1 */
        size_t max_block; /* larger ones neither */
        size_t max_total; /* in use and idle */
    };
    using get_fn     = void *(*)(size_t size); /* nullptr: failed */
    using release_fn = void (*)(void *block, size_t size);

    block_cache(get_fn get, release_fn release, const limits &lim) :
        get_(get), release_(release), lim_(lim)
    {
        lim_.min_block = (lim_.min_block == 0) ? 1 : lim_.min_block;
    }
    block_cache(const block_cache &)            = delete;
    block_cache &operator=(const block_cache &) = delete;
    /* Idle blocks are given back; blocks in use are the users' to put back
     * before (a cache that outlives them is never destroyed). */
    ~block_cache();

    /* A block of at least `length` bytes; nullptr when none may be had. */
    void *get(size_t length);

    /* Back for reuse: `length` as asked for in get(). */
    void put(void *block, size_t length);

    /* Memory of all blocks, in use and idle. */
    size_t total() const;

    size_t size_class(size_t length) const;

private:
    get_fn get_;
    release_fn release_;
    limits lim_;
    mutable std::mutex lock_;
    std::unordered_multimap<size_t, void *> idle_;
    size_t total_      = 0;
    size_t idle_bytes_ = 0; /* of total_ */
};

} // namespace ucs

#endif
