/*
 * Tunables of the cma transport, read from UCX_CMA_* variables (UCX's names
 * and defaults where UCX has the same tunable; the defaults live in the
 * configuration table in cma_config.cc). iface_open reads them with the env
 * prefix of its params (UCX_MPI_CMA_MAX_IOV before UCX_CMA_MAX_IOV).
 */
#ifndef UCT_SM_CMA_CMA_CONFIG_H
#define UCT_SM_CMA_CMA_CONFIG_H

#include <ucs/type/status.h>

#include <cstddef>
#include <string>

namespace uct::cma {

struct cma_config {
    /* UCX_CMA_MAX_IOV (16): local iov entries one put/get_zcopy accepts,
     * 1..IOV_MAX. */
    size_t max_iov;

    /*
     * UCX_CMA_KEYLESS_RMA (y): accept put/get_zcopy with no remote key (rkey 0
     * or all ones). The target is then the peer pid of the endpoint and no
     * bounds are checked: only the kernel's ptrace rules guard the access.
     * With a key, the access must lie inside the key's region.
     */
    bool keyless_rma;

    /* UCX_CMA_BW (11145MBps): peak bandwidth in the performance model (bytes/s). */
    double bandwidth_Bps;

    /* UCX_CMA_OVERHEAD (0.4us): CPU time of one call outside the copy (seconds). */
    double overhead_s;

    /* UCX_CMA_LATENCY (0.4us): one-way latency of a minimal transfer (seconds). */
    double latency_s;

    /*
     * Where the Yama ptrace policy is read; a missing file means Yama is not
     * active. Not a variable: the md's own setting (tests point it elsewhere),
     * kept by read_cma_config.
     */
    std::string ptrace_scope_file = "/proc/sys/kernel/yama/ptrace_scope";
};

/* The defaults of the UCX_CMA_* table. */
cma_config default_cma_config();

/*
 * Sets the variable fields of *config from UCX_<env_prefix>_CMA_*, UCX_CMA_*,
 * the config file and the defaults, validated; other fields keep their value.
 * On a malformed or out-of-range value logs which variable is wrong, leaves
 * *config untouched and returns UCS_ERR_INVALID_PARAM.
 */
ucs_status_t read_cma_config(const char *env_prefix, cma_config *config);

/* UCS_ERR_INVALID_PARAM (with a message naming the variable) if a field is
 * out of range. */
ucs_status_t validate_cma_config(const cma_config &config);

} // namespace uct::cma

#endif
