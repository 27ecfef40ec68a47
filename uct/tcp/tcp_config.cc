#include <uct/tcp/tcp_config.h>
#include <uct/tcp/tcp_fetch_ring.h>
#include <uct/tcp/tcp_tx_queue.h>
#include <uct/tcp/tcp_wire.h>

#include <ucs/config/registry.h>
#include <ucs/debug/log.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>

namespace uct::tcp {

namespace {

/* The table's view of tcp_config: plain C types only, as the engine needs. */
struct tcp_config_values {
    size_t sndbuf;
    size_t rcvbuf;
    size_t rx_seg_size;
    size_t tx_seg_size;
    size_t tx_buf_size;
    size_t max_short;
    size_t max_am_hdr;
    size_t max_zcopy;
    unsigned long max_iov;
    unsigned long max_get_iov;
    unsigned zcopy_inflight;
    unsigned rma_outstanding;
    unsigned max_poll;
    unsigned direct_poll_max;
    unsigned epoll_period;
    int backlog;
    double handshake_timeout;
    int nodelay;
    size_t rx_keep;
    size_t rx_lowat;
    size_t tx_batch;
    double keepidle;
    double keepintvl;
    unsigned long keepcnt;
    double user_timeout;
};

using ucs::config::field_hidden;
using ucs::config::type_bool;
using ucs::config::type_int;
using ucs::config::type_size;
using ucs::config::type_time;
using ucs::config::type_ulong;
using ucs::config::type_uint;

const ucs::config::field tcp_fields[] = {
    UCS_CONFIG_FIELD(tcp_config_values, tx_seg_size, "TX_SEG_SIZE", "8k",
                     "Size of send copy-out buffer: the largest bcopy message.", type_size),
    UCS_CONFIG_FIELD(tcp_config_values, rx_seg_size, "RX_SEG_SIZE", "64k",
                     "Size of the receive buffer of each connection (256 to 4g).", type_size),
    UCS_CONFIG_FIELD(tcp_config_values, tx_buf_size, "TX_BUF_SIZE", "64k",
                     "Send buffer of each connection, for frames the socket did not "
                     "take yet; holds at least one largest bcopy or short frame.",
                     type_size),
    UCS_CONFIG_FIELD(tcp_config_values, max_short, "MAX_SHORT", "256",
                     "Largest short message, its 8-byte header included.", type_size),
    UCS_CONFIG_FIELD(tcp_config_values, max_am_hdr, "MAX_AM_HDR", "128",
                     "Largest header of an active message zcopy.", type_size, field_hidden),
    UCS_CONFIG_FIELD(tcp_config_values, max_zcopy, "MAX_ZCOPY", "1g",
                     "Largest zcopy or get payload (a frame length is 32 bits).", type_size),
    UCS_CONFIG_FIELD(tcp_config_values, max_iov, "MAX_IOV", "6",
                     "Maximum IOV count that can contain user-defined payload in a "
                     "single put or active message zcopy (1..62).",
                     type_ulong),
    UCS_CONFIG_FIELD(tcp_config_values, max_get_iov, "MAX_GET_IOV", "4",
                     "Maximum IOV count of a get zcopy (1..8).", type_ulong),
    UCS_CONFIG_FIELD(tcp_config_values, zcopy_inflight, "ZCOPY_INFLIGHT", "16",
                     "Zcopy sends queued on one connection before sends return "
                     "UCS_ERR_NO_RESOURCE (1..64).",
                     type_uint, field_hidden),
    UCS_CONFIG_FIELD(tcp_config_values, rma_outstanding, "RMA_OUTSTANDING", "64",
                     "Gets, fetching atomics and flushes in flight per endpoint.", type_uint,
                     field_hidden),
    UCS_CONFIG_FIELD(tcp_config_values, max_poll, "MAX_POLL", "16",
                     "Number of events and reads per connection in one progress call.", type_uint),
    UCS_CONFIG_FIELD(tcp_config_values, direct_poll_max, "DIRECT_POLL_MAX", "2",
                     "Up to this many connections are read directly, without "
                     "epoll_wait.",
                     type_uint, field_hidden),
    UCS_CONFIG_FIELD(tcp_config_values, epoll_period, "EPOLL_PERIOD", "16",
                     "When reading connections directly, call epoll_wait every this "
                     "many progress calls for new connections and peer failures.",
                     type_uint, field_hidden),
    UCS_CONFIG_FIELD(tcp_config_values, nodelay, "NODELAY", "y",
                     "Set TCP_NODELAY socket option to disable Nagle algorithm. Setting "
                     "this\noption usually provides better performance",
                     type_bool),
    UCS_CONFIG_FIELD(tcp_config_values, sndbuf, "SNDBUF", "auto",
                     "Socket send buffer size (auto: the kernel's autotuning).", type_size),
    UCS_CONFIG_FIELD(tcp_config_values, rcvbuf, "RCVBUF", "auto",
                     "Socket receive buffer size (auto: the kernel's autotuning).", type_size),
    UCS_CONFIG_FIELD(tcp_config_values, backlog, "BACKLOG", "1024",
                     "Listen backlog of each interface (the kernel caps it at "
                     "somaxconn).",
                     type_int),
    UCS_CONFIG_FIELD(tcp_config_values, handshake_timeout, "HANDSHAKE_TIMEOUT", "10s",
                     "An accepted connection that has not shown its handshake (with this "
                     "interface's key) this long after it was accepted is closed: a client "
                     "that does not hold this process's address cannot keep connections "
                     "open.",
                     ucs::config::type_time),
    UCS_CONFIG_FIELD(tcp_config_values, rx_keep, "RX_KEEP", "4m",
                     "A receive buffer for large frames up to this size is kept for the "
                     "next large frame.",
                     type_size, field_hidden),
    UCS_CONFIG_FIELD(tcp_config_values, tx_batch, "TX_BATCH", "512k",
                     "One send call offers at most this many bytes of queued frames, a "
                     "large one cut into pieces: the kernel handles acknowledgements, and "
                     "the receiver reads, between calls instead of behind one long copy.",
                     type_size, field_hidden),
    UCS_CONFIG_FIELD(tcp_config_values, rx_lowat, "RX_LOWAT", "512k",
                     "While a large payload is read straight into its destination, the "
                     "socket is read once this much of it (at most half of what is left) "
                     "has arrived: fewer, larger reads. 0 reads whatever arrived.",
                     type_size, field_hidden),
    /* UCX 1.13's names; its defaults are 10s, 2s, auto and no user timeout. */
    UCS_CONFIG_FIELD(tcp_config_values, keepidle, "KEEPIDLE", "1s",
                     "The time the connection needs to remain idle before TCP starts "
                     "sending keepalive probes (whole seconds, at least 1). \"inf\" "
                     "disables keepalive, \"auto\" keeps the system default.",
                     type_time),
    UCS_CONFIG_FIELD(tcp_config_values, keepcnt, "KEEPCNT", "auto",
                     "The maximum number of keepalive probes TCP should send before "
                     "dropping the connection. \"inf\" disables keepalive, \"auto\" keeps "
                     "the system default; with USER_TIMEOUT set, that decides instead.",
                     type_ulong),
    UCS_CONFIG_FIELD(tcp_config_values, keepintvl, "KEEPINTVL", "1s",
                     "The time between individual keepalive probes (whole seconds, at "
                     "least 1). \"inf\" disables keepalive, \"auto\" keeps the system "
                     "default.",
                     type_time),
    UCS_CONFIG_FIELD(tcp_config_values, user_timeout, "USER_TIMEOUT", "1s",
                     "Maximum time that transmitted data (or a keepalive probe) may "
                     "remain unacknowledged before the connection is closed and the peer "
                     "is reported failed. A peer that acknowledges but keeps its receive "
                     "window closed (a process that does not read) is not failed. \"auto\" "
                     "or \"inf\" set no limit (the system's ~15 minutes of retransmissions).",
                     type_time),
};

/* UCX 1.13's tcp and tcp connection-manager settings with no counterpart here. */
constexpr const char *tcp_no_effect[] = {
    "TCP_AF_PRIO",        "TCP_CM_FAILURE",  "TCP_CM_REUSEADDR", "TCP_CM_PRIV_DATA_LEN",
    "TCP_CM_SNDBUF",      "TCP_CM_RCVBUF",   "TCP_CM_SYN_CNT",   "TCP_MAX_BCOPY",
    "TCP_ALLOC",          "TCP_FAILURE",     "TCP_MAX_NUM_EPS",  "TCP_SENDV_THRESH",
    "TCP_PREFER_DEFAULT", "TCP_PUT_ENABLE",  "TCP_CONN_NB",      "TCP_MAX_CONN_RETRIES",
    "TCP_SYN_CNT",        "TCP_TX_MAX_BUFS", "TCP_TX_BUFS_GROW", "TCP_RX_MAX_BUFS",
    "TCP_RX_BUFS_GROW",   "TCP_PORT_RANGE",
};

const ucs::config::table tcp_config_table = {"TCP transport",           "TCP_", tcp_fields,
                                             sizeof(tcp_config_values), {},     tcp_no_effect};
UCS_CONFIG_REGISTER_TABLE(tcp_config_table);

/* A time option in whole seconds for TCP_KEEPIDLE/TCP_KEEPINTVL: 0 for
 * "auto" (not set), at least 1, at most the kernel's 32767. */
int whole_seconds(double value)
{
    if (value == ucs::config::time_auto) {
        return 0;
    }
    if (!(value < 32767.0)) {
        return 32767;
    }
    return (value > 1.0) ? int(std::ceil(value)) : 1;
}

/* The user timeout in milliseconds; 0 ("auto", "inf"): no limit. */
unsigned user_timeout_ms(double value)
{
    if ((value == ucs::config::time_auto) || std::isinf(value) || !(value > 0)) {
        return 0;
    }
    if (!(value * 1000.0 < double(INT_MAX))) {
        return unsigned(INT_MAX);
    }
    return std::max(1u, unsigned(std::ceil(value * 1000.0)));
}

/* "auto" leaves the kernel's socket buffer autotuning alone, as 0 does. */
size_t socket_buffer_size(size_t value)
{
    return (value == ucs::config::size_auto) ? 0 : value;
}

tcp_config to_config(const tcp_config_values &v)
{
    tcp_config c;
    c.sndbuf            = socket_buffer_size(v.sndbuf);
    c.rcvbuf            = socket_buffer_size(v.rcvbuf);
    c.rx_seg_size       = v.rx_seg_size;
    c.tx_seg_size       = v.tx_seg_size;
    c.tx_buf_size       = v.tx_buf_size;
    c.max_short         = v.max_short;
    c.max_am_hdr        = v.max_am_hdr;
    c.max_zcopy         = v.max_zcopy;
    c.max_iov           = v.max_iov;
    c.max_get_iov       = v.max_get_iov;
    c.zcopy_inflight    = v.zcopy_inflight;
    c.rma_outstanding   = v.rma_outstanding;
    c.max_poll          = v.max_poll;
    c.direct_poll_max   = v.direct_poll_max;
    c.epoll_period      = v.epoll_period;
    c.backlog           = v.backlog;
    c.handshake_timeout = v.handshake_timeout;
    c.nodelay           = (v.nodelay != 0);
    c.rx_keep           = v.rx_keep;
    c.rx_lowat          = v.rx_lowat;
    c.tx_batch          = v.tx_batch;
    c.keepalive         = !std::isinf(v.keepidle) && !std::isinf(v.keepintvl) &&
                  (v.keepcnt != ucs::config::ulong_inf);
    c.keepidle_s      = whole_seconds(v.keepidle);
    c.keepintvl_s     = whole_seconds(v.keepintvl);
    c.keepcnt         = (v.keepcnt == ucs::config::ulong_auto) ?
                            0 :
                            int(std::clamp<unsigned long>(v.keepcnt, 1, 127)); /* kernel's range */
    c.user_timeout_ms = user_timeout_ms(v.user_timeout);
    return c;
}

} // namespace

tcp_config default_tcp_config()
{
    tcp_config_values values{};
    /* Defaults are constant text that parses; only memory could fail. */
    if (ucs::config::fill_defaults(&values, tcp_config_table) != UCS_OK) {
        ucs_fatal("tcp: cannot fill the configuration defaults");
    }
    tcp_config config = to_config(values);
    ucs::config::release(&values, tcp_config_table);
    return config;
}

ucs_status_t read_tcp_config(const char *env_prefix, tcp_config *config)
{
    tcp_config_values values{};
    ucs_status_t status = ucs::config::fill(&values, tcp_config_table, env_prefix);
    if (status != UCS_OK) {
        return status;
    }
    tcp_config result = to_config(values);
    ucs::config::release(&values, tcp_config_table);

    status = check_tcp_config(result);
    if (status == UCS_OK) {
        *config = result;
    }
    return status;
}

ucs_status_t check_tcp_config(const tcp_config &c)
{
    /* Largest frame headers any operation puts in front of its data. */
    constexpr size_t max_op_hdr = sizeof(frame_hdr) + sizeof(get_req);

    auto fail = [](const char *what) {
        ucs_error("invalid tcp configuration: %s", what);
        return UCS_ERR_INVALID_PARAM;
    };

    if ((c.sndbuf > INT_MAX) || (c.rcvbuf > INT_MAX) || (c.rx_lowat > INT_MAX)) {
        return fail("UCX_TCP_SNDBUF, RCVBUF and RX_LOWAT must fit in an int");
    }
    if ((c.rx_seg_size < 256) || (c.rx_seg_size > UINT32_MAX)) {
        return fail("UCX_TCP_RX_SEG_SIZE must be between 256 and 4g");
    }
    if ((c.tx_seg_size == 0) || (c.max_short < sizeof(uint64_t))) {
        return fail("UCX_TCP_TX_SEG_SIZE must be positive and UCX_TCP_MAX_SHORT at least 8");
    }
    /* The handshake plus one largest bcopy or short frame must fit. */
    if ((c.tx_buf_size < sizeof(handshake) + max_op_hdr + c.tx_seg_size) ||
        (c.tx_buf_size < sizeof(handshake) + max_op_hdr + c.max_short) ||
        (c.tx_buf_size < sizeof(handshake) + max_op_hdr + c.max_am_hdr)) {
        return fail("UCX_TCP_TX_BUF_SIZE too small for the segment, short and header sizes");
    }
    if ((c.max_zcopy == 0) || (c.max_zcopy > UINT32_MAX - c.max_am_hdr - max_op_hdr) ||
        (c.max_am_hdr > UINT32_MAX) || (c.tx_seg_size > UINT32_MAX) || (c.max_short > UINT32_MAX)) {
        return fail("UCX_TCP_MAX_ZCOPY + UCX_TCP_MAX_AM_HDR, UCX_TCP_TX_SEG_SIZE and "
                    "UCX_TCP_MAX_SHORT must fit a 32-bit frame length");
    }
    if ((c.max_iov == 0) || (c.max_iov > tx_queue::MAX_GATHER - 2)) {
        return fail("UCX_TCP_MAX_IOV out of range (1..62)");
    }
    if ((c.max_get_iov == 0) || (c.max_get_iov > fetch_op::MAX_IOV)) {
        return fail("UCX_TCP_MAX_GET_IOV out of range (1..8)");
    }
    if ((c.zcopy_inflight == 0) || (c.zcopy_inflight > tx_queue::MAX_ZCOPY_SLOTS)) {
        return fail("UCX_TCP_ZCOPY_INFLIGHT out of range (1..64)");
    }
    /* A connection's send queue addresses its buffer, replies included,
     * in 32 bits. */
    if (c.tx_buf_size > UINT32_MAX - size_t(MAX_RMA_OUTSTANDING) * MAX_REPLY_FRAME) {
        return fail("UCX_TCP_TX_BUF_SIZE must be below 4g");
    }
    if (c.rma_outstanding > MAX_RMA_OUTSTANDING) {
        /* Each connection keeps reply room for that many requests. */
        return fail("UCX_TCP_RMA_OUTSTANDING out of range (1..4096)");
    }
    if ((c.rma_outstanding == 0) || (c.max_poll == 0) || (c.epoll_period == 0) ||
        (c.backlog <= 0) || (c.tx_batch == 0) || !(c.handshake_timeout > 0)) {
        return fail("UCX_TCP_RMA_OUTSTANDING, MAX_POLL, EPOLL_PERIOD, BACKLOG, TX_BATCH and "
                    "HANDSHAKE_TIMEOUT must be positive");
    }
    return UCS_OK;
}

} // namespace uct::tcp
