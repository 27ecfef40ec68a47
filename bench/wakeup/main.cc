/*
 * ucp_wakeup_lat: how fast a sleeping receiver answers, one message at a
 * time: ucp_worker_wait on one worker against a wait set over several
 * workers (ucp/api/ucp_ext.h, issue 18).
 *
 *   ucp_wakeup_lat [-m worker_wait|waitset] [-W WORKERS] [-x TLS] [-n ITERS] [-d DELAY]
 *
 * A forked receiver with WORKERS workers (message to the first) sleeps
 * whenever it has nothing to do: in ucp_worker_wait (one worker), or in
 * ucp_waitset_wait over all its workers, finding the one with the message
 * through ucp_pollset_poll. This side lets the receiver fall asleep (it
 * waits DELAY microseconds, 100 by default, before each message), sends 8
 * bytes, spins for the 8-byte answer, and prints the median one-way time
 * (half the round trip): the receiver's wake-up, progress and reply. The extension functions are
 * looked up at run time, so worker_wait mode runs on UCX 1.13 too
 * (LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu).
 */
#include "../common/peer.h"

#include <ucp/api/ucp.h>
#include <ucp/api/ucp_ext.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <dlfcn.h>

namespace {

struct options {
    bool waitset      = false;
    unsigned workers  = 1;
    const char *tls   = nullptr;
    unsigned iters    = 2000;
    unsigned delay_us = 100; /* before each message: the receiver falls asleep */
};

/* The extension calls, found at run time (absent from UCX 1.13). */
struct ext_api {
    decltype(&ucp_pollset_create) pollset_create   = nullptr;
    decltype(&ucp_pollset_add) pollset_add         = nullptr;
    decltype(&ucp_pollset_poll) pollset_poll       = nullptr;
    decltype(&ucp_pollset_remove) pollset_remove   = nullptr;
    decltype(&ucp_pollset_destroy) pollset_destroy = nullptr;
    decltype(&ucp_waitset_create) waitset_create   = nullptr;
    decltype(&ucp_waitset_add) waitset_add         = nullptr;
    decltype(&ucp_waitset_wait) waitset_wait       = nullptr;
    decltype(&ucp_waitset_remove) waitset_remove   = nullptr;
    decltype(&ucp_waitset_destroy) waitset_destroy = nullptr;

    bool load()
    {
        auto find = [](auto &fn, const char *name) {
            fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(RTLD_DEFAULT, name));
            return fn != nullptr;
        };
        return find(pollset_create, "ucp_pollset_create") && find(pollset_add, "ucp_pollset_add") &&
               find(pollset_poll, "ucp_pollset_poll") &&
               find(pollset_remove, "ucp_pollset_remove") &&
               find(pollset_destroy, "ucp_pollset_destroy") &&
               find(waitset_create, "ucp_waitset_create") && find(waitset_add, "ucp_waitset_add") &&
               find(waitset_wait, "ucp_waitset_wait") &&
               find(waitset_remove, "ucp_waitset_remove") &&
               find(waitset_destroy, "ucp_waitset_destroy");
    }
};

constexpr ucp_tag_t ping_tag = 1, pong_tag = 2;

class side {
public:
    side(const options &opts, perf::oob &channel) : opts_(opts), channel_(channel) {}

    ~side()
    {
        ucp_request_param_t param{};
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
        if (ep_ != nullptr) {
            wait(workers_[0], ucp_ep_close_nbx(ep_, &param));
        }
        for (ucp_worker_h w : workers_) {
            ucp_worker_destroy(w);
        }
        if (context_ != nullptr) {
            ucp_cleanup(context_);
        }
    }

