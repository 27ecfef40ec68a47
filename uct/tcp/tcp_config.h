/*
 * Tunables of the tcp transport, read from UCX_TCP_* variables (UCX's names
 * and defaults where UCX has the same tunable; the defaults live in the
 * configuration table in tcp_config.cc). iface_open reads them with the env
 * prefix of its params (UCX_MPI_TCP_SNDBUF before UCX_TCP_SNDBUF).
 */
#ifndef UCT_TCP_TCP_CONFIG_H
#define UCT_TCP_TCP_CONFIG_H

#include <ucs/type/status.h>

#include <cstddef>

namespace uct::tcp {

/* Largest UCX_TCP_RMA_OUTSTANDING: every connection keeps room for as many replies. */
constexpr unsigned MAX_RMA_OUTSTANDING = 4096;

// clang-format off
struct tcp_config {
    size_t   sndbuf;              /* UCX_TCP_SNDBUF: SO_SNDBUF; auto (0 here) keeps kernel autotuning */
    size_t   rcvbuf;              /* UCX_TCP_RCVBUF: SO_RCVBUF; auto (0 here) keeps kernel autotuning */
    size_t   rx_seg_size;         /* UCX_TCP_RX_SEG_SIZE: per-connection receive buffer (64k) */
    size_t   tx_seg_size;         /* UCX_TCP_TX_SEG_SIZE: largest bcopy payload (8k) */
    size_t   tx_buf_size;         /* UCX_TCP_TX_BUF_SIZE: per-connection send buffer (64k) */
    size_t   max_short;           /* UCX_TCP_MAX_SHORT: am_short limit incl. its 8-byte header (256) */
    size_t   max_am_hdr;          /* UCX_TCP_MAX_AM_HDR: am_zcopy header limit (128) */
    size_t   max_zcopy;           /* UCX_TCP_MAX_ZCOPY: largest zcopy / get payload (1g) */
    size_t   max_iov;             /* UCX_TCP_MAX_IOV: iov entries per put/am zcopy (6) */
    size_t   max_get_iov;         /* UCX_TCP_MAX_GET_IOV: iov entries per get_zcopy (4) */
    unsigned zcopy_inflight;      /* UCX_TCP_ZCOPY_INFLIGHT: zcopy sends queued per connection (16) */
    unsigned rma_outstanding;     /* UCX_TCP_RMA_OUTSTANDING: gets/fetching atomics/flushes in flight per ep (64) */
    unsigned max_poll;            /* UCX_TCP_MAX_POLL: events and reads per connection per progress (16) */
    unsigned direct_poll_max;     /* UCX_TCP_DIRECT_POLL_MAX: up to this many connections are read
                                     directly, without epoll_wait (2) */
    unsigned epoll_period;        /* UCX_TCP_EPOLL_PERIOD: in direct mode, epoll_wait every N progress
                                     calls for new connections and peer failures (16) */
    int      backlog;             /* UCX_TCP_BACKLOG: listen backlog (1024, kernel caps at somaxconn) */
    double   handshake_timeout;   /* UCX_TCP_HANDSHAKE_TIMEOUT: seconds an accepted connection
                                     may take to show its handshake (10s) */
    bool     nodelay;             /* UCX_TCP_NODELAY: TCP_NODELAY (y) */
    size_t   rx_keep;             /* UCX_TCP_RX_KEEP: a large-frame receive buffer up to this size is
                                     kept for the next large frame (4m) */
    size_t   tx_batch;            /* UCX_TCP_TX_BATCH: one send call offers at most this many
                                     bytes of the queue (512k; a frame may be cut) */
    size_t   rx_lowat;            /* UCX_TCP_RX_LOWAT: while a large payload is read in place, read
                                     when this much (at most half the rest) arrived (512k; 0: off) */
    /* Peer failure on a silent network (cable cut, host gone: no FIN, no RST). */
    bool     keepalive;           /* SO_KEEPALIVE: off when any of the three below is "inf" */
    int      keepidle_s;          /* UCX_TCP_KEEPIDLE: TCP_KEEPIDLE (1s; 0: system default) */
    int      keepintvl_s;         /* UCX_TCP_KEEPINTVL: TCP_KEEPINTVL (1s; 0: system default) */
    int      keepcnt;             /* UCX_TCP_KEEPCNT: TCP_KEEPCNT (auto, 0 here: system default) */
    unsigned user_timeout_ms;     /* UCX_TCP_USER_TIMEOUT: how long sent data or a probe may
                                     go unacknowledged, applied by the ack watch and through
                                     KEEPCNT (1s; 0: no limit, the system's) */
};
// clang-format on

/* The defaults of the UCX_TCP_* table. */
tcp_config default_tcp_config();

/*
 * UCX_<env_prefix>_TCP_*, UCX_TCP_*, the config file and the defaults,
 * checked with check_tcp_config. On a malformed or contradictory value logs
 * which variable is wrong, leaves *config untouched and returns
 * UCS_ERR_INVALID_PARAM.
 */
ucs_status_t read_tcp_config(const char *env_prefix, tcp_config *config);

/* UCS_ERR_INVALID_PARAM with a message when fields contradict each other. */
ucs_status_t check_tcp_config(const tcp_config &config);

} // namespace uct::tcp

#endif
