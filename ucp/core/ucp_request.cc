/*
 * Request completion, the send-request helpers every operation shares, and
 * the public ucp_request_* calls.
 */
#include "ucp_request.h"
#include "ucp_ep.h"
#include "ucp_worker.h"

#include <ucp/dt/dt_memtype.h>
#include <ucp/proto/send_common.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace ucp {

void trace_request(const request *req, const char *event)
{
    const char *detail = "";
    if ((std::strcmp(event, "started") == 0) && (req->flags & request_flag::EXTERNAL)) {
        detail = " (the caller's memory)";
    } else if ((std::strcmp(event, "freed by the application") == 0) &&
               !(req->flags & request_flag::COMPLETED)) {
        detail = " before completing";
    }
    ucs_trace_req("req %p: %s%s", static_cast<const void *>(req), event, detail);
}

namespace {

[[gnu::cold, gnu::noinline]] void trace_completed(const request *req, ucs_status_t status)
{
    ucs_trace_req("req %p: completed, %s%s", static_cast<const void *>(req),
                  ucs_status_string(status),
                  (req->flags & request_flag::CALLBACK) ? ", calling back" : "");
}

} // namespace

void request_complete(request *req, ucs_status_t status)
{
    ucs_assert(!(req->flags & request_flag::COMPLETED)); /* completes once */
    if (ucs::log_enabled(UCS_LOG_LEVEL_TRACE_REQ)) {
        trace_completed(req, status); /* first: nothing else is live yet */
    }
    const uint32_t flags = req->flags | request_flag::COMPLETED;
    req->status          = status;
    req->flags           = flags;
    if (flags & request_flag::CALLBACK) {
        void *user = req->user_ptr();
        if (flags & request_flag::STREAM) {
            req->cb.stream(user, status, req->u.recv.info.length, req->user_data);
        } else if (flags & request_flag::RECV) {
            if (flags & request_flag::LEGACY_CB) {
                req->cb.recv_legacy(user, status, &req->u.recv.info);
            } else {
                req->cb.recv(user, status, &req->u.recv.info, req->user_data);
            }
        } else if (flags & request_flag::LEGACY_CB) {
            req->cb.send_legacy(user, status);
        } else {
            req->cb.send(user, status, req->user_data);
        }
    }
    /* Released before completion: nobody else will give it back. */
    if (flags & request_flag::RELEASED) {
        request_put(req);
    }
}

