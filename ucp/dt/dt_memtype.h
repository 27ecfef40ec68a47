/*
 * The memory type of an operation's buffer, for the protocols that must
 * stage non-host memory (ucp_request_param_t::memory_type, or detection).
 */
#ifndef UCP_DT_DT_MEMTYPE_H
#define UCP_DT_DT_MEMTYPE_H

#include <ucp/api/ucp.h>
#include <ucp/dt/dt.h>
#include <ucs/memory/memtype_registry.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/type/c_enum.h>

namespace ucp::dt {

namespace detail {

/* The first data byte of a contig or iov buffer (nullptr: none). */
inline const void *first_data(ucp_datatype_t dt, const void *buffer, size_t count,
                              size_t *length_p) noexcept
{
    if ((dt & UCP_DATATYPE_CLASS_MASK) == UCP_DATATYPE_CONTIG) {
        *length_p = count * (dt >> UCP_DATATYPE_SHIFT);
        return buffer;
    }
    if (((dt & UCP_DATATYPE_CLASS_MASK) == UCP_DATATYPE_IOV) && (buffer != nullptr)) {
        const auto *iov = static_cast<const ucp_dt_iov_t *>(buffer);
        for (size_t i = 0; i < count; ++i) {
            if (iov[i].length > 0) {
                *length_p = iov[i].length;
                return iov[i].buffer;
            }
        }
    }
    return nullptr; /* generic data is the application's to pack: host */
}

} // namespace detail

/*
 * The caller's memory type (UCP_OP_ATTR_FIELD_MEMORY_TYPE; UNKNOWN asks for
 * detection), else the detected type of the first data (an iov is taken to
 * live in one memory type). UCS_ERR_INVALID_PARAM for a value out of range;
 * UCS_ERR_UNSUPPORTED for a type no loaded module can copy. With no field
 * and no detector registered it is one load and a branch.
 */
inline ucs_status_t param_memory_type(const ucp_request_param_t *param, ucp_datatype_t dt,
                                      const void *buffer, size_t count,
                                      ucs_memory_type_t *type_p) noexcept
{
    ucs_memory_type_t type = UCS_MEMORY_TYPE_UNKNOWN;
    if (param->op_attr_mask & UCP_OP_ATTR_FIELD_MEMORY_TYPE) {
        const int raw = ucs::raw_enum(param->memory_type); /* any int may come in */
        if ((raw < 0) || (raw > int(UCS_MEMORY_TYPE_UNKNOWN))) {
            return UCS_ERR_INVALID_PARAM;
        }
        type = ucs_memory_type_t(raw);
    }
    if (type == UCS_MEMORY_TYPE_UNKNOWN) {
        if (ucs_likely(!ucs::memtype::have_detectors())) {
            *type_p = UCS_MEMORY_TYPE_HOST;
            return UCS_OK;
        }
        size_t length    = 0;
        const void *data = detail::first_data(dt, buffer, count, &length);
        type = (data == nullptr) ? UCS_MEMORY_TYPE_HOST : ucs::memtype::detect(data, length);
    }
    if ((type != UCS_MEMORY_TYPE_HOST) && !ucs::memtype::can_copy(type)) {
        return UCS_ERR_UNSUPPORTED;
    }
    *type_p = type;
    return UCS_OK;
}

/* packer::start or unpacker::start on the caller's buffer, in its memory
 * type (param_memory_type). */
template <typename Stream, typename Buffer>
ucs_status_t start_in_memory_type(Stream &stream, const ucp_request_param_t *param,
                                  ucp_datatype_t dt, Buffer *buffer, size_t count) noexcept
{
    ucs_memory_type_t type = UCS_MEMORY_TYPE_HOST;
    ucs_status_t status    = param_memory_type(param, dt, buffer, count, &type);
    if (status == UCS_OK) {
        status = stream.start(dt, buffer, count);
    }
    if (status == UCS_OK) {
        stream.set_memory_type(type);
    }
    return status;
}

/* Whether an inline fast path may read the contiguous `buffer` directly:
 * the caller said HOST, or said nothing and it is (no detector registered:
 * one load; else the detection, heap and remembered regions first). */
inline bool host_buffer(const ucp_request_param_t *param, const void *buffer,
                        size_t length) noexcept
{
    if (ucs_likely(!(param->op_attr_mask & UCP_OP_ATTR_FIELD_MEMORY_TYPE))) {
        return ucs::memtype::detect(buffer, length) == UCS_MEMORY_TYPE_HOST;
    }
    const int raw = ucs::raw_enum(param->memory_type);
    return (raw == int(UCS_MEMORY_TYPE_HOST)) ||
           ((raw == int(UCS_MEMORY_TYPE_UNKNOWN)) &&
            (ucs::memtype::detect(buffer, length) == UCS_MEMORY_TYPE_HOST));
}

} // namespace ucp::dt

#endif
