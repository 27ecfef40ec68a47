#include <uct/tcp/tcp_ack_watch.h>

#include <ucs/debug/log.h>

#include <algorithm>
#include <cstddef>

#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace uct::tcp {

namespace {

constexpr uint64_t max_rto_ms = 120000; /* Linux's TCP_RTO_MAX */

/* A live peer answers at most one window probe per 500 ms
 * (net.ipv4.tcp_invalid_ratelimit) and the probe intervals double, so it
 * may leave probes unanswered for up to three times that: a silent window
 * counts only beyond it. */
constexpr uint32_t min_probe_silence_ms = 2000;

} // namespace

bool read_ack_state(int fd, ack_state *state)
{
    struct tcp_info info {};
    socklen_t length = sizeof(info);
    if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) {
        ucs_debug("tcp: TCP_INFO of fd %d: %m", fd);
        return false;
    }
    state->unacked     = info.tcpi_unacked;
    state->probes      = info.tcpi_probes;
    state->retransmits = info.tcpi_retransmits;
    state->backoff     = info.tcpi_backoff;
    state->rto_us      = info.tcpi_rto;
    state->last_ack_ms = info.tcpi_last_ack_recv;
    /* Kernels before 4.6 do not report it: then only what is in flight counts. */
    const bool has_notsent = length >= offsetof(struct tcp_info, tcpi_notsent_bytes) +
                                           sizeof(info.tcpi_notsent_bytes);
    state->notsent_bytes = has_notsent ? info.tcpi_notsent_bytes : 0;
    return true;
}

bool ack_pending(const ack_state &state)
{
    return (state.unacked > 0) || (state.probes > 0) || (state.notsent_bytes > 0);
}

uint64_t retransmit_wait_ms(const ack_state &state)
{
    /* Each timeout doubled the next one: base, 2 base, 4 base ... */
    const uint64_t base_us = (state.backoff < 32) ? (state.rto_us >> state.backoff) : 0;
    uint64_t waited        = 0;
    for (uint32_t i = 0; i < std::min<uint32_t>(state.retransmits, 32); ++i) {
        waited += std::min<uint64_t>((base_us << i) / 1000, max_rto_ms);
    }
    return waited;
}

bool peer_silent(const ack_state &state, uint32_t timeout_ms)
{
    if (state.last_ack_ms < timeout_ms) {
        return false;
    }
    if (state.unacked > 0) {
        return retransmit_wait_ms(state) >= timeout_ms;
    }
    return (state.probes >= 2) && (state.last_ack_ms >= min_probe_silence_ms);
}

uint32_t ack_check_period_ms(uint32_t timeout_ms)
{
    return std::clamp<uint32_t>(timeout_ms / 4, 10, 250);
}

} // namespace uct::tcp
