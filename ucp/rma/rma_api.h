/*
 * What the public RMA and atomic calls share: turning an nbx result into
 * the status of an _nbi / post call, waiting for the blocking compat calls,
 * and the parameters of a pre-nbx call.
 */
#ifndef UCP_RMA_RMA_API_H
#define UCP_RMA_RMA_API_H

#include <ucp/api/ucp.h>
#include <ucs/sys/compiler_def.h>

struct ucp_worker;

namespace ucp::rma {

/* NULL -> UCS_OK; an error -> it; a request -> released, UCS_INPROGRESS
 * (it completes on its own; a flush observes it). */
inline ucs_status_t nbi_status(ucs_status_ptr_t ptr)
{
    if (ucs_likely(ptr == nullptr)) {
        return UCS_OK;
    }
    if (UCS_PTR_IS_ERR(ptr)) {
        return UCS_PTR_STATUS(ptr);
    }
    ucp_request_free(ptr);
    return UCS_INPROGRESS;
}

/* Progresses until the nbx result completes; frees it; its status. */
ucs_status_t wait_blocking(ucp_worker *worker, ucs_status_ptr_t ptr);

/* The nbx parameters of a pre-nbx call with callback `cb` (may be NULL). */
ucp_request_param_t legacy_param(ucp_send_callback_t cb);

} // namespace ucp::rma

#endif