ucs_status_t send_stage_whole(send_state &s)
{
    const size_t length = s.packer.length();
    s.bounce            = ucs::memtype::bounce_alloc(std::max<size_t>(length, 1));
    if (s.bounce == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    if (s.packer.pack(s.bounce, 0, length) != length) {
        return UCS_ERR_IO_ERROR; /* the memory type's copier failed */
    }
    s.packer.finish();
    return s.packer.start(ucp_dt_make_contig(1), s.bounce, length);
}

ucs_status_t send_packer_start(request *req, const ucp_ep *ep, const ucp_request_param_t *param,
                               ucp_datatype_t dt, const void *buffer, size_t count)
{
    send_state &s       = req->u.send;
    s.bounce            = nullptr;
    s.reg               = {};
    ucs_status_t status = dt::start_in_memory_type(s.packer, param, dt, buffer, count);
    if ((status == UCS_OK) && (s.packer.memory_type() != UCS_MEMORY_TYPE_HOST)) {
        const size_t fragment = (ep->cfg != nullptr) ? ep->cfg->thresh.am_max_bcopy : 0;
        if (s.packer.length() <= fragment) {
            status = send_stage_whole(s);
        }
    }
    if (status != UCS_OK) {
        ucs::memtype::bounce_free(s.bounce);
        s.bounce = nullptr;
        request_put(req);
    }
    return status;
}

request *send_request_get(ucp_worker *worker, const ucp_request_param_t *param)
{
    request *req;
    if (param->op_attr_mask & UCP_OP_ATTR_FIELD_REQUEST) {
        if (param->request == nullptr) {
            return nullptr;
        }
        req = request::from_user(param->request);
        request_reset(req, worker, request_flag::EXTERNAL);
    } else {
        req = worker->get_request();
        if (req == nullptr) {
            return nullptr;
        }
        request_reset(req, worker, 0);
    }
    if (param->op_attr_mask & UCP_OP_ATTR_FIELD_CALLBACK) {
        req->cb.send = param->cb.send;
        req->flags |= request_flag::CALLBACK;
        if (param->op_attr_mask & param_legacy_callback) {
            req->flags |= request_flag::LEGACY_CB;
        }
    }
    if (param->op_attr_mask & UCP_OP_ATTR_FIELD_USER_DATA) {
        req->user_data = param->user_data;
    }
    trace_request_event(req, "started");
    return req;
}

namespace {

/* Id, datatype state, registration and bounce buffer of a send. */
void send_release_resources(request *req)
{
    send_state &s = req->u.send;
    req->worker->unregister_request(req);
    s.packer.finish();
    buffer_reg_release(req->worker->context, s.rndv_md, &s.reg);
    if (req->flags & request_flag::RNDV_SEND) {
        rndv_release_more_regs(req);
    }
    if (s.bounce != nullptr) {
        ucs::memtype::bounce_free(s.bounce);
        s.bounce = nullptr;
    }
}

} // namespace

void send_request_abort(request *req)
{
    send_release_resources(req);
    request_put(req);
}

ucs_status_ptr_t send_request_start(request *req, const ucp_request_param_t *param)
{
    /* No callback from inside the call (runtimes store their state in the
     * request after it returns), unless the caller wants a request anyway. */
    const uint32_t cb_flag = req->flags & request_flag::CALLBACK;
    req->flags &= ~request_flag::CALLBACK;

    ucs_status_t status = ep_send_or_queue(req->u.send.ep, req);
    if ((status != UCS_OK) && (status != UCS_INPROGRESS)) {
        send_request_abort(req);
        return UCS_STATUS_PTR(status);
    }
    if (!(req->flags & request_flag::COMPLETED)) {
        req->flags |= cb_flag;
        return req->user_ptr();
    }
    return request_immediate_result(req, cb_flag, param);
}

ucs_status_ptr_t request_immediate_result(request *req, uint32_t cb_flag,
                                          const ucp_request_param_t *param)
{
    const ucs_status_t status = req->status;
    if (param->op_attr_mask & UCP_OP_ATTR_FLAG_NO_IMM_CMPL) {
        req->flags |= cb_flag;
        if (cb_flag) {
            /* Completed already: run the callback the caller asked for. */
            req->flags &= ~request_flag::COMPLETED;
            request_complete(req, status);
        }
        return req->user_ptr();
    }
    request_put(req);
    return (status == UCS_OK) ? nullptr : UCS_STATUS_PTR(status);
}

void send_request_finish(request *req, ucs_status_t status)
{
    send_release_resources(req);
    request_complete(req, status);
}

void send_done(request *req)
{
    req->flags |= request_flag::SEND_DONE;
    if (!(req->flags & request_flag::SYNC)) {
        send_request_finish(req, UCS_OK);
    } else if (req->flags & request_flag::ACKED) {
        send_request_finish(req, req->status);
    }
}

void reply_arrived(request *req, ucs_status_t status)
{
    if (!(req->flags & request_flag::SYNC) || (req->flags & request_flag::ACKED)) {
        return; /* not awaited, or a duplicate */
    }
    req->flags |= request_flag::ACKED;
    req->status = status;
    /* A rendezvous push still writing finishes the send when it ends. */
    if ((req->flags & request_flag::SEND_DONE) && !(req->flags & request_flag::PUSHING)) {
        send_request_finish(req, status);
    }
}

} // namespace ucp

using ucp::request;
namespace request_flag = ucp::request_flag;

