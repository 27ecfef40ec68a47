/*
 * Open-addressing hash map for hot-path lookups (tag-matching buckets,
 * endpoint lookup by id). Power-of-two capacity, linear probing, and
 * backward-shift deletion, so erase leaves no tombstones and heavy churn
 * does not slow lookups down. Grows when the load would pass 0.7; after
 * reserve(n), the first n inserts neither allocate nor move entries.
 *
 * Never throws for lack of memory: emplace() returns {nullptr, false} and
 * reserve() returns UCS_ERR_NO_MEMORY. Pointers to values stay valid until
 * the map grows or an erase shifts entries. Not thread-safe.
 *
 *   ucs::hash_map<uint64_t, bucket*> buckets;
 *   buckets.reserve(1024);
 *   buckets.insert(tag, b);
 *   if (bucket **b = buckets.find(tag)) { ... }
 *   for (auto e : buckets) { use(e.key, e.value); }
 */
#ifndef UCS_DATASTRUCT_HASH_MAP_H
#define UCS_DATASTRUCT_HASH_MAP_H

#include <ucs/datastruct/hash.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/type/status.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <new>
#include <type_traits>
#include <utility>

namespace ucs {

template <typename Key, typename Value, typename Hash = ucs::hash<Key>,
          typename KeyEqual = std::equal_to<Key>>
class hash_map {
    /* Entries are moved by growth and by backward shift: moves must not fail. */
    static_assert(std::is_nothrow_move_constructible_v<Key> &&
                      std::is_nothrow_move_constructible_v<Value>,
                  "hash_map keys and values need noexcept move constructors");

    struct slot {
        Key key;
        Value value;

        template <typename... Args>
        explicit slot(const Key &k, Args &&...args) : key(k), value(std::forward<Args>(args)...)
        {
        }
    };

public:
    /* What iteration yields; the key must not be changed. */
    struct entry_ref {
        const Key &key;
        Value &value;
    };

    class iterator {
    public:
        using iterator_category = std::forward_iterator_tag;
        using value_type        = entry_ref;
        using difference_type   = std::ptrdiff_t;
        using reference         = entry_ref;

        iterator() noexcept = default;
        iterator(const hash_map *map, std::size_t index) noexcept : m_map(map), m_index(index)
        {
            skip_free();
        }

        entry_ref operator*() const noexcept
        {
            slot &s = m_map->m_slots[m_index];
            return entry_ref{s.key, s.value};
        }

        const Key &key() const noexcept { return m_map->m_slots[m_index].key; }
        Value &value() const noexcept { return m_map->m_slots[m_index].value; }

        iterator &operator++() noexcept
        {
            ++m_index;
            skip_free();
            return *this;
        }
        iterator operator++(int) noexcept
        {
            iterator prev = *this;
            ++*this;
            return prev;
        }
        bool operator==(const iterator &other) const noexcept { return m_index == other.m_index; }

    private:
        void skip_free() noexcept
        {
            while ((m_index < m_map->m_capacity) && !m_map->m_used[m_index]) {
                ++m_index;
            }
        }

        const hash_map *m_map = nullptr;
        std::size_t m_index   = 0;
    };

    /* Load limit is 7/10 of the capacity. */
    static constexpr std::size_t min_capacity = 8;

    hash_map() noexcept = default;

    hash_map(const hash_map &)            = delete;
    hash_map &operator=(const hash_map &) = delete;

    hash_map(hash_map &&other) noexcept { steal(other); }

    hash_map &operator=(hash_map &&other) noexcept
    {
        if (this != &other) {
            destroy();
            steal(other);
        }
        return *this;
    }

    ~hash_map() { destroy(); }

    std::size_t size() const noexcept { return m_size; }
    bool empty() const noexcept { return m_size == 0; }
    std::size_t capacity() const noexcept { return m_capacity; }

    /* Entries that fit before the next growth. */
    std::size_t max_size_before_grow() const noexcept { return m_grow_at; }

