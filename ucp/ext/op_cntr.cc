#include "op_cntr.h"

#include "cntr.h"

#include <ucp/core/live_handles.h>
#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_guard.h>
#include <ucp/core/ucp_worker.h>
#include <ucp/dt/dt.h>
#include <ucs/debug/log.h>
#include <ucs/memory/mpool.h>

#include <new>
#include <type_traits>

namespace ucp::ext {

/* What a counted operation keeps until it completes. */
struct counted_op {
    ucp_worker_h worker;
    ucp_cntr *cntr;
    ucp_cntr *err_cntr;
    op_kind kind;
    size_t bytes;                /* SEND */
    ucp_request_param_t user;    /* the caller's callback and user data */
    ucp_tag_recv_info_t info;    /* TAG_RECV when the caller gave none */
    ucp_tag_recv_info_t *info_p; /* where a TAG_RECV's info goes */
    bool in_call;                /* its nbx call has not returned yet */
    bool completed;              /* counted inside the call, by the callback */
};

/* Under the worker's guard. The worker's own set answers both questions
 * (live, and ours); the process-wide registry only words the error. */
bool cntr_live_on(ucp_cntr *cntr, ucp_worker_h worker, const char *field)
{
    if (ucs_likely(worker->counters.count(cntr) != 0)) {
        return true;
    }
    if (!live_handles<ucp_cntr>::instance().contains(cntr)) {
        ucs_error("%s: %p is not a live counter", field, static_cast<void *>(cntr));
    } else {
        ucs_error("%s: counter %p lives on another worker", field, static_cast<void *>(cntr));
    }
    return false;
}

ucs_status_t ext_counters(const ucp_ext_request_param_t *ext, ucp_worker_h worker, uint64_t known,
                          ucp_cntr **cntr, ucp_cntr **err_cntr)
{
    if (ext->ext_field_mask & ~known) {
        ucs_error("UCP_OP_ATTR_FIELD_EXT: unknown ext_field_mask bits 0x%llx",
                  static_cast<unsigned long long>(ext->ext_field_mask & ~known));
        return UCS_ERR_INVALID_PARAM;
    }
    *cntr     = (ext->ext_field_mask & UCP_EXT_PARAM_FIELD_CNTR) ? ext->cntr : nullptr;
    *err_cntr = (ext->ext_field_mask & UCP_EXT_PARAM_FIELD_ERR_CNTR) ? ext->err_cntr : nullptr;
    if (((*cntr != nullptr) && !cntr_live_on(*cntr, worker, "UCP_OP_ATTR_FIELD_EXT: cntr")) ||
        ((*err_cntr != nullptr) &&
         !cntr_live_on(*err_cntr, worker, "UCP_OP_ATTR_FIELD_EXT: err_cntr"))) {
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

void count_failure(ucp_cntr *cntr, ucp_cntr *err_cntr)
{
    ucp_cntr *target = (err_cntr != nullptr) ? err_cntr : cntr;
    if (target != nullptr) {
        ucp_cntr_add_err(target, 1);
    }
}

namespace {

/* The bytes a send of `count` items of the param's datatype moves (a
 * generic datatype: its packed size, through one more start_pack). */
size_t send_bytes(const void *buffer, size_t count, const ucp_request_param_t *param)
{
    const ucp_datatype_t datatype = (param->op_attr_mask & UCP_OP_ATTR_FIELD_DATATYPE) ?
                                        param->datatype :
                                        ucp_dt_make_contig(1);
    dt::packer packer;
    if (packer.start(datatype, buffer, count) != UCS_OK) {
        return 0; /* the operation refuses it */
    }
    const size_t bytes = packer.length();
    packer.finish();
    return bytes;
}

void count(counted_op *op, ucs_status_t status, size_t bytes)
{
    if (status == UCS_OK) {
        if (op->cntr != nullptr) {
            ucp_cntr_add(op->cntr, (op->cntr->flags & UCP_CNTR_FLAG_EVENTS_BYTES) ? bytes : 1);
        }
    } else {
        count_failure(op->cntr, op->err_cntr);
    }
    for (ucp_cntr *c : {op->cntr, op->err_cntr}) {
        if (c != nullptr) {
            --c->pending_work;
        }
    }
}

/* A record from the worker's pool (under its guard); nullptr: no memory. */
counted_op *new_record(ucp_worker *worker)
{
    ucs::mpool &pool = worker->counted_op_pool;
    if (!pool.is_initialized()) {
        ucs::mpool_params params;
        params.name            = "ucp_counted_ops";
        params.elem_size       = sizeof(counted_op);
        params.alignment       = alignof(counted_op);
        params.elems_per_chunk = 64;
        if (pool.init(params) != UCS_OK) {
            return nullptr;
        }
    }
    return static_cast<counted_op *>(pool.get());
}

/* Gives a record back (under the worker's guard). */
void release(counted_op *op)
{
    static_assert(std::is_trivially_destructible_v<counted_op>, "pooled as plain memory");
    ucs::mpool::put(op);
}

/* The callback ran: counted; the record goes unless the call still uses it. */
void done_in_callback(counted_op *op)
{
    if (op->in_call) {
        op->completed = true;
    } else {
        release(op);
    }
}

bool has_user_callback(const counted_op *op)
{
    return op->user.op_attr_mask & UCP_OP_ATTR_FIELD_CALLBACK;
}

void *user_data_of(const counted_op *op)
{
    return (op->user.op_attr_mask & UCP_OP_ATTR_FIELD_USER_DATA) ? op->user.user_data : nullptr;
}

void on_send(void *request, ucs_status_t status, void *arg)
{
    auto *op = static_cast<counted_op *>(arg);
    count(op, status, op->bytes);
    if (has_user_callback(op) && (op->user.cb.send != nullptr)) {
        op->user.cb.send(request, status, user_data_of(op));
    }
    done_in_callback(op);
}

void on_tag_recv(void *request, ucs_status_t status, const ucp_tag_recv_info_t *info, void *arg)
{
    auto *op = static_cast<counted_op *>(arg);
    count(op, status, (info != nullptr) ? info->length : 0);
    if (has_user_callback(op) && (op->user.cb.recv != nullptr)) {
        op->user.cb.recv(request, status, info, user_data_of(op));
    }
    done_in_callback(op);
}

void on_stream_recv(void *request, ucs_status_t status, size_t length, void *arg)
{
    auto *op = static_cast<counted_op *>(arg);
    count(op, status, length);
    if (has_user_callback(op) && (op->user.cb.recv_stream != nullptr)) {
        op->user.cb.recv_stream(request, status, length, user_data_of(op));
    }
    done_in_callback(op);
}

} // namespace

ucs_status_t counted_begin(const op_desc &desc, const ucp_request_param_t *param,
                           ucp_request_param_t *base, counted_op **op_p)
{
    const auto *ext      = reinterpret_cast<const ucp_ext_request_param_t *>(param);
    const uint64_t known = UCP_EXT_PARAM_FIELD_CNTR | UCP_EXT_PARAM_FIELD_ERR_CNTR;
    ucp_worker_h worker  = desc.worker;
    const op_kind kind   = desc.kind;
    if (worker == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    worker_guard guard(worker);
    ucp_cntr *cntr, *err_cntr;
    ucs_status_t status = ext_counters(ext, worker, known, &cntr, &err_cntr);
    if (status != UCS_OK) {
        return status;
    }
    /* A send's size only where it is counted (a generic datatype's packing
     * callbacks run once more for it). */
    const bool wants_bytes = (kind == op_kind::SEND) && (cntr != nullptr) &&
                             (cntr->flags & UCP_CNTR_FLAG_EVENTS_BYTES);
    const size_t bytes = wants_bytes ? send_bytes(desc.buffer, desc.count, &ext->base) : 0;
    void *record       = new_record(worker);
    if (record == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    auto *op = new (record)
        counted_op{worker, cntr, err_cntr, kind, bytes, ext->base, {}, nullptr, true, false};
    for (ucp_cntr *c : {cntr, err_cntr}) {
        if (c != nullptr) {
            ++c->pending_work;
        }
    }
    *base              = ext->base;
    base->op_attr_mask = (base->op_attr_mask & ~uint32_t(UCP_OP_ATTR_FIELD_EXT)) |
                         UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    base->user_data = op;
    switch (kind) {
    case op_kind::SEND:
        base->cb.send = on_send;
        break;
    case op_kind::TAG_RECV:
        base->cb.recv = on_tag_recv;
        /* The caller's info if it gave one (it may give NULL), else ours:
         * a receive done inside the call counts its length from it. */
        op->info_p = ((base->op_attr_mask & UCP_OP_ATTR_FIELD_RECV_INFO) &&
                      (base->recv_info.tag_info != nullptr)) ?
                         base->recv_info.tag_info :
                         &op->info;
        base->op_attr_mask |= UCP_OP_ATTR_FIELD_RECV_INFO;
        base->recv_info.tag_info = op->info_p;
        break;
    case op_kind::STREAM_RECV:
        base->cb.recv_stream = on_stream_recv;
        break;
    }
    *op_p = op;
    return UCS_OK;
}

ucs_status_ptr_t counted_end(counted_op *op, ucs_status_ptr_t result, const size_t *length)
{
    op->in_call = false;
    if (op->completed) {
        worker_guard guard(op->worker);
        release(op); /* the callback counted it (UCP_OP_ATTR_FLAG_NO_IMM_CMPL) */
        return result;
    }
    if (UCS_PTR_IS_PTR(result)) {
        return result; /* counted by the callback later */
    }
    size_t bytes = op->bytes;
    if (result == nullptr) {
        if (op->kind == op_kind::TAG_RECV) {
            bytes = op->info_p->length;
        } else if ((op->kind == op_kind::STREAM_RECV) && (length != nullptr)) {
            bytes = *length;
        }
    }
    worker_guard guard(op->worker);
    count(op, UCS_PTR_STATUS(result), bytes);
    release(op);
    return result;
}

ucp_worker_h worker_of(ucp_ep_h ep)
{
    return (ep != nullptr) ? ep->worker : nullptr;
}

ucs_status_t refuse_counting(const char *call)
{
    ucs_error("%s: UCP_OP_ATTR_FIELD_EXT is not supported: it counts no completion", call);
    return UCS_ERR_UNSUPPORTED;
}

} // namespace ucp::ext
