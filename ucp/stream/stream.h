/*
 * Streams (ucp_stream_*): ordered bytes per endpoint, no message
 * boundaries. The sender cuts a send into AM_STREAM fragments on the ep's
 * AM lane (which keeps order), each naming the receiver's ep paired with
 * the sender's in the wireup; the receiver appends each fragment to that
 * ep's stream: first into posted receives, in post order, and what is left
 * into segments that later receives, ucp_stream_recv_data_nb and
 * ucp_stream_worker_poll see. An ep made for a peer's wireup request keeps
 * what arrives until the application's ucp_ep_create adopts it.
 *
 * From proto::stream_rndv_min (and the rendezvous threshold) a contiguous send
 * goes as an AM_STREAM_RTS instead (stream_rndv.cc): a remote segment in the
 * same queue, pulled at the head straight into the first posted receive
 * when that has room for all of it, else into a segment of ours: at once
 * when a receive is waiting, or after stream_stage_delay_us of progress
 * with none. So a send completes on the receiver's progress alone, as an
 * eager one does.
 */
#ifndef UCP_STREAM_STREAM_H
#define UCP_STREAM_STREAM_H

#include <ucp/core/ucp_worker.h>
#include <ucp/proto/wire.h>
#include <ucs/datastruct/intrusive_list.h>
#include <ucs/datastruct/intrusive_queue.h>
#include <ucs/memory/mpool.h>

#include <cstdint>
#include <deque>

namespace ucp {

constexpr uint32_t stream_seg_magic = 0x5e95e901u;

/* Received bytes not consumed yet; the data follows the header. */
struct alignas(16) stream_seg {
    ucs::queue_elem qelem;
    uint32_t magic;
    uint8_t pooled; /* a seg_pool element, else malloc'ed */
    uint8_t remote; /* a rendezvous: data() holds a stream_remote */
    size_t length;  /* bytes at data(); remote: the sender's bytes */
    size_t offset;  /* bytes consumed so far (remote: 0) */

    uint8_t *data() { return reinterpret_cast<uint8_t *>(this + 1); }
    size_t left() const { return length - offset; }
};

using stream_seg_queue = ucs::intrusive_queue<stream_seg, &stream_seg::qelem>;

/* What a remote segment holds at data(); the sender's packed key follows. */
struct stream_remote {
    wire::rts_hdr rts;
    stream_seg *staged; /* its bytes, pulled into a segment of ours */
    uint64_t arrived;   /* ucs::sys::get_time() */
    bool lost;          /* the pull failed: dropped at the head */
};

inline stream_remote *remote_of(stream_seg *seg)
{
    return reinterpret_cast<stream_remote *>(seg->data());
}

/* How long a rendezvous waits for a receive before it is pulled into a
 * segment of ours: a receive posted right after the last one completed
 * still takes it directly, a sender waits little for nobody. */
constexpr double stream_stage_delay_us = 20;

struct stream_pull;

/* The receive side of one ep's stream (ucp_ep::stream). */
struct stream_ep {
    ucp_ep *ep;
    stream_seg_queue segs;     /* in arrival order; empty while recvs wait */
    ucs::list_link recvs;      /* posted receives: request::u.recv.expected.link */
    ucs::list_link ready_link; /* in stream_worker::ready */
    bool ready        = false;
    stream_pull *pull = nullptr; /* pulling a remote segment */
    unsigned unpulled = 0;       /* remote segments no pull started on */
    bool draining     = false;   /* in stream_drain */
    bool drain_again  = false;   /* a pull ended during it */
    bool deferred     = false;   /* in stream_worker::deferred */
    bool closing      = false;   /* no new pulls: the ep goes away */
};

/* Per-worker stream state (ucp_worker::stream_state). */
struct stream_worker {
    ucs::mpool seg_pool; /* segments of one fragment's size */
    size_t pool_room = 0;
    /* Eps with data, for ucp_stream_worker_poll. */
    ucs::intrusive_list<stream_ep, &stream_ep::ready_link> ready;
    /* Eps with a rendezvous no receive took: staged from progress. */
    std::deque<stream_ep *> deferred;
    /* Rendezvous pulls so far: into a receive, into a segment of ours. */
    uint64_t pulls_direct = 0;
    uint64_t pulls_staged = 0;
};

/* The worker's stream state, made on first use; nullptr: no memory. */
stream_worker *stream_worker_get(ucp_worker *worker);

/* The stream state of `ep`, made on first use. nullptr: no memory. */
stream_ep *stream_ep_attach(ucp_worker *worker, ucp_ep *ep);

/* Puts the ep on the ready list while it has data, takes it off when not. */
void stream_ep_update_ready(stream_worker *sw, stream_ep *se);

/* A segment for `length` bytes (pooled when it fits); nullptr: no memory. */
stream_seg *stream_seg_alloc(stream_worker *sw, size_t length);
void stream_seg_free(stream_seg *seg);

/* Moves the ep's stream on: queued bytes into posted receives, the head
 * rendezvous pulled (`staging`: even with no receive posted); completed
 * receives are called back last. Re-entered, it only asks its caller to
 * go round again. */
void stream_drain(stream_worker *sw, stream_ep *se, bool staging);

/* Whether arriving bytes must queue behind what is there (a rendezvous at
 * the head, pulled or waiting: posted receives wait only for one) rather
 * than fill the posted receives. */
inline bool stream_must_queue(const stream_ep *se)
{
    return !se->segs.empty();
}

/* AM_STREAM_RTS handler (see set_am_handlers). */
ucs_status_t stream_rts_handler(void *arg, void *data, size_t length, unsigned flags);

/* The ep goes: its pull forgets it, its deferred entry goes. */
void stream_rndv_ep_gone(stream_worker *sw, stream_ep *se);

/* Receive requests: request::u.recv with the STREAM flag. */
bool stream_recv_can_complete(const request *req);
/* Unpacks up to `length` bytes at the receive's position; returns how many. */
size_t stream_recv_fill(request *req, const uint8_t *data, size_t length);
/* Finishes the datatype and completes with what arrived. */
void stream_recv_complete(request *req, ucs_status_t status);

/* AM_STREAM handler (see set_am_handlers). */
ucs_status_t stream_am_handler(void *arg, void *data, size_t length, unsigned flags);

} // namespace ucp

#endif