    /* Makes room for `count` entries in total, so inserts up to that
     * count do not allocate or move entries. */
    ucs_status_t reserve(std::size_t count) noexcept
    {
        if (count <= m_grow_at) {
            return UCS_OK;
        }
        std::size_t capacity = min_capacity;
        while (load_limit(capacity) < count) {
            if (capacity > max_capacity / 2) {
                return UCS_ERR_NO_MEMORY; /* more than memory can hold */
            }
            capacity *= 2;
        }
        return rehash(capacity);
    }

    Value *find(const Key &key) noexcept(noexcept(Hash{}(key)))
    {
        std::size_t index = find_index(key);
        return (index == npos) ? nullptr : &m_slots[index].value;
    }

    const Value *find(const Key &key) const noexcept(noexcept(Hash{}(key)))
    {
        std::size_t index = find_index(key);
        return (index == npos) ? nullptr : &m_slots[index].value;
    }

    bool contains(const Key &key) const noexcept(noexcept(Hash{}(key)))
    {
        return find_index(key) != npos;
    }

    /*
     * Inserts key -> Value(args...) unless the key is present.
     * Returns {value, true} when inserted, {existing value, false} when the
     * key was present, and {nullptr, false} when growing failed.
     */
    template <typename... Args>
    std::pair<Value *, bool> emplace(const Key &key, Args &&...args)
    {
        std::size_t index = find_index(key);
        if (index != npos) {
            return {&m_slots[index].value, false};
        }
        if (ucs_unlikely(m_size >= m_grow_at) && (rehash(grown_capacity()) != UCS_OK)) {
            return {nullptr, false};
        }

        index = home_of(key);
        while (m_used[index]) {
            index = (index + 1) & m_mask;
        }
        new (&m_slots[index]) slot(key, std::forward<Args>(args)...);
        m_used[index] = 1;
        ++m_size;
        return {&m_slots[index].value, true};
    }

    std::pair<Value *, bool> insert(const Key &key, const Value &value)
    {
        return emplace(key, value);
    }

    std::pair<Value *, bool> insert(const Key &key, Value &&value)
    {
        return emplace(key, std::move(value));
    }

    /* Returns false when the key is not present. */
    bool erase(const Key &key) noexcept(noexcept(Hash{}(key)))
    {
        std::size_t index = find_index(key);
        if (index == npos) {
            return false;
        }
        erase_at(index);
        return true;
    }

    /* Moves the value out into `out` and erases the entry; false if absent. */
    bool take(const Key &key, Value &out) noexcept(noexcept(Hash{}(key)))
    {
        std::size_t index = find_index(key);
        if (index == npos) {
            return false;
        }
        out = std::move(m_slots[index].value);
        erase_at(index);
        return true;
    }

    /*
     * Erases every entry for which pred(const Key&, Value&) is true, visiting
     * each entry exactly once; returns how many were erased. The scan starts
     * after a free slot, so the backward shift of an erase never moves an
     * entry the scan has already passed.
     */
    template <typename Pred>
    std::size_t erase_if(Pred &&pred)
    {
        if (m_size == 0) {
            return 0;
        }
        std::size_t start = 0;
        while (m_used[start]) {
            ++start;
        }

        std::size_t erased = 0;
        std::size_t index  = (start + 1) & m_mask;
        while (index != start) {
            if (m_used[index] &&
                pred(static_cast<const Key &>(m_slots[index].key), m_slots[index].value)) {
                erase_at(index); /* a later entry may now sit at index */
                ++erased;
            } else {
                index = (index + 1) & m_mask;
            }
        }
        return erased;
    }

    /* Removes every entry; keeps the capacity. */
    void clear() noexcept
    {
        for (std::size_t i = 0; (i < m_capacity) && (m_size > 0); ++i) {
            if (m_used[i]) {
                m_slots[i].~slot();
                m_used[i] = 0;
                --m_size;
            }
        }
    }

    iterator begin() const noexcept { return iterator(this, 0); }
    iterator end() const noexcept { return iterator(this, m_capacity); }

private:
    static constexpr std::size_t npos = ~std::size_t(0);
    /* Keeps the byte count of the storage from overflowing. */
    static constexpr std::size_t max_capacity = (~std::size_t(0) / (sizeof(slot) + 1)) / 2;