    std::string setup(unsigned nworkers)
    {
        ucp_config_t *config;
        if (ucp_config_read(nullptr, nullptr, &config) != UCS_OK) {
            return "ucp_config_read failed";
        }
        if (opts_.tls != nullptr) {
            ucp_config_modify(config, "TLS", opts_.tls);
        }
        ucp_params_t params{};
        params.field_mask   = UCP_PARAM_FIELD_FEATURES;
        params.features     = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
        ucs_status_t status = ucp_init(&params, config, &context_);
        ucp_config_release(config);
        if (status != UCS_OK) {
            return "ucp_init failed";
        }
        for (unsigned i = 0; i < nworkers; ++i) {
            ucp_worker_params_t wp{};
            ucp_worker_h w;
            if (ucp_worker_create(context_, &wp, &w) != UCS_OK) {
                return "ucp_worker_create failed";
            }
            workers_.push_back(w);
        }
        ucp_address_t *address;
        size_t length;
        if (ucp_worker_get_address(workers_[0], &address, &length) != UCS_OK) {
            return "no address";
        }
        std::vector<uint8_t> mine(reinterpret_cast<uint8_t *>(address),
                                  reinterpret_cast<uint8_t *>(address) + length),
            theirs;
        ucp_worker_release_address(workers_[0], address);
        if (!channel_.exchange(mine, &theirs)) {
            return "address exchange failed";
        }
        ucp_ep_params_t ep_params{};
        ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        ep_params.address    = reinterpret_cast<const ucp_address_t *>(theirs.data());
        return (ucp_ep_create(workers_[0], &ep_params, &ep_) == UCS_OK) ? "" :
                                                                          "ucp_ep_create failed";
    }

    /* The sender: one-way times of each round trip. */
    bool ping(std::vector<double> *one_way)
    {
        uint64_t out = 0, in = 0;
        const ucp_request_param_t param{};
        for (unsigned i = 0; i < opts_.iters + opts_.iters / 10; ++i) {
            ucs_status_ptr_t r = ucp_tag_recv_nbx(workers_[0], &in, sizeof(in), pong_tag,
                                                  ~ucp_tag_t(0), &param);
            const auto asleep  = std::chrono::steady_clock::now() +
                                std::chrono::microseconds(opts_.delay_us);
            while (std::chrono::steady_clock::now() < asleep) {
            }
            const auto start = std::chrono::steady_clock::now();
            out              = i;
            if ((wait(workers_[0], ucp_tag_send_nbx(ep_, &out, sizeof(out), ping_tag, &param)) !=
                 UCS_OK) ||
                (wait(workers_[0], r) != UCS_OK) || (in != i)) {
                return false;
            }
            if (i >= opts_.iters / 10) { /* after the warm-up */
                one_way->push_back(std::chrono::duration<double, std::micro>(
                                       std::chrono::steady_clock::now() - start)
                                       .count() /
                                   2);
            }
        }
        return true;
    }

    /* The receiver: sleeps whenever nothing is there. */
    bool pong(const ext_api *api)
    {
        ucp_pollset_h pollset = nullptr;
        ucp_waitset_h waitset = nullptr;
        std::vector<ucp_object_t> objects;
        if (api != nullptr) {
            if ((api->pollset_create(context_, &pollset) != UCS_OK) ||
                (api->waitset_create(context_, UCP_WAIT_FD, &waitset) != UCS_OK)) {
                return false;
            }
            for (ucp_worker_h w : workers_) {
                objects.push_back({UCP_OBJECT_WORKER, w});
                if ((api->pollset_add(pollset, &objects.back(), w) != UCS_OK) ||
                    (api->waitset_add(waitset, &objects.back()) != UCS_OK)) {
                    return false;
                }
            }
        }
        uint64_t in = 0;
        const ucp_request_param_t param{};
        bool ok = true;
        for (unsigned i = 0; ok && (i < opts_.iters + opts_.iters / 10); ++i) {
            ucs_status_ptr_t r = ucp_tag_recv_nbx(workers_[0], &in, sizeof(in), ping_tag,
                                                  ~ucp_tag_t(0), &param);
            while ((r != nullptr) && (ucp_request_check_status(r) == UCS_INPROGRESS)) {
                if (api == nullptr) {
                    if (ucp_worker_progress(workers_[0]) == 0) {
                        ucp_worker_wait(workers_[0]);
                    }
                } else {
                    void *ready[64];
                    if (api->pollset_poll(pollset, ready, 64) == 0) {
                        api->waitset_wait(waitset, -1);
                    }
                }
            }
            if (r != nullptr) {
                ucp_request_free(r);
            }
            ok = wait(workers_[0], ucp_tag_send_nbx(ep_, &in, sizeof(in), pong_tag, &param)) ==
                 UCS_OK;
        }
        if (api != nullptr) {
            for (const ucp_object_t &o : objects) {
                api->pollset_remove(pollset, &o);
                api->waitset_remove(waitset, &o);
            }
            api->pollset_destroy(pollset);
            api->waitset_destroy(waitset);
        }
        return ok;
    }

