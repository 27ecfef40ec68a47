/*
 * Tagged sends (see tag_send.cc).
 */
#ifndef UCP_TAG_TAG_SEND_H
#define UCP_TAG_TAG_SEND_H

#include <ucp/core/ucp_request.h>

namespace ucp {

/* The first protocol step for the message in req->u.send. */
send_step_t tag_select_protocol(request *req);

/* The body of ucp_tag_send_nbx / ucp_tag_send_sync_nbx (lock held). */
ucs_status_ptr_t tag_send_common(ucp_ep *ep, const void *buffer, size_t count, ucp_tag_t tag,
                                 const ucp_request_param_t *param, bool sync);

} // namespace ucp

#endif
