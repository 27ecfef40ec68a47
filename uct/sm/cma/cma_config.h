/*
 * Tunables of the cma transport. Each field is named after the UCX
 * environment variable it will be read from once the configuration
 * registry is wired in; until then iface_open takes default_cma_config().
 */
#ifndef UCT_SM_CMA_CMA_CONFIG_H
#define UCT_SM_CMA_CMA_CONFIG_H

#include <climits>
#include <cstddef>
#include <string>

namespace uct::cma {

struct cma_config {
    /* UCX_CMA_MAX_IOV: local iov entries one put/get_zcopy accepts. */
    size_t max_iov = IOV_MAX;

    /*
     * UCX_CMA_KEYLESS_RMA: accept put/get_zcopy with no remote key (rkey 0 or
     * all ones). The target is then the peer pid of the endpoint and no
     * bounds are checked: only the kernel's ptrace rules guard the access.
     * With a key, the access must lie inside the key's region.
     */
    bool keyless_rma = true;

    /* UCX_CMA_BW: peak bandwidth in the performance model (bytes/s). */
    double bandwidth_Bps = 11.0e9;

    /* UCX_CMA_OVERHEAD: CPU time of one call outside the copy (seconds). */
    double overhead_s = 0.4e-6;

    /* UCX_CMA_LATENCY: one-way latency of a minimal transfer (seconds). */
    double latency_s = 0.4e-6;

    /*
     * UCX_CMA_PTRACE_SCOPE_FILE: where the Yama ptrace policy is read;
     * a missing file means Yama is not active. Tests point it elsewhere.
     */
    std::string ptrace_scope_file = "/proc/sys/kernel/yama/ptrace_scope";
};

/* The documented defaults above. */
cma_config default_cma_config();

} // namespace uct::cma

#endif
