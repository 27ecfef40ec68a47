/*
 * Tagged receives: the receiver's AM handlers (eager and rendezvous
 * messages, acks), the unexpected-message store, and the pieces the
 * rendezvous receive shares with them.
 */
#ifndef UCP_TAG_TAG_RECV_H
#define UCP_TAG_TAG_RECV_H

#include <ucp/core/ucp_request.h>
#include <ucp/proto/wire.h>

struct ucp_worker;

namespace ucp {

/* A message that arrived before its receive was posted. Made per
 * unexpected message: rts is left unset unless rndv (72 bytes an eager
 * message never reads, and a zeroing it would pay for each). */
struct rx_message {
    tag::unexpected_entry entry;
    bool rndv         = false;
    bool sync         = false;
    uint64_t src_uuid = 0;
    uint64_t sreq_id  = 0;
    uint64_t ep_id    = 0; /* sync: our ep the sender named, the ack goes out of it */
    uint64_t msg_id   = 0;
    size_t total      = 0;        /* message length */
    size_t received   = 0;        /* eager bytes stored so far */
    wire::rts_hdr rts;            /* rendezvous: the sender's offer */
    size_t data_length = 0;       /* bytes at data: payload, or the packed rkey */
    bool pooled        = false;   /* from ucp_worker::rx_message_pool, else malloc */
    ucs_status_t lost  = UCS_OK;  /* its sender died before sending the rest */
    uint8_t *data      = nullptr; /* right after this struct */
};

/* Payload bytes a pooled message descriptor holds; larger ones are malloc'd
 * (their copy costs more than the allocation). */
constexpr size_t rx_message_pooled_payload = 256;

/* AM handlers (see set_am_handlers). */
ucs_status_t eager_only_handler(void *arg, void *data, size_t length, unsigned flags);
ucs_status_t eager_sync_only_handler(void *arg, void *data, size_t length, unsigned flags);
ucs_status_t eager_first_handler(void *arg, void *data, size_t length, unsigned flags);
ucs_status_t eager_sync_first_handler(void *arg, void *data, size_t length, unsigned flags);
ucs_status_t eager_middle_handler(void *arg, void *data, size_t length, unsigned flags);
ucs_status_t rndv_rts_handler(void *arg, void *data, size_t length, unsigned flags);
ucs_status_t reply_handler(void *arg, void *data, size_t length, unsigned flags);

/* Frees unexpected messages at worker destruction. */
void tag_recv_cleanup(ucp_worker *worker);

/* The peer worker `uuid` is gone: messages it was sending in fragments
 * never complete. Their receives fail with `status`; partly arrived
 * unexpected ones fail the receive that takes them. */
void tag_recv_peer_lost(ucp_worker *worker, uint64_t uuid, ucs_status_t status);

/* Starts pulling a matched rendezvous message into req. */
void rndv_recv_start(ucp_worker *worker, request *req, const wire::rts_hdr &rts, const void *rkey,
                     size_t rkey_length);

/* Receive completion with the datatype finished. */
void recv_finish(request *req, ucs_status_t status);

} // namespace ucp

#endif
