/*
 * Secrets: random bytes from the kernel (getrandom), and a comparison that
 * takes the same time wherever the inputs differ, for checking a secret a
 * peer presents (transport connection keys, remote key secrets).
 */
#ifndef UCS_SYS_RANDOM_H
#define UCS_SYS_RANDOM_H

#include <ucs/type/status.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ucs::sys {

/* Fills `length` bytes from the kernel's CSPRNG; UCS_ERR_IO_ERROR if it fails. */
ucs_status_t random_bytes(void *buffer, size_t length);

/* A random 64-bit value, never 0 (aborts the process if the kernel has no
 * randomness to give, which would make every secret guessable). */
uint64_t random_u64();

/* Whether a and b hold the same `length` bytes, in time independent of where
 * they differ. Inline: a secret is checked on every request a peer makes,
 * and at the usual 8 bytes this is one XOR. */
inline bool secret_equal(const void *a, const void *b, size_t length)
{
    const auto *x = static_cast<const uint8_t *>(a);
    const auto *y = static_cast<const uint8_t *>(b);
    uint64_t diff = 0;
    size_t i      = 0;
    /* A word at a time. The empty asm hides the accumulator from the
     * optimizer, which could otherwise stop at the first difference. */
    for (; i + sizeof(uint64_t) <= length; i += sizeof(uint64_t)) {
        uint64_t u, v;
        std::memcpy(&u, x + i, sizeof(u));
        std::memcpy(&v, y + i, sizeof(v));
        diff |= u ^ v;
        asm volatile("" : "+r"(diff));
    }
    for (; i < length; ++i) {
        diff |= uint8_t(x[i] ^ y[i]);
        asm volatile("" : "+r"(diff));
    }
    return diff == 0;
}

} // namespace ucs::sys

#endif
