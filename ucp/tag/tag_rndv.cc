/*
 * Rendezvous: the sender registers its buffer on the rendezvous lane's
 * memory domain and sends an RTS with the packed key; the receiver, once a
 * receive matches, pulls the data with get_zcopy on its own lane of that
 * domain (cma between processes on a node, tcp otherwise, self within one
 * worker) and answers with an ATS, which completes the send.
 */
#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_worker.h>
#include <ucp/proto/am_handlers.h>
#include <ucp/proto/send_common.h>
#include <ucp/proto/wire.h>
#include <ucp/tag/tag_recv.h>
#include <ucs/debug/log.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace ucp {

namespace {

size_t pack_rts(void *dest, void *arg)
{
    auto *req       = static_cast<request*>(arg);
    send_state &s   = req->u.send;
    ucp_worker *w   = req->worker;
    uct::md &md     = *w->context.mds[s.rndv_md].md;
    wire::rts_hdr hdr{};
    hdr.tag         = s.tag;
    hdr.src_uuid    = w->uuid;
    hdr.sreq_id     = req->id;
    hdr.address     = reinterpret_cast<uintptr_t>(s.packer.contig_buffer());
    hdr.length      = s.packer.length();
    hdr.rkey_length = uint32_t(md.attr().rkey_packed_size);
    std::snprintf(hdr.md_name, sizeof(hdr.md_name), "%s",
                  w->context.mds[s.rndv_md].name.c_str());
    std::memcpy(dest, &hdr, sizeof(hdr));
    if (md.mkey_pack(s.memh, static_cast<char*>(dest) + sizeof(hdr)) != UCS_OK) {
        return 0;
    }
    return sizeof(hdr) + hdr.rkey_length;
}

ucs_status_t rts_step(request *req)
{
    ssize_t packed = req->u.send.ep->am_ep->am_bcopy(wire::AM_RNDV_RTS, pack_rts, req, 0);
    if (packed < 0) {
        return ucs_status_t(packed);
    }
    if (packed == 0) {
        return UCS_ERR_IO_ERROR;   /* the key could not be packed */
    }
    send_done(req);
    return UCS_OK;
}

request *request_of_comp(uct::completion *comp)
{
    return reinterpret_cast<request*>(reinterpret_cast<char*>(comp) -
                                      offsetof(request, u.recv.comp));
}

/* Everything pulled (or failed): unpack, answer the sender, complete. */
void rndv_recv_done(request *req)
{
    recv_state &r      = req->u.recv;
    ucp_worker *worker = req->worker;
    ucs_status_t transfer = r.comp.status;
    if ((r.bounce != nullptr) && (transfer == UCS_OK)) {
        ucs_status_t st = r.unpacker.unpack(r.bounce, 0, r.get_length);
        if ((st != UCS_OK) && (r.data_status == UCS_OK)) {
            r.data_status = st;
        }
    }
    std::free(r.bounce);
    r.bounce = nullptr;
    if (r.rkey.handle != nullptr || r.rkey.rkey != 0) {
        worker->context.mds[r.rkey_md].component->rkey_release(r.rkey);
        r.rkey = {};
    }
    worker->unregister_request(req);
    send_reply_to(worker, r.src_uuid, wire::AM_RNDV_ATS, r.remote_req_id, transfer);
    recv_finish(req, (transfer != UCS_OK) ? transfer : r.data_status);
}

void rndv_get_completed(uct::completion *comp)
{
    rndv_recv_done(request_of_comp(comp));
}

/* The lane of `ep` that can pull with a key of md `md_index`. */
const lane *pull_lane(const ucp_ep *ep, unsigned md_index)
{
    for (uint8_t i = 0; i < ep->num_lanes; ++i) {
        const lane &l = ep->lanes[i];
        if ((l.md_index == md_index) &&
            (ep->worker->ifaces[l.iface_index].iface->attr().flags &
             uct::iface_flag::GET_ZCOPY)) {
            return &l;
        }
    }
    return nullptr;
}

/* Issues the gets from r.received on; false when it must wait for room. */
bool rndv_issue(request *req)
{
    recv_state &r = req->u.recv;
    const lane *l = pull_lane(r.ep, r.rkey_md);
    if (l == nullptr) {
        uct::completion_update_status(&r.comp, UCS_ERR_UNREACHABLE);
        return true;
    }
    const uct::iface_attr &attr = r.ep->worker->ifaces[l->iface_index].iface->attr();
    const size_t max_frag = std::max<size_t>(attr.get.max_zcopy, 1);
    auto *dest = static_cast<uint8_t*>(r.bounce != nullptr ? r.bounce :
                                       r.unpacker.contig_buffer());
    while ((r.received < r.get_length) && (r.comp.status == UCS_OK)) {
        const size_t frag = std::min(max_frag, r.get_length - r.received);
        uct::iov iov{dest + r.received, frag, uct::MEM_HANDLE_NULL};
        ++r.comp.count;
        ucs_status_t status = l->ep->get_zcopy(&iov, 1, r.remote_addr + r.received,
                                               r.rkey.rkey, &r.comp);
        if (status == UCS_INPROGRESS) {
            r.received += frag;
            continue;
        }
        --r.comp.count;
        if (status == UCS_ERR_NO_RESOURCE) {
            return false;
        }
        uct::completion_update_status(&r.comp, status);
        r.received += frag;
    }
    return true;
}

/* Starts or resumes the pull; the request holds one count while issuing. */
void rndv_continue(request *req)
{
    recv_state &r = req->u.recv;
    if (r.ep == nullptr) {
        r.ep = reply_ep(req->worker, r.src_uuid);
        if (r.ep == nullptr) {
            if (req->worker->pending_wireups.count(r.src_uuid)) {
                req->worker->rndv_deferred.push_back(req);
                return;
            }
            uct::completion_update_status(&r.comp, UCS_ERR_UNREACHABLE);
        }
    }
    if ((r.ep != nullptr) && !rndv_issue(req)) {
        req->worker->rndv_deferred.push_back(req);
        return;
    }
    uct::invoke_completion(&r.comp, UCS_OK);
}

} // namespace

