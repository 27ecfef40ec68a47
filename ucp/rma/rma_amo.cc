/*
 * Atomics: ucp_atomic_op_nbx, ucp_atomic_post, ucp_atomic_fetch_nb and the
 * blocking ucp_atomic_{add,fadd,swap,cswap}{32,64} of the compat header.
 * 32- and 64-bit operands only; every path applies the operation the call
 * names, fetching or not (UCX 1.13 gets fetching AND/OR/XOR wrong on shared
 * memory: the tests check the values).
 */
#include "rma.h"
#include "rma_api.h"

#include <ucp/core/ucp_guard.h>
#include <ucp/ext/op_cntr.h>
#include <ucp/proto/send_common.h>
#include <ucs/debug/log.h>
#include <ucs/type/c_enum.h>

#include <cstring>

namespace ucp::rma {

namespace {

/* ucp_atomic_op_t -> uct::atomic_op (the values differ). */
uct::atomic_op uct_op_of(int opcode)
{
    switch (opcode) {
    case UCP_ATOMIC_OP_ADD:
        return uct::atomic_op::ADD;
    case UCP_ATOMIC_OP_SWAP:
        return uct::atomic_op::SWAP;
    case UCP_ATOMIC_OP_CSWAP:
        return uct::atomic_op::CSWAP;
    case UCP_ATOMIC_OP_AND:
        return uct::atomic_op::AND;
    case UCP_ATOMIC_OP_OR:
        return uct::atomic_op::OR;
    case UCP_ATOMIC_OP_XOR:
        return uct::atomic_op::XOR;
    default:
        return uct::atomic_op::LAST;
    }
}

uint64_t load_operand(const void *buffer, unsigned size)
{
    if (size == sizeof(uint32_t)) {
        uint32_t value;
        std::memcpy(&value, buffer, sizeof(value));
        return value;
    }
    uint64_t value;
    std::memcpy(&value, buffer, sizeof(value));
    return value;
}

/* Checks what needs no lock; fills size, op and whether it fetches. */
ucs_status_t check_params(ucp_ep_h ep, int opcode, const void *buffer, size_t count,
                          uint64_t remote_addr, ucp_rkey_h rkey, const ucp_request_param_t *param,
                          unsigned *size_p, uct::atomic_op *op_p, bool *fetch_p)
{
    if ((ep == nullptr) || (rkey == nullptr) || (param == nullptr) || (buffer == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    const uint32_t mask = param->op_attr_mask;
    *op_p               = uct_op_of(opcode);
    if (*op_p == uct::atomic_op::LAST) {
        ucs_error("ucp_atomic_op_nbx: invalid opcode %d", opcode);
        return UCS_ERR_INVALID_PARAM;
    }
    if (!(mask & UCP_OP_ATTR_FIELD_DATATYPE)) {
        ucs_error("ucp_atomic_op_nbx: the operand datatype is required");
        return UCS_ERR_INVALID_PARAM;
    }
    if (param->datatype == ucp_dt_make_contig(sizeof(uint32_t))) {
        *size_p = sizeof(uint32_t);
    } else if (param->datatype == ucp_dt_make_contig(sizeof(uint64_t))) {
        *size_p = sizeof(uint64_t);
    } else {
        ucs_error("ucp_atomic_op_nbx: operands are 4 or 8 bytes (datatype 0x%llx)",
                  static_cast<unsigned long long>(param->datatype));
        return UCS_ERR_INVALID_PARAM;
    }
    if (count != 1) {
        ucs_error("ucp_atomic_op_nbx: count must be 1, got %zu", count);
        return UCS_ERR_INVALID_PARAM;
    }
    *fetch_p = (mask & UCP_OP_ATTR_FIELD_REPLY_BUFFER) != 0;
    if (*fetch_p && (param->reply_buffer == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if ((*op_p == uct::atomic_op::CSWAP) && !*fetch_p) {
        ucs_error("ucp_atomic_op_nbx: compare-and-swap needs a reply buffer (swap value)");
        return UCS_ERR_INVALID_PARAM;
    }
    if (remote_addr % *size_p != 0) {
        ucs_error("ucp_atomic_op_nbx: 0x%llx is not aligned to %u bytes",
                  static_cast<unsigned long long>(remote_addr), *size_p);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((mask & UCP_OP_ATTR_FIELD_REQUEST) && (param->request == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

/* Whether the cached atomic lane does this operation. */
bool lane_does(const rkey_cache &c, uct::atomic_op op, unsigned size, bool fetch)
{
    if (c.amo_lane == no_cached_lane) {
        return false;
    }
    const uint8_t bit       = uint8_t(uct::atomic_op_bit(op));
    const uint8_t fetch_ops = (size == sizeof(uint32_t)) ? c.amo_fetch32 : c.amo_fetch64;
    const uint8_t post_ops  = (size == sizeof(uint32_t)) ? c.amo_post32 : c.amo_post64;
    return (fetch_ops & bit) || (!fetch && (post_ops & bit));
}

ucs_status_ptr_t atomic_op(ucp_ep *ep, int opcode, const void *buffer, size_t count,
                           uint64_t remote_addr, ucp_rkey *rkey, const ucp_request_param_t *param)
{
    unsigned size;
    uct::atomic_op op;
    bool fetch;
    ucs_status_t status = check_params(ep, opcode, buffer, count, remote_addr, rkey, param, &size,
                                       &op, &fetch);
    if (status != UCS_OK) {
        return UCS_STATUS_PTR(status);
    }

    ucp_worker *worker = ep->worker;
    worker_guard guard(worker);
    ucs_status_ptr_t result = nullptr;
    bool immediate          = false; /* done inside the call (see completed_in_call) */
    status                  = guarded("ucp_atomic_op_nbx", [&]() {
        if (!rkey->covers(remote_addr, size)) {
            ucs_diag("ucp_atomic_op_nbx: 0x%llx+%u is outside the key's region 0x%llx+%llu",
                                      static_cast<unsigned long long>(remote_addr), size,
                                      static_cast<unsigned long long>(rkey->address),
                                      static_cast<unsigned long long>(rkey->length));
            return UCS_ERR_INVALID_ADDR;
        }
        if (rkey->mem_type != UCS_MEMORY_TYPE_HOST) {
            return UCS_ERR_UNSUPPORTED;
        }
        if (!ep->usable()) {
            return ep->status;
        }
        uint64_t value   = load_operand(buffer, size);
        uint64_t compare = 0;
        if (op == uct::atomic_op::CSWAP) {
            /* UCX's convention: *buffer compares, *reply_buffer is swapped in. */
            compare = value;
            value   = load_operand(param->reply_buffer, size);
        }
        const rkey_cache &c = cache_of(ep, rkey);
        /* Device atomics only: a CPU atomic (direct or by the target's CPU)
         * would not be atomic with the NIC's on the same word. */
        const uint8_t reach = c.amo_cpu ? reach_of(c, c.amo_lane) :
                                               (c.amo_lane != no_cached_lane) ? c.amo_lane :
                                                                                proto::rma_reach::AM;
        path how            = path::LANE;
        if (!select_atomic(ep, reach, [&](proto::protocol p) {
                if ((p == proto::protocol::AMO_LANE) && !lane_does(c, op, size, fetch)) {
                    return false; /* the lane lacks this op or size */
                }
                how = path_of(p);
                return true;
            })) {
            ucs_error("ucp_atomic_op_nbx: UCX_ATOMIC_MODE=device and no transport "
                                                        "to this peer has that device atomic");
            return UCS_ERR_UNSUPPORTED;
        }
        const uint32_t attr_mask = param->op_attr_mask;

        if (!(attr_mask & UCP_OP_ATTR_FLAG_NO_IMM_CMPL) && (ep->num_pending == 0)) {
            if (how == path::DIRECT) {
                uint64_t old;
                const ucs_status_t done = cpu_atomic(op, size, direct_address(rkey, remote_addr),
                                                                      value, compare, &old);
                if (done == UCS_OK) {
                    if (fetch) {
                        store_result(param->reply_buffer, size, old);
                    }
                    immediate = true;
                }
                return done;
            }
            const uint8_t post_ops = (size == sizeof(uint32_t)) ? c.amo_post32 : c.amo_post64;
            if ((how == path::LANE) && !fetch && (post_ops & uct::atomic_op_bit(op))) {
                const lane &l             = ep->lanes[c.amo_lane];
                const ucs_status_t posted = l.ep->atomic_post(op, size, value, remote_addr,
                                                                               rkey->find(l.md_index)->bundle.rkey);
                immediate                 = (posted == UCS_OK);
                if (posted != UCS_ERR_NO_RESOURCE) {
                    return posted;
                }
            }
        }
        if (attr_mask & UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL) {
            return UCS_ERR_NO_RESOURCE;
        }
        request *req = request_get(worker, ep, param, op_kind::AMO, how);
        if (req == nullptr) {
            return UCS_ERR_NO_MEMORY;
        }
        rma_state &r  = req->u.send.rma;
        r.buffer      = fetch ? static_cast<uint8_t *>(param->reply_buffer) : nullptr;
        r.length      = size;
        r.remote_addr = remote_addr;
        r.rkey        = rkey;
        r.value       = value;
        r.compare     = compare;
        r.lane        = c.amo_lane;
        r.amo_op      = uint8_t(op);
        r.size        = uint8_t(size);
        if (fetch) {
            r.flags |= state_flag::FETCH;
        }
        result = request_start(req, param);
        return UCS_OK;
    });
    if (immediate) {
        worker->completed_in_call();
    }
    return (status == UCS_OK) ? result : UCS_STATUS_PTR(status);
}

/* A 4- or 8-byte operand in memory the nbx call can read. */
union operand {
    uint32_t u32;
    uint64_t u64;
};

ucs_status_t operand_of(uint64_t value, size_t op_size, operand *out)
{
    if (op_size == sizeof(uint32_t)) {
        out->u32 = uint32_t(value);
        return UCS_OK;
    }
    if (op_size == sizeof(uint64_t)) {
        out->u64 = value;
        return UCS_OK;
    }
    ucs_error("atomic: operand size %zu is not supported (4 or 8 bytes)", op_size);
    return UCS_ERR_INVALID_PARAM;
}

} // namespace

} // namespace ucp::rma

extern "C" {

ucs_status_ptr_t ucp_atomic_op_nbx(ucp_ep_h ep, ucp_atomic_op_t opcode, const void *buffer,
                                   size_t count, uint64_t remote_addr, ucp_rkey_h rkey,
                                   const ucp_request_param_t *param)
{
    /* A C caller may pass any int: read it as one. */
    if (ucs_unlikely(ucp::ext::wants_counting(param))) {
        return ucp::ext::counted({ucp::ext::worker_of(ep), ucp::ext::op_kind::SEND, buffer, count,
                                  ep, rkey},
                                 param, [=](const ucp_request_param_t *base) {
                                     return ucp::rma::atomic_op(ep, ucs::raw_enum(opcode), buffer,
                                                                count, remote_addr, rkey, base);
                                 });
    }
    return ucp::rma::atomic_op(ep, ucs::raw_enum(opcode), buffer, count, remote_addr, rkey, param);
}

ucs_status_t ucp_atomic_post(ucp_ep_h ep, ucp_atomic_post_op_t opcode, uint64_t value,
                             size_t op_size, uint64_t remote_addr, ucp_rkey_h rkey)
{
    ucp_atomic_op_t op;
    switch (ucs::raw_enum(opcode)) {
    case UCP_ATOMIC_POST_OP_ADD:
        op = UCP_ATOMIC_OP_ADD;
        break;
    case UCP_ATOMIC_POST_OP_AND:
        op = UCP_ATOMIC_OP_AND;
        break;
    case UCP_ATOMIC_POST_OP_OR:
        op = UCP_ATOMIC_OP_OR;
        break;
    case UCP_ATOMIC_POST_OP_XOR:
        op = UCP_ATOMIC_OP_XOR;
        break;
    default:
        return UCS_ERR_INVALID_PARAM;
    }
    ucp::rma::operand operand;
    ucs_status_t status = ucp::rma::operand_of(value, op_size, &operand);
    if (status != UCS_OK) {
        return status;
    }
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype     = ucp_dt_make_contig(op_size);
    status = ucp::rma::nbi_status(ucp_atomic_op_nbx(ep, op, &operand, 1, remote_addr, rkey,
                                                    &param));
    /* Posted: remote completion is a flush's business. */
    return (status == UCS_INPROGRESS) ? UCS_OK : status;
}

ucs_status_ptr_t ucp_atomic_fetch_nb(ucp_ep_h ep, ucp_atomic_fetch_op_t opcode, uint64_t value,
                                     void *result, size_t op_size, uint64_t remote_addr,
                                     ucp_rkey_h rkey, ucp_send_callback_t cb)
{
    ucp_atomic_op_t op;
    switch (ucs::raw_enum(opcode)) {
    case UCP_ATOMIC_FETCH_OP_FADD:
        op = UCP_ATOMIC_OP_ADD;
        break;
    case UCP_ATOMIC_FETCH_OP_SWAP:
        op = UCP_ATOMIC_OP_SWAP;
        break;
    case UCP_ATOMIC_FETCH_OP_CSWAP:
        op = UCP_ATOMIC_OP_CSWAP; /* value compares, *result is swapped in */
        break;
    case UCP_ATOMIC_FETCH_OP_FAND:
        op = UCP_ATOMIC_OP_AND;
        break;
    case UCP_ATOMIC_FETCH_OP_FOR:
        op = UCP_ATOMIC_OP_OR;
        break;
    case UCP_ATOMIC_FETCH_OP_FXOR:
        op = UCP_ATOMIC_OP_XOR;
        break;
    default:
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    if (result == nullptr) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    ucp::rma::operand operand;
    ucs_status_t status = ucp::rma::operand_of(value, op_size, &operand);
    if (status != UCS_OK) {
        return UCS_STATUS_PTR(status);
    }
    ucp_request_param_t param = ucp::rma::legacy_param(cb);
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    param.datatype     = ucp_dt_make_contig(op_size);
    param.reply_buffer = result;
    return ucp_atomic_op_nbx(ep, op, &operand, 1, remote_addr, rkey, &param);
}

/* ---- blocking compat calls ---- */

ucs_status_t ucp_atomic_add32(ucp_ep_h ep, uint32_t add, uint64_t remote_addr, ucp_rkey_h rkey)
{
    return ucp_atomic_post(ep, UCP_ATOMIC_POST_OP_ADD, add, sizeof(add), remote_addr, rkey);
}

ucs_status_t ucp_atomic_add64(ucp_ep_h ep, uint64_t add, uint64_t remote_addr, ucp_rkey_h rkey)
{
    return ucp_atomic_post(ep, UCP_ATOMIC_POST_OP_ADD, add, sizeof(add), remote_addr, rkey);
}

} // extern "C"

namespace {

template <typename T>
ucs_status_t fetch_blocking(ucp_ep_h ep, ucp_atomic_fetch_op_t op, T value, uint64_t remote_addr,
                            ucp_rkey_h rkey, T *result)
{
    if ((ep == nullptr) || (result == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    return ucp::rma::wait_blocking(ep->worker, ucp_atomic_fetch_nb(ep, op, value, result, sizeof(T),
                                                                   remote_addr, rkey, nullptr));
}

} // namespace

extern "C" {

ucs_status_t ucp_atomic_fadd32(ucp_ep_h ep, uint32_t add, uint64_t remote_addr, ucp_rkey_h rkey,
                               uint32_t *result)
{
    return fetch_blocking(ep, UCP_ATOMIC_FETCH_OP_FADD, add, remote_addr, rkey, result);
}

ucs_status_t ucp_atomic_fadd64(ucp_ep_h ep, uint64_t add, uint64_t remote_addr, ucp_rkey_h rkey,
                               uint64_t *result)
{
    return fetch_blocking(ep, UCP_ATOMIC_FETCH_OP_FADD, add, remote_addr, rkey, result);
}

ucs_status_t ucp_atomic_swap32(ucp_ep_h ep, uint32_t swap, uint64_t remote_addr, ucp_rkey_h rkey,
                               uint32_t *result)
{
    return fetch_blocking(ep, UCP_ATOMIC_FETCH_OP_SWAP, swap, remote_addr, rkey, result);
}

ucs_status_t ucp_atomic_swap64(ucp_ep_h ep, uint64_t swap, uint64_t remote_addr, ucp_rkey_h rkey,
                               uint64_t *result)
{
    return fetch_blocking(ep, UCP_ATOMIC_FETCH_OP_SWAP, swap, remote_addr, rkey, result);
}

ucs_status_t ucp_atomic_cswap32(ucp_ep_h ep, uint32_t compare, uint32_t swap, uint64_t remote_addr,
                                ucp_rkey_h rkey, uint32_t *result)
{
    if (result == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    *result = swap;
    return fetch_blocking(ep, UCP_ATOMIC_FETCH_OP_CSWAP, compare, remote_addr, rkey, result);
}

ucs_status_t ucp_atomic_cswap64(ucp_ep_h ep, uint64_t compare, uint64_t swap, uint64_t remote_addr,
                                ucp_rkey_h rkey, uint64_t *result)
{
    if (result == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    *result = swap;
    return fetch_blocking(ep, UCP_ATOMIC_FETCH_OP_CSWAP, compare, remote_addr, rkey, result);
}

} // extern "C"
