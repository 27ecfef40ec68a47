/* ucx_info -M: what one core's memcpy moves, per buffer size. */
#include "print_system.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

namespace info {

namespace {

constexpr size_t MIN_SIZE = 4096;
constexpr size_t MAX_SIZE = 64ull << 20;
/* Bytes copied per size: enough for a stable figure, 15 sizes in ~1 s. */
constexpr size_t BYTES_PER_SIZE = 256ull << 20;

} // namespace

void print_memcpy_bandwidth(FILE *out)
{
    /* Touched before timing: page faults are not memcpy's cost. */
    std::vector<char> src(MAX_SIZE, 1), dst(MAX_SIZE, 0);
    std::fprintf(out, "# Using the C library's memcpy()\n# Memcpy bandwidth:\n");
    for (size_t size = MIN_SIZE; size <= MAX_SIZE; size *= 2) {
        const size_t iters = std::max<size_t>(1, BYTES_PER_SIZE / size);
        std::memcpy(dst.data(), src.data(), size);
        const auto start = std::chrono::steady_clock::now();
        for (size_t i = 0; i < iters; ++i) {
            std::memcpy(dst.data(), src.data(), size);
            /* Keeps the compiler from dropping repeated copies. */
            asm volatile("" : : "r"(dst.data()) : "memory");
        }
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::fprintf(out, "#     %10zu bytes: %.3f MB/s\n", size,
                     double(size) * double(iters) / seconds / (1024.0 * 1024.0));
    }
}

} // namespace info
