/*
 * The request machinery of RMA and atomics (see rma.h): choosing lanes for
 * a key, issuing the operation on its path, counting the parts in flight,
 * and completing with the bookkeeping flush and fence rely on.
 */
#include "rma.h"

#include <ucp/core/ucp_guard.h>
#include <ucp/proto/send_common.h>
#include <ucs/debug/log.h>
#include <ucs/memory/memtype_registry.h>

#include <cstdlib>
#include <cstring>

namespace ucp::rma {

namespace {

/* Takes the request out of the counts flush and fence wait on (once). */
void account_done(request *req)
{
    rma_state &r = req->u.send.rma;
    req->worker->unregister_request(req);
    if (r.flags & state_flag::COUNTED) {
        --req->u.send.ep->rma_outstanding;
    }
    if (r.flags & state_flag::COUNTED_EMULATED) {
        --req->worker->rma.emulated_outstanding;
    }
    r.flags &= uint8_t(~(state_flag::COUNTED | state_flag::COUNTED_EMULATED));
    buffer_reg_release(req->worker->context, req->u.send.rndv_md, &req->u.send.reg);
    ucs::memtype::bounce_free(req->u.send.bounce); /* a staged copy of device memory */
    req->u.send.bounce = nullptr;
}

/*
 * Every RMA request completes through this callback, whichever code path
 * completes it (ours, a purge of the ep's pending queue, a failed peer), so
 * the counts stay right; then the application's callback runs.
 */
/* The end of every request that moved data, in the call or later: a get
 * into device memory leaves its bounce buffer first; then account_done. */
ucs_status_t finish_transfer(request *req, ucs_status_t status)
{
    rma_state &r = req->u.send.rma;
    if ((op_kind(r.kind) == op_kind::GET) && (r.staged_for != nullptr) && (status == UCS_OK)) {
        status = ucs::memtype::copy(r.staged_for, ucs_memory_type_t(r.staged_type),
                                    req->u.send.bounce, UCS_MEMORY_TYPE_HOST, r.length);
    }
    account_done(req);
    return status;
}

void completed_cb(void *user, ucs_status_t status, void *user_data)
{
    request *req = request::from_user(user);
    rma_state &r = req->u.send.rma;
    status       = finish_transfer(req, status);
    req->status  = status;
    if ((status != UCS_OK) && (req->flags & request_flag::RELEASED)) {
        /* An _nbi or post operation: nobody else will hear of it. */
        ucs_error("worker '%s': %s to 0x%llx failed: %s", req->worker->name.c_str(),
                  (op_kind(r.kind) == op_kind::PUT) ? "put" :
                  (op_kind(r.kind) == op_kind::GET) ? "get" :
                                                      "atomic",
                  static_cast<unsigned long long>(r.remote_addr), ucs_status_string(status));
    }
    if (!(r.flags & state_flag::USER_CB)) {
        return;
    }
    if (r.flags & state_flag::USER_LEGACY_CB) {
        r.user_cb.legacy(user, status);
    } else {
        r.user_cb.nbx(user, status, user_data);
    }
}

/* The last part is back. Inside the starting call: only noted. */
void part_done(uct::completion *comp)
{
    auto *r      = reinterpret_cast<rma_state *>(comp);
    request *req = request_of(r);
    if (r->flags & state_flag::IN_CALL) {
        r->flags |= state_flag::DONE_IN_CALL;
        return;
    }
    request_complete(req, comp->status);
}

uct::ep *lane_ep(const request *req)
{
    return req->u.send.ep->lanes[req->u.send.rma.lane].ep;
}

const uct::iface_attr &lane_attr(const request *req)
{
    const ucp_ep *ep = req->u.send.ep;
    return ep->worker->ifaces[ep->lanes[req->u.send.rma.lane].iface_index].iface->attr();
}

uct::rkey_t lane_rkey(const request *req)
{
    const rma_state &r = req->u.send.rma;
    return r.rkey->find(req->u.send.ep->lanes[r.lane].md_index)->bundle.rkey;
}

void unpack_copy(void *arg, const void *data, size_t length)
{
    std::memcpy(arg, data, length);
}

/* One uct call that takes a completion: counts it while in flight. */
template <typename Call>
ucs_status_t with_comp(rma_state &r, Call &&call)
{
    ++r.comp.count;
    ucs_status_t status = call(&r.comp);
    if (status == UCS_INPROGRESS) {
        return UCS_OK;
    }
    --r.comp.count;
    return status;
}

/* The local handle a zero-copy part needs on the lane's md: the whole
 * buffer, registered (through the md's cache) once per operation. */
ucs_status_t zcopy_memh(request *req, uct::mem_h *memh_p)
{
    send_state &s           = req->u.send;
    const unsigned md_index = s.ep->lanes[s.rma.lane].md_index;
    ucp_context &ctx        = req->worker->context;
    if (!(ctx.mds[md_index].md->attr().flags & uct::md_flag::NEED_MEMH)) {
        *memh_p = nullptr;
        return UCS_OK;
    }
    if (!s.reg.held()) {
        ucs_status_t status = buffer_reg_get(ctx, md_index, s.rma.buffer, s.rma.length, &s.reg);
        if (status != UCS_OK) {
            return status;
        }
        s.rndv_md = md_index;
    }
    *memh_p = s.reg.memh;
    return UCS_OK;
}

/* Issued `progressed` fragments, then ran out of resources. */
ucs_status_t out_of_resources(bool progressed)
{
    return progressed ? UCS_INPROGRESS : UCS_ERR_NO_RESOURCE;
}

ucs_status_t lane_put(request *req)
{
    rma_state &r                = req->u.send.rma;
    size_t &offset              = req->u.send.offset;
    uct::ep *ep                 = lane_ep(req);
    const uct::iface_attr &attr = lane_attr(req);
    const uct::rkey_t rkey      = lane_rkey(req);
    bool progressed             = false;
    while (offset < r.length) {
        const size_t left     = r.length - offset;
        const uint8_t *source = r.buffer + offset;
        const uint64_t remote = r.remote_addr + offset;
        size_t chunk          = 0;
        ucs_status_t status;
        switch (proto::protocol(r.protocol)) {
        case proto::protocol::RMA_SHORT:
            chunk  = left;
            status = ep->put_short(source, unsigned(chunk), remote, rkey);
            break;
        case proto::protocol::RMA_BCOPY: {
            chunk = std::min(left, attr.put.max_bcopy);
            byte_span arg{source, chunk};
            ssize_t packed = ep->put_bcopy(pack_span, &arg, remote, rkey);
            status         = (packed < 0) ? ucs_status_t(packed) : UCS_OK;
            break;
        }
        case proto::protocol::RMA_ZCOPY: {
            chunk = std::min(left, attr.put.max_zcopy);
            uct::mem_h memh;
            status = zcopy_memh(req, &memh);
            if (status == UCS_OK) {
                const uct::iov iov{source, chunk, memh};
                status = with_comp(r, [&](uct::completion *comp) {
                    return ep->put_zcopy(&iov, 1, remote, rkey, comp);
                });
            }
            break;
        }
        default:
            status = UCS_ERR_UNSUPPORTED;
            break;
        }
        if (status == UCS_ERR_NO_RESOURCE) {
            return out_of_resources(progressed);
        }
        if (status != UCS_OK) {
            return issue_failed(req, status);
        }
        offset += chunk;
        progressed = true;
    }
    issue_done(req);
    return UCS_OK;
}

ucs_status_t lane_get(request *req)
{
    rma_state &r                = req->u.send.rma;
    size_t &offset              = req->u.send.offset;
    uct::ep *ep                 = lane_ep(req);
    const uct::iface_attr &attr = lane_attr(req);
    const uct::rkey_t rkey      = lane_rkey(req);
    bool progressed             = false;
    while (offset < r.length) {
        const size_t left     = r.length - offset;
        uint8_t *dest         = r.buffer + offset;
        const uint64_t remote = r.remote_addr + offset;
        size_t chunk          = 0;
        ucs_status_t status;
        switch (proto::protocol(r.protocol)) {
        case proto::protocol::RMA_ZCOPY: {
            chunk = std::min(left, attr.get.max_zcopy);
            uct::mem_h memh;
            status = zcopy_memh(req, &memh);
            if (status == UCS_OK) {
                const uct::iov iov{dest, chunk, memh};
                status = with_comp(r, [&](uct::completion *comp) {
                    return ep->get_zcopy(&iov, 1, remote, rkey, comp);
                });
            }
            break;
        }
        case proto::protocol::RMA_BCOPY:
            chunk  = std::min(left, attr.get.max_bcopy);
            status = with_comp(r, [&](uct::completion *comp) {
                return ep->get_bcopy(unpack_copy, dest, chunk, remote, rkey, comp);
            });
            break;
        default:
            status = UCS_ERR_UNSUPPORTED;
            break;
        }
        if (status == UCS_ERR_NO_RESOURCE) {
            return out_of_resources(progressed);
        }
        if (status != UCS_OK) {
            return issue_failed(req, status);
        }
        offset += chunk;
        progressed = true;
    }
    issue_done(req);
    return UCS_OK;
}

ucs_status_t lane_amo(request *req)
{
    rma_state &r                = req->u.send.rma;
    uct::ep *ep                 = lane_ep(req);
    const auto op               = uct::atomic_op(r.amo_op);
    const uct::iface_attr &attr = lane_attr(req);
    const uint64_t post_ops     = (r.size == 4) ? attr.atomic32_post : attr.atomic64_post;
    ucs_status_t status;
    if (!(r.flags & state_flag::FETCH) && (post_ops & uct::atomic_op_bit(op))) {
        status = ep->atomic_post(op, r.size, r.value, r.remote_addr, lane_rkey(req));
    } else {
        void *result = (r.flags & state_flag::FETCH) ? static_cast<void *>(r.buffer) :
                                                       static_cast<void *>(&r.compare);
        status       = with_comp(r, [&](uct::completion *comp) {
            return ep->atomic_fetch(op, r.size, r.value, r.compare, result, r.remote_addr,
                                          lane_rkey(req), comp);
        });
    }
    if (status == UCS_ERR_NO_RESOURCE) {
        return status;
    }
    if (status != UCS_OK) {
        return issue_failed(req, status);
    }
    issue_done(req);
    return UCS_OK;
}

ucs_status_t direct_step(request *req)
{
    rma_state &r        = req->u.send.rma;
    uint8_t *local      = direct_address(r.rkey, r.remote_addr);
    ucs_status_t status = UCS_OK;
    switch (op_kind(r.kind)) {
    case op_kind::PUT:
        std::memcpy(local, r.buffer, r.length);
        break;
    case op_kind::GET:
        std::memcpy(r.buffer, local, r.length);
        break;
    case op_kind::AMO: {
        uint64_t old;
        status = cpu_atomic(uct::atomic_op(r.amo_op), r.size, local, r.value, r.compare, &old);
        if ((status == UCS_OK) && (r.flags & state_flag::FETCH)) {
            store_result(r.buffer, r.size, old);
        }
        break;
    }
    }
    if (status != UCS_OK) {
        return status;
    }
    issue_done(req);
    return UCS_OK;
}

ucs_status_t step(request *req)
{
    const rma_state &r = req->u.send.rma;
    if ((r.length == 0) && (op_kind(r.kind) != op_kind::AMO)) {
        issue_done(req); /* nothing to move: done on every path */
        return UCS_OK;
    }
    switch (path(r.path)) {
    case path::DIRECT:
        return direct_step(req);
    case path::LANE:
        switch (op_kind(r.kind)) {
        case op_kind::PUT:
            return lane_put(req);
        case op_kind::GET:
            return lane_get(req);
        case op_kind::AMO:
            return lane_amo(req);
        }
        break;
    case path::EMULATED:
        return emulated_step(req);
    }
    return UCS_ERR_INVALID_PARAM;
}

template <typename T>
T apply_atomic(uct::atomic_op op, T *target, T operand, T compare)
{
    switch (op) {
    case uct::atomic_op::ADD:
        return __atomic_fetch_add(target, operand, __ATOMIC_SEQ_CST);
    case uct::atomic_op::AND:
        return __atomic_fetch_and(target, operand, __ATOMIC_SEQ_CST);
    case uct::atomic_op::OR:
        return __atomic_fetch_or(target, operand, __ATOMIC_SEQ_CST);
    case uct::atomic_op::XOR:
        return __atomic_fetch_xor(target, operand, __ATOMIC_SEQ_CST);
    case uct::atomic_op::SWAP:
        return __atomic_exchange_n(target, operand, __ATOMIC_SEQ_CST);
    case uct::atomic_op::CSWAP:
    default:
        __atomic_compare_exchange_n(target, &compare, operand, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST);
        return compare; /* the old value either way */
    }
}

void consider_lane(const ucp_ep *ep, const ucp_rkey *rkey, uint8_t index, rkey_cache *c)
{
    const lane &l = ep->lanes[index];
    if ((l.ep == nullptr) || (rkey->find(l.md_index) == nullptr)) {
        return;
    }
    const uct::iface_attr &attr = ep->worker->ifaces[l.iface_index].iface->attr();
    using namespace uct::iface_flag;
    if ((c->put_lane == no_cached_lane) &&
        ((attr.flags & PUT_SHORT) || ((attr.flags & PUT_BCOPY) && (attr.put.max_bcopy > 0)) ||
         ((attr.flags & PUT_ZCOPY) && (attr.put.max_zcopy > 0)))) {
        c->put_lane = index;
    }
    if ((c->get_lane == no_cached_lane) &&
        (((attr.flags & GET_BCOPY) && (attr.get.max_bcopy > 0)) ||
         ((attr.flags & GET_ZCOPY) && (attr.get.max_zcopy > 0)))) {
        c->get_lane = index;
    }
    /* Only atomics of the worker's mode: in cpu mode those coherent with
     * the CPU's (every other path uses those), in device mode the NIC's. */
    if ((c->amo_lane == no_cached_lane) &&
        (attr.flags & (c->amo_cpu ? ATOMIC_CPU : ATOMIC_DEVICE)) &&
        ((attr.atomic32_fetch | attr.atomic64_fetch) != 0)) {
        c->amo_lane    = index;
        c->amo_post32  = uint8_t(attr.atomic32_post);
        c->amo_fetch32 = uint8_t(attr.atomic32_fetch);
        c->amo_post64  = uint8_t(attr.atomic64_post);
        c->amo_fetch64 = uint8_t(attr.atomic64_fetch);
    }
}

/* Where the key's region is mapped into this process, or nullptr. */
uint8_t *find_direct(const ucp_rkey *rkey)
{
    if ((rkey->length == 0) || (rkey->mem_type != UCS_MEMORY_TYPE_HOST)) {
        return nullptr;
    }
    for (const rkey_entry &entry : rkey->entries) {
        void *first = nullptr;
        void *last  = nullptr;
        if ((entry.component->rkey_ptr(entry.bundle, rkey->address, &first) != UCS_OK) ||
            (entry.component->rkey_ptr(entry.bundle, rkey->address + rkey->length - 1, &last) !=
             UCS_OK)) {
            continue;
        }
        /* One contiguous mapping of the whole region. */
        if (static_cast<uint8_t *>(last) - static_cast<uint8_t *>(first) ==
            ptrdiff_t(rkey->length - 1)) {
            return static_cast<uint8_t *>(first);
        }
    }
    return nullptr;
}

} // namespace

void cache_fill(const ucp_ep *ep, ucp_rkey *rkey)
{
    rkey_cache &c = rkey->rma_cache;
    if (!c.direct_checked) {
        /* A counted region is reached only through its owner's CPU. */
        c.direct         = rkey->counted ? nullptr : find_direct(rkey);
        c.direct_checked = true;
    }
    c.ep         = ep;
    c.amo_cpu    = (ep->worker->atomic_mode == ATOMIC_MODE_CPU);
    c.put_lane   = no_cached_lane;
    c.get_lane   = no_cached_lane;
    c.amo_lane   = no_cached_lane;
    c.amo_post32 = c.amo_fetch32 = c.amo_post64 = c.amo_fetch64 = 0;
    if (rkey->counted) {
        return; /* no lane: every operation is emulated, and counted there */
    }
    /* The ep's RMA lane first: the best one where the key has an entry. */
    if (ep->rma_lane < ep->num_lanes) {
        consider_lane(ep, rkey, ep->rma_lane, &c);
    }
    for (uint8_t i = 0; i < ep->num_lanes; ++i) {
        consider_lane(ep, rkey, i, &c);
    }
    ucs_debug("rkey %p on ep %u: direct %s, put lane %d, get lane %d, atomic lane %d",
              static_cast<void *>(rkey), ep->id, (c.direct != nullptr) ? "yes" : "no",
              (c.put_lane == no_cached_lane) ? -1 : int(c.put_lane),
              (c.get_lane == no_cached_lane) ? -1 : int(c.get_lane),
              (c.amo_lane == no_cached_lane) ? -1 : int(c.amo_lane));
}

ucs_status_t cpu_atomic(uct::atomic_op op, unsigned size, void *target, uint64_t value,
                        uint64_t compare, uint64_t *result)
{
    if (op >= uct::atomic_op::LAST) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (size == sizeof(uint32_t)) {
        *result = apply_atomic<uint32_t>(op, static_cast<uint32_t *>(target), uint32_t(value),
                                         uint32_t(compare));
        return UCS_OK;
    }
    if (size == sizeof(uint64_t)) {
        *result = apply_atomic<uint64_t>(op, static_cast<uint64_t *>(target), value, compare);
        return UCS_OK;
    }
    return UCS_ERR_INVALID_PARAM;
}

request *request_get(ucp_worker *worker, ucp_ep *ep, const ucp_request_param_t *param, op_kind kind,
                     path how)
{
    request *req;
    if (param->op_attr_mask & UCP_OP_ATTR_FIELD_REQUEST) {
        req = request::from_user(param->request);
        request_reset(req, worker, request_flag::EXTERNAL);
    } else {
        req = worker->get_request();
        if (req == nullptr) {
            return nullptr;
        }
        request_reset(req, worker, 0);
    }
    req->flags |= request_flag::RMA | request_flag::CALLBACK;
    req->cb.send = completed_cb;
    if (param->op_attr_mask & UCP_OP_ATTR_FIELD_USER_DATA) {
        req->user_data = param->user_data;
    }

    send_state &s = req->u.send;
    s.ep          = ep;
    s.packer      = dt::packer(); /* inert: a purge may finish() it */
    s.offset      = 0;
    s.step        = step;
    s.reg         = {};
    s.bounce      = nullptr;

    rma_state &r = s.rma;
    if (how == path::EMULATED) {
        req->flags |= request_flag::NAMES_PEER_EP; /* the target answers to our ep */
    }
    r.comp        = {part_done, 1, UCS_OK};
    r.kind        = uint8_t(kind);
    r.path        = uint8_t(how);
    r.flags       = 0;
    r.protocol    = uint8_t(proto::protocol::last); /* a lane put or get sets it */
    r.staged_for  = nullptr;
    r.staged_type = 0;
    if ((param->op_attr_mask & UCP_OP_ATTR_FIELD_CALLBACK) && (param->cb.send != nullptr)) {
        r.user_cb.nbx = param->cb.send;
        r.flags |= state_flag::USER_CB;
        if (param->op_attr_mask & param_legacy_callback) {
            r.flags |= state_flag::USER_LEGACY_CB;
        }
    }
    return req;
}

ucs_status_ptr_t request_start(request *req, const ucp_request_param_t *param)
{
    rma_state &r       = req->u.send.rma;
    ucp_ep *ep         = req->u.send.ep;
    ucp_worker *worker = req->worker;
    if (path(r.path) == path::EMULATED) {
        if (worker->register_request(req) == 0) {
            request_put(req);
            return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
        }
        ++worker->rma.emulated_outstanding;
        r.flags |= state_flag::COUNTED_EMULATED;
    }
    ++ep->rma_outstanding;
    r.flags |= state_flag::COUNTED | state_flag::IN_CALL;

    ucs_status_t status = ep_send_or_queue(ep, req);
    r.flags &= uint8_t(~state_flag::IN_CALL);
    if ((status != UCS_OK) && (status != UCS_INPROGRESS)) {
        if (r.comp.count > 1) {
            /* Parts are in flight: they complete it, with this error. */
            uct::completion_update_status(&r.comp, status);
            issue_done(req);
            return req->user_ptr();
        }
        account_done(req);
        request_put(req);
        return UCS_STATUS_PTR(status);
    }
    if (!(r.flags & state_flag::DONE_IN_CALL)) {
        return req->user_ptr();
    }
    status = r.comp.status;
    if (param->op_attr_mask & UCP_OP_ATTR_FLAG_NO_IMM_CMPL) {
        request_complete(req, status); /* the caller asked for the callback */
        return req->user_ptr();
    }
    status = finish_transfer(req, status);
    request_put(req);
    if (status != UCS_OK) {
        return UCS_STATUS_PTR(status);
    }
    worker->completed_in_call();
    return nullptr;
}

void issue_done(request *req)
{
    uct::invoke_completion(&req->u.send.rma.comp, UCS_OK);
}

ucs_status_t issue_failed(request *req, ucs_status_t status)
{
    rma_state &r = req->u.send.rma;
    if (r.comp.count > 1) {
        uct::completion_update_status(&r.comp, status);
        issue_done(req);
        return UCS_OK;
    }
    return status;
}

} // namespace ucp::rma

extern "C" ucs_status_t ucp_worker_fence(ucp_worker_h worker)
{
    if (worker == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucp::worker_guard guard(worker);
    return ucp::guarded("ucp_worker_fence", [&]() {
        /* Direct, cma, self and mm operations are done when issued, and a tcp
         * connection executes in order: only emulated operations can still
         * be overtaken by what follows, so they must be done first. */
        while (worker->rma.emulated_outstanding != 0) {
            worker->progress_locked();
        }
        return UCS_OK;
    });
}
