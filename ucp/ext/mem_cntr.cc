/*
 * ucp_mem_bind_cntr and the counting at the target (see mem_cntr.h).
 */
#include "mem_cntr.h"

#include "cntr.h"

#include <ucp/core/live_handles.h>
#include <ucp/core/ucp_guard.h>
#include <ucp/core/ucp_mm.h>
#include <ucp/core/ucp_worker.h>
#include <ucs/debug/log.h>

#include <algorithm>

namespace ucp::ext {

namespace {

constexpr uint64_t known_events = UCP_MEM_CNTR_REMOTE_WRITE | UCP_MEM_CNTR_REMOTE_READ |
                                  UCP_MEM_CNTR_REMOTE_ATOMIC;

void unbind(ucp_mem *memh)
{
    ucp_cntr *cntr = memh->cntr;
    if (cntr == nullptr) {
        return;
    }
    memh->context->mapped_regions.bind(reinterpret_cast<uintptr_t>(memh->address), memh->length,
                                       memh->secret, {});
    auto &bound = cntr->bound_regions;
    bound.erase(std::remove(bound.begin(), bound.end(), memh), bound.end());
    memh->cntr        = nullptr;
    memh->cntr_events = 0;
}

} // namespace

void count_bound(const region_counter &counter, uint64_t bytes)
{
    ucp_cntr_add(counter.cntr, (counter.cntr->flags & UCP_CNTR_FLAG_EVENTS_BYTES) ? bytes : 1);
}

void mem_unbind_cntr(ucp_mem *memh)
{
    unbind(memh);
}

void cntr_unbind_all(ucp_cntr *cntr)
{
    while (!cntr->bound_regions.empty()) {
        unbind(cntr->bound_regions.back());
    }
}

} // namespace ucp::ext

extern "C" {

ucs_status_t ucp_mem_bind_cntr(ucp_mem_h memh, ucp_cntr_h cntr, uint64_t events)
{
    if ((memh == nullptr) || !ucp::live_handles<ucp_mem>::instance().contains(memh)) {
        ucs_error("ucp_mem_bind_cntr: %p is not a mapped region", static_cast<void *>(memh));
        return UCS_ERR_INVALID_PARAM;
    }
    if (events & ~ucp::ext::known_events) {
        ucs_error("ucp_mem_bind_cntr: unknown event bits 0x%llx",
                  static_cast<unsigned long long>(events & ~ucp::ext::known_events));
        return UCS_ERR_INVALID_PARAM;
    }
    if ((cntr != nullptr) && (events != 0)) {
        if (!ucp::live_handles<ucp_cntr>::instance().contains(cntr)) {
            ucs_error("ucp_mem_bind_cntr: %p is not a live counter", static_cast<void *>(cntr));
            return UCS_ERR_INVALID_PARAM;
        }
        if (&cntr->worker->context != memh->context) {
            ucs_error("ucp_mem_bind_cntr: the counter's worker is of another context");
            return UCS_ERR_INVALID_PARAM;
        }
        if ((memh->mem_type != UCS_MEMORY_TYPE_HOST) || (memh->length == 0)) {
            ucs_error("ucp_mem_bind_cntr: only regions of host memory count");
            return UCS_ERR_INVALID_PARAM;
        }
    }
    return ucp::guarded("ucp_mem_bind_cntr", [&]() {
        ucp::ext::unbind(memh);
        if ((cntr == nullptr) || (events == 0)) {
            return UCS_OK;
        }
        ucp::worker_guard guard(cntr->worker);
        cntr->bound_regions.push_back(memh);
        memh->cntr        = cntr;
        memh->cntr_events = events;
        memh->context->mapped_regions.bind(reinterpret_cast<uintptr_t>(memh->address), memh->length,
                                           memh->secret, ucp::region_counter{cntr, events});
        return UCS_OK;
    });
}

} // extern "C"