    perf::oob &channel() { return channel_; }

private:
    static ucs_status_t wait(ucp_worker_h worker, ucs_status_ptr_t r)
    {
        if (!UCS_PTR_IS_PTR(r)) {
            return UCS_PTR_STATUS(r);
        }
        ucs_status_t status;
        while ((status = ucp_request_check_status(r)) == UCS_INPROGRESS) {
            ucp_worker_progress(worker);
        }
        ucp_request_free(r);
        return status;
    }

    const options &opts_;
    perf::oob &channel_;
    ucp_context_h context_ = nullptr;
    std::vector<ucp_worker_h> workers_;
    ucp_ep_h ep_ = nullptr;
};

} // namespace

int main(int argc, char **argv)
{
    options opts;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string arg = argv[i];
        if (arg == "-m") {
            opts.waitset = std::string(argv[i + 1]) == "waitset";
        } else if (arg == "-W") {
            opts.workers = unsigned(std::max(1, std::atoi(argv[i + 1])));
        } else if (arg == "-x") {
            opts.tls = argv[i + 1];
        } else if (arg == "-n") {
            opts.iters = unsigned(std::max(10, std::atoi(argv[i + 1])));
        } else if (arg == "-d") {
            opts.delay_us = unsigned(std::max(0, std::atoi(argv[i + 1])));
        } else {
            std::fprintf(stderr, "usage: ucp_wakeup_lat [-m worker_wait|waitset] [-W WORKERS] "
                                 "[-x TLS] [-n ITERS] [-d DELAY_US]\n");
            return 2;
        }
    }
    ext_api api;
    if (opts.waitset && !api.load()) {
        std::fprintf(stderr, "ucp_wakeup_lat: this UCP library has no wait sets\n");
        return 1;
    }
    if (!opts.waitset && (opts.workers != 1)) {
        std::fprintf(stderr, "ucp_wakeup_lat: worker_wait mode waits on one worker\n");
        return 2;
    }
    perf::peer receiver(false, [&](perf::oob &channel) {
        side s(opts, channel);
        if (!s.setup(opts.workers).empty()) {
            return 1;
        }
        return s.pong(opts.waitset ? &api : nullptr) ? 0 : 1;
    });
    if (!receiver.started()) {
        return 1;
    }
    std::vector<double> one_way;
    bool ok;
    {
        side s(opts, receiver.channel());
        const std::string why = s.setup(1);
        ok                    = why.empty() && s.ping(&one_way);
        if (!why.empty()) {
            std::fprintf(stderr, "ucp_wakeup_lat: %s\n", why.c_str());
        }
    }
    const int rc = receiver.join(10000);
    if (!ok || (rc != 0) || one_way.empty()) {
        std::fprintf(stderr, "ucp_wakeup_lat: failed\n");
        return 1;
    }
    std::sort(one_way.begin(), one_way.end());
    std::printf("mode %s workers %u one_way_us %.3f\n", opts.waitset ? "waitset" : "worker_wait",
                opts.workers, one_way[one_way.size() / 2]);
    return 0;
}
