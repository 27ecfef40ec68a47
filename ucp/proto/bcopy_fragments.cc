#include "bcopy_fragments.h"

#include "send_common.h"

#include <ucp/core/ucp_ep.h>
#include <ucs/debug/log.h>

namespace ucp {

ucs_status_t send_bcopy_fragments(request *req, const bcopy_fragments &how)
{
    send_state &s       = req->u.send;
    const size_t length = s.packer.length();
    bool progressed     = false;
    do {
        const bool first    = (s.offset == 0) && !progressed;
        const size_t before = s.offset;
        ssize_t packed      = s.ep->am_ep->am_bcopy(first ? how.first_id : how.middle_id,
                                               first ? how.pack_first : how.pack_middle, req, 0);
        if (packed == UCS_ERR_NO_RESOURCE) {
            return (progressed || (s.offset != 0)) ? UCS_INPROGRESS : UCS_ERR_NO_RESOURCE;
        }
        if (packed < 0) {
            return ucs_status_t(packed);
        }
        if ((s.offset == before) && (before < length)) {
            ucs_error("%s: no bytes packed at offset %zu of %zu (a generic datatype's pack "
                      "returned 0, or the staging copy of device memory failed)",
                      how.operation, before, length);
            return UCS_ERR_IO_ERROR;
        }
        progressed = true;
    } while (s.offset < length);
    send_done(req);
    return UCS_OK;
}

} // namespace ucp