    static constexpr std::size_t load_limit(std::size_t capacity) noexcept
    {
        return capacity / 10 * 7 + capacity % 10 * 7 / 10;
    }

    static constexpr std::size_t storage_alignment()
    {
        return alignof(slot) > __STDCPP_DEFAULT_NEW_ALIGNMENT__ ? alignof(slot) :
                                                                  __STDCPP_DEFAULT_NEW_ALIGNMENT__;
    }

    std::size_t grown_capacity() const noexcept
    {
        return (m_capacity == 0) ? min_capacity : (m_capacity * 2);
    }

    std::size_t home_of(const Key &key) const noexcept(noexcept(Hash{}(key)))
    {
        return Hash{}(key)&m_mask;
    }

    std::size_t find_index(const Key &key) const noexcept(noexcept(Hash{}(key)))
    {
        if (m_size == 0) {
            return npos;
        }
        /* Terminates: the load limit keeps at least one slot free. */
        for (std::size_t index = home_of(key); m_used[index]; index = (index + 1) & m_mask) {
            if (KeyEqual{}(m_slots[index].key, key)) {
                return index;
            }
        }
        return npos;
    }

    /* Frees `hole` and pulls back later entries of its probe run that may
     * live closer to their home, so every run stays contiguous. */
    void erase_at(std::size_t hole) noexcept
    {
        m_slots[hole].~slot();
        for (std::size_t next = (hole + 1) & m_mask; m_used[next]; next = (next + 1) & m_mask) {
            std::size_t home = home_of(m_slots[next].key);
            if (((next - home) & m_mask) >= ((next - hole) & m_mask)) {
                new (&m_slots[hole]) slot(std::move(m_slots[next]));
                m_slots[next].~slot();
                hole = next;
            }
        }
        m_used[hole] = 0;
        --m_size;
    }

    ucs_status_t rehash(std::size_t capacity) noexcept
    {
        std::size_t bytes = capacity * sizeof(slot) + capacity;
        void *memory = ::operator new(bytes, std::align_val_t(storage_alignment()), std::nothrow);
        if (memory == nullptr) {
            return UCS_ERR_NO_MEMORY;
        }

        slot *slots = static_cast<slot *>(memory);
        auto *used  = reinterpret_cast<std::uint8_t *>(slots + capacity);
        std::fill(used, used + capacity, std::uint8_t(0));
        std::size_t mask = capacity - 1;

        for (std::size_t i = 0; i < m_capacity; ++i) {
            if (!m_used[i]) {
                continue;
            }
            std::size_t index = Hash{}(m_slots[i].key) & mask;
            while (used[index]) {
                index = (index + 1) & mask;
            }
            new (&slots[index]) slot(std::move(m_slots[i]));
            used[index] = 1;
            m_slots[i].~slot();
        }

        release_storage();
        m_slots    = slots;
        m_used     = used;
        m_capacity = capacity;
        m_mask     = mask;
        m_grow_at  = load_limit(capacity);
        return UCS_OK;
    }

    void release_storage() noexcept
    {
        if (m_slots != nullptr) {
            ::operator delete(m_slots, std::align_val_t(storage_alignment()));
        }
    }

    void destroy() noexcept
    {
        clear();
        release_storage();
        m_slots    = nullptr;
        m_used     = nullptr;
        m_capacity = 0;
        m_mask     = 0;
        m_grow_at  = 0;
    }

    void steal(hash_map &other) noexcept
    {
        m_slots    = std::exchange(other.m_slots, nullptr);
        m_used     = std::exchange(other.m_used, nullptr);
        m_capacity = std::exchange(other.m_capacity, 0);
        m_mask     = std::exchange(other.m_mask, 0);
        m_size     = std::exchange(other.m_size, 0);
        m_grow_at  = std::exchange(other.m_grow_at, 0);
    }

    slot *m_slots          = nullptr;
    std::uint8_t *m_used   = nullptr; /* 1 where m_slots holds an entry */
    std::size_t m_capacity = 0;
    std::size_t m_mask     = 0;
    std::size_t m_size     = 0;
    std::size_t m_grow_at  = 0; /* size at which the next insert grows */
};

} // namespace ucs

#endif
