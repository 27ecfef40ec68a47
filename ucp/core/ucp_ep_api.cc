/*
 * Public endpoint calls: create, close (flush or force), flush of an ep or
 * a whole worker, query and print_info. Closing never needs the peer: a
 * flush waits only for our own queued sends and the transports' local
 * completion, and a failed peer completes it with the error.
 */
#include "ucp_ep.h"
#include "ucp_guard.h"
#include "ucp_rkey.h"
#include "ucp_worker.h"

#include <ucp/ext/op_cntr.h>
#include <ucp/ext/pwc.h>
#include <ucp/ext/trigger.h>
#include <ucp/proto/am_handlers.h>
#include <ucp/proto/send_common.h>
#include <ucp/wireup/sockaddr.h>
#include <ucp/wireup/wireup.h>
#include <ucs/debug/log.h>

#include <algorithm>
#include <cstdio>

namespace ucp {

namespace {

void flush_comp_noop(uct::completion *)
{
}

/* The lane at a flush cursor: ep id * max_lanes + lane index. */
uct::ep *flush_lane_at(request *req, unsigned cursor, ucp_ep **ep_p)
{
    flush_state &f = req->u.flush;
    ucp_ep *ep     = (f.ep != nullptr) ? f.ep : req->worker->ep_ids.lookup(cursor / max_lanes);
    *ep_p          = ep;
    if ((ep == nullptr) || ((f.ep != nullptr) && (cursor >= max_lanes))) {
        return nullptr;
    }
    unsigned lane = cursor % max_lanes;
    return (lane < ep->num_lanes) ? ep->lanes[lane].ep : nullptr;
}

/* Advances a flush; true once every lane is flushed. */
bool flush_advance(request *req)
{
    flush_state &f = req->u.flush;
    /* An ep's flush visits its lanes only (the cursor is the lane index). */
    const unsigned end = (f.ep != nullptr) ? f.ep->num_lanes :
                                             unsigned(req->worker->ep_ids.size() * max_lanes);
    while (f.next_lane < end) {
        ucp_ep *ep;
        uct::ep *lane = flush_lane_at(req, f.next_lane, &ep);
        if ((lane == nullptr) || (ep == nullptr) || !ep->usable()) {
            ++f.next_lane;
            continue;
        }
        if (ep->num_pending != 0) {
            return false; /* our own queue drains first */
        }
        if (ep->rma_outstanding != 0) {
            return false; /* RMA/atomics in flight or awaiting the target */
        }
        if (f.close_mode) {
            /* Closing needs only our side drained, never the peer's answer
             * (a peer busy elsewhere must not hang our finalize). */
            ucs_status_t status = lane->flush(uct::flush_flag::LOCAL, nullptr);
            if ((status == UCS_INPROGRESS) || (status == UCS_ERR_NO_RESOURCE)) {
                return false;
            }
            uct::completion_update_status(&f.comp, status);
            ++f.next_lane;
            continue;
        }
        ++f.comp.count;
        ucs_status_t status = lane->flush(uct::flush_flag::LOCAL, &f.comp);
        if (status == UCS_ERR_NO_RESOURCE) {
            --f.comp.count;
            return false;
        }
        if (status != UCS_INPROGRESS) {
            --f.comp.count;
            uct::completion_update_status(&f.comp, status);
        }
        ++f.next_lane;
    }
    if ((f.next_lane == end) && f.close_mode && (f.ep != nullptr) && !ep_notify_closed(f.ep)) {
        return false; /* the notice waits for room on the lane */
    }
    if (f.next_lane == end) {
        ++f.next_lane; /* drop the count held while issuing, once */
        --f.comp.count;
    }
    return f.comp.count == 0;
}

void flush_finish(request *req)
{
    flush_state &f      = req->u.flush;
    ucs_status_t status = f.comp.status;
    if (f.close_mode && (f.ep != nullptr)) {
        if (!f.ep->usable()) {
            status = UCS_OK; /* closing a failed ep succeeds */
        }
        ep_destroy(f.ep);
        f.ep = nullptr;
    }
    request_complete(req, status);
}

/*
 * Whether the ep has nothing in flight: no queued sends or RMA, and every
 * lane flushed when asked without a completion (nothing gets registered).
 * The common flush, after operations that completed when issued, then
 * needs no request.
 */
bool ep_flushed_now(ucp_ep *ep)
{
    if (!ep->usable() || (ep->num_pending != 0) || (ep->rma_outstanding != 0)) {
        return false;
    }
    for (uint8_t i = 0; i < ep->num_lanes; ++i) {
        if (ep->lanes[i].ep->flush(uct::flush_flag::LOCAL, nullptr) != UCS_OK) {
            return false;
        }
    }
    return true;
}

bool flushed_now(ucp_worker *worker, ucp_ep *ep)
{
    if (ep != nullptr) {
        return ep_flushed_now(ep);
    }
    for (unsigned id = 0; id < worker->ep_ids.size(); ++id) {
        ucp_ep *each = worker->ep_ids.lookup(id);
        if ((each != nullptr) && each->usable() && !ep_flushed_now(each)) {
            return false;
        }
    }
    return true;
}

ucs_status_ptr_t flush_start(ucp_worker *worker, ucp_ep *ep, bool close,
                             const ucp_request_param_t *param)
{
    if (!close && !(param->op_attr_mask & UCP_OP_ATTR_FLAG_NO_IMM_CMPL) &&
        flushed_now(worker, ep)) {
        return nullptr;
    }
    request *req = send_request_get(worker, param);
    if (req == nullptr) {
        return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    }
    req->flags |= request_flag::FLUSH;
    flush_state &f = req->u.flush;
    f.ep           = ep;
    f.next_lane    = 0;
    f.comp         = {flush_comp_noop, 1, UCS_OK};
    f.close_mode   = close ? 1 : 0;

    if (!flush_advance(req)) {
        worker->flush_requests.push_back(req);
        worker->schedule(deferred::FLUSH);
        return req->user_ptr();
    }
    /* Done at once: no callback unless a request was asked for. */
    const uint32_t cb_flag = req->flags & request_flag::CALLBACK;
    req->flags &= ~request_flag::CALLBACK;
    flush_finish(req);
    return request_immediate_result(req, cb_flag, param);
}

ucs_status_t apply_ep_params(ucp_ep *ep, const ucp_ep_params_t &params)
{
    const uint64_t mask = params.field_mask;
    if (mask & UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE) {
        unsigned mode;
        std::memcpy(&mode, &params.err_mode, sizeof(mode));
        if (mode > UCP_ERR_HANDLING_MODE_PEER) {
            return UCS_ERR_INVALID_PARAM;
        }
        ep->err_mode = params.err_mode;
    }
    /* As UCX: the error callback gets the ep's user data, which is the
     * handler's arg unless UCP_EP_PARAM_FIELD_USER_DATA overrides it (UCX's
     * own ucp_hello_world relies on that). */
    if (mask & UCP_EP_PARAM_FIELD_ERR_HANDLER) {
        ep->err_handler = params.err_handler;
        ep->user_data   = params.err_handler.arg;
    }
    if (mask & UCP_EP_PARAM_FIELD_USER_DATA) {
        ep->user_data = params.user_data;
    }
    if ((mask & UCP_EP_PARAM_FIELD_NAME) && (params.name != nullptr)) {
        ep->peer_name.assign(params.name, strnlen(params.name, UCP_ENTITY_NAME_MAX - 1));
    }
    return UCS_OK;
}

ucs_status_t ep_create(ucp_worker *worker, const ucp_ep_params_t &params, ucp_ep **ep_p)
{
    const uint64_t mask = params.field_mask;
    if (mask & (UCP_EP_PARAM_FIELD_SOCK_ADDR | UCP_EP_PARAM_FIELD_CONN_REQUEST)) {
        ucp_ep probe;
        ucs_status_t status = apply_ep_params(&probe, params);
        if (status == UCS_OK) {
            status = ep_create_sockaddr(worker, params, ep_p); /* ucp/wireup/ */
        }
        if (status == UCS_OK) {
            apply_ep_params(*ep_p, params);
        }
        return status;
    }
    if (!(mask & UCP_EP_PARAM_FIELD_REMOTE_ADDRESS) || (params.address == nullptr)) {
        ucs_error("ucp_ep_create: no remote worker address given");
        return UCS_ERR_INVALID_PARAM;
    }
    ucp_ep probe; /* validates the parameters before anything is created */
    ucs_status_t status = apply_ep_params(&probe, params);
    if (status != UCS_OK) {
        return status;
    }
    /* Adopts the ep a matching REQUEST of the peer made, or makes one. */
    ucp_ep *ep = nullptr;
    status     = wireup::connect(worker, params.address, SIZE_MAX, 0, &ep);
    if (status != UCS_OK) {
        return status;
    }
    apply_ep_params(ep, params);
    *ep_p = ep;
    return UCS_OK;
}

void print_ep(ucp_ep *ep, FILE *stream)
{
    ucp_worker *worker = ep->worker;
    std::fprintf(stream, "#\n# UCP endpoint %u of worker '%s'\n#\n", ep->id, worker->name.c_str());
    std::fprintf(stream, "#   peer: %s%s%s\n", ep->peer_name.c_str(),
                 ep->usable() ? "" : " (failed)",
                 (ep->flags & ep_flag::CONNECTING) ? " (connecting to a listener)" : "");
    std::fprintf(stream, "#   error handling: %s\n",
                 (ep->err_mode == UCP_ERR_HANDLING_MODE_PEER) ? "peer" : "none");
    std::fprintf(stream, "#   wireup: %s, ep id 0x%llx, peer ep id 0x%llx%s\n",
                 wireup::state_name(ep), static_cast<unsigned long long>(ep->local_id),
                 static_cast<unsigned long long>(ep->remote_id),
                 ep->held() ? ", sends held until then" : "");
    if (!(ep->flags & ep_flag::CONNECTING)) {
        for (uint8_t i = 0; i < ep->num_lanes; ++i) {
            const lane &l = ep->lanes[i];
            const uct::tl_resource &res =
                worker->context.tls[worker->ifaces[l.iface_index].tl_index].resource;
            std::fprintf(stream, "#   lane[%u]: %s/%s, connects to the peer's %s\n", i, res.tl_name,
                         res.dev_name, l.p2p ? "ep" : "iface");
        }
        if (ep->aux_ep != nullptr) {
            const uct::tl_resource &res =
                worker->context.tls[worker->ifaces[ep->aux_iface_index].tl_index].resource;
            std::fprintf(stream, "#   wireup lane: %s/%s (aux, connects to the peer's iface)\n",
                         res.tl_name, res.dev_name);
        }
    }
    print_ep_config(*worker, *ep->cfg, stream);
}

/* Drives a nonblocking call to completion for the blocking compat calls. */
ucs_status_t wait_request(ucp_worker *worker, ucs_status_ptr_t ptr)
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

ucp_request_param_t legacy_flush_param(ucp_send_callback_t cb)
{
    ucp_request_param_t param{};
    if (cb != nullptr) {
        param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | param_legacy_callback;
        param.cb.send      = ucp::callback_cast<ucp_send_nbx_callback_t>(cb);
    }
    return param;
}

} // namespace

unsigned flush_progress(ucp_worker *worker)
{
    unsigned count = 0;
    auto requests  = std::move(worker->flush_requests);
    worker->flush_requests.clear();
    for (request *req : requests) {
        if (flush_advance(req)) {
            flush_finish(req);
            ++count;
        } else {
            worker->flush_requests.push_back(req);
            worker->schedule(deferred::FLUSH);
        }
    }
    return count;
}

} // namespace ucp

