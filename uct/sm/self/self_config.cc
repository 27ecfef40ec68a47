#include <uct/sm/self/self_config.h>

#include <ucs/config/registry.h>
#include <ucs/debug/log.h>

#include <cmath>

namespace uct::self {

namespace {

constexpr unsigned DEFAULT_RX_BUFS_GROW = 16;
constexpr size_t MIN_SEG_SIZE           = 64;
constexpr size_t MAX_SEG_SIZE           = size_t(1) << 30;

/* The table's view of self_config: plain C types only, as the engine needs. */
struct self_config_values {
    size_t seg_size;
    size_t am_max_hdr;
    unsigned nested_queue_len;
    unsigned rx_bufs_grow;
    int keyless_rma;
    double bandwidth_Bps;
};

const ucs::config::field self_fields[] = {
    UCS_CONFIG_FIELD(self_config_values, seg_size, "SEG_SIZE", "8k",
                     "Size of copy-out buffer: the largest active message and "
                     "put bcopy (64 bytes .. 1g).",
                     ucs::config::type_size),
    UCS_CONFIG_FIELD(self_config_values, am_max_hdr, "AM_MAX_HDR", "128",
                     "Header bytes an active message zcopy may carry beside its "
                     "payload (at most SEG_SIZE).",
                     ucs::config::type_size, ucs::config::field_hidden),
    UCS_CONFIG_FIELD(self_config_values, nested_queue_len, "NESTED_QUEUE_LEN", "64",
                     "Messages sent from inside a handler wait in a queue of this "
                     "length for progress; when it is full, sends return\n"
                     "UCS_ERR_NO_RESOURCE.",
                     ucs::config::type_uint),
    UCS_CONFIG_FIELD(self_config_values, rx_bufs_grow, "RX_BUFS_GROW", "16",
                     "How many receive buffers are added every time the pool grows; "
                     "0 lets the transport choose.",
                     ucs::config::type_uint, ucs::config::field_hidden),
    UCS_CONFIG_FIELD(self_config_values, keyless_rma, "KEYLESS_RMA", "y",
                     "Accept RMA and atomics without a remote key (unchecked); with a "
                     "key the access must lie inside its region.",
                     ucs::config::type_bool),
    UCS_CONFIG_FIELD(self_config_values, bandwidth_Bps, "BW", "12GBs",
                     "Bandwidth in the performance model.", ucs::config::type_bw),
};

/* UCX 1.13's self settings with no counterpart here. */
constexpr const char *self_no_effect[] = {
    "SELF_NUM_DEVICES", "SELF_MAX_SHORT", "SELF_MAX_BCOPY",
    "SELF_ALLOC",       "SELF_FAILURE",   "SELF_MAX_NUM_EPS",
};

const ucs::config::table self_config_table = {"Self (loopback) transport", "SELF_", self_fields,
                                              sizeof(self_config_values),  {},      self_no_effect};
UCS_CONFIG_REGISTER_TABLE(self_config_table);

self_config to_config(const self_config_values &values)
{
    self_config config{};
    config.seg_size         = values.seg_size;
    config.am_max_hdr       = values.am_max_hdr;
    config.nested_queue_len = values.nested_queue_len;
    config.rx_bufs_grow  = (values.rx_bufs_grow == 0) ? DEFAULT_RX_BUFS_GROW : values.rx_bufs_grow;
    config.keyless_rma   = (values.keyless_rma != 0);
    config.bandwidth_Bps = values.bandwidth_Bps;
    return config;
}

} // namespace

self_config default_self_config()
{
    self_config_values values{};
    /* Defaults are constant text that parses; only memory could fail. */
    if (ucs::config::fill_defaults(&values, self_config_table) != UCS_OK) {
        ucs_fatal("self: cannot fill the configuration defaults");
    }
    self_config config = to_config(values);
    ucs::config::release(&values, self_config_table);
    return config;
}

ucs_status_t read_self_config(const char *env_prefix, self_config *config)
{
    self_config_values values{};
    ucs_status_t status = ucs::config::fill(&values, self_config_table, env_prefix);
    if (status != UCS_OK) {
        return status;
    }
    self_config result = to_config(values);
    ucs::config::release(&values, self_config_table);

    status = validate_self_config(result);
    if (status == UCS_OK) {
        *config = result;
    }
    return status;
}

ucs_status_t validate_self_config(const self_config &config)
{
    if ((config.seg_size < MIN_SEG_SIZE) || (config.seg_size > MAX_SEG_SIZE)) {
        ucs_error("self: UCX_SELF_SEG_SIZE=%zu must be in [%zu, %zu]", config.seg_size,
                  MIN_SEG_SIZE, MAX_SEG_SIZE);
        return UCS_ERR_INVALID_PARAM;
    }
    if (config.am_max_hdr > config.seg_size) {
        ucs_error("self: UCX_SELF_AM_MAX_HDR=%zu must not exceed UCX_SELF_SEG_SIZE=%zu",
                  config.am_max_hdr, config.seg_size);
        return UCS_ERR_INVALID_PARAM;
    }
    if (config.nested_queue_len == 0) {
        ucs_error("self: UCX_SELF_NESTED_QUEUE_LEN must be at least 1");
        return UCS_ERR_INVALID_PARAM;
    }
    if (config.rx_bufs_grow > 65536) {
        ucs_error("self: UCX_SELF_RX_BUFS_GROW=%u must be at most 65536", config.rx_bufs_grow);
        return UCS_ERR_INVALID_PARAM;
    }
    if (!std::isfinite(config.bandwidth_Bps) || (config.bandwidth_Bps <= 0)) {
        ucs_error("self: UCX_SELF_BW must be a positive bandwidth (not auto)");
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

} // namespace uct::self
