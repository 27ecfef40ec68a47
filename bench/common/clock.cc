#include "clock.h"

namespace perf {

double estimate_seconds_per_tick()
{
    tick_rate rate;
    rate.start();
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1);
    while (std::chrono::steady_clock::now() < until) {
    }
    rate.stop();
    return rate.seconds_per_tick();
}

} // namespace perf
