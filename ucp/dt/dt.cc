/*
 * ucp_dt_create_generic / ucp_dt_destroy and the cold error path of the
 * datatype checks.
 */
#include "dt.h"

#include <ucs/debug/log.h>

#include <new>

namespace ucp::dt {

ucs_status_t reject(ucp_datatype_t dt, const char *why) noexcept
{
    ucs_error("invalid datatype 0x%llx: %s", static_cast<unsigned long long>(dt), why);
    return UCS_ERR_INVALID_PARAM;
}

} // namespace ucp::dt

using ucp::dt::generic_dt;

ucs_status_t ucp_dt_create_generic(const ucp_generic_dt_ops_t *ops, void *context,
                                   ucp_datatype_t *datatype_p)
{
    if ((ops == nullptr) || (datatype_p == nullptr)) {
        ucs_error("ucp_dt_create_generic: ops and datatype_p must not be NULL");
        return UCS_ERR_INVALID_PARAM;
    }

    auto *gen = new (std::nothrow) generic_dt{*ops, context};
    if (gen == nullptr) {
        ucs_error("ucp_dt_create_generic: out of memory");
        return UCS_ERR_NO_MEMORY;
    }

    /* operator new aligns to at least 16 bytes, so the class bits are 0. */
    auto address = reinterpret_cast<uintptr_t>(gen);
    static_assert(__STDCPP_DEFAULT_NEW_ALIGNMENT__ > UCP_DATATYPE_CLASS_MASK);
    *datatype_p = static_cast<ucp_datatype_t>(address) | UCP_DATATYPE_GENERIC;
    return UCS_OK;
}

void ucp_dt_destroy(ucp_datatype_t datatype)
{
    switch (datatype & UCP_DATATYPE_CLASS_MASK) {
    case UCP_DATATYPE_CONTIG:
    case UCP_DATATYPE_IOV:
        return; /* nothing was allocated for them */
    case UCP_DATATYPE_GENERIC:
        /* delete of a NULL pointer is a no-op */
        delete ucp::dt::generic_of(datatype);
        return;
    default:
        ucs_error("ucp_dt_destroy: invalid datatype 0x%llx",
                  static_cast<unsigned long long>(datatype));
        return;
    }
}
