/*
 * The table of UCP's active-message handlers, installed on every iface.
 */
#include "am_handlers.h"
#include "wire.h"

#include <ucp/am/am.h>
#include <ucp/ext/pwc.h>
#include <ucp/stream/stream.h>
#include <ucp/rma/rma.h>
#include <ucp/tag/rndv.h>
#include <ucp/tag/tag_recv.h>
#include <ucp/wireup/wireup.h>

namespace ucp {

static_assert(wire::AM_LAST <= uct::AM_ID_MAX, "UCP's AM ids fit the transports' id space");

ucs_status_t set_am_handlers(ucp_worker *worker, uct::iface *iface)
{
    // clang-format off
    static const struct {
        uint8_t             id;
        uct::am_callback_t  cb;
    } handlers[] = {
        {wire::AM_WIREUP,           wireup_handler},
        {wire::AM_EAGER_ONLY,       eager_only_handler},
        {wire::AM_EAGER_FIRST,      eager_first_handler},
        {wire::AM_EAGER_MIDDLE,     eager_middle_handler},
        {wire::AM_EAGER_SYNC_ONLY,  eager_sync_only_handler},
        {wire::AM_EAGER_SYNC_FIRST, eager_sync_first_handler},
        {wire::AM_SYNC_ACK,         reply_handler},
        {wire::AM_RNDV_RTS,         rndv_rts_handler},
        {wire::AM_RNDV_ATS,         reply_handler},
        {wire::AM_RNDV_RTR,         rndv_rtr_handler},
        {wire::AM_RNDV_ATP,         rndv_atp_handler},
        {wire::AM_EP_CLOSED,        ep_closed_handler},
        {wire::AM_STREAM,           stream_am_handler},
        {wire::AM_STREAM_RTS,       stream_rts_handler},
        {wire::AM_USER_SINGLE,      am_single_handler},
        {wire::AM_USER_FIRST,       am_first_handler},
        {wire::AM_USER_MIDDLE,      am_middle_handler},
        {wire::AM_USER_RTS,         am_rts_handler},
        {wire::AM_RMA_PUT,          rma_put_handler},
        {wire::AM_RMA_GET_REQ,      rma_get_req_handler},
        {wire::AM_RMA_GET_REP,      rma_get_rep_handler},
        {wire::AM_ATOMIC_REQ,       atomic_req_handler},
        {wire::AM_ATOMIC_REP,       atomic_rep_handler},
        {wire::AM_CMPL,             rma_cmpl_handler},
        {wire::AM_PWC,              pwc_handler},
        {wire::AM_PWC_CREDIT,       pwc_credit_handler},
    };
    // clang-format on
    for (const auto &h : handlers) {
        ucs_status_t status = iface->set_am_handler(h.id, h.cb, worker, 0);
        if (status != UCS_OK) {
            return status;
        }
    }
    return UCS_OK;
}

} // namespace ucp
