/*
 * Fixed-size receive descriptors for the self transport: a LIFO free list
 * (the last released buffer is the warmest) over chunks allocated a few
 * elements at a time. Memory is allocated only when the list runs dry,
 * never per message; everything is freed with the pool.
 */
#ifndef UCT_SM_SELF_SELF_DESC_POOL_H
#define UCT_SM_SELF_SELF_DESC_POOL_H

#include <ucs/sys/compiler_def.h>

#include <cstddef>
#include <vector>

namespace uct::self {

class desc_pool {
public:
    /* Elements of `elem_size` bytes (rounded to cache lines), `grow` per chunk. */
    desc_pool(size_t elem_size, unsigned grow);
    ~desc_pool();

    desc_pool(const desc_pool &)            = delete;
    desc_pool &operator=(const desc_pool &) = delete;

    /* A free element, or nullptr if memory ran out. */
    void *get()
    {
        if (ucs_unlikely(free_ == nullptr) && !grow()) {
            return nullptr;
        }
        free_elem *elem = free_;
        free_           = elem->next;
        return elem;
    }

    void put(void *ptr)
    {
        auto *elem = static_cast<free_elem *>(ptr);
        elem->next = free_;
        free_      = elem;
    }

    size_t elem_size() const { return elem_size_; }

private:
    struct free_elem {
        free_elem *next;
    };

    bool grow();

    free_elem *free_ = nullptr;
    size_t elem_size_;
    unsigned grow_;
    std::vector<void *> chunks_;
};

} // namespace uct::self

#endif
