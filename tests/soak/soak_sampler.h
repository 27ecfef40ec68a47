/*
 * Resident memory (/proc/self/statm) and open descriptors (/proc/self/fd)
 * of this process, sampled over a soak run, and the growth check that
 * catches leaks: after the warm-up, neither may keep growing.
 */
#ifndef TESTS_SOAK_SOAK_SAMPLER_H
#define TESTS_SOAK_SOAK_SAMPLER_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace soak {

struct resource_sample {
    double seconds; /* since the sampler started */
    uint64_t rss_bytes;
    unsigned fds;
};

/* Current values; false if /proc cannot be read. */
bool sample_resources(resource_sample *sample);

class resource_sampler {
public:
    explicit resource_sampler(double interval_s) : interval_s_(interval_s) {}

    /* Takes a sample when the interval passed since the last one. */
    void maybe_sample(double now_s);
    /* Takes one now (start and end of the run). */
    void sample_now(double now_s);

    const std::vector<resource_sample> &samples() const { return samples_; }

    /* First sample at or after `warmup_s`, and the largest after it. */
    struct growth {
        resource_sample at_warmup{}, first{}, last{};
        uint64_t rss_max_after = 0;
        unsigned fds_max_after = 0;
        bool valid             = false;
    };
    growth growth_after(double warmup_s) const;

private:
    double interval_s_;
    double last_s_ = -1;
    std::vector<resource_sample> samples_;
};

} // namespace soak

#endif
