#include "stats.h"

#include "timeline.h"

#include <algorithm>

namespace perf {

uint64_t percentile(std::vector<uint64_t> &values, double rank)
{
    if (values.empty()) {
        return 0;
    }
    rank         = std::clamp(rank, 0.0, 100.0);
    size_t index = std::min(values.size() - 1, size_t(double(values.size()) * rank / 100.0));
    std::nth_element(values.begin(), values.begin() + long(index), values.end());
    return values[index];
}

std::vector<uint64_t> durations(const timeline &t, uint64_t first, uint64_t last)
{
    std::vector<uint64_t> d;
    last  = std::min(last, t.done());
    first = std::max(first, t.first_kept());
    if (first >= last) {
        return d;
    }
    d.reserve(last - first);
    for (uint64_t i = first; i < last; ++i) {
        d.push_back(t.duration(i));
    }
    return d;
}

} // namespace perf
