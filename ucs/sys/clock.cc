#include <ucs/sys/clock.h>

#include <ucs/debug/log.h>
#include <ucs/sys/read_file.h>

#include <ctime>
#include <mutex>
#include <string>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace ucs::sys {

namespace detail {

std::atomic<time_source> g_time_source{time_source::unknown};
std::atomic<double> g_ticks_per_sec{0.0};

} // namespace detail

namespace {

/* Calibration compares the cycle counter with CLOCK_MONOTONIC over at least
 * this long; the error is then about (clock read jitter / this). */
constexpr uint64_t min_calibration_ns = 10 * 1000 * 1000;

uint64_t monotonic_ns()
{
    struct timespec ts;
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

struct time_sample {
    ticks_t ticks;
    uint64_t ns;
};

/* A (counter, clock) pair read as close together as we can: the tightest of
 * a few attempts, with the counter placed mid-way between two clock reads. */
time_sample take_sample()
{
    time_sample best{};
    uint64_t best_window = UINT64_MAX;
    for (int i = 0; i < 5; ++i) {
        const uint64_t before = monotonic_ns();
        const ticks_t ticks   = detail::read_cycle_counter();
        const uint64_t after  = monotonic_ns();
        if (after - before < best_window) {
            best_window = after - before;
            best        = {ticks, before + (after - before) / 2};
        }
    }
    return best;
}

time_sample g_calibration_start{};
std::mutex g_calibration_lock;

#if defined(__x86_64__)
/* The TSC runs at a constant rate in all power states, and the kernel trusts
 * it enough to use it as its own clock (so it is synchronized across CPUs). */
bool tsc_is_reliable()
{
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(0x80000007, &eax, &ebx, &ecx, &edx) || !(edx & (1u << 8))) {
        return false;
    }

    std::string clocksource;
    if (read_file_string("/sys/devices/system/clocksource/clocksource0/"
                         "current_clocksource",
                         &clocksource, 256) != UCS_OK) {
        return false;
    }
    return clocksource.rfind("tsc", 0) == 0;
}
#endif

void choose_time_source()
{
#if defined(__x86_64__)
    if (tsc_is_reliable()) {
        g_calibration_start = take_sample();
        detail::g_time_source.store(detail::time_source::cycle_counter, std::memory_order_release);
        return;
    }
#elif defined(__aarch64__)
    uint64_t frequency;
    __asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(frequency));
    if (frequency != 0) {
        detail::g_ticks_per_sec.store(static_cast<double>(frequency), std::memory_order_relaxed);
        detail::g_time_source.store(detail::time_source::cycle_counter, std::memory_order_release);
        return;
    }
#endif
    detail::g_ticks_per_sec.store(1e9, std::memory_order_relaxed);
    detail::g_time_source.store(detail::time_source::clock, std::memory_order_release);
}

std::once_flag g_choose_once;

void ensure_time_source()
{
    std::call_once(g_choose_once, choose_time_source);
}

/* Choose at load time, so the calibration interval is usually over by the
 * time anyone converts ticks. */
[[maybe_unused]] const bool g_time_source_chosen = (ensure_time_source(), true);

} // namespace

namespace detail {

ticks_t get_time_slow() noexcept
{
    ensure_time_source();
    if (g_time_source.load(std::memory_order_acquire) == time_source::cycle_counter) {
        return read_cycle_counter();
    }
    return monotonic_ns();
}

double calibrate_frequency() noexcept
{
    ensure_time_source();

    std::lock_guard<std::mutex> guard(g_calibration_lock);
    double frequency = g_ticks_per_sec.load(std::memory_order_relaxed);
    if (frequency != 0.0) {
        return frequency;
    }

    /* Only the cycle-counter case on x86 gets here. */
    time_sample end;
    do {
        end = take_sample();
    } while (end.ns - g_calibration_start.ns < min_calibration_ns);

    frequency = static_cast<double>(end.ticks - g_calibration_start.ticks) * 1e9 /
                static_cast<double>(end.ns - g_calibration_start.ns);
    g_ticks_per_sec.store(frequency, std::memory_order_relaxed);
    ucs_debug("cycle counter frequency: %.3f MHz", frequency / 1e6);
    return frequency;
}

} // namespace detail

bool time_uses_cycle_counter() noexcept
{
    ensure_time_source();
    return detail::g_time_source.load(std::memory_order_acquire) ==
           detail::time_source::cycle_counter;
}

} // namespace ucs::sys
