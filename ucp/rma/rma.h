/*
 * RMA and atomics inside the library: how an operation reaches the target's
 * memory (its path), and the request machinery the put, get and atomic
 * calls share.
 *
 * Paths, chosen per operation from the remote key and the ep's lanes:
 *   DIRECT   the key's memory is mapped here (a posix/sysv segment): CPU
 *            copies and CPU atomics, complete when the call returns;
 *   LANE     a uct lane whose md has an entry in the key and which does the
 *            operation (cma, self, tcp; atomics only on CPU-coherent ones);
 *   EMULATED active messages to the target, which checks the address against
 *            the regions it mapped (region_registry) and executes there.
 * Every path ends in CPU instructions on the target's memory, so atomics
 * from different paths on one word stay atomic with respect to each other.
 *
 * Completion: put completes locally (buffer reusable), get and fetching
 * atomics when the data is here; flush waits for every RMA request of the
 * ep (ucp_ep::rma_outstanding), including the target's acknowledgement of
 * each emulated put and atomic, so after a flush remote memory is updated.
 * Only the emulated path can be overtaken by a later operation on another
 * path: ucp_worker_fence waits for it (worker rma.emulated_outstanding).
 */
#ifndef UCP_RMA_RMA_H
#define UCP_RMA_RMA_H

#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_rkey.h>
#include <ucp/core/ucp_worker.h>
#include <ucp/core/ucp_ep_config.h>

#include <algorithm>
#include <cstring>

