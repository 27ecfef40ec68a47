/*
 * Pointer array with slot reuse: insert() hands out a small index (the most
 * recently freed one first, else the next new one), lookup() is a bounds
 * check and a load. Used where an object must be named by a compact integer
 * that travels on the wire or through a C API (endpoint ids, request ids):
 * an index from a peer is never trusted, so an out-of-range or freed index
 * gives nullptr, never undefined behaviour. A slot is one word (T must be at
 * least 2-aligned). Not thread-safe.
 *
 *   ucs::ptr_array<ep> eps;
 *   unsigned id;
 *   if (eps.insert(my_ep, &id) != UCS_OK) { ... }
 *   ep *e = eps.lookup(id_from_wire);      // nullptr when invalid
 *   eps.remove(id);
 */
#ifndef UCS_DATASTRUCT_PTR_ARRAY_H
#define UCS_DATASTRUCT_PTR_ARRAY_H

#include <ucs/type/status.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace ucs {

template <typename T>
class ptr_array {
public:
    /* Index of "no slot"; never returned by insert(). */
    static constexpr unsigned invalid_index = ~0u;

    ptr_array() noexcept = default;

    ptr_array(const ptr_array &)                = delete;
    ptr_array &operator=(const ptr_array &)     = delete;
    ptr_array(ptr_array &&) noexcept            = default;
    ptr_array &operator=(ptr_array &&) noexcept = default;

    /* Stores `value` (must not be null) and returns its index in *index_p. */
    ucs_status_t insert(T *value, unsigned *index_p) noexcept
    {
        static_assert(alignof(T) >= 2, "bit 0 of a slot marks it free");
        if ((value == nullptr) || (index_p == nullptr)) {
            return UCS_ERR_INVALID_PARAM;
        }

        unsigned index = m_free_head;
        if (index != invalid_index) {
            m_free_head = next_free(m_slots[index]);
        } else {
            if (m_slots.size() >= max_slots) {
                return UCS_ERR_EXCEEDS_LIMIT;
            }
            if (append_slot() != UCS_OK) {
                return UCS_ERR_NO_MEMORY;
            }
            index = static_cast<unsigned>(m_slots.size() - 1);
        }

        m_slots[index] = reinterpret_cast<slot>(value);
        ++m_count;
        *index_p = index;
        return UCS_OK;
    }

    /* The pointer at `index`, or nullptr for an index out of range or free. */
    T *lookup(unsigned index) const noexcept
    {
        return (index < m_slots.size()) ? live_value(m_slots[index]) : nullptr;
    }

    /* Frees `index` for reuse; returns what it held, or nullptr when the
     * index was invalid or already free (then nothing changes). */
    T *remove(unsigned index) noexcept
    {
        T *value = lookup(index);
        if (value == nullptr) {
            return nullptr;
        }
        m_slots[index] = free_slot(m_free_head);
        m_free_head    = index;
        --m_count;
        return value;
    }

    /* Puts `value` (non-null) at a live index; returns the old pointer, or
     * nullptr (and changes nothing) when the index is not live. */
    T *replace(unsigned index, T *value) noexcept
    {
        T *old = lookup(index);
        if ((old != nullptr) && (value != nullptr)) {
            m_slots[index] = reinterpret_cast<slot>(value);
            return old;
        }
        return nullptr;
    }

    /* Pre-allocates slots so the next `count` new indices need no memory. */
    ucs_status_t reserve(std::size_t count) noexcept
    {
        try {
            m_slots.reserve(count);
        } catch (...) {
            return UCS_ERR_NO_MEMORY;
        }
        return UCS_OK;
    }

    /* Live entries. */
    std::size_t count() const noexcept { return m_count; }
    bool empty() const noexcept { return m_count == 0; }

    /* One past the highest index ever handed out. */
    std::size_t size() const noexcept { return m_slots.size(); }

    /* Calls f(unsigned index, T *value) for every live entry in index
     * order; f may remove the entry it is called for. */
    template <typename F>
    void for_each(F &&f) const
    {
        for (std::size_t i = 0; i < m_slots.size(); ++i) {
            T *value = live_value(m_slots[i]);
            if (value != nullptr) {
                f(static_cast<unsigned>(i), value);
            }
        }
    }

    /* Forgets every entry; indices restart from 0. Keeps the memory. */
    void clear() noexcept
    {
        m_slots.clear();
        m_free_head = invalid_index;
        m_count     = 0;
    }

private:
    static constexpr std::size_t max_slots = invalid_index;

    /* A live slot holds its pointer; a free one the next free index (LIFO
     * chain), shifted, with bit 0 set: one word per slot instead of a
     * pointer and an index (16 bytes), with thousands of eps. */
    using slot = std::uintptr_t;

    static slot free_slot(unsigned next) noexcept { return (slot(next) << 1) | 1u; }
    static unsigned next_free(slot s) noexcept { return static_cast<unsigned>(s >> 1); }
    static T *live_value(slot s) noexcept { return (s & 1u) ? nullptr : reinterpret_cast<T *>(s); }

    ucs_status_t append_slot() noexcept
    {
        try {
            m_slots.push_back(free_slot(invalid_index));
        } catch (...) {
            return UCS_ERR_NO_MEMORY;
        }
        return UCS_OK;
    }

    std::vector<slot> m_slots;
    unsigned m_free_head = invalid_index;
    std::size_t m_count  = 0;
};

} // namespace ucs

#endif
