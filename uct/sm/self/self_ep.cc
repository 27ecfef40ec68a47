#include <uct/sm/self/self_ep.h>

#include <uct/sm/self/self_iface.h>
#include <uct/sm/self/self_rkey.h>

#include <ucs/debug/log.h>

#include <cstring>

namespace uct::self {

self_ep::self_ep(self_iface &iface) : uct::ep(iface)
{
}

self_ep::~self_ep()
{
    /* Requests still queued would point at a dead ep: drop them. */
    iface().pending_purge(this, nullptr, nullptr);
}

self_iface &self_ep::iface() const
{
    return static_cast<self_iface &>(owner());
}

ucs_status_t self_ep::check_iov(const iov *iov, size_t iovcnt, size_t max_iov,
                                size_t *total_p) const
{
    if (ucs_unlikely((iovcnt > max_iov) || ((iov == nullptr) && (iovcnt != 0)))) {
        return UCS_ERR_INVALID_PARAM;
    }
    size_t total = 0;
    for (size_t i = 0; i < iovcnt; ++i) {
        if (ucs_unlikely(__builtin_add_overflow(total, iov[i].length, &total))) {
            return UCS_ERR_INVALID_PARAM;
        }
    }
    *total_p = total;
    return UCS_OK;
}

ucs_status_t self_ep::check_access(uint64_t remote_addr, size_t length, rkey_t rkey,
                                   bool quiet) const
{
    if (is_no_rkey(rkey)) {
        if (ucs_likely(iface().config().keyless_rma)) {
            return UCS_OK;
        }
        if (!quiet) {
            ucs_diag("self: access without a remote key refused");
        }
        return UCS_ERR_INVALID_PARAM;
    }
    const auto *region = reinterpret_cast<const remote_region *>(rkey);
    if (ucs_unlikely((region->magic != REMOTE_REGION_MAGIC) || (region->pid != iface().pid()))) {
        if (!quiet) {
            ucs_diag("self: remote key is not a self key of this process");
        }
        return UCS_ERR_INVALID_PARAM;
    }
    if (ucs_unlikely(!region->contains(remote_addr, length))) {
        if (!quiet) {
            ucs_diag("self: [0x%lx, +%zu) is outside the key's region [0x%lx, +%lu)", remote_addr,
                     length, region->address, region->length);
        }
        return UCS_ERR_OUT_OF_RANGE;
    }
    return UCS_OK;
}

/* ---- active messages ---- */

ucs_status_t self_ep::am_short(am_id_t id, uint64_t header, const void *payload, unsigned length)
{
    if (ucs_unlikely((id >= AM_ID_MAX) || (length > iface().attr().am.max_short - sizeof(header)) ||
                     ((payload == nullptr) && (length != 0)))) {
        return UCS_ERR_INVALID_PARAM;
    }
    ssize_t sent = iface().send_am(id, [&](uint8_t *data) -> ssize_t {
        std::memcpy(data, &header, sizeof(header));
        if (length != 0) {
            std::memcpy(data + sizeof(header), payload, length);
        }
        return ssize_t(sizeof(header) + length);
    });
    return (sent < 0) ? ucs_status_t(sent) : UCS_OK;
}

ssize_t self_ep::am_bcopy(am_id_t id, pack_callback_t pack, void *arg, unsigned)
{
    if (ucs_unlikely((id >= AM_ID_MAX) || (pack == nullptr))) {
        return UCS_ERR_INVALID_PARAM;
    }
    const size_t max = iface().attr().am.max_bcopy;
    return iface().send_am(id, [&](uint8_t *data) -> ssize_t {
        size_t length = pack(data, arg);
        if (ucs_unlikely(length > max)) {
            ucs_error("self: am_bcopy packer wrote %zu bytes, limit %zu", length, max);
            return UCS_ERR_INVALID_PARAM;
        }
        return ssize_t(length);
    });
}

ucs_status_t self_ep::am_zcopy(am_id_t id, const void *header, unsigned header_length,
                               const iov *iov, size_t iovcnt, unsigned, completion *)
{
    const iface_attr &attr = iface().attr();
    size_t total;
    if (ucs_unlikely((id >= AM_ID_MAX) || (header_length > attr.am.max_hdr) ||
                     ((header == nullptr) && (header_length != 0)) ||
                     (check_iov(iov, iovcnt, attr.am.max_iov, &total) != UCS_OK) ||
                     (total > attr.am.max_zcopy))) {
        return UCS_ERR_INVALID_PARAM;
    }

    /* One piece, nothing to prepend: hand the caller's buffer over as is. */
    if ((header_length == 0) && (iovcnt == 1) && iface().delivers_directly()) {
        iface().deliver_in_place(id, iov[0].buffer, iov[0].length);
        return UCS_OK;
    }

    ssize_t sent = iface().send_am(id, [&](uint8_t *data) -> ssize_t {
        if (header_length != 0) {
            std::memcpy(data, header, header_length);
        }
        uint8_t *p = data + header_length;
        for (size_t i = 0; i < iovcnt; ++i) {
            if (iov[i].length != 0) {
                std::memcpy(p, iov[i].buffer, iov[i].length);
                p += iov[i].length;
            }
        }
        return ssize_t(header_length + total);
    });
    /* The data is copied or delivered: the caller's buffers are free now. */
    return (sent < 0) ? ucs_status_t(sent) : UCS_OK;
}

/* ---- RMA ---- */

ucs_status_t self_ep::put_short(const void *buffer, unsigned length, uint64_t remote_addr,
                                rkey_t rkey)
{
    if (ucs_unlikely((buffer == nullptr) && (length != 0))) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucs_status_t status = check_access(remote_addr, length, rkey);
    if (ucs_likely(status == UCS_OK) && (length != 0)) {
        std::memcpy(reinterpret_cast<void *>(remote_addr), buffer, length);
    }
    return status;
}

ssize_t self_ep::put_bcopy(pack_callback_t pack, void *arg, uint64_t remote_addr, rkey_t rkey)
{
    if (ucs_unlikely(pack == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    const size_t max = iface().attr().put.max_bcopy;

    /* If even a maximal pack stays inside the key, pack in place; otherwise
     * stage it, since the length is known only after packing. */
    if (check_access(remote_addr, max, rkey, true) == UCS_OK) {
        size_t length = pack(reinterpret_cast<void *>(remote_addr), arg);
        if (ucs_unlikely(length > max)) {
            ucs_error("self: put_bcopy packer wrote %zu bytes, limit %zu", length, max);
            return UCS_ERR_INVALID_PARAM;
        }
        return ssize_t(length);
    }

    uint8_t *stage = iface().bounce_buffer();
    size_t length  = pack(stage, arg);
    if (ucs_unlikely(length > max)) {
        ucs_error("self: put_bcopy packer wrote %zu bytes, limit %zu", length, max);
        return UCS_ERR_INVALID_PARAM;
    }
    ucs_status_t status = check_access(remote_addr, length, rkey);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    if (length != 0) {
        std::memcpy(reinterpret_cast<void *>(remote_addr), stage, length);
    }
    return ssize_t(length);
}

ucs_status_t self_ep::put_zcopy(const iov *iov, size_t iovcnt, uint64_t remote_addr, rkey_t rkey,
                                completion *)
{
    size_t total;
    ucs_status_t status = check_iov(iov, iovcnt, iface().attr().put.max_iov, &total);
    if (ucs_likely(status == UCS_OK)) {
        status = check_access(remote_addr, total, rkey);
    }
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    auto *dest = reinterpret_cast<uint8_t *>(remote_addr);
    for (size_t i = 0; i < iovcnt; ++i) {
        if (iov[i].length != 0) {
            std::memmove(dest, iov[i].buffer, iov[i].length);
            dest += iov[i].length;
        }
    }
    return UCS_OK;
}

ucs_status_t self_ep::get_bcopy(unpack_callback_t unpack, void *arg, size_t length,
                                uint64_t remote_addr, rkey_t rkey, completion *)
{
    if (ucs_unlikely(unpack == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucs_status_t status = check_access(remote_addr, length, rkey);
    if (ucs_likely(status == UCS_OK)) {
        unpack(arg, reinterpret_cast<const void *>(remote_addr), length);
    }
    return status;
}

ucs_status_t self_ep::get_zcopy(const iov *iov, size_t iovcnt, uint64_t remote_addr, rkey_t rkey,
                                completion *)
{
    size_t total;
    ucs_status_t status = check_iov(iov, iovcnt, iface().attr().get.max_iov, &total);
    if (ucs_likely(status == UCS_OK)) {
        status = check_access(remote_addr, total, rkey);
    }
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    auto *src = reinterpret_cast<const uint8_t *>(remote_addr);
    for (size_t i = 0; i < iovcnt; ++i) {
        if (iov[i].length != 0) {
            std::memmove(const_cast<void *>(iov[i].buffer), src, iov[i].length);
            src += iov[i].length;
        }
    }
    return UCS_OK;
}

/* ---- atomics ---- */

template <typename T>
ucs_status_t self_ep::atomic(atomic_op op, uint64_t value, uint64_t compare, void *result,
                             uint64_t remote_addr, rkey_t rkey, bool fetch)
{
    if (ucs_unlikely((remote_addr % sizeof(T)) != 0)) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucs_status_t status = check_access(remote_addr, sizeof(T), rkey);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    auto *target    = reinterpret_cast<T *>(remote_addr);
    const T operand = T(value);
    T old;
    switch (op) {
    case atomic_op::ADD:
        old = __atomic_fetch_add(target, operand, __ATOMIC_SEQ_CST);
        break;
    case atomic_op::AND:
        old = __atomic_fetch_and(target, operand, __ATOMIC_SEQ_CST);
        break;
    case atomic_op::OR:
        old = __atomic_fetch_or(target, operand, __ATOMIC_SEQ_CST);
        break;
    case atomic_op::XOR:
        old = __atomic_fetch_xor(target, operand, __ATOMIC_SEQ_CST);
        break;
    case atomic_op::SWAP:
        old = __atomic_exchange_n(target, operand, __ATOMIC_SEQ_CST);
        break;
    case atomic_op::CSWAP:
        old = T(compare);
        __atomic_compare_exchange_n(target, &old, operand, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST);
        break;
    default:
        return UCS_ERR_UNSUPPORTED;
    }
    if (fetch) {
        std::memcpy(result, &old, sizeof(old));
    }
    return UCS_OK;
}

ucs_status_t self_ep::atomic_post(atomic_op op, unsigned size, uint64_t value, uint64_t remote_addr,
                                  rkey_t rkey)
{
    /* Swaps without a result are not operations UCT defines. */
    if (ucs_unlikely((op == atomic_op::SWAP) || (op == atomic_op::CSWAP) ||
                     (op >= atomic_op::LAST))) {
        return UCS_ERR_UNSUPPORTED;
    }
    switch (size) {
    case 4:
        return atomic<uint32_t>(op, value, 0, nullptr, remote_addr, rkey, false);
    case 8:
        return atomic<uint64_t>(op, value, 0, nullptr, remote_addr, rkey, false);
    default:
        return UCS_ERR_INVALID_PARAM;
    }
}

ucs_status_t self_ep::atomic_fetch(atomic_op op, unsigned size, uint64_t value, uint64_t compare,
                                   void *result, uint64_t remote_addr, rkey_t rkey, completion *)
{
    if (ucs_unlikely(op >= atomic_op::LAST)) {
        return UCS_ERR_UNSUPPORTED;
    }
    if (ucs_unlikely(result == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    switch (size) {
    case 4:
        return atomic<uint32_t>(op, value, compare, result, remote_addr, rkey, true);
    case 8:
        return atomic<uint64_t>(op, value, compare, result, remote_addr, rkey, true);
    default:
        return UCS_ERR_INVALID_PARAM;
    }
}

/* ---- resources ---- */

ucs_status_t self_ep::pending_add(pending_req *req, unsigned)
{
    if (ucs_unlikely((req == nullptr) || (req->func == nullptr))) {
        return UCS_ERR_INVALID_PARAM;
    }
    return iface().pending_add(this, req);
}

void self_ep::pending_purge(pending_purge_callback_t cb, void *arg)
{
    iface().pending_purge(this, cb, arg);
}

ucs_status_t self_ep::flush(unsigned, completion *)
{
    return iface().flush_queue();
}

ucs_status_t self_ep::check(unsigned, completion *)
{
    return UCS_OK;
}

} // namespace uct::self
