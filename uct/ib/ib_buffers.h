/*
 * Registered buffers of one size (receive segments, bcopy and get-result
 * buffers): slabs mapped and registered once, handed out from a free list.
 * Each buffer carries its slab's lkey in a small header in front of it.
 */
#ifndef UCT_IB_IB_BUFFERS_H
#define UCT_IB_IB_BUFFERS_H

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace uct::ib {

class buffer_pool {
public:
    /* Buffers of `size` bytes, `per_slab` to a registration. */
    buffer_pool(ibv_pd *pd, size_t size, unsigned per_slab, const char *name);
    ~buffer_pool();
    buffer_pool(const buffer_pool&) = delete;
    buffer_pool &operator=(const buffer_pool&) = delete;

    /* A buffer, or nullptr when no memory could be mapped or registered. */
    uint8_t *get();
    void put(uint8_t *buffer);

    static uint32_t lkey(const uint8_t *buffer)
    {
        return reinterpret_cast<const header*>(buffer - sizeof(header))->lkey;
    }

    size_t size() const { return size_; }
    size_t in_use() const { return total_ - free_.size(); }

private:
    struct alignas(16) header {
        uint32_t lkey;
        uint32_t reserved[3];
    };

    struct slab {
        void   *memory;
        size_t length;
        ibv_mr *mr;
    };

    bool grow();

    ibv_pd                *pd_;
    size_t                size_;
    size_t                stride_;
    unsigned              per_slab_;
    const char            *name_;
    size_t                total_ = 0;
    std::vector<slab>     slabs_;
    std::vector<uint8_t*> free_;
};

} // namespace uct::ib

#endif
