#include "random.h"

#include <ucs/debug/log.h>

#include <cerrno>
#include <cstdlib>
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

} // namespace ucs::sys
