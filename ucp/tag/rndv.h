/*
 * Rendezvous internals shared by the receiver's pull (tag_rndv.cc) and the
 * sender's push (rndv_push.cc). Tag and active-message rendezvous both use
 * them: only the RTS differs. A stream rendezvous (ucp/stream/stream_rndv.cc)
 * pulls with the same receive.
 *
 * A split rendezvous moves a message with both processes copying at once:
 * the receiver answers the RTS with an RTR asking the sender to write the
 * first part into its buffer, and reads the rest itself. Between processes
 * on one node each copy is a kernel (cma) or memcpy copy bound by one core,
 * so two cores copying halves take about half the time.
 */
#ifndef UCP_TAG_RNDV_H
#define UCP_TAG_RNDV_H

#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_request.h>
#include <ucp/core/ucp_worker.h>
#include <ucp/proto/wire.h>

#include <cstdio>

namespace ucp {

/* The lane of `ep` on md `md_index` whose transport has `iface_flag`
 * (GET_ZCOPY to pull, PUT_ZCOPY to push); nullptr if none. */
const lane *rndv_lane_with(const ucp_ep *ep, unsigned md_index, uint64_t iface_flag);

/*
 * The rendezvous lane of a send: the ep's lane for its memory type, or,
 * for device memory with no such lane (no cuda_ipc to this peer), the host
 * lane once the message is staged whole into a host bounce buffer (the
 * receiver then pulls host memory). no_lane: no rendezvous.
 */
uint8_t rndv_lane_of(request *req);

/* wire::rts_flag bits the RTS of a rendezvous send carries. */
uint8_t rndv_rts_flags(const request *req);

/*
 * How a pull of `length` bytes is shared among `count` lanes of bandwidth
 * Bps[0..count), fastest first: shares[i] bytes for lane i, in proportion
 * to its bandwidth to the nearest page (the last one the rest), each at
 * least `min_chunk` (UCX_MIN_RNDV_CHUNK_SIZE); the slowest lanes are left
 * out until that holds. Returns how many lanes take a share (1: no split);
 * the shares add up to `length`.
 */
unsigned rndv_split_shares(size_t length, const double *Bps, unsigned count, size_t min_chunk,
                           size_t *shares);

/*
 * Keys of several mds (ucp/tag/rndv_keys.cc). A pull split over lanes of
 * mds besides the rendezvous lane's (rc_verbs on two adapters) needs the
 * sender's buffer registered on each, and the keys in the RTS.
 */

/* The sender's registrations on mds besides rndv_md. */
struct rndv_md_regs {
    struct entry {
        unsigned md;
        buffer_reg reg;
    };
    entry md_reg[max_lanes - 1];
    unsigned count = 0;
};

/* Sender: registers the buffer of a rendezvous send (rndv_md registered,
 * RNDV_SEND set: more_regs replaces msg_id) on the mds of the ep's other
 * rendezvous lanes, as many as the RTS has room for beside `fixed` bytes;
 * none is no error (the pull stays on rndv_md's lanes). */
void rndv_register_more(request *req, size_t fixed);

/* Sender: the RTS's key bytes (rts_hdr::rkey_length), and packing them:
 * rndv_md's packed key, or, with more registrations, the key list. */
size_t rndv_keys_length(const request *req);
bool rndv_pack_keys(const request *req, void *dest);

/* Receiver: the keys of an RTS, pointing into its bytes. */
struct rts_keys {
    struct other {
        char md_name[wire::rts_md_name_max]; /* NUL-terminated */
        const uint8_t *key;
        size_t length;
    };
    const uint8_t *key = nullptr; /* of the header's md */
    size_t length      = 0;
    other others[max_lanes];
    unsigned num_others = 0;
};

/* Receiver: reads the key bytes of an RTS (rts.flags says which form);
 * false: malformed (an entry past the bytes, a name without its end, no
 * entry for the header's md, or more entries than lanes). */
bool rndv_read_keys(const wire::rts_hdr &rts, const uint8_t *bytes, size_t length, rts_keys *out);

/* Sender: the fields the tag (rts_hdr) and active-message (am_rts_hdr) RTS
 * share, from a rendezvous send (rndv_select made it one). */
template <typename Hdr>
void rndv_fill_rts(Hdr &hdr, const request *req)
{
    const send_state &s = req->u.send;
    const ucp_worker *w = req->worker;
    hdr.src_uuid        = w->uuid;
    hdr.sreq_id         = req->id;
    hdr.address         = reinterpret_cast<uintptr_t>(s.packer.contig_buffer());
    hdr.length          = s.packer.length();
    hdr.rkey_length     = uint32_t(rndv_keys_length(req));
    hdr.flags           = rndv_rts_flags(req);
    hdr.ep_id           = s.ep->remote_id;
    std::snprintf(hdr.md_name, sizeof(hdr.md_name), "%s", w->context.mds[s.rndv_md].name.c_str());
}

/* Sender: the RTS of a rendezvous send (rndv_select made it one): rts_hdr
 * and the packed key of its registration; returns the bytes packed, 0 if the
 * key could not be packed. */
size_t rndv_pack_rts(request *req, void *dest);

/* Sender: sends the RTS under `am_id` (tag or stream) and marks every byte
 * handed over; the ATS completes the request. */
ucs_status_t rndv_send_rts(request *req, uint8_t am_id);

/* Receiver: an RTS from a peer (tag or stream): the header and the packed key
 * after it, checked (the key's length, the md name's end, the length).
 * false: malformed. */
bool rndv_read_rts(const void *data, size_t length, wire::rts_hdr *rts, const uint8_t **rkey);

/* Sender: an RTR asked it to write part of the message. */
ucs_status_t rndv_rtr_handler(void *arg, void *data, size_t length, unsigned flags);

/* Receiver: the sender's ATP, its part is in place. */
ucs_status_t rndv_atp_handler(void *arg, void *data, size_t length, unsigned flags);

/* Sender: issues (or resumes) the push; false when it waits for resources. */
void rndv_push_continue(request *req);

/* Sender: the ep failed while the push was in flight. */
void rndv_push_fail(request *req, ucs_status_t status);

} // namespace ucp

#endif