namespace ucp::rma {

enum class op_kind : uint8_t { PUT, GET, AMO };
enum class path : uint8_t { DIRECT, LANE, EMULATED };

/* rma_state::flags */
namespace state_flag {
constexpr uint8_t IN_CALL          = 1u << 0; /* the API call that started it runs */
constexpr uint8_t DONE_IN_CALL     = 1u << 1; /* finished before that call returned */
constexpr uint8_t COUNTED          = 1u << 2; /* in ep->rma_outstanding */
constexpr uint8_t COUNTED_EMULATED = 1u << 3; /* in worker rma.emulated_outstanding */
constexpr uint8_t USER_CB          = 1u << 4; /* user_cb is set */
constexpr uint8_t USER_LEGACY_CB   = 1u << 5; /* ... with the pre-nbx signature */
constexpr uint8_t FETCH            = 1u << 6; /* atomic: the result goes to buffer */
constexpr uint8_t GET_DONE         = 1u << 7; /* emulated get: no more data wanted */
} // namespace state_flag

/* Fills rkey->rma_cache for `ep` (lanes) and for this process (direct). */
void cache_fill(const ucp_ep *ep, ucp_rkey *rkey);

inline const rkey_cache &cache_of(const ucp_ep *ep, ucp_rkey *rkey)
{
    if (ucs_unlikely(rkey->rma_cache.ep != ep)) {
        cache_fill(ep, rkey);
    }
    return rkey->rma_cache;
}

/* How an operation served by `lane` (no_cached_lane: none) reaches the
 * key: the key of its selection table (ucp/proto/select.h). */
inline uint8_t reach_of(const rkey_cache &c, uint8_t lane)
{
    return (c.direct != nullptr)    ? proto::rma_reach::DIRECT :
           (lane != no_cached_lane) ? lane :
                                      proto::rma_reach::AM;
}

inline path path_of(uint8_t reach)
{
    return (reach == proto::rma_reach::DIRECT) ? path::DIRECT :
           (reach == proto::rma_reach::AM)     ? path::EMULATED :
                                                 path::LANE;
}

/* The path a protocol of an RMA table takes. */
inline path path_of(proto::protocol p)
{
    return (p == proto::protocol::RMA_DIRECT)   ? path::DIRECT :
           (p == proto::protocol::RMA_EMULATED) ? path::EMULATED :
                                                  path::LANE;
}

/* The protocol of the ep's table for `length` bytes of `op` that reach the
 * key by `reach`, from local memory of `mem_type`; protocol::last: none
 * moves it. Put and get have one per size; atomics are chosen by
 * select_atomic (a lane declines ops it lacks). */
inline proto::protocol select(const ucp_ep *ep, proto::operation op, uint8_t reach,
                              ucs_memory_type_t mem_type, size_t length)
{
    const proto::selection &sel = ep->cfg->protocols.get({op, reach, dt::dt_class::contig,
                                                          mem_type});
    if (sel.count == 0) {
        return proto::protocol::last;
    }
    const proto::range &r = sel.find(length);
    return (r.count > 0) ? r.candidates[0] : proto::protocol::last;
}

/* The first atomic protocol of the ep's table for keys reached by `reach`
 * that `takes` (a lane's atomic declines an op or size it lacks); whether
 * one did. */
template <typename Takes>
bool select_atomic(const ucp_ep *ep, uint8_t reach, Takes &&takes)
{
    const proto::selection &sel = ep->cfg->protocols.get({proto::operation::AMO, reach,
                                                          dt::dt_class::contig,
                                                          UCS_MEMORY_TYPE_HOST});
    if (sel.count == 0) {
        return false;
    }
    const proto::range &r = sel.find(0); /* atomics have one range */
    return std::any_of(r.candidates, r.candidates + r.count, takes);
}

/* Where `remote_addr` (covered by the key) is mapped here; cache.direct set. */
inline uint8_t *direct_address(const ucp_rkey *rkey, uint64_t remote_addr)
{
    return rkey->rma_cache.direct + (remote_addr - rkey->address);
}

/*
 * A request for an operation that did not complete at once: the caller's
 * (FIELD_REQUEST) or a pooled one, with the application's callback and user
 * data kept aside; nullptr when out of memory. The caller fills
 * u.send.rma's operation fields, then calls request_start().
 */
request *request_get(ucp_worker *worker, ucp_ep *ep, const ucp_request_param_t *param, op_kind kind,
                     path how);

/*
 * Issues the operation (or queues it behind the ep's pending sends) with
 * UCX's return rules: NULL when it completed within the call (no callback
 * then, unless UCP_OP_ATTR_FLAG_NO_IMM_CMPL), an error pointer, or the
 * request.
 */
ucs_status_ptr_t request_start(request *req, const ucp_request_param_t *param);

/* The request of an rma_state. */
inline request *request_of(rma_state *r)
{
    return reinterpret_cast<request *>(reinterpret_cast<char *>(r) - offsetof(request, u.send.rma));
}

/* ---- emulation (rma_emulation.cc) ---- */

/* Issues an emulated operation's messages; a send step (see ucp_ep.h). */
ucs_status_t emulated_step(request *req);

/* Sends replies the target could not send at once; returns how many. */
unsigned deferred_progress(ucp_worker *worker);

/* ---- shared by the steps ---- */

/* Issuing is over: drops the part held meanwhile; may complete the request. */
void issue_done(request *req);

/*
 * A uct call failed with `status` while issuing: with parts still in
 * flight the error is kept and the request completes when they are back
 * (returns UCS_OK); otherwise returns `status` for the caller to complete
 * the request with.
 */
ucs_status_t issue_failed(request *req, ucs_status_t status);

/* Writes an atomic's old value as `size` bytes (4 or 8). */
inline void store_result(void *dest, unsigned size, uint64_t value)
{
    if (size == sizeof(uint32_t)) {
        const auto value32 = uint32_t(value);
        std::memcpy(dest, &value32, sizeof(value32));
    } else {
        std::memcpy(dest, &value, sizeof(value));
    }
}

/* Executes an atomic on local memory; `*result` gets the old value. */
ucs_status_t cpu_atomic(uct::atomic_op op, unsigned size, void *target, uint64_t value,
                        uint64_t compare, uint64_t *result);

} // namespace ucp::rma

namespace ucp {

/* AM handlers of the emulated operations (installed by set_am_handlers). */
ucs_status_t rma_put_handler(void *arg, void *data, size_t length, unsigned flags);
ucs_status_t rma_get_req_handler(void *arg, void *data, size_t length, unsigned flags);
ucs_status_t rma_get_rep_handler(void *arg, void *data, size_t length, unsigned flags);
ucs_status_t atomic_req_handler(void *arg, void *data, size_t length, unsigned flags);
ucs_status_t atomic_rep_handler(void *arg, void *data, size_t length, unsigned flags);
ucs_status_t rma_cmpl_handler(void *arg, void *data, size_t length, unsigned flags);

/* Replies owed to peers that found no room at first (worker deferred work). */
unsigned rma_deferred_progress(ucp_worker *worker);

} // namespace ucp

#endif