using ucp::guarded;

extern "C" {

ucs_status_t ucp_ep_create(ucp_worker_h worker, const ucp_ep_params_t *params, ucp_ep_h *ep_p)
{
    if ((worker == nullptr) || (params == nullptr) || (ep_p == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucp::worker_guard guard(worker);
    return guarded("ucp_ep_create", [&]() { return ucp::ep_create(worker, *params, ep_p); });
}

ucs_status_ptr_t ucp_ep_close_nbx(ucp_ep_h ep, const ucp_request_param_t *param)
{
    if ((ep == nullptr) || (param == nullptr) || (ep->flags & ucp::ep_flag::CLOSED)) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    if (ucp::ext::wants_counting(param)) {
        return UCS_STATUS_PTR(ucp::ext::refuse_counting("ucp_ep_close_nbx"));
    }
    ucp_worker *worker = ep->worker;
    ucp::worker_guard guard(worker);
    ucs_status_ptr_t result = nullptr;
    ucs_status_t status     = guarded("ucp_ep_close", [&]() {
        ep->flags |= ucp::ep_flag::CLOSED;
        ucp::ext::triggers_ep_gone(ep, UCS_ERR_CANCELED);
        ucp::ext::pwc_ep_gone(ep, UCS_ERR_CANCELED);
        const bool force = (param->op_attr_mask & UCP_OP_ATTR_FIELD_FLAGS) &&
                           (param->flags & UCP_EP_CLOSE_FLAG_FORCE);
        if (force || !ep->usable()) {
            ucp::ep_destroy(ep);
            result = nullptr;
        } else {
            result = ucp::flush_start(worker, ep, true, param);
        }
        return UCS_OK;
    });
    return (status == UCS_OK) ? result : UCS_STATUS_PTR(status);
}

ucs_status_ptr_t ucp_ep_close_nb(ucp_ep_h ep, unsigned mode)
{
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = (mode == UCP_EP_CLOSE_MODE_FORCE) ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    return ucp_ep_close_nbx(ep, &param);
}

ucs_status_ptr_t ucp_disconnect_nb(ucp_ep_h ep)
{
    return ucp_ep_close_nb(ep, UCP_EP_CLOSE_MODE_FLUSH);
}

void ucp_ep_destroy(ucp_ep_h ep)
{
    if (ep == nullptr) {
        return;
    }
    ucp_worker *worker = ep->worker;
    ucp::wait_request(worker, ucp_ep_close_nb(ep, UCP_EP_CLOSE_MODE_FLUSH));
}

namespace {

ucs_status_ptr_t ep_flush(ucp_ep_h ep, const ucp_request_param_t *param)
{
    ucp::worker_guard guard(ep->worker);
    if (!ep->usable()) {
        return UCS_STATUS_PTR(ep->status);
    }
    ucs_status_ptr_t result = nullptr;
    ucs_status_t status     = guarded("ucp_ep_flush", [&]() {
        result = ucp::flush_start(ep->worker, ep, false, param);
        return UCS_OK;
    });
    return (status == UCS_OK) ? result : UCS_STATUS_PTR(status);
}

ucs_status_ptr_t worker_flush(ucp_worker_h worker, const ucp_request_param_t *param)
{
    ucp::worker_guard guard(worker);
    ucs_status_ptr_t result = nullptr;
    ucs_status_t status     = guarded("ucp_worker_flush", [&]() {
        result = ucp::flush_start(worker, nullptr, false, param);
        return UCS_OK;
    });
    return (status == UCS_OK) ? result : UCS_STATUS_PTR(status);
}

} // namespace

ucs_status_ptr_t ucp_ep_flush_nbx(ucp_ep_h ep, const ucp_request_param_t *param)
{
    if ((ep == nullptr) || (param == nullptr)) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    if (ucp::ext::wants_counting(param)) {
        return ucp::ext::counted({ep->worker, ucp::ext::op_kind::SEND, nullptr, 0, ep}, param,
                                 [=](const ucp_request_param_t *base) {
            return ep_flush(ep, base);
        });
    }
    return ep_flush(ep, param);
}

ucs_status_ptr_t ucp_ep_flush_nb(ucp_ep_h ep, unsigned, ucp_send_callback_t cb)
{
    ucp_request_param_t param = ucp::legacy_flush_param(cb);
    return ucp_ep_flush_nbx(ep, &param);
}

ucs_status_t ucp_ep_flush(ucp_ep_h ep)
{
    if (ep == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucp_request_param_t param{};
    return ucp::wait_request(ep->worker, ucp_ep_flush_nbx(ep, &param));
}

ucs_status_ptr_t ucp_worker_flush_nbx(ucp_worker_h worker, const ucp_request_param_t *param)
{
    if ((worker == nullptr) || (param == nullptr)) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    if (ucp::ext::wants_counting(param)) {
        return ucp::ext::counted({worker, ucp::ext::op_kind::SEND, nullptr, 0}, param,
                                 [=](const ucp_request_param_t *base) {
            return worker_flush(worker, base);
        });
    }
    return worker_flush(worker, param);
}

ucs_status_ptr_t ucp_worker_flush_nb(ucp_worker_h worker, unsigned, ucp_send_callback_t cb)
{
    ucp_request_param_t param = ucp::legacy_flush_param(cb);
    return ucp_worker_flush_nbx(worker, &param);
}

ucs_status_t ucp_worker_flush(ucp_worker_h worker)
{
    if (worker == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucp_request_param_t param{};
    return ucp::wait_request(worker, ucp_worker_flush_nbx(worker, &param));
}

ucs_status_t ucp_ep_query(ucp_ep_h ep, ucp_ep_attr_t *attr)
{
    if ((ep == nullptr) || (attr == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (attr->field_mask & UCP_EP_ATTR_FIELD_NAME) {
        std::snprintf(attr->name, sizeof(attr->name), "%s", ep->peer_name.c_str());
    }
    if (attr->field_mask & (UCP_EP_ATTR_FIELD_LOCAL_SOCKADDR | UCP_EP_ATTR_FIELD_REMOTE_SOCKADDR)) {
        return ucp::ep_query_sockaddr(ep, attr); /* client-server eps only */
    }
    return UCS_OK;
}

/*
 * The time one tag message of `message_size` bytes takes on this ep, from the
 * transports' performance model and the protocol the size selects: eager
 * (the AM lane: overheads, latency and the copy or wire bandwidth) or
 * rendezvous (a request and its answer on the AM lane, then the transfer on
 * the rendezvous lane).
 */
ucs_status_t ucp_ep_evaluate_perf(ucp_ep_h ep, const ucp_ep_evaluate_perf_param_t *param,
                                  ucp_ep_evaluate_perf_attr_t *attr)
{
    if ((ep == nullptr) || (param == nullptr) || (attr == nullptr) ||
        !(param->field_mask & UCP_EP_PERF_PARAM_FIELD_MESSAGE_SIZE)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (!(attr->field_mask & UCP_EP_PERF_ATTR_FIELD_ESTIMATED_TIME)) {
        return UCS_OK;
    }
    ucp::worker_guard guard(ep->worker);
    if (!ep->usable() || (ep->am_ep == nullptr)) {
        return ep->usable() ? UCS_ERR_NOT_CONNECTED : ep->status;
    }
    const double size = double(param->message_size);
    const auto &am    = ep->am_ep->owner().attr().perf;
    auto transfer     = [size](const uct::perf_model &m) {
        return (m.bandwidth_Bps > 0) ? size / m.bandwidth_Bps : 0.0;
    };
    const double am_msg = am.send_overhead_s + am.latency_s + am.recv_overhead_s;
    if ((param->message_size < ep->cfg->thresh.rndv) || (ep->rndv_lane == ucp::no_lane)) {
        attr->estimated_time = am_msg + transfer(am);
    } else {
        uct::perf_model rndv =
            ep->worker->ifaces[ep->lanes[ep->rndv_lane].iface_index].iface->attr().perf;
        if (ep->cfg->num_rndv_rails > 1) { /* a pull split over lanes: their rates add */
            rndv.bandwidth_Bps = 0;
            for (unsigned i = 0; i < ep->cfg->num_rndv_rails; ++i) {
                rndv.bandwidth_Bps += ep->cfg->rndv_rail_Bps[i];
            }
        }
        attr->estimated_time = 2 * am_msg + rndv.latency_s + transfer(rndv);
    }
    return UCS_OK;
}

ucs_status_ptr_t ucp_ep_modify_nb(ucp_ep_h ep, const ucp_ep_params_t *params)
{
    if ((ep == nullptr) || (params == nullptr)) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    /* As UCX 1.13: the handlers and user data can change, not whom the ep
     * reaches nor how it handles errors. */
    if (params->field_mask &
        (UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
         UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE)) {
        return UCS_STATUS_PTR(UCS_ERR_NOT_IMPLEMENTED);
    }
    ucp::worker_guard guard(ep->worker);
    return UCS_STATUS_PTR(ucp::apply_ep_params(ep, *params));
}

ucs_status_t ucp_ep_rkey_unpack(ucp_ep_h ep, const void *rkey_buffer, ucp_rkey_h *rkey_p)
{
    if ((ep == nullptr) || (rkey_buffer == nullptr) || (rkey_p == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucp::worker_guard guard(ep->worker);
    return guarded("ucp_ep_rkey_unpack",
                   [&]() { return ucp::rkey_unpack(ep->worker->context, rkey_buffer, rkey_p); });
}

void ucp_ep_print_info(ucp_ep_h ep, FILE *stream)
{
    if ((ep == nullptr) || (stream == nullptr)) {
        return;
    }
    ucp::worker_guard guard(ep->worker);
    guarded("ucp_ep_print_info", [&]() {
        ucp::print_ep(ep, stream);
        return UCS_OK;
    });
}

} // extern "C"
