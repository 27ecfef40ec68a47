/*
 * Helpers of the extension tests (ucp/api/ucp_ext.h): counters, and the
 * parameters of counted and triggered operations. No Catch2 inside: used
 * in forked children too.
 */
#ifndef TEST_UCP_EXT_TEST_UTIL_H
#define TEST_UCP_EXT_TEST_UTIL_H

#include <ucp/api/ucp_ext.h>

namespace ucp_test {

/* A counter on `worker` with these flags; nullptr on failure. */
inline ucp_cntr_h new_cntr(ucp_worker_h worker, uint64_t flags = 0)
{
    ucp_cntr_params_t params{};
    params.field_mask = UCP_CNTR_PARAM_FIELD_FLAGS;
    params.flags      = flags;
    ucp_cntr_h cntr   = nullptr;
    return (ucp_cntr_create(worker, &params, &cntr) == UCS_OK) ? cntr : nullptr;
}

/* Parameters of an operation counting on `cntr` (and `err_cntr`). */
inline ucp_ext_request_param_t counted_by(ucp_cntr_h cntr, ucp_cntr_h err_cntr = nullptr)
{
    ucp_ext_request_param_t ext{};
    ext.base.op_attr_mask = UCP_OP_ATTR_FIELD_EXT;
    ext.ext_field_mask    = UCP_EXT_PARAM_FIELD_CNTR |
                         ((err_cntr != nullptr) ? UCP_EXT_PARAM_FIELD_ERR_CNTR : 0);
    ext.cntr     = cntr;
    ext.err_cntr = err_cntr;
    return ext;
}

/* Parameters of an operation that starts when `trigger` reaches
 * `threshold`, counting its completion on `cntr` if given. */
inline ucp_ext_request_param_t triggered_by(ucp_cntr_h trigger, uint64_t threshold,
                                            ucp_cntr_h cntr = nullptr)
{
    ucp_ext_request_param_t ext = counted_by(cntr);
    ext.ext_field_mask          = UCP_EXT_PARAM_FIELD_TRIGGER |
                         ((cntr != nullptr) ? UCP_EXT_PARAM_FIELD_CNTR : 0);
    ext.trigger_cntr      = trigger;
    ext.trigger_threshold = threshold;
    return ext;
}

/* A posted operation that completes by itself (it counts): its request is
 * let go. False for an error. */
inline bool posted(ucs_status_ptr_t request)
{
    if (UCS_PTR_IS_ERR(request)) {
        return false;
    }
    ucp_request_free(request);
    return true;
}

} // namespace ucp_test

#endif
