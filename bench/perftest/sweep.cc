#include "sweep.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

namespace perftest {

namespace {

constexpr uint64_t SWEEP_BYTES_PER_STAGE = uint64_t(256) << 20;
constexpr uint64_t SWEEP_MIN_ITERS       = 32;
constexpr uint64_t SWEEP_DEFAULT_ITERS   = 10000;
constexpr uint64_t SWEEP_SIZES[]         = {8, 64, 512, 4096, 32768, 262144, 1048576, 4194304};

bool has_infiniband()
{
    std::error_code ec;
    std::filesystem::directory_iterator it("/sys/class/infiniband", ec);
    return !ec && (it != std::filesystem::directory_iterator());
}

} // namespace

std::vector<std::string> default_sweep_transports()
{
    std::vector<std::string> tls = {"posix", "sysv", "tcp"};
    if (has_infiniband()) {
        tls.push_back("rc_verbs");
        tls.push_back("ud_verbs");
    }
    return tls;
}

std::vector<test_spec> sweep_stages(const cli &opts)
{
    std::vector<std::string> transports = opts.sweep_tls.empty() ? default_sweep_transports() :
                                                                   opts.sweep_tls;
    std::vector<const test_info *> tests;
    if (opts.have_test) {
        tests.push_back(&opts.spec.info());
    } else {
        tests.push_back(find_test("tag_lat"));
        tests.push_back(find_test("tag_bw"));
    }
    const uint64_t cap = opts.iters_given ? opts.spec.iters : SWEEP_DEFAULT_ITERS;

    std::vector<test_spec> stages;
    for (const std::string &tls : transports) {
        for (const test_info *test : tests) {
            const bool atomic = (test->api == api_kind::UCP) && is_atomic(test->cmd);
            for (uint64_t size : SWEEP_SIZES) {
                if (atomic && (size != 8)) {
                    continue; /* atomics work on 4 or 8 bytes only */
                }
                test_spec spec = opts.spec;
                spec.test      = test_index(test);
                if (!opts.have_test) {
                    spec.window = test->window;
                }
                spec.iov_count  = 1;
                spec.sizes[0]   = size;
                spec.iov_stride = 0;
                spec.iters = std::min(cap, std::max(SWEEP_MIN_ITERS, SWEEP_BYTES_PER_STAGE / size));
                spec.warmup = opts.warmup_given ? opts.spec.warmup :
                                                  std::clamp<uint64_t>(spec.iters / 10, 10, 1000);
                std::strncpy(spec.tls, tls.c_str(), sizeof(spec.tls) - 1);
                stages.push_back(spec);
            }
        }
    }
    return stages;
}

} // namespace perftest
