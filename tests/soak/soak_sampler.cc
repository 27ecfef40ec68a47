#include "soak_sampler.h"

#include <algorithm>
#include <cstdio>

#include <dirent.h>
#include <unistd.h>

namespace soak {

namespace {

bool read_rss(uint64_t *bytes)
{
    FILE *f = std::fopen("/proc/self/statm", "r");
    if (f == nullptr) {
        return false;
    }
    unsigned long size = 0, resident = 0;
    const bool ok = std::fscanf(f, "%lu %lu", &size, &resident) == 2;
    std::fclose(f);
    *bytes = uint64_t(resident) * uint64_t(sysconf(_SC_PAGESIZE));
    return ok;
}

/* Entries of /proc/self/fd, less the one opendir itself holds. */
bool count_fds(unsigned *count)
{
    DIR *dir = opendir("/proc/self/fd");
    if (dir == nullptr) {
        return false;
    }
    unsigned n = 0;
    while (const dirent *e = readdir(dir)) {
        n += (e->d_name[0] != '.');
    }
    closedir(dir);
    *count = (n > 0) ? n - 1 : 0;
    return true;
}

} // namespace

bool sample_resources(resource_sample *sample)
{
    return read_rss(&sample->rss_bytes) && count_fds(&sample->fds);
}

void resource_sampler::sample_now(double now_s)
{
    resource_sample s{};
    if (sample_resources(&s)) {
        s.seconds = now_s;
        samples_.push_back(s);
    }
    last_s_ = now_s;
}

void resource_sampler::maybe_sample(double now_s)
{
    if ((last_s_ < 0) || (now_s - last_s_ >= interval_s_)) {
        sample_now(now_s);
    }
}

resource_sampler::growth resource_sampler::growth_after(double warmup_s) const
{
    growth g;
    if (samples_.empty()) {
        return g;
    }
    g.first = samples_.front();
    g.last  = samples_.back();
    auto it = std::find_if(samples_.begin(), samples_.end(),
                           [&](const resource_sample &s) { return s.seconds >= warmup_s; });
    if (it == samples_.end()) {
        return g;
    }
    g.at_warmup = *it;
    g.valid     = true;
    for (; it != samples_.end(); ++it) {
        g.rss_max_after = std::max(g.rss_max_after, it->rss_bytes);
        g.fds_max_after = std::max(g.fds_max_after, it->fds);
    }
    return g;
}

} // namespace soak
