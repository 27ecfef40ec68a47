/*
 * Stream rendezvous. The sender of a large contiguous send registers its
 * buffer and sends an AM_STREAM_RTS (rndv_select, rndv_send_rts: the tag
 * rendezvous' RTS under another id); the receiver queues it as a remote
 * segment in the ep's stream, in order with the eager fragments, and pulls
 * it with the rendezvous receive (rndv_recv_start: get_zcopy, split with the
 * sender's push between processes of a node, ATS at the end):
 *
 * - at the head of the stream, into the first posted receive when that is
 *   contiguous and has room for all of it (one copy, as a tag rendezvous);
 * - into a segment of ours (staged), which then serves receives and
 *   ucp_stream_recv_data_nb as eager bytes do: at once when a receive is
 *   waiting at the head (too small, or it scatters) or recv_data_nb asks,
 *   otherwise once it has waited stream_stage_delay_us, wherever it is in
 *   the queue. So a receive posted right after the previous one completed
 *   still gets the bytes directly, and a sender never waits long for a
 *   receiver that only progresses.
 *
 * One pull at a time per ep. A remote segment is pulled whole, so the
 * sender's buffer is released by one ATS and never read after it.
 */
#include "stream.h"

#include <ucp/core/ucp_ep.h>
#include <ucp/dt/dt_memtype.h>
#include <ucp/proto/am_handlers.h>
#include <ucp/proto/send_common.h>
#include <ucp/tag/rndv.h>
#include <ucp/tag/tag_recv.h>
#include <ucs/debug/log.h>
#include <ucs/sys/clock.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <new>

