/*
 * Eager zero-copy fragments (see eager_zcopy.h).
 *
 * Life of a send: applies() sets the completion to one reference, held
 * while fragments are being issued. Each fragment the transport keeps
 * (UCS_INPROGRESS) adds one; the transport's completion drops it. When the
 * last fragment is issued the step drops the held reference, so the send
 * is done when the transport gave back every fragment, whichever comes
 * last. A send with fragments in flight is registered for a reply id, so
 * purging the ep finds it (abort()) even when it is in no pending queue.
 */
#include "eager_zcopy.h"

#include <ucp/core/ucp_ep.h>
#include <ucp/proto/send_common.h>
#include <ucs/debug/log.h>

#include <algorithm>
#include <cstddef>

namespace ucp::zcopy {

namespace {

request *request_of(uct::completion *comp)
{
    return reinterpret_cast<request *>(reinterpret_cast<char *>(comp) -
                                       offsetof(request, u.send.zcopy.comp));
}

/* The transport gave back the last fragment (or the step its reference). */
void completed(uct::completion *comp)
{
    request *req = request_of(comp);
    if (req->flags & request_flag::COMPLETED) {
        return; /* defensive: a purge completes a send early only when its
                       lanes are destroyed, and then nothing calls back */
    }
    if (comp->status == UCS_OK) {
        send_done(req);
    } else {
        send_request_finish(req, comp->status);
    }
}

/* No more fragments will be issued: drops the reference held for that. */
void stop_issuing(request *req)
{
    send_state &s   = req->u.send;
    s.offset        = s.packer.length();
    s.zcopy.issuing = 0;
    uct::invoke_completion(&s.zcopy.comp, UCS_OK);
}

/*
 * A fragment failed. Before anything was issued by the first call, the
 * caller fails the send (and releases it); otherwise the send completes
 * with the error once the fragments in flight are back.
 */
ucs_status_t fail(request *req, ucs_status_t status)
{
    zcopy_state &z = req->u.send.zcopy;
    if (!(req->flags & request_flag::PENDING) && (req->u.send.offset == 0) && (z.comp.count == 1)) {
        return status;
    }
    uct::completion_update_status(&z.comp, status);
    stop_issuing(req);
    return UCS_OK;
}

} // namespace

bool applies(request *req, size_t max_header_length)
{
    send_state &s          = req->u.send;
    const ucp_ep *ep       = s.ep;
    const ep_thresholds &t = ep->cfg->thresh;
    const size_t length    = s.packer.length();
    /* The selection table chose zcopy for this size; what only the message
     * itself can rule out is checked here. */
    if (max_header_length > t.zcopy_max_hdr) {
        return false;
    }
    const unsigned md_index = ep->lanes[ep->am_lane].md_index;
    ucp_context &ctx        = req->worker->context;
    const bool need_memh    = ctx.mds[md_index].md->attr().flags & uct::md_flag::NEED_MEMH;
    buffer_reg reg{};
    switch (s.packer.type_class()) {
    case dt::dt_class::contig:
        if (need_memh &&
            (buffer_reg_get(ctx, md_index, s.packer.contig_buffer(), length, &reg) != UCS_OK)) {
            ucs_debug("eager zcopy: registration of %zu bytes failed, sending by copy", length);
            return false;
        }
        break;
    case dt::dt_class::iov: {
        /* Every fragment must reach whole entries' worth of data: an iov
         * longer than one am_zcopy takes goes by copy instead. */
        uct::iov probe[max_iov];
        size_t covered;
        s.packer.to_iov(probe, std::min(t.zcopy_max_iov, max_iov), 0, length, &covered);
        if (need_memh || (covered < length)) {
            return false;
        }
        break;
    }
    default:
        return false; /* generic datatypes are packed by the application */
    }
    if (reg.held()) {
        s.reg     = reg;
        s.rndv_md = md_index; /* released with the send */
    }
    s.zcopy.comp    = {completed, 1, UCS_OK};
    s.zcopy.issuing = 1;
    req->flags |= request_flag::ZCOPY;
    return true;
}

ucs_status_t send(request *req, header_fn header, size_t frag_size)
{
    send_state &s          = req->u.send;
    zcopy_state &z         = s.zcopy;
    ucp_ep *ep             = s.ep;
    const ep_thresholds &t = ep->cfg->thresh;
    const size_t length    = s.packer.length();
    const size_t entries   = std::min(t.zcopy_max_iov, max_iov);
    uct::iov iov[max_iov];
    alignas(8) uint8_t hdr[max_header];
    bool progressed = false;

    while (s.offset < length) {
        size_t frag;
        const size_t count = s.packer.to_iov(iov, entries, s.offset, frag_size, &frag);
        if (ucs_unlikely(count == 0)) {
            return fail(req, UCS_ERR_IO_ERROR); /* applies() ruled this out */
        }
        for (size_t i = 0; i < count; ++i) {
            iov[i].memh = s.reg.memh;
        }
        uint8_t am_id;
        const size_t hdr_length = header(req, s.offset, frag, hdr, &am_id);
        ++z.comp.count;
        ucs_status_t status = ep->am_ep->am_zcopy(am_id, hdr, unsigned(hdr_length), iov, count, 0,
                                                  &z.comp);
        if (status == UCS_INPROGRESS) {
            if (!(req->flags & request_flag::HAS_ID)) {
                /* Found by a purge of the ep from now on (no id: untracked). */
                req->worker->register_request(req);
            }
        } else {
            --z.comp.count;
            if (status == UCS_ERR_NO_RESOURCE) {
                return progressed ? UCS_INPROGRESS : UCS_ERR_NO_RESOURCE;
            }
            if (status != UCS_OK) {
                return fail(req, status);
            }
        }
        s.offset += frag;
        progressed = true;
    }
    stop_issuing(req); /* may complete the send: `req` is not touched after */
    return UCS_OK;
}

void abort(request *req, ucs_status_t status, bool lanes_gone)
{
    zcopy_state &z = req->u.send.zcopy;
    uct::completion_update_status(&z.comp, status);
    if (z.issuing) {
        z.issuing          = 0;
        req->u.send.offset = req->u.send.packer.length();
        --z.comp.count;
    }
    if ((z.comp.count == 0) || lanes_gone) {
        send_request_finish(req, z.comp.status);
    }
}

} // namespace ucp::zcopy
