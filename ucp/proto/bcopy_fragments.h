/*
 * One sender for messages that go in several bcopy fragments (tag eager,
 * user AM, stream): the first fragment, then middle ones until the whole
 * message is out, resuming where it stopped when the transport was full.
 * The pack callbacks advance the request's send offset by the payload they
 * packed; a fragment that packs none (a generic datatype's pack returning
 * 0) fails the send instead of looping for ever.
 */
#ifndef UCP_PROTO_BCOPY_FRAGMENTS_H
#define UCP_PROTO_BCOPY_FRAGMENTS_H

#include <ucp/core/ucp_request.h>
#include <uct/base/uct_iface.h>

namespace ucp {

struct bcopy_fragments {
    uint8_t first_id;                 /* AM id of the first fragment */
    uct::pack_callback_t pack_first;  /* sets the offset past its payload */
    uint8_t middle_id;                /* AM id of the others */
    uct::pack_callback_t pack_middle; /* advances the offset */
    const char *operation;            /* names the call in errors */
};

/*
 * Sends what is left of `req`'s message. UCS_OK: all of it went (the
 * request's local part is done); UCS_INPROGRESS: some went and the
 * transport is full; UCS_ERR_NO_RESOURCE: none went; an error status: the
 * transport failed, or the datatype packed nothing.
 */
ucs_status_t send_bcopy_fragments(request *req, const bcopy_fragments &how);

} // namespace ucp

#endif
