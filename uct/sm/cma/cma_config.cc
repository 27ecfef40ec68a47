#include <uct/sm/cma/cma_config.h>

#include <ucs/config/registry.h>
#include <ucs/debug/log.h>

#include <climits>
#include <cmath>

namespace uct::cma {

namespace {

/* The table's view of cma_config: plain C types only, as the engine needs. */
struct cma_config_values {
    unsigned long max_iov;
    int keyless_rma;
    double bandwidth_Bps;
    double overhead_s;
    double latency_s;
};

const ucs::config::field cma_fields[] = {
    UCS_CONFIG_FIELD(cma_config_values, max_iov, "MAX_IOV", "16",
                     "Most local iov entries one put/get zcopy accepts (1..IOV_MAX); "
                     "one system call moves them all.",
                     ucs::config::type_ulong),
    UCS_CONFIG_FIELD(cma_config_values, keyless_rma, "KEYLESS_RMA", "y",
                     "Accept put/get zcopy without a remote key: the peer process is "
                     "then guarded only by the kernel's ptrace rules, not by the\n"
                     "bounds of a registered region.",
                     ucs::config::type_bool),
    UCS_CONFIG_FIELD(cma_config_values, bandwidth_Bps, "BW", "11145MBps",
                     "Effective memory bandwidth in the performance model.", ucs::config::type_bw),
    /* One process_vm_readv of 8 bytes: 2.4 us on a 2-core VM (uct get_zcopy
     * over cma, 410k calls a second). */
    UCS_CONFIG_FIELD(cma_config_values, overhead_s, "OVERHEAD", "2.4us",
                     "CPU time of one zcopy call besides the copy, in the performance "
                     "model.",
                     ucs::config::type_time, ucs::config::field_hidden),
    UCS_CONFIG_FIELD(cma_config_values, latency_s, "LATENCY", "0.4us",
                     "Latency of a minimal transfer in the performance model.",
                     ucs::config::type_time, ucs::config::field_hidden),
};

/* UCX 1.13's cma settings with no counterpart here. */
constexpr const char *cma_no_effect[] = {
    "CMA_MEMORY_INVALIDATE", "CMA_MAX_SHORT",    "CMA_MAX_BCOPY", "CMA_ALLOC",
    "CMA_FAILURE",           "CMA_MAX_NUM_EPS",  "CMA_SEG_SIZE",  "CMA_TX_QUOTA",
    "CMA_TX_MAX_BUFS",       "CMA_TX_BUFS_GROW",
};

const ucs::config::table cma_config_table = {"CMA (cross-memory attach) transport",
                                             "CMA_",
                                             cma_fields,
                                             sizeof(cma_config_values),
                                             {},
                                             cma_no_effect};
UCS_CONFIG_REGISTER_TABLE(cma_config_table);

void apply(const cma_config_values &values, cma_config *config)
{
    config->max_iov       = values.max_iov;
    config->keyless_rma   = (values.keyless_rma != 0);
    config->bandwidth_Bps = values.bandwidth_Bps;
    config->overhead_s    = values.overhead_s;
    config->latency_s     = values.latency_s;
}

/* A performance-model time: finite and not negative ("auto" is -2). */
bool valid_time(double seconds)
{
    return std::isfinite(seconds) && (seconds >= 0);
}

} // namespace

cma_config default_cma_config()
{
    cma_config config{};
    cma_config_values values{};
    /* Defaults are constant text that parses; only memory could fail. */
    if (ucs::config::fill_defaults(&values, cma_config_table) != UCS_OK) {
        ucs_fatal("cma: cannot fill the configuration defaults");
    }
    apply(values, &config);
    ucs::config::release(&values, cma_config_table);
    return config;
}

ucs_status_t read_cma_config(const char *env_prefix, cma_config *config)
{
    cma_config_values values{};
    ucs_status_t status = ucs::config::fill(&values, cma_config_table, env_prefix);
    if (status != UCS_OK) {
        return status;
    }
    cma_config result = *config;
    apply(values, &result);
    ucs::config::release(&values, cma_config_table);

    status = validate_cma_config(result);
    if (status == UCS_OK) {
        *config = std::move(result);
    }
    return status;
}

ucs_status_t validate_cma_config(const cma_config &config)
{
    if ((config.max_iov == 0) || (config.max_iov > IOV_MAX)) {
        ucs_error("cma: UCX_CMA_MAX_IOV=%zu must be in [1, %d]", config.max_iov, IOV_MAX);
        return UCS_ERR_INVALID_PARAM;
    }
    if (!std::isfinite(config.bandwidth_Bps) || (config.bandwidth_Bps <= 0)) {
        ucs_error("cma: UCX_CMA_BW must be a positive bandwidth (not auto)");
        return UCS_ERR_INVALID_PARAM;
    }
    if (!valid_time(config.overhead_s) || !valid_time(config.latency_s)) {
        ucs_error("cma: UCX_CMA_OVERHEAD and UCX_CMA_LATENCY must be finite times "
                  "(not inf or auto)");
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

} // namespace uct::cma
