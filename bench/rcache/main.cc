/*
 * ucp_rcache_bench: what the registration cache saves per message.
 *
 *   ucp_rcache_bench [-x TLS] [-s SIZE] [-n ITERS] [-r ROUNDS] [--check]
 *
 * One process, one worker sending tagged messages of SIZE bytes (1 MiB:
 * rendezvous) to itself over TLS (testloop by default: the test module of
 * tests/uct/modules, found through UCX_MODULE_DIR, whose md needs memory
 * handles and spins TESTLOOP_REG_COST_US per registration). Each round
 * runs ITERS messages with UCX_RCACHE_ENABLE=try and then =no, each in a
 * fresh context, alternating so both see the same machine; the table gives
 * the best round of each, and their ratio. On testloop it also counts the
 * registrations per message (from the module's counters); --check fails
 * unless the cache makes them at most one per buffer per round and the
 * uncached run pays at least one per message.
 */
#include "../../tests/uct/modules/testloop/testloop_counters.h"

#include <ucp/api/ucp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <getopt.h>
#include <string>
#include <vector>

namespace {

struct options {
    const char *tls = "testloop";
    size_t size     = 1 << 20;
    unsigned iters  = 2000;
    unsigned rounds = 3;
    bool check      = false;
};

struct round_result {
    double seconds       = 0;
    double registrations = -1; /* -1: not counted (not testloop) */
};

const testloop_counters *loop_counters()
{
    const char *dir = std::getenv("UCX_MODULE_DIR");
    if (dir == nullptr) {
        return nullptr;
    }
    void *handle = dlopen((std::string(dir) + "/libuct_testloop.so").c_str(),
                          RTLD_NOW | RTLD_NOLOAD);
    if (handle == nullptr) {
        return nullptr;
    }
    auto get = reinterpret_cast<testloop_get_counters_fn>(dlsym(handle, TESTLOOP_GET_COUNTERS));
    const testloop_counters *c = (get != nullptr) ? get() : nullptr;
    dlclose(handle);
    return c;
}

ucs_status_t wait(ucp_worker_h worker, ucs_status_ptr_t req)
{
    if (!UCS_PTR_IS_PTR(req) || (req == nullptr)) {
        return UCS_PTR_STATUS(req);
    }
    ucs_status_t status;
    while ((status = ucp_request_check_status(req)) == UCS_INPROGRESS) {
        ucp_worker_progress(worker);
    }
    ucp_request_free(req);
    return status;
}

/* One round: a fresh context with the cache on or off, `iters` messages. */
bool run_round(const options &o, bool cached, std::vector<char> &out, std::vector<char> &in,
               round_result *result)
{
    ucp_config_t *config;
    if (ucp_config_read(nullptr, nullptr, &config) != UCS_OK) {
        return false;
    }
    bool ok = (ucp_config_modify(config, "TLS", o.tls) == UCS_OK) &&
              (ucp_config_modify(config, "RCACHE_ENABLE", cached ? "try" : "no") == UCS_OK);
    ucp_params_t params{};
    params.field_mask     = UCP_PARAM_FIELD_FEATURES;
    params.features       = UCP_FEATURE_TAG;
    ucp_context_h context = nullptr;
    ok                    = ok && (ucp_init(&params, config, &context) == UCS_OK);
    ucp_config_release(config);
    ucp_worker_h worker = nullptr;
    ucp_worker_params_t wparams{};
    ok                     = ok && (ucp_worker_create(context, &wparams, &worker) == UCS_OK);
    ucp_address_t *address = nullptr;
    size_t address_length;
    ok          = ok && (ucp_worker_get_address(worker, &address, &address_length) == UCS_OK);
    ucp_ep_h ep = nullptr;
    if (ok) {
        ucp_ep_params_t eparams{};
        eparams.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        eparams.address    = address;
        ok                 = (ucp_ep_create(worker, &eparams, &ep) == UCS_OK);
    }

    const testloop_counters *counters = ok ? loop_counters() : nullptr;
    const uint64_t regs0              = (counters != nullptr) ? counters->registrations : 0;
    const auto start                  = std::chrono::steady_clock::now();
    ucp_request_param_t param{};
    for (unsigned i = 0; ok && (i < o.iters); ++i) {
        ucs_status_ptr_t rreq = ucp_tag_recv_nbx(worker, in.data(), o.size, i, ~ucp_tag_t(0),
                                                 &param);
        ucs_status_ptr_t sreq = ucp_tag_send_nbx(ep, out.data(), o.size, i, &param);
        ok                    = (wait(worker, sreq) == UCS_OK) && (wait(worker, rreq) == UCS_OK);
    }
    result->seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (counters != nullptr) {
        result->registrations = double(counters->registrations - regs0) / o.iters;
    }
    if (ok && (std::memcmp(out.data(), in.data(), o.size) != 0)) {
        std::fprintf(stderr, "ucp_rcache_bench: received data differs\n");
        ok = false;
    }

    if (ep != nullptr) {
        ucp_request_param_t cparam{};
        cparam.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        cparam.flags        = UCP_EP_CLOSE_FLAG_FORCE;
        wait(worker, ucp_ep_close_nbx(ep, &cparam));
    }
    if (address != nullptr) {
        ucp_worker_release_address(worker, address);
    }
    if (worker != nullptr) {
        ucp_worker_destroy(worker);
    }
    if (context != nullptr) {
        ucp_cleanup(context);
    }
    return ok;
}

void usage(FILE *f)
{
    std::fprintf(f, "usage: ucp_rcache_bench [-x TLS] [-s SIZE] [-n ITERS] [-r ROUNDS] "
                    "[--check]\n");
}

} // namespace

