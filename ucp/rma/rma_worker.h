/*
 * Per-worker state of RMA and atomics: what ucp_worker_fence waits for, and
 * the target side's replies to emulated operations that found no room on
 * their lane (or their ep not wired up yet), sent again from progress.
 */
#ifndef UCP_RMA_RMA_WORKER_H
#define UCP_RMA_RMA_WORKER_H

#include <ucp/rma/region_registry.h>
#include <ucs/type/status.h>

#include <cstdint>
#include <deque>

namespace ucp::rma {

/* A reply the target owes a requester. */
struct deferred_reply {
    uint64_t ep_id; /* our ep the request named: the reply goes out of it */
    uint64_t uuid;  /* requester worker */
    uint64_t req_id;
    uint8_t am_id; /* wire::AM_CMPL, AM_ATOMIC_REP or AM_RMA_GET_REP */
    int8_t status;
    uint64_t result;  /* atomic result */
    uint64_t address; /* get: the rest of the data to send, read when sent */
    uint64_t length;
    uint64_t offset; /* get: offset of `address` in the requested range */
    uint64_t secret; /* get: the key's secret, checked again when sent */
};

struct worker_state {
    /* Emulated operations still waiting for their target: a fence waits
     * for these, the only ones that can be overtaken by later operations. */
    uint64_t emulated_outstanding = 0;
    std::deque<deferred_reply> deferred;
    /* The region the last request from a peer landed in (puts, gets,
     * atomics, puts with completion). */
    region_registry::lookup_cache region_cache;
};

} // namespace ucp::rma

#endif
