/*
 * ucp_tag_match_growth: what one tag match costs while N other receives are
 * posted, or N other messages wait unmatched, for N = 1, 100, 10000.
 *
 * One worker with an endpoint to itself (UCX_TLS=self by default: the
 * transport adds nothing, so what grows is the matching). The N others
 * carry tags that the timed messages never match; each timed iteration is
 * one 8-byte message and its receive, the receive posted first ("posted")
 * or after the message arrived ("unexpected"), with a full tag mask
 * ("exact") or with a mask that leaves the low 32 bits free ("wildcard":
 * the N other receives are wildcards too, so a match must look past them).
 * The cost of an exact match should not grow with N; a wildcard receive
 * posted behind N others has to be compared with them (in both libraries).
 * Public UCX 1.13 API only: bench/growth/compare.py runs it on both
 * libraries.
 */
#include "../common/ucp_pair.h"

#include <ucp/api/ucp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

enum mode { POSTED_EXACT, POSTED_WILD, UNEXP_EXACT, UNEXP_WILD, NUM_MODES };
const char *const mode_names[NUM_MODES] = {"posted_exact_ns", "posted_wild_ns", "unexp_exact_ns",
                                           "unexp_wild_ns"};

/* The others live in tag family 1, the timed messages in family 2. */
constexpr ucp_tag_t OTHER_FAMILY = ucp_tag_t(1) << 32, TIMED_FAMILY = ucp_tag_t(2) << 32;
constexpr ucp_tag_t FAMILY_MASK = ~ucp_tag_t(0) << 32;

struct context {
    ucp_context_h ctx   = nullptr;
    ucp_worker_h worker = nullptr;
    ucp_ep_h ep         = nullptr;
};

bool fail(const char *what, ucs_status_t status)
{
    std::fprintf(stderr, "ucp_tag_match_growth: %s: %s\n", what, ucs_status_string(status));
    return false;
}

using perf::wait_request;

bool setup(context &c, const char *tls)
{
    ucp_config_t *config;
    ucs_status_t status = ucp_config_read(nullptr, nullptr, &config);
    if (status != UCS_OK) {
        return fail("ucp_config_read", status);
    }
    ucp_config_modify(config, "TLS", tls);
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_TAG;
    status            = ucp_init(&params, config, &c.ctx);
    ucp_config_release(config);
    if (status != UCS_OK) {
        return fail("ucp_init", status);
    }
    ucp_worker_params_t wp{};
    if ((status = ucp_worker_create(c.ctx, &wp, &c.worker)) != UCS_OK) {
        return fail("ucp_worker_create", status);
    }
    ucp_address_t *address;
    size_t length;
    if ((status = ucp_worker_get_address(c.worker, &address, &length)) != UCS_OK) {
        return fail("ucp_worker_get_address", status);
    }
    ucp_ep_params_t ep_params{};
    ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep_params.address    = address;
    status               = ucp_ep_create(c.worker, &ep_params, &c.ep);
    ucp_worker_release_address(c.worker, address);
    return (status == UCS_OK) || fail("ucp_ep_create", status);
}

void teardown(context &c)
{
    if (c.ep != nullptr) {
        ucp_request_param_t param{};
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
        wait_request(c.worker, ucp_ep_close_nbx(c.ep, &param));
    }
    if (c.worker != nullptr) {
        ucp_worker_destroy(c.worker);
    }
    if (c.ctx != nullptr) {
        ucp_cleanup(c.ctx);
    }
}

