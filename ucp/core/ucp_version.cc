/*
 * Version of the loaded library: the UCX API level we are compatible with,
 * and our own release.
 */
#include "ucx_ng_config.h"

#include <ucp/api/ucp.h>

extern "C" {

void ucp_get_version(unsigned *major_version, unsigned *minor_version, unsigned *release_number)
{
    if (major_version != nullptr) {
        *major_version = UCX_API_MAJOR;
    }
    if (minor_version != nullptr) {
        *minor_version = UCX_API_MINOR;
    }
    if (release_number != nullptr) {
        *release_number = UCX_API_RELEASE;
    }
}

#define UCP_STR_(_x) #_x
#define UCP_STR(_x)  UCP_STR_(_x)

const char *ucp_get_version_string(void)
{
    /* Both numbers: applications compare the first, people read the second. */
    return UCP_STR(UCX_API_MAJOR) "." UCP_STR(UCX_API_MINOR) "." UCP_STR(
        UCX_API_RELEASE) " (ucx-ng " UCX_NG_VERSION ")";
}

ucs_status_t ucp_lib_query(ucp_lib_attr_t *attr)
{
    if (attr == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (attr->field_mask & UCP_LIB_ATTR_FIELD_MAX_THREAD_LEVEL) {
        attr->max_thread_level = UCS_THREAD_MODE_MULTI;
    }
    return UCS_OK;
}

} // extern "C"
