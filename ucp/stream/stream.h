/*
 * Streams (ucp_stream_*): ordered bytes per endpoint, no message
 * boundaries. The sender cuts a send into AM_STREAM fragments on the ep's
 * AM lane (which keeps order), each naming the receiver's ep paired with
 * the sender's in the wireup; the receiver appends each fragment to that
 * ep's stream: first into posted receives, in post order, and what is left
 * into segments that later receives, ucp_stream_recv_data_nb and
 * ucp_stream_worker_poll see. An ep made for a peer's wireup request keeps
 * what arrives until the application's ucp_ep_create adopts it.
 */
#ifndef UCP_STREAM_STREAM_H
#define UCP_STREAM_STREAM_H

#include <ucp/core/ucp_worker.h>
#include <ucs/datastruct/intrusive_list.h>
#include <ucs/datastruct/intrusive_queue.h>
#include <ucs/memory/mpool.h>

#include <cstdint>

namespace ucp {

constexpr uint32_t stream_seg_magic = 0x5e95e901u;

/* Received bytes not consumed yet; the data follows the header. */
struct alignas(16) stream_seg {
    ucs::queue_elem qelem;
    uint32_t        magic;
    uint8_t         pooled;    /* a seg_pool element, else malloc'ed */
    size_t          length;    /* bytes at data() */
    size_t          offset;    /* bytes consumed so far */

    uint8_t *data() { return reinterpret_cast<uint8_t*>(this + 1); }
    size_t left() const { return length - offset; }
};

using stream_seg_queue = ucs::intrusive_queue<stream_seg, &stream_seg::qelem>;

/* The receive side of one ep's stream (ucp_ep::stream). */
struct stream_ep {
    ucp_ep           *ep;
    stream_seg_queue segs;       /* in arrival order; empty while recvs wait */
    ucs::list_link   recvs;      /* posted receives: request::u.recv.expected.link */
    ucs::list_link   ready_link; /* in stream_worker::ready */
    bool             ready = false;
};

/* Per-worker stream state (ucp_worker::stream_state). */
struct stream_worker {
    ucs::mpool     seg_pool;         /* segments of one fragment's size */
    size_t         pool_room = 0;
    /* Eps with data, for ucp_stream_worker_poll. */
    ucs::intrusive_list<stream_ep, &stream_ep::ready_link> ready;
};

/* The worker's stream state, made on first use; nullptr: no memory. */
stream_worker *stream_worker_get(ucp_worker *worker);

/* The stream state of `ep`, made on first use. nullptr: no memory. */
stream_ep *stream_ep_attach(ucp_worker *worker, ucp_ep *ep);

/* Puts the ep on the ready list while it has data, takes it off when not. */
void stream_ep_update_ready(stream_worker *sw, stream_ep *se);

void stream_seg_free(stream_seg *seg);

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
