/*
 * Timestamps cheap enough to take on every iteration: the TSC on x86 (a few
 * cycles), converted to seconds with a rate measured against steady_clock
 * over the same run, so no calibration pause is needed.
 */
#ifndef BENCH_COMMON_CLOCK_H
#define BENCH_COMMON_CLOCK_H

#include <chrono>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace perf {

inline uint64_t ticks()
{
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#else
    return uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

/* Seconds per tick, from two readings of both clocks far enough apart. */
class tick_rate {
public:
    void start()
    {
        wall0_ = std::chrono::steady_clock::now();
        tick0_ = ticks();
    }

    void stop()
    {
        wall1_ = std::chrono::steady_clock::now();
        tick1_ = ticks();
    }

    double seconds_per_tick() const
    {
        double wall = std::chrono::duration<double>(wall1_ - wall0_).count();
        return (tick1_ > tick0_) ? wall / double(tick1_ - tick0_) : 0.0;
    }

    double elapsed_s() const { return std::chrono::duration<double>(wall1_ - wall0_).count(); }

    uint64_t elapsed_ticks() const { return tick1_ - tick0_; }

private:
    std::chrono::steady_clock::time_point wall0_, wall1_;
    uint64_t tick0_ = 0, tick1_ = 0;
};

/* A first estimate of seconds per tick, from a busy wait of about a
 * millisecond: good enough to space progress reports, while results use
 * the rate measured over the run itself. */
double estimate_seconds_per_tick();

} // namespace perf

#endif
