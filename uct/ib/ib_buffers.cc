#include <uct/ib/ib_buffers.h>

#include <ucs/debug/log.h>

#include <sys/mman.h>

namespace uct::ib {

buffer_pool::buffer_pool(ibv_pd *pd, size_t size, unsigned per_slab, const char *name) :
    pd_(pd), size_(size), stride_((sizeof(header) + size + 63) & ~size_t(63)), per_slab_(per_slab),
    name_(name)
{
}

buffer_pool::~buffer_pool()
{
    for (slab &s : slabs_) {
        ibv_dereg_mr(s.mr);
        ::munmap(s.memory, s.length);
    }
}

bool buffer_pool::grow()
{
    const size_t length = stride_ * per_slab_;
    void *memory = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                          0);
    if (memory == MAP_FAILED) {
        ucs_error("ib: cannot map %zu bytes of %s buffers: %m", length, name_);
        return false;
    }
    constexpr int access = IBV_ACCESS_LOCAL_WRITE; /* an int: the macro masks it */
    ibv_mr *mr           = ibv_reg_mr(pd_, memory, length, access);
    if (mr == nullptr) {
        ucs_error("ib: cannot register %zu bytes of %s buffers: %m", length, name_);
        ::munmap(memory, length);
        return false;
    }
    slabs_.push_back({memory, length, mr});
    auto *base = static_cast<uint8_t *>(memory);
    for (unsigned i = per_slab_; i-- > 0;) {
        auto *h = reinterpret_cast<header *>(base + i * stride_);
        h->lkey = mr->lkey;
        free_.push_back(reinterpret_cast<uint8_t *>(h + 1));
    }
    total_ += per_slab_;
    return true;
}

uint8_t *buffer_pool::get()
{
    if (free_.empty() && !grow()) {
        return nullptr;
    }
    uint8_t *buffer = free_.back();
    free_.pop_back();
    return buffer;
}

void buffer_pool::put(uint8_t *buffer)
{
    free_.push_back(buffer);
}

} // namespace uct::ib
