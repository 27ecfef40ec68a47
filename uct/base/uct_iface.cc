#include <uct/base/uct_iface.h>

#include <ucs/debug/log.h>

#include <cstring>

namespace uct {

ucs_status_t iface::set_am_handler(am_id_t id, am_callback_t cb, void *arg, unsigned flags)
{
    if (id >= AM_ID_MAX) {
        ucs_error("active message id %u out of range (max %u)", id, AM_ID_MAX - 1);
        return UCS_ERR_INVALID_PARAM;
    }
    if (cb == nullptr) {
        am_handlers_[id] = {unhandled_am, nullptr, 0};
    } else {
        am_handlers_[id] = {cb, arg, flags};
    }
    return UCS_OK;
}

ucs_status_t iface::unhandled_am(void *, void *, size_t length, unsigned)
{
    /* A peer sent an id nobody registered here: drop it rather than fail,
     * the bytes came from outside this process. */
    ucs_warn("dropped active message of %zu bytes with no handler", length);
    return UCS_OK;
}

ucs_status_t iface::drop_am(am_id_t id, size_t length)
{
    ucs_warn("dropped active message of %zu bytes with invalid id %u", length, id);
    return UCS_OK;
}

ucs_status_t iface::ep_create_connected(const void *, size_t, const void *, size_t, ep **)
{
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t iface::ep_create(ep **)
{
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t iface::flush(unsigned, completion *)
{
    return UCS_OK;
}

ucs_status_t iface::fence(unsigned)
{
    return UCS_OK;
}

void iface::release_am_desc(void *)
{
}

ucs_status_t iface::event_fd_get(int *)
{
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t iface::event_arm(unsigned)
{
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t ep::am_short(am_id_t, uint64_t, const void *, unsigned)
{
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t ep::am_short_iov(am_id_t id, const iov *iov, size_t iovcnt)
{
    /* Room for the largest short AM any transport here takes (self: 8 KiB). */
    constexpr size_t max_gathered = 16384;
    uint8_t gathered[max_gathered];
    size_t length = 0;
    for (size_t i = 0; i < iovcnt; ++i) {
        if ((iov[i].length > max_gathered - length) ||
            ((iov[i].length != 0) && (iov[i].buffer == nullptr))) {
            return UCS_ERR_INVALID_PARAM;
        }
        if (iov[i].length != 0) { /* an empty entry may have no buffer */
            std::memcpy(gathered + length, iov[i].buffer, iov[i].length);
            length += iov[i].length;
        }
    }
    uint64_t header;
    if (length < sizeof(header)) {
        return UCS_ERR_INVALID_PARAM;
    }
    std::memcpy(&header, gathered, sizeof(header));
    return am_short(id, header, gathered + sizeof(header), unsigned(length - sizeof(header)));
}

ssize_t ep::am_bcopy(am_id_t, pack_callback_t, void *, unsigned)
{
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t ep::am_zcopy(am_id_t, const void *, unsigned, const iov *, size_t, unsigned,
                          completion *)
{
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t ep::put_short(const void *, unsigned, uint64_t, rkey_t)
{
    return UCS_ERR_UNSUPPORTED;
}

ssize_t ep::put_bcopy(pack_callback_t, void *, uint64_t, rkey_t)
{
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t ep::put_zcopy(const iov *, size_t, uint64_t, rkey_t, completion *)
{
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t ep::get_bcopy(unpack_callback_t, void *, size_t, uint64_t, rkey_t, completion *)
{
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t ep::get_zcopy(const iov *, size_t, uint64_t, rkey_t, completion *)
{
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t ep::atomic_post(atomic_op, unsigned, uint64_t, uint64_t, rkey_t)
{
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t ep::atomic_fetch(atomic_op, unsigned, uint64_t, uint64_t, void *, uint64_t, rkey_t,
                              completion *)
{
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t ep::pending_add(pending_req *, unsigned)
{
    return UCS_ERR_UNSUPPORTED;
}

void ep::pending_purge(pending_purge_callback_t, void *)
{
}

ucs_status_t ep::flush(unsigned, completion *)
{
    return UCS_OK;
}

ucs_status_t ep::fence(unsigned)
{
    return UCS_OK;
}

ucs_status_t ep::get_address(void *) const
{
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t ep::connect_to_ep(const void *, size_t, const void *, size_t)
{
    return UCS_ERR_UNSUPPORTED;
}

ucs_status_t ep::check(unsigned, completion *)
{
    return UCS_ERR_UNSUPPORTED;
}

} // namespace uct
