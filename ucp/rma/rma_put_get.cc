/*
 * ucp_put_nb/nbi/nbx and ucp_get_nb/nbi/nbx, and the blocking ucp_put /
 * ucp_get of the compat header. Contiguous data only, as in UCX.
 */
#include "rma.h"
#include "rma_api.h"

#include <ucp/core/ucp_guard.h>
#include <ucp/dt/dt_memtype.h>
#include <ucp/ext/op_cntr.h>
#include <ucp/proto/send_common.h>
#include <ucs/debug/log.h>
#include <ucs/memory/memtype_registry.h>

#include <cstdlib>
#include <cstring>
#include <memory>

namespace ucp::rma {

namespace {

/* Length in bytes of `count` elements of the param's datatype. */
ucs_status_t data_length(const ucp_request_param_t *param, size_t count, size_t *length_p)
{
    size_t element = 1;
    if (param->op_attr_mask & UCP_OP_ATTR_FIELD_DATATYPE) {
        const ucp_datatype_t dt = param->datatype;
        if ((dt & UCP_DATATYPE_CLASS_MASK) != UCP_DATATYPE_CONTIG) {
            ucs_error("put/get: only contiguous datatypes are supported");
            return UCS_ERR_UNSUPPORTED;
        }
        element = dt::contig_elem_size(dt);
        if (element == 0) {
            return UCS_ERR_INVALID_PARAM;
        }
    }
    if (__builtin_mul_overflow(count, element, length_p)) {
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

/*
 * Memory the CPU cannot touch, on either side, moves only on a transport
 * lane whose md reaches the local buffer's memory too (cuda_ipc between
 * GPU processes of a node: its copy engine reads and writes host and
 * device memory). No direct or emulated path touches it.
 */
bool lane_moves(const ucp_ep *ep, path how, uint8_t lane, ucs_memory_type_t local_type)
{
    if (how != path::LANE) {
        return false;
    }
    const uct::md &md = *ep->worker->context.mds[ep->lanes[lane].md_index].md;
    return (md.attr().access_mem_types & (1ull << local_type)) != 0;
}

/* memcpy, with the sizes of single values inlined (no library call). */
inline void copy(void *dest, const void *src, size_t length)
{
    switch (length) {
    case 4:
        std::memcpy(dest, src, 4);
        break;
    case 8:
        std::memcpy(dest, src, 8);
        break;
    default:
        std::memcpy(dest, src, length);
        break;
    }
}

/* A put or get through the key's mapping here (cache.direct set). */
inline void copy_direct(op_kind kind, const ucp_rkey *rkey, uint64_t remote_addr, void *buffer,
                        size_t length)
{
    uint8_t *local = direct_address(rkey, remote_addr);
    if (kind == op_kind::PUT) {
        copy(local, buffer, length);
    } else {
        copy(buffer, local, length);
    }
}

/* Tries to finish at once without a request; UCS_ERR_NO_RESOURCE: use one. */
ucs_status_t try_now(op_kind kind, ucp_ep *ep, ucp_rkey *rkey, proto::protocol p, uint8_t lane,
                     void *buffer, size_t length, uint64_t remote_addr)
{
    if (p == proto::protocol::RMA_DIRECT) {
        copy_direct(kind, rkey, remote_addr, buffer, length);
        return UCS_OK;
    }
    if (p == proto::protocol::RMA_SHORT) {
        const ucp::lane &l = ep->lanes[lane];
        return l.ep->put_short(buffer, unsigned(length), remote_addr,
                               rkey->find(l.md_index)->bundle.rkey);
    }
    return UCS_ERR_NO_RESOURCE;
}

/*
 * The common case without the general path's checks, lambdas and guard:
 * host memory on both sides (no memory type given, none to detect), a key
 * already mapped here for this ep, nothing queued, a single-threaded
 * worker and no flags: a copy, done in the call. Whether it applied.
 */
inline bool direct_now(op_kind kind, ucp_ep *ep, void *buffer, size_t length, uint64_t remote_addr,
                       const ucp_rkey *rkey, uint32_t attr_mask)
{
    constexpr uint32_t plain = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                               UCP_OP_ATTR_FIELD_DATATYPE;
    const rkey_cache &c = rkey->rma_cache;
    if ((attr_mask & ~plain) || (c.ep != ep) || (c.direct == nullptr) || (length == 0) ||
        (buffer == nullptr) || (rkey->mem_type != UCS_MEMORY_TYPE_HOST) || (ep->num_pending != 0) ||
        !ep->usable() || ep->worker->multi_threaded() || ucs::memtype::have_detectors() ||
        !rkey->covers(remote_addr, length)) {
        return false;
    }
    copy_direct(kind, rkey, remote_addr, buffer, length);
    return true;
}

ucs_status_ptr_t put_get(op_kind kind, ucp_ep *ep, void *buffer, size_t count, uint64_t remote_addr,
                         ucp_rkey *rkey, const ucp_request_param_t *param)
{
    const char *name = (kind == op_kind::PUT) ? "ucp_put" : "ucp_get";
    if ((ep == nullptr) || (rkey == nullptr) || (param == nullptr) ||
        ((param->op_attr_mask & UCP_OP_ATTR_FIELD_REQUEST) && (param->request == nullptr))) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    size_t length;
    ucs_status_t status = data_length(param, count, &length);
    if (status != UCS_OK) {
        return UCS_STATUS_PTR(status);
    }
    if ((buffer == nullptr) && (length != 0)) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    if (direct_now(kind, ep, buffer, length, remote_addr, rkey, param->op_attr_mask)) {
        ep->worker->completed_in_call();
        return nullptr;
    }
    ucs_memory_type_t local_type = UCS_MEMORY_TYPE_HOST;
    status = dt::param_memory_type(param, ucp_dt_make_contig(1), buffer, length, &local_type);
    if (status != UCS_OK) {
        return UCS_STATUS_PTR(status);
    }

    ucp_worker *worker = ep->worker;
    worker_guard guard(worker);
    ucs_status_ptr_t result = nullptr;
    bool immediate          = false;
    status                  = guarded(name, [&]() {
        const uint32_t attr_mask = param->op_attr_mask;
        if ((length == 0) && !(attr_mask & UCP_OP_ATTR_FLAG_NO_IMM_CMPL)) {
            result = nullptr; /* nothing to move, nowhere to check */
            return UCS_OK;
        }
        if ((length != 0) && !rkey->covers(remote_addr, length)) {
            ucs_diag("%s: 0x%llx+%zu is outside the key's region 0x%llx+%llu", name,
                                      static_cast<unsigned long long>(remote_addr), length,
                                      static_cast<unsigned long long>(rkey->address),
                                      static_cast<unsigned long long>(rkey->length));
            return UCS_ERR_INVALID_ADDR;
        }
        if (!ep->usable()) {
            return ep->status;
        }
        const rkey_cache &c = cache_of(ep, rkey);
        const uint8_t lane  = (kind == op_kind::PUT) ? c.put_lane : c.get_lane;
        const uint8_t reach = reach_of(c, lane);
        const path how      = path_of(reach);
        /* Device memory on our side, host memory reached by a host path
         * (mapped segment, cma, tcp, emulation): through a host bounce
         * buffer, owned by the request or freed when done in the call. A put
         * copies the source there first; a get copies it out at completion. */
        std::unique_ptr<void, decltype(&ucs::memtype::bounce_free)> staged(
                             nullptr, &ucs::memtype::bounce_free);
        const ucs_memory_type_t user_type = local_type;
        void *const user_buffer           = buffer;
        if ((local_type != UCS_MEMORY_TYPE_HOST) && (rkey->mem_type == UCS_MEMORY_TYPE_HOST) &&
            !lane_moves(ep, how, lane, local_type)) {
            staged.reset(ucs::memtype::bounce_alloc(length));
            if (staged == nullptr) {
                return UCS_ERR_NO_MEMORY;
            }
            if (kind == op_kind::PUT) {
                ucs_status_t copied = ucs::memtype::copy(staged.get(), UCS_MEMORY_TYPE_HOST, buffer,
                                                                          local_type, length);
                if (copied != UCS_OK) {
                    return copied;
                }
            }
            buffer     = staged.get();
            local_type = UCS_MEMORY_TYPE_HOST;
        }
        const bool stage_out = (staged != nullptr) && (kind == op_kind::GET);
        if (((rkey->mem_type != UCS_MEMORY_TYPE_HOST) || (local_type != UCS_MEMORY_TYPE_HOST)) &&
            !lane_moves(ep, how, lane, local_type)) {
            ucs_diag("%s: no transport here moves %s memory to %s memory", name,
                                      ucs_memory_type_names[(kind == op_kind::PUT) ? local_type : rkey->mem_type],
                                      ucs_memory_type_names[(kind == op_kind::PUT) ? rkey->mem_type : local_type]);
            return UCS_ERR_UNSUPPORTED;
        }

        const proto::operation op = (kind == op_kind::PUT) ? proto::operation::PUT :
                                                                              proto::operation::GET;
        const proto::protocol p   = select(ep, op, reach, local_type, length);
        if (p == proto::protocol::last) {
            ucs_diag("%s: no protocol of lane[%u] moves %zu bytes of %s memory", name, lane, length,
                                      ucs_memory_type_names[local_type]);
            return UCS_ERR_UNSUPPORTED;
        }
        if (!(attr_mask & UCP_OP_ATTR_FLAG_NO_IMM_CMPL) && (ep->num_pending == 0)) {
            ucs_status_t now = try_now(kind, ep, rkey, p, lane, buffer, length, remote_addr);
            if ((now == UCS_OK) && stage_out) {
                now = ucs::memtype::copy(user_buffer, user_type, buffer, UCS_MEMORY_TYPE_HOST,
                                                          length);
            }
            if (now != UCS_ERR_NO_RESOURCE) {
                result    = UCS_STATUS_PTR(now); /* nullptr when done */
                immediate = (now == UCS_OK);
                return UCS_OK;
            }
        }
        if (attr_mask & UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL) {
            return UCS_ERR_NO_RESOURCE;
        }
        request *req = request_get(worker, ep, param, kind, how);
        if (req == nullptr) {
            return UCS_ERR_NO_MEMORY;
        }
        req->u.send.bounce = staged.release(); /* freed with the request */
        rma_state &r       = req->u.send.rma;
        r.staged_for       = stage_out ? static_cast<uint8_t *>(user_buffer) : nullptr;
        r.staged_type      = uint8_t(user_type);
        r.buffer           = static_cast<uint8_t *>(buffer);
        r.length           = length;
        r.remote_addr      = remote_addr;
        r.rkey             = rkey;
        r.lane             = lane;
        r.protocol         = uint8_t(p);
        result             = request_start(req, param);
        return UCS_OK;
    });
    if (immediate) {
        worker->completed_in_call();
    }
    return (status == UCS_OK) ? result : UCS_STATUS_PTR(status);
}

} // namespace

ucs_status_t wait_blocking(ucp_worker *worker, ucs_status_ptr_t ptr)
{
    if (ptr == nullptr) {
        return UCS_OK;
    }
    if (UCS_PTR_IS_ERR(ptr)) {
        return UCS_PTR_STATUS(ptr);
    }
    ucs_status_t status;
    while ((status = ucp_request_check_status(ptr)) == UCS_INPROGRESS) {
        ucp_worker_progress(worker);
    }
    ucp_request_free(ptr);
    return status;
}

ucp_request_param_t legacy_param(ucp_send_callback_t cb)
{
    ucp_request_param_t param{};
    if (cb != nullptr) {
        param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | param_legacy_callback;
        param.cb.send      = callback_cast<ucp_send_nbx_callback_t>(cb);
    }
    return param;
}

} // namespace ucp::rma

using ucp::rma::op_kind;

namespace {

/* The parameters of the _nbi and blocking calls: none. */
const ucp_request_param_t no_param{};

} // namespace

extern "C" {

ucs_status_ptr_t ucp_put_nbx(ucp_ep_h ep, const void *buffer, size_t count, uint64_t remote_addr,
                             ucp_rkey_h rkey, const ucp_request_param_t *param)
{
    if (ucs_unlikely(ucp::ext::wants_counting(param))) {
        return ucp::ext::counted({ucp::ext::worker_of(ep), ucp::ext::op_kind::SEND, buffer, count,
                                  ep, rkey},
                                 param,
                                 [=](const ucp_request_param_t *base) {
            return ucp::rma::put_get(op_kind::PUT, ep, const_cast<void *>(buffer), count,
                                     remote_addr, rkey, base);
        });
    }
    return ucp::rma::put_get(op_kind::PUT, ep, const_cast<void *>(buffer), count, remote_addr, rkey,
                             param);
}

ucs_status_ptr_t ucp_get_nbx(ucp_ep_h ep, void *buffer, size_t count, uint64_t remote_addr,
                             ucp_rkey_h rkey, const ucp_request_param_t *param)
{
    if (ucs_unlikely(ucp::ext::wants_counting(param))) {
        return ucp::ext::counted({ucp::ext::worker_of(ep), ucp::ext::op_kind::SEND, buffer, count,
                                  ep, rkey},
                                 param,
                                 [=](const ucp_request_param_t *base) {
            return ucp::rma::put_get(op_kind::GET, ep, buffer, count, remote_addr, rkey, base);
        });
    }
    return ucp::rma::put_get(op_kind::GET, ep, buffer, count, remote_addr, rkey, param);
}

ucs_status_t ucp_put_nbi(ucp_ep_h ep, const void *buffer, size_t length, uint64_t remote_addr,
                         ucp_rkey_h rkey)
{
    return ucp::rma::nbi_status(ucp::rma::put_get(op_kind::PUT, ep, const_cast<void *>(buffer),
                                                  length, remote_addr, rkey, &no_param));
}

ucs_status_t ucp_get_nbi(ucp_ep_h ep, void *buffer, size_t length, uint64_t remote_addr,
                         ucp_rkey_h rkey)
{
    return ucp::rma::nbi_status(ucp::rma::put_get(op_kind::GET, ep, buffer, length, remote_addr,
                                                  rkey, &no_param));
}

ucs_status_ptr_t ucp_put_nb(ucp_ep_h ep, const void *buffer, size_t length, uint64_t remote_addr,
                            ucp_rkey_h rkey, ucp_send_callback_t cb)
{
    const ucp_request_param_t param = ucp::rma::legacy_param(cb);
    return ucp_put_nbx(ep, buffer, length, remote_addr, rkey, &param);
}

ucs_status_ptr_t ucp_get_nb(ucp_ep_h ep, void *buffer, size_t length, uint64_t remote_addr,
                            ucp_rkey_h rkey, ucp_send_callback_t cb)
{
    const ucp_request_param_t param = ucp::rma::legacy_param(cb);
    return ucp_get_nbx(ep, buffer, length, remote_addr, rkey, &param);
}

ucs_status_t ucp_put(ucp_ep_h ep, const void *buffer, size_t length, uint64_t remote_addr,
                     ucp_rkey_h rkey)
{
    if (ep == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    return ucp::rma::wait_blocking(ep->worker,
                                   ucp_put_nbx(ep, buffer, length, remote_addr, rkey, &no_param));
}

ucs_status_t ucp_get(ucp_ep_h ep, void *buffer, size_t length, uint64_t remote_addr,
                     ucp_rkey_h rkey)
{
    if (ep == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    return ucp::rma::wait_blocking(ep->worker,
                                   ucp_get_nbx(ep, buffer, length, remote_addr, rkey, &no_param));
}

} // extern "C"
