/*
 * Tunables of the verbs transports, read from UCX 1.13's variable names:
 * UCX_IB_* for the device (md), UCX_RC_VERBS_* for rc_verbs and
 * UCX_UD_VERBS_* for ud_verbs (each also
 * readable without its table prefix, as every table here, and with the env
 * prefix of the iface params first). The defaults are UCX 1.13's.
 */
#ifndef UCT_IB_IB_CONFIG_H
#define UCT_IB_IB_CONFIG_H

#include <ucs/type/status.h>

#include <cstddef>
#include <cstdint>

namespace uct::ib {

struct ib_md_config {
    unsigned long gid_index; /* UCX_IB_GID_INDEX: auto (ULONG_MAX - 1 here) picks one */
    double reg_overhead_s;   /* UCX_IB_MEM_REG_OVERHEAD: registration cost model */
};

struct rc_verbs_config {
    size_t seg_size;           /* SEG_SIZE: receive buffer and largest bcopy (8256) */
    unsigned tx_queue_len;     /* TX_QUEUE_LEN: work requests in flight per QP (256) */
    unsigned rx_queue_len;     /* RX_QUEUE_LEN: receive buffers posted to the SRQ (4095) */
    size_t tx_min_inline;      /* TX_MIN_INLINE: inline bytes asked of the QP (64) */
    unsigned tx_min_sge;       /* TX_MIN_SGE: gather entries per work request (5) */
    unsigned tx_cq_moderation; /* TX_CQ_MODERATION: unsignaled sends between signaled (64) */
    unsigned tx_cq_len;        /* TX_CQ_LEN: send completion queue length (4096) */
    unsigned rx_max_poll;      /* RX_MAX_POLL: receive completions per progress (16) */
    unsigned tx_max_poll;      /* TX_MAX_POLL: send completions per progress (16) */
    size_t max_am_hdr;         /* MAX_AM_HDR: am_zcopy header limit (128) */
    uint8_t timeout_code;      /* TIMEOUT (1s) as the IB exponent: 4.096us * 2^code */
    uint8_t retry_count;       /* RETRY_COUNT (7) */
    uint8_t rnr_timer_code;    /* RNR_TIMEOUT (1ms) as the IB min_rnr_timer code */
    uint8_t rnr_retry_count;   /* RNR_RETRY_COUNT (7: retry for ever) */
    uint8_t sl;                /* SL (auto: 0) */
    uint8_t traffic_class;     /* TRAFFIC_CLASS (auto: 0) */
    uint8_t hop_limit;         /* HOP_LIMIT (255) */
    unsigned path_mtu;         /* PATH_MTU: 0 default (the port's active MTU), else bytes */
    unsigned max_rd_atomic;    /* MAX_RD_ATOMIC: auto (0 here) = the device's limit */
};

struct ud_verbs_config {
    size_t seg_size;       /* SEG_SIZE (8k): capped by the port MTU on the wire */
    unsigned tx_queue_len; /* TX_QUEUE_LEN: send queue of the iface's QP (256) */
    unsigned rx_queue_len; /* RX_QUEUE_LEN: receive buffers posted (4096) */
    size_t tx_min_inline;  /* TX_MIN_INLINE: inline bytes asked of the QP (64) */
    unsigned tx_min_sge;   /* TX_MIN_SGE: gather entries per work request (5) */
    unsigned rx_max_poll;  /* RX_MAX_POLL: receive completions per progress (16) */
    unsigned tx_max_poll;  /* TX_MAX_POLL: send completions per progress (16) */
    double timeout_s;      /* TIMEOUT: peer failure after this long without an ack (30s) */
    double timer_tick_s;   /* TIMER_TICK: first retransmission timeout (10ms) */
    double timer_backoff;  /* TIMER_BACKOFF: retransmission timeout factor (2.0) */
    unsigned max_window;   /* MAX_WINDOW: unacknowledged packets per ep (1025) */
    uint8_t sl;            /* SL (auto: 0) */
    uint8_t traffic_class; /* TRAFFIC_CLASS (auto: 0) */
    uint8_t hop_limit;     /* HOP_LIMIT (255) */
    unsigned path_mtu;     /* PATH_MTU: 0 default (the port's active MTU), else bytes */
};

/* UCX_IB_* with the env prefix first; UCS_ERR_INVALID_PARAM with a message
 * on a malformed value. */
ucs_status_t read_ib_md_config(const char *env_prefix, ib_md_config *config);

/* UCX_RC_VERBS_* likewise, checked for contradictions. */
ucs_status_t read_rc_verbs_config(const char *env_prefix, rc_verbs_config *config);

/* UCX_UD_VERBS_* likewise. */
ucs_status_t read_ud_verbs_config(const char *env_prefix, ud_verbs_config *config);

/* The IB encodings of times (exposed for the tests). */
uint8_t ib_timeout_code(double seconds);
uint8_t ib_rnr_timer_code(double seconds);

} // namespace uct::ib

#endif
