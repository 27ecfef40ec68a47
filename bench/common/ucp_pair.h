/*
 * One side of a two-process UCP benchmark: a context, a worker and an ep to
 * the other side, whose worker address comes over the oob channel. Plain
 * UCX 1.13 API only, so the tools that use it also run on Debian's UCX.
 */
#ifndef BENCH_COMMON_UCP_PAIR_H
#define BENCH_COMMON_UCP_PAIR_H

#include "oob.h"

#include <ucp/api/ucp.h>

#include <cstdint>
#include <string>
#include <vector>

namespace perf {

/* Progresses `worker` until `request` (a ucp call's result) completes,
 * frees it and returns its status (NULL: done; an error pointer: its status). */
ucs_status_t wait_request(ucp_worker_h worker, ucs_status_ptr_t request);

class ucp_pair {
public:
    ucp_pair() = default;
    ~ucp_pair();
    ucp_pair(const ucp_pair &)            = delete;
    ucp_pair &operator=(const ucp_pair &) = delete;

    /* Empty on success, else why not. `tls` NULL: UCX_TLS as set. */
    std::string setup(oob &channel, const char *tls, uint64_t features);

    /* Progresses until `request` completes (NULL: done); its status. */
    ucs_status_t wait(ucs_status_ptr_t request);

    ucp_context_h context = nullptr;
    ucp_worker_h worker   = nullptr;
    ucp_ep_h ep           = nullptr;
    /* The peer worker's address, for more endpoints to it. */
    std::vector<uint8_t> remote_address;
};

} // namespace perf

#endif