/* One mode at one N: nanoseconds per timed match (median of 5 blocks). */
bool measure(context &c, mode m, unsigned others, unsigned iterations, double *ns)
{
    const bool posted = (m == POSTED_EXACT) || (m == POSTED_WILD);
    const bool wild   = (m == POSTED_WILD) || (m == UNEXP_WILD);
    ucp_request_param_t param{};
    uint64_t sink = 0, payload = 0;
    std::vector<uint64_t> other_bufs(others);
    std::vector<ucs_status_ptr_t> other_reqs;

    /* The others: receives that stay posted, or messages that stay queued. */
    for (unsigned i = 0; i < others; ++i) {
        const ucp_tag_t tag = OTHER_FAMILY | i;
        if (posted) {
            other_reqs.push_back(ucp_tag_recv_nbx(c.worker, &other_bufs[i], sizeof(uint64_t), tag,
                                                  wild ? FAMILY_MASK : ~ucp_tag_t(0), &param));
            if (UCS_PTR_IS_ERR(other_reqs.back())) {
                return fail("ucp_tag_recv_nbx", UCS_PTR_STATUS(other_reqs.back()));
            }
        } else if (wait_request(c.worker, ucp_tag_send_nbx(c.ep, &payload, sizeof(payload), tag,
                                                           &param)) != UCS_OK) {
            return fail("ucp_tag_send_nbx", UCS_ERR_IO_ERROR);
        }
    }
    for (int i = 0; i < 16; ++i) {
        ucp_worker_progress(c.worker);
    }

    std::vector<double> blocks;
    const ucp_tag_t mask = wild ? FAMILY_MASK : ~ucp_tag_t(0);
    for (unsigned block = 0; block <= 5; ++block) { /* block 0 warms up */
        const unsigned n = (block == 0) ? iterations / 10 + 1 : iterations;
        const auto start = std::chrono::steady_clock::now();
        for (unsigned i = 0; i < n; ++i) {
            const ucp_tag_t tag   = TIMED_FAMILY | i;
            ucs_status_ptr_t recv = nullptr, send;
            if (posted) {
                recv = ucp_tag_recv_nbx(c.worker, &sink, sizeof(sink), tag, mask, &param);
            }
            send = ucp_tag_send_nbx(c.ep, &payload, sizeof(payload), tag, &param);
            if (wait_request(c.worker, send) != UCS_OK) {
                return fail("ucp_tag_send_nbx", UCS_ERR_IO_ERROR);
            }
            if (!posted) {
                recv = ucp_tag_recv_nbx(c.worker, &sink, sizeof(sink), tag, mask, &param);
            }
            if (wait_request(c.worker, recv) != UCS_OK) {
                return fail("ucp_tag_recv_nbx", UCS_ERR_IO_ERROR);
            }
        }
        const std::chrono::duration<double, std::nano> t = std::chrono::steady_clock::now() - start;
        if (block > 0) {
            blocks.push_back(t.count() / n);
        }
    }
    std::sort(blocks.begin(), blocks.end());
    *ns = blocks[blocks.size() / 2];

    /* Clear the others away: cancel the receives, take the messages. */
    for (ucs_status_ptr_t req : other_reqs) {
        if (UCS_PTR_IS_PTR(req)) {
            ucp_request_cancel(c.worker, req);
            wait_request(c.worker, req);
        }
    }
    if (!posted) {
        for (unsigned i = 0; i < others; ++i) {
            if (wait_request(c.worker, ucp_tag_recv_nbx(c.worker, &sink, sizeof(sink),
                                                        OTHER_FAMILY | i, ~ucp_tag_t(0), &param)) !=
                UCS_OK) {
                return fail("draining the others", UCS_ERR_IO_ERROR);
            }
        }
    }
    return true;
}

} // namespace

int main(int argc, char **argv)
{
    std::string tls = "self";
    std::vector<unsigned> counts{1, 100, 10000};
    unsigned iterations = 20000;
    int c;
    while ((c = getopt(argc, argv, "x:e:n:h")) != -1) {
        if (c == 'x') {
            tls = optarg;
        } else if (c == 'e') {
            counts.clear();
            for (char *p = optarg; *p != '\0';) {
                char *end;
                unsigned long v = std::strtoul(p, &end, 10);
                if ((end == p) || (v > 1000000)) {
                    counts.clear();
                    break;
                }
                counts.push_back(unsigned(v));
                p = end + (*end == ',');
            }
        } else if (c == 'n') {
            iterations = unsigned(std::strtoul(optarg, nullptr, 10));
        } else {
            counts.clear();
            break;
        }
    }
    if (counts.empty() || (iterations == 0)) {
        std::fprintf(stderr, "usage: ucp_tag_match_growth [-x TLS] [-e N,N,...] [-n ITERS]\n"
                             "  defaults: self, 1,100,10000 others, 20000 matches a block\n");
        return 2;
    }
    context ctx;
    bool ok = setup(ctx, tls.c_str());
    std::vector<std::vector<double>> ns(counts.size(), std::vector<double>(NUM_MODES));
    for (size_t i = 0; ok && (i < counts.size()); ++i) {
        for (int m = 0; ok && (m < NUM_MODES); ++m) {
            ok = measure(ctx, mode(m), counts[i], iterations, &ns[i][m]);
        }
    }
    teardown(ctx);
    if (!ok) {
        return 1;
    }
    std::printf("# ucp_tag_match_growth: UCX_TLS=%s, UCP %s; ns per 8-byte message and its "
                "receive, with N other receives posted or N other messages unmatched\n",
                tls.c_str(), ucp_get_version_string());
    std::printf("%8s", "others");
    for (const char *name : mode_names) {
        std::printf(" %16s", name);
    }
    std::printf("\n");
    for (size_t i = 0; i < counts.size(); ++i) {
        std::printf("%8u", counts[i]);
        for (double v : ns[i]) {
            std::printf(" %16.1f", v);
        }
        std::printf("\n");
    }
    return 0;
}
