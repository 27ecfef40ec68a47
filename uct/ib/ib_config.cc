#include <uct/ib/ib_config.h>

#include <ucs/config/registry.h>
#include <ucs/debug/log.h>

#include <algorithm>
#include <cmath>
#include <iterator>

namespace uct::ib {

namespace {

using ucs::config::type_size;
using ucs::config::type_time;
using ucs::config::type_uint;
using ucs::config::type_ulong;

struct ib_md_values {
    unsigned long gid_index;
    double reg_overhead;
};

const ucs::config::field ib_md_fields[] = {
    UCS_CONFIG_FIELD(ib_md_values, gid_index, "GID_INDEX", "auto",
                     "Port GID index to use (auto: 0 on InfiniBand, the first RoCE v2 "
                     "IPv4 GID on Ethernet).",
                     type_ulong),
    UCS_CONFIG_FIELD(ib_md_values, reg_overhead, "MEM_REG_OVERHEAD", "16us",
                     "Memory registration overhead estimate.", type_time),
};

/* UCX 1.13's device settings with no counterpart here. */
// clang-format off
constexpr const char *ib_md_no_effect[] = {
    "IB_REG_METHODS", "IB_RCACHE_MEM_PRIO", "IB_RCACHE_OVERHEAD", "IB_RCACHE_ADDR_ALIGN",
    "IB_RCACHE_MAX_REGIONS", "IB_RCACHE_MAX_SIZE", "IB_RCACHE_MAX_UNRELEASED",
    "IB_RCACHE_PURGE_ON_FORK", "IB_MEM_REG_GROWTH", "IB_FORK_INIT", "IB_ASYNC_EVENTS",
    "IB_ETH_PAUSE_ON", "IB_ODP_NUMA_POLICY", "IB_ODP_PREFETCH", "IB_ODP_MAX_SIZE",
    "IB_DEVICE_SPECS", "IB_PREFER_NEAREST_DEVICE", "IB_INDIRECT_ATOMIC",
    "IB_SUBNET_PREFIX", "IB_GPU_DIRECT_RDMA", "IB_PCI_BW", "IB_MLX5_DEVX",
    "IB_MLX5_DEVX_OBJECTS", "IB_REG_MT_THRESH", "IB_REG_MT_CHUNK", "IB_REG_MT_BIND",
    "IB_PCI_RELAXED_ORDERING", "IB_MAX_IDLE_RKEY_COUNT",
};
// clang-format on

const ucs::config::table ib_md_table = {"IB memory domain",   "IB_", ib_md_fields,
                                        sizeof(ib_md_values), {},    ib_md_no_effect};
UCS_CONFIG_REGISTER_TABLE(ib_md_table);

struct rc_verbs_values {
    size_t seg_size;
    unsigned tx_queue_len;
    unsigned rx_queue_len;
    size_t tx_min_inline;
    unsigned tx_min_sge;
    unsigned tx_cq_moderation;
    unsigned tx_cq_len;
    unsigned rx_max_poll;
    unsigned tx_max_poll;
    size_t max_am_hdr;
    double timeout;
    unsigned retry_count;
    double rnr_timeout;
    unsigned rnr_retry_count;
    unsigned long sl;
    unsigned long traffic_class;
    unsigned hop_limit;
    unsigned path_mtu;
    unsigned long max_rd_atomic;
};

/* PATH_MTU of rc_verbs and ud_verbs: the choice's index, and its bytes (0:
 * the port's active MTU). */
const char *const path_mtu_names[]  = {"default", "512", "1024", "2048", "4096"};
constexpr unsigned path_mtu_bytes[] = {0, 512, 1024, 2048, 4096};
static_assert(std::size(path_mtu_names) == std::size(path_mtu_bytes), "one size per name");

const ucs::config::field rc_verbs_fields[] = {
    UCS_CONFIG_FIELD(rc_verbs_values, seg_size, "SEG_SIZE", "8256",
                     "Size of a receive buffer: the largest bcopy message, its 1-byte "
                     "header included.",
                     type_size),
    UCS_CONFIG_FIELD(rc_verbs_values, tx_queue_len, "TX_QUEUE_LEN", "256",
                     "Length of each QP's send queue: work requests in flight per "
                     "endpoint.",
                     type_uint),
    UCS_CONFIG_FIELD(rc_verbs_values, rx_queue_len, "RX_QUEUE_LEN", "4095",
                     "Receive buffers posted to the interface's shared receive queue.", type_uint),
    UCS_CONFIG_FIELD(rc_verbs_values, tx_min_inline, "TX_MIN_INLINE", "64",
                     "Bytes of inline data to ask of each QP: the short-message limit "
                     "(the device may give more).",
                     type_size),
    UCS_CONFIG_FIELD(rc_verbs_values, tx_min_sge, "TX_MIN_SGE", "5",
                     "Gather entries per work request: the zero-copy iov limit.", type_uint),
    UCS_CONFIG_FIELD(rc_verbs_values, tx_cq_moderation, "TX_CQ_MODERATION", "64",
                     "Send a signaled work request at least every this many.", type_uint),
    UCS_CONFIG_FIELD(rc_verbs_values, tx_cq_len, "TX_CQ_LEN", "4096",
                     "Length of the send completion queue.", type_uint),
    UCS_CONFIG_FIELD(rc_verbs_values, rx_max_poll, "RX_MAX_POLL", "16",
                     "Receive completions handled in one progress call.", type_uint),
    UCS_CONFIG_FIELD(rc_verbs_values, tx_max_poll, "TX_MAX_POLL", "16",
                     "Send completions handled in one progress call.", type_uint),
    UCS_CONFIG_FIELD(rc_verbs_values, max_am_hdr, "MAX_AM_HDR", "128",
                     "Largest header of an active message zcopy.", type_size),
    UCS_CONFIG_FIELD(rc_verbs_values, timeout, "TIMEOUT", "1s",
                     "Transport timeout: how long the device waits for an "
                     "acknowledgement before retrying.",
                     type_time),
    UCS_CONFIG_FIELD(rc_verbs_values, retry_count, "RETRY_COUNT", "7",
                     "Transport retries before the QP fails (at most 7).", type_uint),
    UCS_CONFIG_FIELD(rc_verbs_values, rnr_timeout, "RNR_TIMEOUT", "1ms",
                     "How long a receiver with no buffer posted asks the sender to "
                     "wait.",
                     type_time),
    UCS_CONFIG_FIELD(rc_verbs_values, rnr_retry_count, "RNR_RETRY_COUNT", "7",
                     "Receiver-not-ready retries (7: for ever).", type_uint),
    UCS_CONFIG_FIELD(rc_verbs_values, sl, "SL", "auto", "InfiniBand service level (auto: 0).",
                     type_ulong),
    UCS_CONFIG_FIELD(rc_verbs_values, traffic_class, "TRAFFIC_CLASS", "auto",
                     "Traffic class of the global route header (auto: 0).", type_ulong),
    UCS_CONFIG_FIELD(rc_verbs_values, hop_limit, "HOP_LIMIT", "255",
                     "Hop limit of the global route header.", type_uint),
    UCS_CONFIG_FIELD(rc_verbs_values, path_mtu, "PATH_MTU", "default",
                     "Path MTU (default: the port's active MTU).",
                     ucs::config::type_enum(path_mtu_names)),
    UCS_CONFIG_FIELD(rc_verbs_values, max_rd_atomic, "MAX_RD_ATOMIC", "auto",
                     "RDMA reads and atomics in flight per QP (auto: the device's "
                     "limit).",
                     type_ulong),
};

constexpr const char *rc_verbs_no_effect[] = {
    "RC_VERBS_ALLOC",
    "RC_VERBS_FAILURE",
    "RC_VERBS_MAX_NUM_EPS",
    "RC_VERBS_TX_MAX_BATCH",
    "RC_VERBS_TX_INLINE_RESP",
    "RC_VERBS_TX_MAX_BUFS",
    "RC_VERBS_TX_BUFS_GROW",
    "RC_VERBS_RX_MAX_BATCH",
    "RC_VERBS_RX_INLINE",
    "RC_VERBS_RX_MAX_BUFS",
    "RC_VERBS_RX_BUFS_GROW",
    "RC_VERBS_ADDR_TYPE",
    "RC_VERBS_IS_GLOBAL",
    "RC_VERBS_NUM_PATHS",
    "RC_VERBS_ROCE_LOCAL_SUBNET",
    "RC_VERBS_ROCE_SUBNET_PREFIX_LEN",
    "RC_VERBS_ROCE_PATH_FACTOR",
    "RC_VERBS_LID_PATH_BITS",
    "RC_VERBS_PKEY",
    "RC_VERBS_FC_ENABLE",
    "RC_VERBS_FC_WND_SIZE",
    "RC_VERBS_FC_HARD_THRESH",
    "RC_VERBS_FC_SOFT_THRESH",
    "RC_VERBS_FENCE",
    "RC_VERBS_MAX_GET_ZCOPY",
    "RC_VERBS_TX_NUM_GET_BYTES",
    "RC_VERBS_TX_POLL_ALWAYS",
    "RC_VERBS_TX_MAX_WR",
    "RC_VERBS_FLUSH_MODE",
};

const ucs::config::table rc_verbs_table = {
    "RC verbs transport",    "RC_VERBS_", rc_verbs_fields,
    sizeof(rc_verbs_values), {},          rc_verbs_no_effect};
UCS_CONFIG_REGISTER_TABLE(rc_verbs_table);

struct ud_verbs_values {
    size_t seg_size;
    unsigned tx_queue_len;
    unsigned rx_queue_len;
    size_t tx_min_inline;
    unsigned tx_min_sge;
    unsigned rx_max_poll;
    unsigned tx_max_poll;
    double timeout;
    double timer_tick;
    double timer_backoff;
    unsigned max_window;
    unsigned long sl;
    unsigned long traffic_class;
    unsigned hop_limit;
    unsigned path_mtu;
};

const ucs::config::field ud_verbs_fields[] = {
    UCS_CONFIG_FIELD(ud_verbs_values, seg_size, "SEG_SIZE", "8k",
                     "Size of a bcopy buffer; a UD message is at most the port MTU, so "
                     "the largest bcopy is the smaller of the two less the header.",
                     type_size),
    UCS_CONFIG_FIELD(ud_verbs_values, tx_queue_len, "TX_QUEUE_LEN", "256",
                     "Length of the interface QP's send queue; also bounds each "
                     "endpoint's window.",
                     type_uint),
    UCS_CONFIG_FIELD(ud_verbs_values, rx_queue_len, "RX_QUEUE_LEN", "4096",
                     "Receive buffers posted to the interface's QP.", type_uint),
    UCS_CONFIG_FIELD(ud_verbs_values, tx_min_inline, "TX_MIN_INLINE", "64",
                     "Bytes of inline data to ask of the QP: the short-message limit "
                     "with the header.",
                     type_size),
    UCS_CONFIG_FIELD(ud_verbs_values, tx_min_sge, "TX_MIN_SGE", "5",
                     "Gather entries per work request.", type_uint),
    UCS_CONFIG_FIELD(ud_verbs_values, rx_max_poll, "RX_MAX_POLL", "16",
                     "Receive completions handled in one progress call.", type_uint),
    UCS_CONFIG_FIELD(ud_verbs_values, tx_max_poll, "TX_MAX_POLL", "16",
                     "Send completions handled in one progress call.", type_uint),
    UCS_CONFIG_FIELD(ud_verbs_values, timeout, "TIMEOUT", "30s",
                     "An endpoint fails after this long without an acknowledgement of "
                     "its outstanding packets.",
                     type_time),
    UCS_CONFIG_FIELD(ud_verbs_values, timer_tick, "TIMER_TICK", "10ms",
                     "Retransmission timeout of unacknowledged packets.", type_time),
    UCS_CONFIG_FIELD(ud_verbs_values, timer_backoff, "TIMER_BACKOFF", "2.0",
                     "Factor of the retransmission timeout after each retransmission.",
                     ucs::config::type_double),
    UCS_CONFIG_FIELD(ud_verbs_values, max_window, "MAX_WINDOW", "1025",
                     "Unacknowledged packets per endpoint (also at most TX_QUEUE_LEN).", type_uint),
    UCS_CONFIG_FIELD(ud_verbs_values, sl, "SL", "auto", "InfiniBand service level (auto: 0).",
                     type_ulong),
    UCS_CONFIG_FIELD(ud_verbs_values, traffic_class, "TRAFFIC_CLASS", "auto",
                     "Traffic class of the global route header (auto: 0).", type_ulong),
    UCS_CONFIG_FIELD(ud_verbs_values, hop_limit, "HOP_LIMIT", "255",
                     "Hop limit of the global route header.", type_uint),
    UCS_CONFIG_FIELD(ud_verbs_values, path_mtu, "PATH_MTU", "default",
                     "Largest datagram sent (default: the port's active MTU; never "
                     "above it).",
                     ucs::config::type_enum(path_mtu_names)),
};

constexpr const char *ud_verbs_no_effect[] = {
    "UD_VERBS_ALLOC",
    "UD_VERBS_FAILURE",
    "UD_VERBS_MAX_NUM_EPS",
    "UD_VERBS_TX_MAX_BATCH",
    "UD_VERBS_TX_INLINE_RESP",
    "UD_VERBS_TX_MAX_BUFS",
    "UD_VERBS_TX_BUFS_GROW",
    "UD_VERBS_RX_MAX_BATCH",
    "UD_VERBS_RX_INLINE",
    "UD_VERBS_RX_MAX_BUFS",
    "UD_VERBS_RX_BUFS_GROW",
    "UD_VERBS_ADDR_TYPE",
    "UD_VERBS_IS_GLOBAL",
    "UD_VERBS_NUM_PATHS",
    "UD_VERBS_ROCE_LOCAL_SUBNET",
    "UD_VERBS_ROCE_SUBNET_PREFIX_LEN",
    "UD_VERBS_ROCE_PATH_FACTOR",
    "UD_VERBS_LID_PATH_BITS",
    "UD_VERBS_PKEY",
    "UD_VERBS_RX_QUEUE_LEN_INIT",
    "UD_VERBS_LINGER_TIMEOUT",
    "UD_VERBS_ASYNC_TIMER_TICK",
    "UD_VERBS_MIN_POKE_TIME",
    "UD_VERBS_ETH_DGID_CHECK",
    "UD_VERBS_RX_ASYNC_MAX_POLL",
};

const ucs::config::table ud_verbs_table = {
    "UD verbs transport",    "UD_VERBS_", ud_verbs_fields,
    sizeof(ud_verbs_values), {},          ud_verbs_no_effect};
UCS_CONFIG_REGISTER_TABLE(ud_verbs_table);


ucs_status_t invalid(const char *tl, const char *what)
{
    ucs_error("invalid %s configuration: %s", tl, what);
    return UCS_ERR_INVALID_PARAM;
}

} // namespace

uint8_t ib_timeout_code(double seconds)
{
    /* The device waits 4.096 us * 2^code; code 0 means "never time out". */
    const double units = seconds / 4.096e-6;
    if (!(units > 1.0)) {
        return 1;
    }
    return uint8_t(std::clamp(std::ceil(std::log2(units)), 1.0, 31.0));
}

uint8_t ib_rnr_timer_code(double seconds)
{
    /* IB's min_rnr_timer table in milliseconds, by code 1..31 (0 is 655.36). */
    static const double ms[] = {0.01,  0.02,  0.03,   0.04,   0.06,   0.08,   0.12,  0.16,
                                0.24,  0.32,  0.48,   0.64,   0.96,   1.28,   1.92,  2.56,
                                3.84,  5.12,  7.68,   10.24,  15.36,  20.48,  30.72, 40.96,
                                61.44, 81.92, 122.88, 163.84, 245.76, 327.68, 491.52};
    const double wanted      = seconds * 1e3;
    for (size_t i = 0; i < std::size(ms); ++i) {
        if (ms[i] >= wanted) {
            return uint8_t(i + 1);
        }
    }
    return 0;
}

ucs_status_t read_ib_md_config(const char *env_prefix, ib_md_config *config)
{
    ib_md_values v{};
    ucs_status_t status = ucs::config::fill(&v, ib_md_table, env_prefix);
    if (status != UCS_OK) {
        return status;
    }
    const ib_md_values values = v;
    ucs::config::release(&v, ib_md_table); /* it clears v */
    if ((values.gid_index != ucs::config::ulong_auto) && (values.gid_index > 255)) {
        ucs_error("invalid UCX_IB_GID_INDEX %lu (0..255 or auto)", values.gid_index);
        return UCS_ERR_INVALID_PARAM;
    }
    config->gid_index      = values.gid_index;
    config->reg_overhead_s = std::max(0.0, values.reg_overhead);
    return UCS_OK;
}

ucs_status_t read_rc_verbs_config(const char *env_prefix, rc_verbs_config *config)
{
    rc_verbs_values filled{};
    ucs_status_t status = ucs::config::fill(&filled, rc_verbs_table, env_prefix);
    if (status != UCS_OK) {
        return status;
    }
    const rc_verbs_values v = filled;
    ucs::config::release(&filled, rc_verbs_table); /* it clears `filled` */

    if ((v.seg_size < 64) || (v.seg_size > (1u << 30))) {
        return invalid("rc_verbs", "UCX_RC_VERBS_SEG_SIZE out of range (64..1g)");
    }
    if ((v.tx_queue_len < 2) || (v.tx_queue_len > 65536) || (v.rx_queue_len < 1) ||
        (v.rx_queue_len > 65536)) {
        return invalid("rc_verbs",
                       "UCX_RC_VERBS_TX_QUEUE_LEN (2..65536) or RX_QUEUE_LEN (1..65536)");
    }
    if ((v.tx_min_sge < 1) || (v.tx_min_sge > 30) || (v.tx_min_inline > 4096)) {
        return invalid("rc_verbs", "UCX_RC_VERBS_TX_MIN_SGE (1..30) or TX_MIN_INLINE (..4096)");
    }
    if ((v.tx_cq_moderation < 1) || (v.tx_cq_len < 2) || (v.rx_max_poll < 1) ||
        (v.tx_max_poll < 1)) {
        return invalid("rc_verbs", "UCX_RC_VERBS_TX_CQ_MODERATION, TX_CQ_LEN, RX_MAX_POLL "
                                   "and TX_MAX_POLL must be positive");
    }
    if (v.max_am_hdr > 4096) {
        return invalid("rc_verbs", "UCX_RC_VERBS_MAX_AM_HDR above 4096");
    }
    if ((v.retry_count > 7) || (v.rnr_retry_count > 7)) {
        return invalid("rc_verbs", "UCX_RC_VERBS_RETRY_COUNT and RNR_RETRY_COUNT are at most 7");
    }
    auto auto_or = [](unsigned long value, unsigned long limit) {
        return (value == ucs::config::ulong_auto) ? 0ul : std::min(value, limit);
    };
    if (((v.sl != ucs::config::ulong_auto) && (v.sl > 15)) ||
        ((v.traffic_class != ucs::config::ulong_auto) && (v.traffic_class > 255)) ||
        (v.hop_limit > 255)) {
        return invalid("rc_verbs", "UCX_RC_VERBS_SL (0..15), TRAFFIC_CLASS or HOP_LIMIT (0..255)");
    }
    config->seg_size         = v.seg_size;
    config->tx_queue_len     = v.tx_queue_len;
    config->rx_queue_len     = v.rx_queue_len;
    config->tx_min_inline    = v.tx_min_inline;
    config->tx_min_sge       = v.tx_min_sge;
    config->tx_cq_moderation = v.tx_cq_moderation;
    config->tx_cq_len        = v.tx_cq_len;
    config->rx_max_poll      = v.rx_max_poll;
    config->tx_max_poll      = v.tx_max_poll;
    config->max_am_hdr       = v.max_am_hdr;
    config->timeout_code     = ib_timeout_code(v.timeout);
    config->retry_count      = uint8_t(v.retry_count);
    config->rnr_timer_code   = ib_rnr_timer_code(v.rnr_timeout);
    config->rnr_retry_count  = uint8_t(v.rnr_retry_count);
    config->sl               = uint8_t(auto_or(v.sl, 15));
    config->traffic_class    = uint8_t(auto_or(v.traffic_class, 255));
    config->hop_limit        = uint8_t(v.hop_limit);
    config->path_mtu = path_mtu_bytes[std::min(size_t(v.path_mtu), std::size(path_mtu_bytes) - 1)];
    config->max_rd_atomic = unsigned(auto_or(v.max_rd_atomic, 255));
    return UCS_OK;
}

ucs_status_t read_ud_verbs_config(const char *env_prefix, ud_verbs_config *config)
{
    ud_verbs_values filled{};
    ucs_status_t status = ucs::config::fill(&filled, ud_verbs_table, env_prefix);
    if (status != UCS_OK) {
        return status;
    }
    const ud_verbs_values v = filled;
    ucs::config::release(&filled, ud_verbs_table); /* it clears `filled` */

    if ((v.seg_size < 128) || (v.seg_size > (1u << 30))) {
        return invalid("ud_verbs", "UCX_UD_VERBS_SEG_SIZE out of range (128..1g)");
    }
    if ((v.tx_queue_len < 2) || (v.tx_queue_len > 65536) || (v.rx_queue_len < 1) ||
        (v.rx_queue_len > 65536)) {
        return invalid("ud_verbs",
                       "UCX_UD_VERBS_TX_QUEUE_LEN (2..65536) or RX_QUEUE_LEN (1..65536)");
    }
    if ((v.tx_min_sge < 1) || (v.tx_min_sge > 30) || (v.tx_min_inline > 4096)) {
        return invalid("ud_verbs", "UCX_UD_VERBS_TX_MIN_SGE (1..30) or TX_MIN_INLINE (..4096)");
    }
    if ((v.rx_max_poll < 1) || (v.tx_max_poll < 1) || (v.max_window < 2)) {
        return invalid("ud_verbs", "UCX_UD_VERBS_RX_MAX_POLL and TX_MAX_POLL must be positive, "
                                   "MAX_WINDOW at least 2");
    }
    if (!(v.timer_tick > 0) || !(v.timeout > v.timer_tick) || !(v.timer_backoff >= 1.0)) {
        return invalid("ud_verbs", "UCX_UD_VERBS_TIMER_TICK must be positive, TIMEOUT above it and "
                                   "TIMER_BACKOFF at least 1");
    }
    if (((v.sl != ucs::config::ulong_auto) && (v.sl > 15)) ||
        ((v.traffic_class != ucs::config::ulong_auto) && (v.traffic_class > 255)) ||
        (v.hop_limit > 255)) {
        return invalid("ud_verbs", "UCX_UD_VERBS_SL (0..15), TRAFFIC_CLASS or HOP_LIMIT (0..255)");
    }
    auto auto_or = [](unsigned long value, unsigned long limit) {
        return (value == ucs::config::ulong_auto) ? 0ul : std::min(value, limit);
    };
    config->seg_size      = v.seg_size;
    config->tx_queue_len  = v.tx_queue_len;
    config->rx_queue_len  = v.rx_queue_len;
    config->tx_min_inline = v.tx_min_inline;
    config->tx_min_sge    = v.tx_min_sge;
    config->rx_max_poll   = v.rx_max_poll;
    config->tx_max_poll   = v.tx_max_poll;
    config->timeout_s     = v.timeout;
    config->timer_tick_s  = v.timer_tick;
    config->timer_backoff = v.timer_backoff;
    config->max_window    = v.max_window;
    config->sl            = uint8_t(auto_or(v.sl, 15));
    config->traffic_class = uint8_t(auto_or(v.traffic_class, 255));
    config->hop_limit     = uint8_t(v.hop_limit);
    config->path_mtu = path_mtu_bytes[std::min(size_t(v.path_mtu), std::size(path_mtu_bytes) - 1)];
    return UCS_OK;
}

} // namespace uct::ib
