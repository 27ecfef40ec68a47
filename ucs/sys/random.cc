#include "random.h"

#include <ucs/debug/log.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sys/random.h>

namespace ucs::sys {

ucs_status_t random_bytes(void *buffer, size_t length)
{
    auto *p = static_cast<uint8_t *>(buffer);
    while (length > 0) {
        ssize_t n = ::getrandom(p, length, 0);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            ucs_error("getrandom(%zu bytes) failed: %m", length);
            return UCS_ERR_IO_ERROR;
        }
        p += n;
        length -= size_t(n);
    }
    return UCS_OK;
}

uint64_t random_u64()
{
    uint64_t value = 0;
    while (value == 0) {
        if (random_bytes(&value, sizeof(value)) != UCS_OK) {
            ucs_fatal("no randomness for a secret");
        }
    }
    return value;
}

bool secret_equal(const void *a, const void *b, size_t length)
{
    const auto *x = static_cast<const uint8_t *>(a);
    const auto *y = static_cast<const uint8_t *>(b);
    uint64_t diff = 0;
    size_t i      = 0;
    /* A word at a time (secrets are 8 bytes: one step). The empty asm hides
     * the accumulator from the optimizer, which could otherwise stop at the
     * first difference. */
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
