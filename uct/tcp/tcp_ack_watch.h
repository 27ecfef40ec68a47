/*
 * Noticing a silent peer while data waits for its acknowledgement, without
 * TCP_USER_TIMEOUT. Linux applies that option to zero-window probes too
 * (since 5.11): a peer whose process does not read for longer than the
 * timeout, so that its receive window closes, had its connection aborted
 * although its kernel answered every probe (RFC 1122 4.2.2.17 says to stay
 * open). So the transport asks the kernel (TCP_INFO) now and then while a
 * connection has sent data, and fails it only when the kernel has got no
 * acknowledgement for the timeout and is retransmitting, or has sent window
 * probes that went unanswered.
 */
#ifndef UCT_TCP_TCP_ACK_WATCH_H
#define UCT_TCP_TCP_ACK_WATCH_H

#include <cstdint>

namespace uct::tcp {

/* The TCP_INFO fields the verdict needs. */
struct ack_state {
    uint32_t unacked;       /* segments sent and not acknowledged */
    uint32_t probes;        /* window or keepalive probes not answered */
    uint32_t retransmits;   /* retransmission timeouts since the last ack moved */
    uint32_t backoff;       /* doublings of the retransmission timeout */
    uint32_t rto_us;        /* the current (backed-off) retransmission timeout */
    uint32_t last_ack_ms;   /* time since the last acknowledgement arrived */
    uint32_t notsent_bytes; /* queued in the kernel, not sent yet (window closed) */
};

/* Reads the connection's state; false (logged at debug) when the kernel
 * does not say. */
bool read_ack_state(int fd, ack_state *state);

/* Something the peer has to acknowledge or make room for. */
bool ack_pending(const ack_state &state);

/* Least time the oldest unacknowledged segment has waited, from the
 * retransmission timeouts that fired for it. */
uint64_t retransmit_wait_ms(const ack_state &state);

/*
 * The peer's host has gone silent: nothing acknowledged for `timeout_ms`,
 * and either a segment waited that long through retransmissions, or two
 * window probes in a row got no answer and nothing came for at least 2 s
 * (a live peer rate-limits its answers to probes). A live host whose
 * process is stopped or busy still acknowledges, so this never holds for it.
 */
bool peer_silent(const ack_state &state, uint32_t timeout_ms);

/* How often connections are asked while any has something pending. */
uint32_t ack_check_period_ms(uint32_t timeout_ms);

} // namespace uct::tcp

#endif
