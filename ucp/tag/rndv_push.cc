/*
 * The sender's half of a split rendezvous: on the receiver's RTR it writes
 * bytes [0, length) of the message into the receiver's buffer with
 * put_zcopy, then sends an ATP naming the receiver's request. The send
 * itself still completes on the receiver's ATS, which comes after the ATP.
 */
#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_worker.h>
#include <ucp/proto/am_handlers.h>
#include <ucp/proto/send_common.h>
#include <ucp/proto/wire.h>
#include <ucp/tag/rndv.h>
#include <ucs/debug/log.h>

#include <algorithm>
#include <cstddef>

namespace ucp {

namespace {

request *request_of_push(uct::completion *comp)
{
    return reinterpret_cast<request *>(reinterpret_cast<char *>(comp) -
                                       offsetof(request, u.send.push.comp));
}

/* Every put is done (or failed): tell the receiver, finish if it already
 * answered or the ep failed meanwhile. */
void push_done(uct::completion *comp)
{
    request *req              = request_of_push(comp);
    send_state &s             = req->u.send;
    ucp_worker *worker        = req->worker;
    const ucs_status_t status = comp->status;
    if ((s.push.rkey.handle != nullptr) || (s.push.rkey.rkey != 0)) {
        worker->context.mds[s.rndv_md].component->rkey_release(s.push.rkey);
        s.push.rkey = {};
    }
    req->flags &= ~request_flag::PUSHING;
    if (req->flags & request_flag::PUSH_FAILED) {
        send_request_finish(req, req->status);
        return;
    }
    send_reply_to(worker, s.push.dest_ep_id, s.push.dest_uuid, wire::AM_RNDV_ATP, s.push.rreq_id,
                  status);
    if ((req->flags & request_flag::ACKED) && (req->flags & request_flag::SEND_DONE)) {
        send_request_finish(req, req->status); /* the ATS overtook our ATP */
    }
}

/* Refuses an RTR: the receiver completes its request with `status`. */
void refuse_rtr(ucp_worker *worker, const wire::rtr_hdr &rtr, ucs_status_t status)
{
    ucs_debug("worker '%s': refusing a rendezvous push request: %s", worker->name.c_str(),
              ucs_status_string(status));
    send_reply_to(worker, rtr.ep_id, rtr.src_uuid, wire::AM_RNDV_ATP, rtr.rreq_id, status);
}

} // namespace

const lane *rndv_lane_with(const ucp_ep *ep, unsigned md_index, uint64_t iface_flag)
{
    for (uint8_t i = 0; i < ep->num_lanes; ++i) {
        const lane &l = ep->lanes[i];
        if ((l.ep != nullptr) && (l.md_index == md_index) &&
            (ep->worker->ifaces[l.iface_index].iface->attr().flags & iface_flag)) {
            return &l;
        }
    }
    return nullptr;
}

uint8_t rndv_rts_flags(const request *req)
{
    const send_state &s = req->u.send;
    uint8_t flags       = 0;
    if (rndv_lane_with(s.ep, s.rndv_md, uct::iface_flag::PUT_ZCOPY) != nullptr) {
        flags |= wire::rts_flag::CAN_PUSH;
    }
    if (s.more_regs != nullptr) {
        flags |= wire::rts_flag::KEY_LIST;
    }
    return flags;
}

void rndv_push_continue(request *req)
{
    send_state &s = req->u.send;
    push_state &p = s.push;
    const lane *l = rndv_lane_with(s.ep, s.rndv_md, uct::iface_flag::PUT_ZCOPY);
    if ((l != nullptr) && !(s.ep->flags & ep_flag::READY)) {
        req->worker->rndv_deferred.push_back(req); /* its p2p lanes wait for the wireup */
        req->worker->schedule(deferred::RNDV);
        return;
    }
    if (l == nullptr) { /* the lane went away (ep failure) */
        uct::completion_update_status(&p.comp, UCS_ERR_UNREACHABLE);
        p.offset = p.length;
    }
    if (l != nullptr) {
        const uct::iface_attr &attr = s.ep->worker->ifaces[l->iface_index].iface->attr();
        const size_t max_frag       = std::max<size_t>(attr.put.max_zcopy, 1);
        auto *src                   = static_cast<const uint8_t *>(s.packer.contig_buffer());
        while ((p.offset < p.length) && (p.comp.status == UCS_OK)) {
            const size_t frag = std::min(max_frag, p.length - p.offset);
            uct::iov iov{const_cast<uint8_t *>(src) + p.offset, frag, s.reg.memh};
            ++p.comp.count;
            ucs_status_t status = l->ep->put_zcopy(&iov, 1, p.remote_addr + p.offset, p.rkey.rkey,
                                                   &p.comp);
            if (status != UCS_INPROGRESS) {
                --p.comp.count;
                if (status == UCS_ERR_NO_RESOURCE) {
                    req->worker->rndv_deferred.push_back(req);
                    req->worker->schedule(deferred::RNDV);
                    return; /* the issuing count stays held */
                }
                uct::completion_update_status(&p.comp, status);
            }
            p.offset += frag;
        }
    }
    uct::invoke_completion(&p.comp, UCS_OK); /* the issuing count */
}

void rndv_push_fail(request *req, ucs_status_t status)
{
    req->status = status;
    req->flags |= request_flag::PUSH_FAILED;
    auto &deferred = req->worker->rndv_deferred;
    auto it        = std::find(deferred.begin(), deferred.end(), req);
    if (it != deferred.end()) {
        /* Nothing more will be issued: drop the issuing count. */
        deferred.erase(it);
        uct::invoke_completion(&req->u.send.push.comp, status);
    }
    /* Otherwise the puts in flight end it: the transport completes them. */
}

ucs_status_t rndv_rtr_handler(void *arg, void *data, size_t length, unsigned)
{
    auto *worker = static_cast<ucp_worker *>(arg);
    ucs::wire_reader r(data, length);
    wire::rtr_hdr rtr;
    const uint8_t *rkey;
    if (!r.get(&rtr) || !r.bytes(rtr.rkey_length, &rkey)) {
        ucs_warn("worker '%s': dropping a malformed rendezvous push request", worker->name.c_str());
        return UCS_OK;
    }
    if (sender_ep(worker, rtr.ep_id, rtr.src_uuid) == nullptr) {
        return UCS_OK;
    }
    request *req = worker->lookup_request(rtr.sreq_id);
    if ((req == nullptr) || (req->flags & request_flag::RECV) ||
        !(req->flags & request_flag::RNDV_SEND) || (req->u.send.ep->local_id != rtr.ep_id) ||
        (req->flags & (request_flag::PUSHING | request_flag::ACKED))) {
        refuse_rtr(worker, rtr, UCS_ERR_INVALID_PARAM);
        return UCS_OK;
    }
    send_state &s = req->u.send;
    if ((rtr.length == 0) || (rtr.length > s.packer.length())) {
        refuse_rtr(worker, rtr, UCS_ERR_INVALID_PARAM);
        return UCS_OK;
    }
    if (rndv_lane_with(s.ep, s.rndv_md, uct::iface_flag::PUT_ZCOPY) == nullptr) {
        refuse_rtr(worker, rtr, UCS_ERR_UNSUPPORTED);
        return UCS_OK;
    }
    push_state &p       = s.push;
    p.rkey              = {};
    ucs_status_t status = worker->context.mds[s.rndv_md].component->rkey_unpack(rkey,
                                                                                rtr.rkey_length,
                                                                                &p.rkey);
    if (status != UCS_OK) {
        p.rkey = {};
        refuse_rtr(worker, rtr, status);
        return UCS_OK;
    }
    p.comp.func   = push_done;
    p.comp.count  = 1;
    p.comp.status = UCS_OK;
    p.remote_addr = rtr.address;
    p.length      = rtr.length;
    p.offset      = 0;
    p.rreq_id     = rtr.rreq_id;
    p.dest_uuid   = rtr.src_uuid;
    p.dest_ep_id  = rtr.ep_id;
    req->flags |= request_flag::PUSHING;
    rndv_push_continue(req);
    return UCS_OK;
}

} // namespace ucp