int main(int argc, char **argv)
{
    options o;
    static const option long_options[] = {{"check", no_argument, nullptr, 'C'},
                                          {"help", no_argument, nullptr, 'h'},
                                          {nullptr, 0, nullptr, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "x:s:n:r:h", long_options, nullptr)) != -1) {
        switch (c) {
        case 'x':
            o.tls = optarg;
            break;
        case 's':
            o.size = std::strtoull(optarg, nullptr, 0);
            break;
        case 'n':
            o.iters = unsigned(std::strtoul(optarg, nullptr, 0));
            break;
        case 'r':
            o.rounds = unsigned(std::strtoul(optarg, nullptr, 0));
            break;
        case 'C':
            o.check = true;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if ((o.size == 0) || (o.iters == 0) || (o.rounds == 0)) {
        usage(stderr);
        return 2;
    }

    std::vector<char> out(o.size, 'x'), in(o.size);
    for (size_t i = 0; i < o.size; ++i) {
        out[i] = char(i * 131);
    }
    round_result best[2]; /* [0]: cache on, [1]: off */
    best[0].seconds = best[1].seconds = 1e300;
    for (unsigned r = 0; r < o.rounds; ++r) {
        for (int mode = 0; mode < 2; ++mode) {
            round_result res;
            if (!run_round(o, mode == 0, out, in, &res)) {
                std::fprintf(stderr, "ucp_rcache_bench: a round over %s failed\n", o.tls);
                return 1;
            }
            if (res.seconds < best[mode].seconds) {
                best[mode] = res;
            }
        }
    }

    std::printf("# ucp_rcache_bench: %zu-byte tag messages to self over %s, %u per round, "
                "best of %u rounds\n",
                o.size, o.tls, o.iters, o.rounds);
    if (const char *cost = std::getenv("TESTLOOP_REG_COST_US")) {
        std::printf("# testloop registration cost: %s us\n", cost);
    }
    std::printf("%-10s %14s %14s %18s\n", "rcache", "usec/message", "messages/s",
                "registrations/msg");
    const char *names[2] = {"on", "off"};
    for (int mode = 0; mode < 2; ++mode) {
        const double per = best[mode].seconds / o.iters;
        char regs[32]    = "-";
        if (best[mode].registrations >= 0) {
            std::snprintf(regs, sizeof(regs), "%.3f", best[mode].registrations);
        }
        std::printf("%-10s %14.3f %14.0f %18s\n", names[mode], per * 1e6, 1.0 / per, regs);
    }
    std::printf("message rate on/off: %.2fx\n", best[1].seconds / best[0].seconds);

    if (o.check) {
        if (best[0].registrations < 0) {
            std::fprintf(stderr, "ucp_rcache_bench: --check needs the testloop module "
                                 "(UCX_MODULE_DIR)\n");
            return 1;
        }
        /* Two buffers (send and receive), registered once per round. */
        if ((best[0].registrations * o.iters > 2.0) || (best[1].registrations < 1.0)) {
            std::fprintf(stderr,
                         "ucp_rcache_bench: registrations per message %.3f with "
                         "the cache, %.3f without\n",
                         best[0].registrations, best[1].registrations);
            return 1;
        }
    }
    return 0;
}
