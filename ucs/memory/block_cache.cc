#include <ucs/memory/block_cache.h>

#include <vector>

namespace ucs {

block_cache::~block_cache()
{
    for (const auto &[size, block] : idle_) {
        release_(block, size);
    }
}

size_t block_cache::size_class(size_t length) const
{
    size_t size = lim_.min_block;
    while (size < length) {
        size *= 2;
    }
    return size;
}

void *block_cache::get(size_t length)
{
    if ((length < lim_.min_block) || (length > lim_.max_block)) {
        return nullptr;
    }
    const size_t size = size_class(length);
    std::vector<std::pair<size_t, void *>> evicted;
    try {
        std::lock_guard<std::mutex> guard(lock_);
        auto it = idle_.find(size);
        if (it != idle_.end()) {
            void *block = it->second;
            idle_.erase(it);
            idle_bytes_ -= size;
            return block;
        }
        if (total_ - idle_bytes_ + size > lim_.max_total) {
            return nullptr; /* too much in use: the idle blocks stay */
        }
        while (total_ + size > lim_.max_total) {
            evicted.push_back(*idle_.begin());
            total_ -= idle_.begin()->first;
            idle_bytes_ -= idle_.begin()->first;
            idle_.erase(idle_.begin());
        }
        total_ += size; /* reserved before the slow calls below */
    } catch (...) {
        return nullptr;
    }
    for (const auto &[evicted_size, block] : evicted) {
        release_(block, evicted_size);
    }
    void *block = get_(size);
    if (block == nullptr) {
        std::lock_guard<std::mutex> guard(lock_);
        total_ -= size;
    }
    return block;
}

void block_cache::put(void *block, size_t length)
{
    const size_t size = size_class(length);
    {
        std::lock_guard<std::mutex> guard(lock_);
        try {
            idle_.emplace(size, block);
            idle_bytes_ += size;
            return;
        } catch (...) {
            total_ -= size;
        }
    }
    release_(block, size);
}

size_t block_cache::total() const
{
    std::lock_guard<std::mutex> guard(lock_);
    return total_;
}

} // namespace ucs
