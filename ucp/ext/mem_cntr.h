/*
 * Target-side counting (ucp_mem_bind_cntr, ucp/api/ucp_ext.h): a counter
 * bound to a mapped region counts peers' puts, gets and atomics on it. The
 * binding lives in the context's region registry next to the region's
 * secret, where the emulated operations' handlers find it after serving
 * the operation; the region's keys carry rkey_flag::COUNTED so that peers
 * use nothing but those handlers.
 */
#ifndef UCP_EXT_MEM_CNTR_H
#define UCP_EXT_MEM_CNTR_H

#include <ucp/api/ucp_ext.h>
#include <ucp/rma/region_registry.h>

#include <cstddef>
#include <cstdint>

struct ucp_mem;
struct ucp_cntr;

namespace ucp::ext {

/* Adds an operation of `bytes` to the bound counter (by its EVENTS_BYTES flag). */
void count_bound(const region_counter &counter, uint64_t bytes);

/* An operation of kind `event` (UCP_MEM_CNTR_REMOTE_*) of `bytes` was
 * served on a region bound to `counter`: counts it if asked to. Inline:
 * every request a peer makes asks, and few regions have a counter. */
inline void count_remote(const region_counter &counter, uint64_t event, uint64_t bytes)
{
    if ((counter.cntr != nullptr) && (counter.events & event)) {
        count_bound(counter, bytes);
    }
}

/* The region is unmapped: its counter, if any, is let go. */
void mem_unbind_cntr(ucp_mem *memh);

/* The counter is destroyed with its worker: the regions bound to it count
 * no more. */
void cntr_unbind_all(ucp_cntr *cntr);

} // namespace ucp::ext

#endif