namespace ucp {

/* One pull in flight: a remote segment of `se`, into a receive (the head
 * segment) or a segment of ours. */
struct stream_pull {
    stream_ep *se; /* nullptr once the ep is gone */
    stream_seg *remote;
    request *recv;      /* the receive pulled into, or nullptr */
    stream_seg *staged; /* the segment pulled into, or nullptr */
    bool done           = false;
    ucs_status_t status = UCS_OK;
};

namespace {

request *request_of_link(ucs::list_link *link)
{
    return reinterpret_cast<request *>(reinterpret_cast<char *>(link) -
                                       offsetof(request, u.recv.expected.link));
}

void add_done(request *req, ucs::list_link *done)
{
    ucs::list_ops::unlink(&req->u.recv.expected.link);
    ucs::list_ops::insert_between(&req->u.recv.expected.link, done->prev, done);
}

/* The pull's receive request ended: done, failed or canceled. */
void pull_completed(void *, ucs_status_t status, const ucp_tag_recv_info_t *, void *user_data)
{
    auto *pull   = static_cast<stream_pull *>(user_data);
    pull->done   = true;
    pull->status = status;
    if (pull->se == nullptr) {
        if (pull->staged != nullptr) {
            stream_seg_free(pull->staged);
        }
        delete pull;
        return;
    }
    stream_drain(pull->se->ep->worker->stream_state, pull->se, false);
}

/* Whether the head remote segment can go straight into `req`. */
bool fits(const request *req, const stream_seg *seg)
{
    const recv_state &r = req->u.recv;
    return r.unpacker.is_contig() && (r.unpacker.capacity() - r.received >= seg->length);
}

/* Starts pulling `seg` into `recv` (nullptr: into a new segment of ours).
 * If it cannot start, the segment is marked lost and its sender told. */
void start_pull(stream_worker *sw, stream_ep *se, stream_seg *seg, request *recv)
{
    ucp_worker *worker    = se->ep->worker;
    stream_remote *remote = remote_of(seg);
    --se->unpulled;
    auto *pull = new (std::nothrow) stream_pull{se, seg, recv, nullptr};
    void *dest = nullptr;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                         UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    param.datatype  = ucp_dt_make_contig(1);
    param.cb.recv   = pull_completed;
    param.user_data = pull;
    if ((pull != nullptr) && (recv != nullptr)) {
        const recv_state &r = recv->u.recv;
        dest                = static_cast<uint8_t *>(r.unpacker.contig_buffer()) + r.received;
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMORY_TYPE;
        param.memory_type = r.unpacker.memory_type();
    } else if (pull != nullptr) {
        pull->staged = stream_seg_alloc(sw, seg->length);
        dest         = (pull->staged != nullptr) ? pull->staged->data() : nullptr;
    }
    request *req = (dest != nullptr) ? send_request_get(worker, &param) : nullptr;
    if ((req != nullptr) && (dt::start_in_memory_type(req->u.recv.unpacker, &param, param.datatype,
                                                      dest, seg->length) != UCS_OK)) {
        request_put(req);
        req = nullptr;
    }
    if (req == nullptr) {
        ucs_error("worker '%s': no memory to pull %zu stream bytes from '%s': the stream "
                  "lost them",
                  worker->name.c_str(), seg->length, se->ep->peer_name.c_str());
        if (pull != nullptr) {
            if (pull->staged != nullptr) {
                stream_seg_free(pull->staged);
            }
            delete pull;
        }
        send_reply_to(worker, remote->rts.ep_id, remote->rts.src_uuid, wire::AM_RNDV_ATS,
                      remote->rts.sreq_id, UCS_ERR_NO_MEMORY);
        remote->lost = true;
        return;
    }
    req->flags |= request_flag::RECV;
    req->u.recv.start({0, seg->length});
    se->pull = pull;
    ++((recv != nullptr) ? sw->pulls_direct : sw->pulls_staged);
    ucs_debug("worker '%s': pulling %zu stream bytes from '%s' into %s", worker->name.c_str(),
              seg->length, se->ep->peer_name.c_str(),
              (recv != nullptr) ? "the receive" : "a segment");
    rndv_recv_start(worker, req, remote->rts, remote + 1, remote->rts.rkey_length);
    ucp_request_free(req->user_ptr()); /* pull_completed has what it needs */
}

/* The pull ended: its bytes join the receive, or wait in the remote
 * segment until it reaches the head. */
void settle_pull(stream_ep *se, ucs::list_link *done)
{
    stream_pull *pull = se->pull;
    se->pull          = nullptr;
    stream_seg *seg   = pull->remote;
    if (pull->status != UCS_OK) {
        ucs_error("stream: pulling %zu bytes from '%s' failed (%s): the stream lost them",
                  seg->length, se->ep->peer_name.c_str(), ucs_status_string(pull->status));
    }
    if (pull->recv != nullptr) {
        /* It was the head: it goes, its bytes are the receive's. */
        se->segs.pull_front();
        recv_state &r = pull->recv->u.recv;
        if (pull->status == UCS_OK) {
            r.received += seg->length;
        } else if (r.data_status == UCS_OK) {
            r.data_status = pull->status;
        }
        if ((pull->status != UCS_OK) || stream_recv_can_complete(pull->recv)) {
            add_done(pull->recv, done);
        }
        stream_seg_free(seg);
    } else if (pull->status == UCS_OK) {
        remote_of(seg)->staged = pull->staged;
    } else {
        stream_seg_free(pull->staged);
        remote_of(seg)->lost = true;
    }
    delete pull;
}

/* Local bytes of the head segment into the first posted receive. */
void fill_head_receive(stream_ep *se, stream_seg *seg, ucs::list_link *done)
{
    request *req = request_of_link(se->recvs.next);
    seg->offset += stream_recv_fill(req, seg->data() + seg->offset, seg->left());
    if (seg->left() == 0) {
        se->segs.pull_front();
        stream_seg_free(seg);
    }
    if (stream_recv_can_complete(req)) {
        add_done(req, done);
    }
}

/* A remote head that was pulled (or lost) gives way to its bytes. */
void replace_head(stream_ep *se, stream_seg *seg)
{
    se->segs.pull_front();
    stream_remote *remote = remote_of(seg);
    if (remote->staged != nullptr) {
        se->segs.push_front(*remote->staged);
        remote->staged = nullptr;
    }
    stream_seg_free(seg);
}

void defer(stream_worker *sw, stream_ep *se)
{
    if (!se->deferred) {
        se->deferred = true;
        sw->deferred.push_back(se);
        se->ep->worker->schedule(deferred::STREAM);
    }
}

bool unpulled(stream_ep *se, stream_seg &seg)
{
    return seg.remote && (remote_of(&seg)->staged == nullptr) && !remote_of(&seg)->lost &&
           ((se->pull == nullptr) || (se->pull->remote != &seg));
}

/* Stages the first remote segment no pull started on once it has waited
 * long enough. */
void stage_waiting(stream_worker *sw, stream_ep *se, uint64_t now)
{
    if ((se->unpulled == 0) || (se->pull != nullptr) || se->closing || !se->ep->usable()) {
        return;
    }
    for (stream_seg &seg : se->segs) {
        if (unpulled(se, seg)) {
            if (now - remote_of(&seg)->arrived >= ucs::sys::time_from_usec(stream_stage_delay_us)) {
                start_pull(sw, se, &seg, nullptr);
            }
            return;
        }
    }
}

} // namespace

void stream_drain(stream_worker *sw, stream_ep *se, bool staging)
{
    if (se->draining) {
        se->drain_again = true;
        return;
    }
    se->draining = true;
    ucs::list_link done;
    ucs::list_ops::init_head(done);
    do {
        se->drain_again = false;
        for (;;) {
            if ((se->pull != nullptr) && se->pull->done) {
                settle_pull(se, &done);
                continue;
            }
            stream_seg *seg = se->segs.front();
            if (seg == nullptr) {
                break;
            }
            const bool waiting = !ucs::list_ops::is_empty(se->recvs);
            if (seg->remote) {
                stream_remote *remote = remote_of(seg);
                if ((remote->staged != nullptr) || remote->lost) {
                    replace_head(se, seg);
                    continue;
                }
                if ((se->pull != nullptr) || se->closing || !se->ep->usable()) {
                    break; /* one pull at a time; none on an ep going away */
                }
                request *head = waiting ? request_of_link(se->recvs.next) : nullptr;
                if ((head != nullptr) && fits(head, seg)) {
                    start_pull(sw, se, seg, head);
                } else if (waiting || staging) {
                    start_pull(sw, se, seg, nullptr);
                } else {
                    break;
                }
                continue;
            }
            if (!waiting) {
                break;
            }
            fill_head_receive(se, seg, &done);
        }
    } while (se->drain_again);
    se->draining = false;
    if (se->unpulled != 0) {
        defer(sw, se); /* staged from progress if no receive takes it */
    }
    stream_ep_update_ready(sw, se);

    while (!ucs::list_ops::is_empty(done)) {
        request *req = request_of_link(done.next);
        ucs::list_ops::unlink(&req->u.recv.expected.link);
        stream_recv_complete(req, UCS_OK);
    }
}

ucs_status_t stream_rts_handler(void *arg, void *data, size_t length, unsigned)
{
    auto *worker = static_cast<ucp_worker *>(arg);
    wire::rts_hdr rts;
    const uint8_t *rkey;
    if (!rndv_read_rts(data, length, &rts, &rkey) || (rts.length == 0)) {
        ucs_warn("worker '%s': dropping a malformed stream rendezvous request",
                 worker->name.c_str());
        return UCS_OK;
    }
    ucp_ep *ep = sender_ep(worker, rts.ep_id, rts.src_uuid);
    if (ep == nullptr) {
        return UCS_OK;
    }
    stream_worker *sw = stream_worker_get(worker);
    stream_ep *se     = (sw != nullptr) ? stream_ep_attach(worker, ep) : nullptr;
    stream_seg *seg   = (se != nullptr) ?
                            stream_seg_alloc(sw, sizeof(stream_remote) + rts.rkey_length) :
                            nullptr;
    if (seg == nullptr) {
        ucs_error("worker '%s': no memory for a stream rendezvous from '%s'", worker->name.c_str(),
                  ep->peer_name.c_str());
        send_reply_to(worker, rts.ep_id, rts.src_uuid, wire::AM_RNDV_ATS, rts.sreq_id,
                      UCS_ERR_NO_MEMORY);
        return UCS_OK;
    }
    stream_remote *remote = new (seg->data())
        stream_remote{rts, nullptr, ucs::sys::get_time(), false};
    std::memcpy(remote + 1, rkey, rts.rkey_length);
    seg->remote = 1;
    seg->length = rts.length;
    se->segs.push_back(*seg);
    ++se->unpulled;
    stream_drain(sw, se, false);
    return UCS_OK;
}

void stream_rndv_ep_gone(stream_worker *sw, stream_ep *se)
{
    if (se->pull != nullptr) {
        /* Still in flight: its completion frees what it pulled into; the
         * remote segment goes with the others. */
        se->pull->se = nullptr;
        se->pull     = nullptr;
    }
    if (se->deferred && (sw != nullptr)) {
        sw->deferred.erase(std::find(sw->deferred.begin(), sw->deferred.end(), se));
        se->deferred = false;
    }
}

unsigned stream_deferred_progress(ucp_worker *worker)
{
    stream_worker *sw = worker->stream_state;
    if (sw == nullptr) {
        return 0;
    }
    /* One at a time: a receive's callback may destroy an ep still listed. */
    const uint64_t now = ucs::sys::get_time();
    unsigned count     = 0;
    for (size_t n = sw->deferred.size(); (n > 0) && !sw->deferred.empty(); --n) {
        stream_ep *se = sw->deferred.front();
        sw->deferred.pop_front();
        se->deferred = false;
        se->draining = true; /* a pull done at once is settled below */
        stage_waiting(sw, se, now);
        se->draining = false;
        stream_drain(sw, se, false); /* lists it again while one waits */
        ++count;
    }
    return count;
}

bool stream_deferred_left(const ucp_worker &worker)
{
    return (worker.stream_state != nullptr) && !worker.stream_state->deferred.empty();
}

} // namespace ucp