send_step_t rndv_select(request *req)
{
    send_state &s  = req->u.send;
    ucp_ep *ep     = s.ep;
    const lane &l  = ep->lanes[ep->rndv_lane];
    uct::md &md    = *req->worker->context.mds[l.md_index].md;
    if (md.attr().rkey_packed_size + sizeof(wire::rts_hdr) >
        ep->am_ep->owner().attr().am.max_bcopy) {
        return nullptr;
    }
    ucs_status_t status = md.mem_reg(const_cast<void*>(s.packer.contig_buffer()),
                                     s.packer.length(), 0, &s.memh);
    if (status != UCS_OK) {
        ucs_debug("rendezvous registration failed (%s): sending eagerly",
                  ucs_status_string(status));
        s.memh = nullptr;
        return nullptr;
    }
    s.rndv_md = l.md_index;
    if (!(req->flags & request_flag::SYNC)) {
        req->flags |= request_flag::SYNC;
        if (req->worker->register_request(req) == 0) {
            md.mem_dereg(s.memh);
            s.memh = nullptr;
            req->flags &= ~request_flag::SYNC;
            return nullptr;
        }
    }
    return rts_step;
}

void rndv_recv_start(ucp_worker *worker, request *req, const wire::rts_hdr &rts,
                     const void *rkey, size_t rkey_length)
{
    recv_state &r   = req->u.recv;
    r.src_uuid      = rts.src_uuid;
    r.remote_req_id = rts.sreq_id;
    r.remote_addr   = rts.address;
    r.received      = 0;
    r.bounce        = nullptr;
    r.rkey          = {};
    r.ep            = nullptr;
    r.comp.func     = rndv_get_completed;
    r.comp.count    = 1;
    r.comp.status   = UCS_OK;

    const size_t capacity = r.unpacker.capacity();
    r.get_length = std::min<size_t>(rts.length, capacity);
    if (rts.length > capacity) {
        r.data_status = UCS_ERR_MESSAGE_TRUNCATED;
    }
    worker->register_request(req);

    /* The key must belong to a memory domain we have too. */
    ucs_status_t status = UCS_ERR_UNREACHABLE;
    for (unsigned i = 0; i < worker->context.mds.size(); ++i) {
        if (worker->context.mds[i].name == rts.md_name) {
            status = worker->context.mds[i].component->rkey_unpack(rkey, rkey_length,
                                                                   &r.rkey);
            r.rkey_md = i;
            break;
        }
    }
    if (status != UCS_OK) {
        ucs_error("worker '%s': cannot use the rendezvous key of md '%s': %s",
                  worker->name.c_str(), rts.md_name, ucs_status_string(status));
        r.rkey = {};
        r.comp.status = status;
        uct::invoke_completion(&r.comp, status);
        return;
    }
    if (!r.unpacker.is_contig() && (r.get_length > 0)) {
        r.bounce = std::malloc(r.get_length);
        if (r.bounce == nullptr) {
            uct::invoke_completion(&r.comp, UCS_ERR_NO_MEMORY);
            return;
        }
    }
    rndv_continue(req);
}

unsigned rndv_deferred_progress(ucp_worker *worker)
{
    auto waiting = std::move(worker->rndv_deferred);
    worker->rndv_deferred.clear();
    for (request *req : waiting) {
        rndv_continue(req);
    }
    return unsigned(waiting.size());
}

void fail_waiting_request(request *req, ucs_status_t status)
{
    if (!(req->flags & request_flag::RECV)) {
        send_request_finish(req, status);
        return;
    }
    /* A pull from a lost peer: the transport completes nothing further. */
    ucp_worker *worker = req->worker;
    auto &deferred     = worker->rndv_deferred;
    deferred.erase(std::remove(deferred.begin(), deferred.end(), req), deferred.end());
    recv_state &r = req->u.recv;
    std::free(r.bounce);
    r.bounce = nullptr;
    if (r.rkey.handle != nullptr || r.rkey.rkey != 0) {
        worker->context.mds[r.rkey_md].component->rkey_release(r.rkey);
        r.rkey = {};
    }
    worker->unregister_request(req);
    recv_finish(req, status);
}

} // namespace ucp
