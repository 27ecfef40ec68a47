/*
 * Registered buffers of one size (receive segments, bcopy and get-result
 * buffers): slabs mapped and registered once, handed out from a free list.
 * Each buffer carries its slab's lkey in a small header in front of it.
 */
#ifndef UCT_IB_IB_BUFFERS_H
#define UCT_IB_IB_BUFFERS_H

#include <ucs/debug/log.h>

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace uct::ib {

class buffer_pool {
public:
    /* Buffers of `size` bytes, `per_slab` to a registration. */
    buffer_pool(ibv_pd *pd, size_t size, unsigned per_slab, const char *name);
    ~buffer_pool();
    buffer_pool(const buffer_pool &)            = delete;
    buffer_pool &operator=(const buffer_pool &) = delete;

    /* A buffer, or nullptr when no memory could be mapped or registered. */
    uint8_t *get();
    void put(uint8_t *buffer);

    static uint32_t lkey(const uint8_t *buffer)
    {
        return reinterpret_cast<const header *>(buffer - sizeof(header))->lkey;
    }

    size_t size() const { return size_; }
    size_t in_use() const { return total_ - free_.size(); }

private:
    struct alignas(16) header {
        uint32_t lkey;
        uint32_t reserved[3];
    };

    struct slab {
        void *memory;
        size_t length;
        ibv_mr *mr;
    };

    bool grow();

    ibv_pd *pd_;
    size_t size_;
    size_t stride_;
    unsigned per_slab_;
    const char *name_;
    size_t total_ = 0;
    std::vector<slab> slabs_;
    std::vector<uint8_t *> free_;
};

/*
 * Posts up to `count` receive buffers of `pool`, `length` bytes each at
 * `offset` into the buffer (its wr_id is the buffer), in batches through
 * `post` (ibv_post_recv on a QP or ibv_post_srq_recv on an SRQ). Returns
 * how many were posted: fewer when the pool or the queue is out of room.
 */
template <typename Post>
unsigned post_receives(buffer_pool &pool, size_t offset, uint32_t length, unsigned count, Post post,
                       const char *what)
{
    constexpr unsigned batch = 16;
    ibv_recv_wr wrs[batch];
    ibv_sge sges[batch];
    unsigned posted = 0;
    while (posted < count) {
        unsigned n = 0;
        for (; (n < batch) && (posted + n < count); ++n) {
            uint8_t *buffer = pool.get();
            if (buffer == nullptr) {
                break;
            }
            sges[n]        = {reinterpret_cast<uintptr_t>(buffer + offset), length,
                              buffer_pool::lkey(buffer)};
            wrs[n]         = {};
            wrs[n].wr_id   = reinterpret_cast<uintptr_t>(buffer);
            wrs[n].sg_list = &sges[n];
            wrs[n].num_sge = 1;
            if (n > 0) {
                wrs[n - 1].next = &wrs[n];
            }
        }
        if (n == 0) {
            break;
        }
        ibv_recv_wr *bad = nullptr;
        const int rc     = post(wrs, &bad);
        unsigned done    = n;
        if (rc != 0) {
            /* Everything from `bad` on was not posted. */
            done = unsigned(bad - wrs);
            for (unsigned i = done; i < n; ++i) {
                pool.put(reinterpret_cast<uint8_t *>(wrs[i].wr_id));
            }
            ucs_error("%s: posting receive buffers failed: %s", what, std::strerror(rc));
        }
        posted += done;
        if (done < n) {
            break;
        }
    }
    return posted;
}

} // namespace uct::ib

#endif
