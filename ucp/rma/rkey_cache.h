/*
 * What RMA and atomics decided for a remote key, so that an operation does
 * not search the lanes again: the lanes of the ep the key was last used
 * with whose memory domain has an entry in the key, and whether the key's
 * memory is mapped into this process (posix/sysv segments), where CPU loads,
 * stores and atomics reach it directly. Filled on first use (rma_request.cc).
 */
#ifndef UCP_RMA_RKEY_CACHE_H
#define UCP_RMA_RKEY_CACHE_H

#include <cstdint>

struct ucp_ep;

namespace ucp::rma {

constexpr uint8_t no_cached_lane = 0xff;

struct rkey_cache {
    const ucp_ep *ep    = nullptr;        /* the lanes below are this ep's */
    uint8_t put_lane    = no_cached_lane; /* no_cached_lane: emulate over AM */
    uint8_t get_lane    = no_cached_lane;
    uint8_t amo_lane    = no_cached_lane; /* atomics of the worker's atomic mode */
    uint8_t amo_post32  = 0;              /* uct::atomic_op_bit sets of amo_lane */
    uint8_t amo_fetch32 = 0;
    uint8_t amo_post64  = 0;
    uint8_t amo_fetch64 = 0;
    /* The worker's atomic mode is cpu: CPU atomics on a direct mapping and
     * emulation (the target's CPU applies them) may serve atomics. */
    bool amo_cpu        = true;
    bool direct_checked = false;
    uint8_t *direct     = nullptr; /* ucp_rkey::address mapped here */
};

} // namespace ucp::rma

#endif
