/*
 * Eager zero-copy: each fragment of a message goes out with am_zcopy on the
 * ep's AM lane, its UCP header copied inline by the transport and the data
 * sent from the application's buffer in place (registered first where the
 * lane's md needs a memory handle). The protocols (tag, active messages,
 * stream) only say what header a fragment carries; this file issues the
 * fragments, retries them from the pending queue, and completes the send
 * from the transport's completion, never before: until then the buffer
 * belongs to the transport.
 *
 *   case proto::protocol::EAGER_ZCOPY:   // the table's choice
 *       return zcopy::applies(req, header_length) ? my_zcopy_step : nullptr;
 */
#ifndef UCP_PROTO_EAGER_ZCOPY_H
#define UCP_PROTO_EAGER_ZCOPY_H

#include <ucp/core/ucp_request.h>
#include <ucp/core/ucp_worker.h>
#include <ucp/proto/wire.h>

namespace ucp::zcopy {

/* The largest UCP header a fragment carries: an active message's first
 * fragment with the largest user header. */
constexpr size_t max_header = sizeof(wire::am_first_hdr) + max_am_header;

/* Data entries one fragment is built from at most (bounds a stack array). */
constexpr size_t max_iov = 16;

/*
 * Writes the UCP header of the fragment that carries message bytes
 * [offset, offset + length) into `out` (max_header bytes of room); returns
 * its length and sets *am_id. offset == 0 && length == the message length:
 * the message goes in one piece.
 */
using header_fn = size_t (*)(request *req, size_t offset, size_t length, void *out, uint8_t *am_id);

/*
 * Whether the send in req->u.send (ep, packer set), for which the
 * selection table (ucp/proto/select.h) chose eager zcopy, can go zero-copy
 * with UCP headers of at most `max_header_length` bytes: the header fits,
 * the data is contiguous (registered here when the lane's md needs it) or
 * an iov that one fragment covers. When true the request is set up for
 * send() (request_flag::ZCOPY); when false nothing changed and the next
 * protocol of the table serves the message.
 */
bool applies(request *req, size_t max_header_length);

/*
 * The step body: issues fragments of at most `frag_size` bytes (the ep's
 * zcopy_frag or am_zcopy_frag) from req->u.send.offset until all are out.
 * Returns UCS_OK (every fragment issued; the send completes when the
 * transport is done with them, maybe already), UCS_INPROGRESS or
 * UCS_ERR_NO_RESOURCE (retry from the pending queue), or an error when
 * nothing was issued by the first call (the caller fails the send).
 */
ucs_status_t send(request *req, header_fn header, size_t frag_size);

/*
 * The ep fails or is destroyed while the send is queued or in flight.
 * lanes_gone: the lanes are destroyed next, so the transport will complete
 * nothing further: the send completes now; otherwise it completes with
 * `status` once the transport gives back what it still holds.
 */
void abort(request *req, ucs_status_t status, bool lanes_gone);

} // namespace ucp::zcopy

#endif