extern "C" {

ucs_status_t ucp_request_check_status(void *request)
{
    if (request == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    const ucp::request *req = request::from_user(request);
    return (req->flags & request_flag::COMPLETED) ? req->status : UCS_INPROGRESS;
}

int ucp_request_is_completed(void *request)
{
    return ucp_request_check_status(request) != UCS_INPROGRESS;
}

ucs_status_t ucp_tag_recv_request_test(void *request, ucp_tag_recv_info_t *info)
{
    if (request == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    const ucp::request *req = request::from_user(request);
    if (!(req->flags & request_flag::COMPLETED)) {
        return UCS_INPROGRESS;
    }
    if ((info != nullptr) && (req->flags & request_flag::RECV)) {
        *info = req->u.recv.info;
    }
    return req->status;
}

ucs_status_t ucp_request_test(void *request, ucp_tag_recv_info_t *info)
{
    return ucp_tag_recv_request_test(request, info);
}

ucs_status_t ucp_stream_recv_request_test(void *request, size_t *length_p)
{
    if (request == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    const ucp::request *req = request::from_user(request);
    if (!(req->flags & request_flag::COMPLETED)) {
        return UCS_INPROGRESS;
    }
    if (length_p != nullptr) {
        *length_p = req->u.recv.info.length;
    }
    return req->status;
}

/*
 * As UCX 1.13: the status and memory type, and a one-line description of
 * the request in the caller's buffer (INFO_STRING needs INFO_STRING_SIZE,
 * the buffer's size; ucp_worker_query's max_debug_string is enough).
 */
ucs_status_t ucp_request_query(void *request, ucp_request_attr_t *attr)
{
    if ((request == nullptr) || (attr == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    const ucp::request *req = request::from_user(request);
    const uint32_t flags    = req->flags;
    const uint64_t mask     = attr->field_mask;
    if ((mask & UCP_REQUEST_ATTR_FIELD_INFO_STRING) &&
        (!(mask & UCP_REQUEST_ATTR_FIELD_INFO_STRING_SIZE) || (attr->debug_string == nullptr) ||
         (attr->debug_string_size == 0))) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (mask & UCP_REQUEST_ATTR_FIELD_STATUS) {
        attr->status = (flags & request_flag::COMPLETED) ? req->status : UCS_INPROGRESS;
    }
    if (mask & UCP_REQUEST_ATTR_FIELD_MEM_TYPE) {
        attr->mem_type = UCS_MEMORY_TYPE_HOST; /* the only one supported yet */
    }
    if (mask & UCP_REQUEST_ATTR_FIELD_INFO_STRING) {
        char state[64];
        if (flags & request_flag::COMPLETED) {
            std::snprintf(state, sizeof(state), "completed: %s", ucs_status_string(req->status));
        } else {
            std::snprintf(state, sizeof(state), "in progress");
        }
        if (flags & request_flag::TRIGGERED) {
            std::snprintf(attr->debug_string, attr->debug_string_size, "triggered %s, %s",
                          (flags & request_flag::RECV) ? "tag receive" : "operation", state);
        } else if (flags & request_flag::STREAM) {
            std::snprintf(attr->debug_string, attr->debug_string_size,
                          "stream receive, %zu bytes received, %s", req->u.recv.info.length, state);
        } else if (flags & request_flag::RECV) {
            /* sender_tag and length: of the matched message, if any yet */
            std::snprintf(attr->debug_string, attr->debug_string_size,
                          "tag receive, tag 0x%llx, %zu bytes, %s",
                          static_cast<unsigned long long>(req->u.recv.info.sender_tag),
                          req->u.recv.info.length, state);
        } else if (flags & request_flag::FLUSH) {
            std::snprintf(attr->debug_string, attr->debug_string_size, "flush, %s", state);
        } else if (flags & request_flag::RMA) {
            std::snprintf(attr->debug_string, attr->debug_string_size,
                          "rma/atomic, %zu bytes at 0x%llx, %s", req->u.send.rma.length,
                          static_cast<unsigned long long>(req->u.send.rma.remote_addr), state);
        } else {
            std::snprintf(attr->debug_string, attr->debug_string_size, "send, %zu bytes%s%s, %s",
                          req->u.send.packer.length(), (flags & request_flag::SYNC) ? ", sync" : "",
                          (flags & request_flag::RNDV_SEND) ? ", rendezvous" : "", state);
        }
    }
    return UCS_OK;
}

void ucp_request_free(void *request)
{
    if (request == nullptr) {
        return;
    }
    ucp::request *req = request::from_user(request);
    if (req->flags & request_flag::EXTERNAL) {
        return; /* the caller's memory */
    }
    ucp::trace_request_event(req, "freed by the application");
    ucp::worker_guard guard(req->worker);
    if (req->flags & request_flag::COMPLETED) {
        ucp::request_put(req);
    } else {
        req->flags |= request_flag::RELEASED;
    }
}

void ucp_request_release(void *request)
{
    ucp_request_free(request);
}

void *ucp_request_alloc(ucp_worker_h worker)
{
    /* UCX leaves this unimplemented too; callers use FIELD_REQUEST memory. */
    (void)worker;
    return nullptr;
}

} // extern "C"
