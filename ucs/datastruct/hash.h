/*
 * Hash functions for the open-addressing map. Integers, enums and pointers
 * get a 64-bit finalizer (no allocation, a few cycles) because the map
 * indexes with the low bits, and raw tags or aligned addresses differ mostly
 * in the high bits. Other types use std::hash, remixed the same way.
 */
#ifndef UCS_DATASTRUCT_HASH_H
#define UCS_DATASTRUCT_HASH_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <type_traits>

namespace ucs {

/* MurmurHash3's fmix64: every input bit affects every output bit. */
constexpr std::uint64_t hash_mix64(std::uint64_t x) noexcept
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

template <typename Key>
struct hash {
    std::size_t operator()(const Key &key) const noexcept(noexcept(std::hash<Key>{}(key)))
    {
        return static_cast<std::size_t>(hash_mix64(std::hash<Key>{}(key)));
    }
};

template <typename Key>
requires(std::is_integral_v<Key> || std::is_enum_v<Key>) struct hash<Key> {
    constexpr std::size_t operator()(Key key) const noexcept
    {
        return static_cast<std::size_t>(hash_mix64(static_cast<std::uint64_t>(key)));
    }
};

template <typename Pointee>
struct hash<Pointee *> {
    std::size_t operator()(const Pointee *ptr) const noexcept
    {
        return static_cast<std::size_t>(hash_mix64(reinterpret_cast<std::uintptr_t>(ptr)));
    }
};

} // namespace ucs

#endif
