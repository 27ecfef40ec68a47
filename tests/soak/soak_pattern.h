/*
 * The bytes of soak message `seq` of the stream `seed`: a splitmix64 word
 * per 8 bytes of the message, so a receiver can check every byte without
 * the sender's buffer, and the check runs near memory speed even for
 * 8 MiB messages. A byte's value depends on its offset in the message,
 * never on the buffer address, so buffers at any alignment compare alike.
 */
#ifndef TESTS_SOAK_SOAK_PATTERN_H
#define TESTS_SOAK_SOAK_PATTERN_H

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace soak {

inline uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Key of one message: different for every (stream, sequence number). */
inline uint64_t message_key(uint64_t seed, uint64_t seq)
{
    return mix64(mix64(seed) ^ seq);
}

inline uint64_t pattern_word(uint64_t key, size_t word_index)
{
    return mix64(key + word_index * 0xd1b54a32d192ed03ull);
}

inline void fill_pattern(uint8_t *buffer, size_t length, uint64_t key)
{
    size_t i = 0;
    for (; i + 8 <= length; i += 8) {
        uint64_t w = pattern_word(key, i / 8);
        std::memcpy(buffer + i, &w, 8);
    }
    if (i < length) {
        uint64_t w = pattern_word(key, i / 8);
        std::memcpy(buffer + i, &w, length - i);
    }
}

/* Number of bytes of buffer[0, length) that differ from the pattern. */
inline size_t count_corrupt_bytes(const uint8_t *buffer, size_t length, uint64_t key)
{
    size_t corrupt = 0;
    for (size_t i = 0; i < length; i += 8) {
        const size_t n    = (length - i < 8) ? (length - i) : 8;
        uint64_t expected = pattern_word(key, i / 8), got = 0;
        std::memcpy(&got, buffer + i, n);
        if (n < 8) {
            expected &= (uint64_t(1) << (8 * n)) - 1;
        }
        uint64_t diff = got ^ expected;
        while (diff != 0) { /* one count per differing byte */
            corrupt += ((diff & 0xff) != 0);
            diff >>= 8;
        }
    }
    return corrupt;
}

/* Bytes of buffer[0, length) that are not `value`: guards and canaries. */
inline size_t count_not(const uint8_t *buffer, size_t length, uint8_t value)
{
    size_t n = 0;
    for (size_t i = 0; i < length; ++i) {
        n += (buffer[i] != value);
    }
    return n;
}

} // namespace soak

#endif
