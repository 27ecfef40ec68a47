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

namespace ucs::sys {

/* Fills `length` bytes from the kernel's CSPRNG; UCS_ERR_IO_ERROR if it fails. */
ucs_status_t random_bytes(void *buffer, size_t length);

/* A random 64-bit value, never 0 (aborts the process if the kernel has no
 * randomness to give, which would make every secret guessable). */
uint64_t random_u64();

/* Whether a and b hold the same `length` bytes, in time independent of where
 * they differ. */
bool secret_equal(const void *a, const void *b, size_t length);

} // namespace ucs::sys

#endif
