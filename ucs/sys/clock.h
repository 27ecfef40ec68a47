/*
 * A cheap monotonic clock for timeouts and timestamps on the data path.
 *
 * get_time() returns ticks: CPU cycle-counter ticks where the counter is
 * trustworthy (x86-64 with an invariant TSC that the kernel itself uses as
 * its clocksource; the aarch64 generic timer), else CLOCK_MONOTONIC
 * nanoseconds. Only differences of ticks mean something; convert them with
 * the time_to_* / time_from_* helpers. The TSC frequency is calibrated
 * against CLOCK_MONOTONIC over the interval since the library was loaded
 * (at least 10 ms), once per process.
 */
#ifndef UCS_SYS_CLOCK_H
#define UCS_SYS_CLOCK_H

#include <ucs/sys/compiler_def.h>

#include <atomic>
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace ucs::sys {

using ticks_t = uint64_t;

namespace detail {

enum class time_source : int {
    unknown,       /* not chosen yet: the slow path chooses */
    cycle_counter, /* rdtsc / cntvct_el0 */
    clock          /* clock_gettime(CLOCK_MONOTONIC) in ns */
};

extern std::atomic<time_source> g_time_source;
extern std::atomic<double> g_ticks_per_sec; /* 0 until calibrated */

ticks_t get_time_slow() noexcept;
double calibrate_frequency() noexcept;

inline ticks_t read_cycle_counter() noexcept
{
#if defined(__x86_64__)
    return __rdtsc();
#elif defined(__aarch64__)
    ticks_t value;
    __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(value));
    return value;
#else
    return 0;
#endif
}

} // namespace detail

/* The current time in ticks; monotonic within the node. */
inline ticks_t get_time() noexcept
{
#if defined(__x86_64__) || defined(__aarch64__)
    if (ucs_likely(detail::g_time_source.load(std::memory_order_relaxed) ==
                   detail::time_source::cycle_counter)) {
        return detail::read_cycle_counter();
    }
#endif
    return detail::get_time_slow();
}

/* Ticks per second. */
inline double time_frequency() noexcept
{
    double frequency = detail::g_ticks_per_sec.load(std::memory_order_relaxed);
    if (ucs_unlikely(frequency == 0.0)) {
        frequency = detail::calibrate_frequency();
    }
    return frequency;
}

/* True when get_time() reads a CPU cycle counter rather than the OS clock. */
bool time_uses_cycle_counter() noexcept;

inline double time_to_sec(ticks_t ticks)
{
    return static_cast<double>(ticks) / time_frequency();
}

inline double time_to_msec(ticks_t ticks)
{
    return time_to_sec(ticks) * 1e3;
}

inline double time_to_usec(ticks_t ticks)
{
    return time_to_sec(ticks) * 1e6;
}

inline double time_to_nsec(ticks_t ticks)
{
    return time_to_sec(ticks) * 1e9;
}

/* Negative durations become 0. */
inline ticks_t time_from_sec(double seconds)
{
    if (seconds <= 0) {
        return 0;
    }
    return static_cast<ticks_t>(seconds * time_frequency() + 0.5);
}

inline ticks_t time_from_msec(double msec)
{
    return time_from_sec(msec / 1e3);
}

inline ticks_t time_from_usec(double usec)
{
    return time_from_sec(usec / 1e6);
}

inline ticks_t time_from_nsec(double nsec)
{
    return time_from_sec(nsec / 1e9);
}

} // namespace ucs::sys

#endif
