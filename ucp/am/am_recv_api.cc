/*
 * The receiver's active-message calls: setting handlers (legacy and v2
 * share one id space), fetching rendezvous data with ucp_am_recv_data_nbx
 * (the receiver pulls like a tag rendezvous, then the ATS completes the
 * sender), and ucp_am_data_release.
 */
#include "am.h"

#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_guard.h>
#include <ucp/dt/dt_memtype.h>
#include <ucp/ext/op_cntr.h>
#include <ucp/proto/am_handlers.h>
#include <ucp/proto/send_common.h>
#include <ucp/tag/tag_recv.h>
#include <ucs/debug/log.h>

#include <algorithm>
#include <cstring>

namespace ucp {

namespace {

constexpr uint32_t handler_flags = UCP_AM_FLAG_WHOLE_MSG | UCP_AM_FLAG_PERSISTENT_DATA;
/* The wire carries 16-bit ids, as UCX does. */
constexpr unsigned max_am_id = UINT16_MAX;

ucs_status_t set_handler(ucp_worker *worker, uint16_t id, uint8_t hdr_flags, const am_handler &h)
{
    if (am_worker_get(worker) == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    std::vector<am_handler> &table = am_handler_table(worker, hdr_flags);
    if (id >= table.size()) {
        if ((h.cb == nullptr) && (h.legacy_cb == nullptr)) {
            return UCS_OK; /* removing what was never set */
        }
        table.resize(size_t(id) + 1);
    }
    table[id] = h;
    return UCS_OK;
}

/* Completion rules of a receive that may finish inside the call. */
ucs_status_ptr_t finish_call(request *req, uint32_t cb_flag, const ucp_request_param_t *param)
{
    if (!(req->flags & request_flag::COMPLETED)) {
        req->flags |= cb_flag;
        return req->user_ptr();
    }
    if ((param->op_attr_mask & UCP_OP_ATTR_FIELD_RECV_INFO) &&
        (param->recv_info.length != nullptr)) {
        *param->recv_info.length = req->u.recv.info.length;
    }
    return request_immediate_result(req, cb_flag, param);
}

/* A receive request for recv_data: its callback has the stream signature. */
request *recv_data_request(ucp_worker *worker, const ucp_request_param_t *param)
{
    request *req = send_request_get(worker, param);
    if (req == nullptr) {
        return nullptr;
    }
    req->flags &= ~request_flag::LEGACY_CB;
    req->flags |= request_flag::RECV | request_flag::STREAM;
    if (param->op_attr_mask & UCP_OP_ATTR_FIELD_CALLBACK) {
        req->cb.stream = param->cb.recv_am;
    }
    return req;
}

/* Why there is no request: a NULL FIELD_REQUEST, or no memory. */
ucs_status_t no_request_status(const ucp_request_param_t *param)
{
    return (param->op_attr_mask & UCP_OP_ATTR_FIELD_REQUEST) ? UCS_ERR_INVALID_PARAM :
                                                               UCS_ERR_NO_MEMORY;
}

ucp_datatype_t param_datatype(const ucp_request_param_t *param)
{
    return (param->op_attr_mask & UCP_OP_ATTR_FIELD_DATATYPE) ? param->datatype :
                                                                ucp_dt_make_contig(1);
}

/* recv_data of data already here (a descriptor kept with the DATA flag). */
ucs_status_ptr_t eager_recv(ucp_worker *worker, am_desc *desc, void *buffer, size_t count,
                            const ucp_request_param_t *param)
{
    dt::unpacker unpacker;
    ucs_status_t status = dt::start_in_memory_type(unpacker, param, param_datatype(param), buffer,
                                                   count);
    size_t length       = 0;
    if (status == UCS_OK) {
        length = std::min(desc->length, unpacker.capacity());
        status = unpacker.unpack(desc->data(), 0, desc->length);
        unpacker.finish();
    }
    am_desc_consume(desc);
    if (status != UCS_OK) {
        return UCS_STATUS_PTR(status);
    }
    request *req = recv_data_request(worker, param);
    if (req == nullptr) {
        return UCS_STATUS_PTR(no_request_status(param));
    }
    const uint32_t cb_flag = req->flags & request_flag::CALLBACK;
    req->flags &= ~request_flag::CALLBACK;
    req->u.recv.info = {0, length};
    request_complete(req, UCS_OK);
    return finish_call(req, cb_flag, param);
}

} // namespace

ucs_status_ptr_t am_rndv_recv(ucp_worker *worker, am_desc *desc, void *buffer, size_t count,
                              const ucp_request_param_t *param)
{
    request *req        = recv_data_request(worker, param);
    ucs_status_t status = (req == nullptr) ? no_request_status(param) : UCS_OK;
    if (status == UCS_OK) {
        status = dt::start_in_memory_type(req->u.recv.unpacker, param, param_datatype(param),
                                          buffer, count);
        if (status != UCS_OK) {
            request_put(req);
        }
    }
    if (status != UCS_OK) {
        /* The descriptor is ours now: the sender learns the data was not taken. */
        am_rndv_finish(worker, desc, status);
        am_desc_consume(desc);
        return UCS_STATUS_PTR(status);
    }
    recv_state &r = req->u.recv;
    r.start({0, std::min(desc->length, r.unpacker.capacity())});

    wire::rts_hdr rts{};
    rts.src_uuid    = desc->src_uuid;
    rts.ep_id       = desc->ep_id;
    rts.sreq_id     = desc->sreq_id;
    rts.address     = desc->address;
    rts.length      = desc->length;
    rts.rkey_length = desc->rkey_length;
    rts.flags       = desc->rndv_flags;
    std::memcpy(rts.md_name, desc->md_name, sizeof(rts.md_name));

    const uint32_t cb_flag = req->flags & request_flag::CALLBACK;
    req->flags &= ~request_flag::CALLBACK;
    rndv_recv_start(worker, req, rts, desc->rkey, desc->rkey_length);
    am_desc_consume(desc);
    return finish_call(req, cb_flag, param);
}

} // namespace ucp

using ucp::guarded;

extern "C" {

ucs_status_t ucp_worker_set_am_handler(ucp_worker_h worker, uint16_t id, ucp_am_callback_t cb,
                                       void *arg, uint32_t flags)
{
    if ((worker == nullptr) || (flags & ~ucp::handler_flags)) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucp::worker_guard guard(worker);
    return guarded("ucp_worker_set_am_handler", [&]() {
        ucp::am_handler h;
        h.legacy_cb = cb;
        h.arg       = arg;
        h.flags     = flags;
        return ucp::set_handler(worker, id, 0, h);
    });
}

ucs_status_t ucp_worker_set_am_recv_handler(ucp_worker_h worker,
                                            const ucp_am_handler_param_t *param)
{
    if ((worker == nullptr) || (param == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    const uint64_t mask = param->field_mask;
    uint16_t wire_id;
    uint8_t hdr_flags;
    if (!(mask & UCP_AM_HANDLER_PARAM_FIELD_ID) || !(mask & UCP_AM_HANDLER_PARAM_FIELD_CB) ||
        !ucp::am_id_to_wire(param->id, &wire_id, &hdr_flags)) {
        ucs_error("ucp_worker_set_am_recv_handler: an id up to %u (or a layered id of "
                  "ucp_ext.h) and a callback field are required",
                  ucp::max_am_id);
        return UCS_ERR_INVALID_PARAM;
    }
    const uint32_t flags = (mask & UCP_AM_HANDLER_PARAM_FIELD_FLAGS) ? param->flags : 0;
    if (flags & ~ucp::handler_flags) {
        ucs_error("ucp_worker_set_am_recv_handler: unknown flags 0x%x", flags);
        return UCS_ERR_INVALID_PARAM;
    }
    ucp::worker_guard guard(worker);
    return guarded("ucp_worker_set_am_recv_handler", [&]() {
        ucp::am_handler h;
        h.cb    = param->cb;
        h.arg   = (mask & UCP_AM_HANDLER_PARAM_FIELD_ARG) ? param->arg : nullptr;
        h.flags = flags;
        return ucp::set_handler(worker, wire_id, hdr_flags, h);
    });
}

ucs_status_ptr_t ucp_am_recv_data_nbx(ucp_worker_h worker, void *data_desc, void *buffer,
                                      size_t count, const ucp_request_param_t *param)
{
    if ((worker == nullptr) || (param == nullptr) || !ucp::buffer_valid(buffer, count, param)) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    if (ucp::ext::wants_counting(param)) {
        return UCS_STATUS_PTR(ucp::ext::refuse_counting("ucp_am_recv_data_nbx"));
    }
    ucp::worker_guard guard(worker);
    ucp::am_desc *desc = ucp::am_desc_of(data_desc);
    if ((desc == nullptr) || (desc->state == ucp::am_desc_state::CONSUMED)) {
        ucs_error("ucp_am_recv_data_nbx: %p is not a data descriptor of an active "
                  "message",
                  data_desc);
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    ucs_status_ptr_t result = nullptr;
    ucs_status_t status     = guarded("ucp_am_recv_data_nbx", [&]() {
        result = (desc->kind == ucp::am_desc_kind::RNDV) ?
                         ucp::am_rndv_recv(worker, desc, buffer, count, param) :
                         ucp::eager_recv(worker, desc, buffer, count, param);
        return UCS_OK;
    });
    return (status == UCS_OK) ? result : UCS_STATUS_PTR(status);
}

void ucp_am_data_release(ucp_worker_h worker, void *data)
{
    if (worker == nullptr) {
        return;
    }
    ucp::worker_guard guard(worker);
    ucp::am_desc *desc = ucp::am_desc_of(data);
    if ((desc == nullptr) || (desc->state == ucp::am_desc_state::CONSUMED)) {
        ucs_error("ucp_am_data_release: %p is not active message data kept by a "
                  "handler",
                  data);
        return;
    }
    if (desc->kind == ucp::am_desc_kind::RNDV) {
        /* Never fetched: the sender completes and its data is dropped. */
        ucp::am_rndv_finish(worker, desc, UCS_OK);
    }
    ucp::am_desc_consume(desc);
}

} // extern "C"
