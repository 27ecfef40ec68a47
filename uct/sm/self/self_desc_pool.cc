#include <uct/sm/self/self_desc_pool.h>

#include <ucs/debug/log.h>

#include <algorithm>
#include <cstdlib>

namespace uct::self {

namespace {

constexpr size_t CACHE_LINE = 64;

size_t align_up(size_t value, size_t align)
{
    return (value + align - 1) / align * align;
}

} // namespace

desc_pool::desc_pool(size_t elem_size, unsigned grow) :
    elem_size_(align_up(std::max(elem_size, sizeof(free_elem)), CACHE_LINE)),
    grow_(std::max(grow, 1u))
{
}

desc_pool::~desc_pool()
{
    for (void *chunk : chunks_) {
        std::free(chunk);
    }
}

bool desc_pool::grow()
{
    try {
        chunks_.reserve(chunks_.size() + 1);
    } catch (...) {
        return false;
    }
    void *chunk = std::aligned_alloc(CACHE_LINE, elem_size_ * grow_);
    if (chunk == nullptr) {
        ucs_error("self: cannot allocate %u receive descriptors of %zu bytes", grow_, elem_size_);
        return false;
    }
    chunks_.push_back(chunk);
    /* Link in reverse so elements come out in address order. */
    for (unsigned i = grow_; i > 0; --i) {
        put(static_cast<char *>(chunk) + (i - 1) * elem_size_);
    }
    return true;
}

} // namespace uct::self
