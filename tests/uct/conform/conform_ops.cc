#include "conform_ops.h"

#include <algorithm>
#include <cstring>

namespace test::conform {

namespace flag = uct::iface_flag;

namespace {

struct bytes_arg {
    const uint8_t *data;
    size_t length;
};

size_t pack_bytes(void *dest, void *arg)
{
    auto *a = static_cast<bytes_arg *>(arg);
    if (a->length != 0) {
        std::memcpy(dest, a->data, a->length);
    }
    return a->length;
}

/* get_bcopy's callback: may run before or after the call returns. */
void unpack_bytes(void *arg, const void *data, size_t length)
{
    auto *t = static_cast<get_target *>(arg);
    ++t->unpacked;
    t->whole &= (length == t->length);
    std::memcpy(t->buffer, data, std::min(length, t->length));
}

ucs_status_t bcopy_status(ssize_t sent, size_t length)
{
    if (sent < 0) {
        return ucs_status_t(sent);
    }
    return (size_t(sent) == length) ? UCS_OK : UCS_ERR_MESSAGE_TRUNCATED;
}

std::vector<op_kind> kinds(const uct::iface_attr &attr, uint64_t s, uint64_t b, uint64_t z)
{
    std::vector<op_kind> out;
    if (attr.flags & s) {
        out.push_back(op_kind::SHORT);
    }
    if (attr.flags & b) {
        out.push_back(op_kind::BCOPY);
    }
    if (attr.flags & z) {
        out.push_back(op_kind::ZCOPY);
    }
    return out;
}

size_t limit(const uct::op_limits &lim, op_kind kind)
{
    switch (kind) {
    case op_kind::SHORT:
        return lim.max_short;
    case op_kind::BCOPY:
        return lim.max_bcopy;
    default:
        return lim.max_zcopy;
    }
}

} // namespace

const char *kind_name(op_kind kind)
{
    switch (kind) {
    case op_kind::SHORT:
        return "short";
    case op_kind::BCOPY:
        return "bcopy";
    default:
        return "zcopy";
    }
}

std::vector<op_kind> am_kinds(const uct::iface_attr &attr)
{
    return kinds(attr, flag::AM_SHORT, flag::AM_BCOPY, flag::AM_ZCOPY);
}

std::vector<op_kind> put_kinds(const uct::iface_attr &attr)
{
    return kinds(attr, flag::PUT_SHORT, flag::PUT_BCOPY, flag::PUT_ZCOPY);
}

std::vector<op_kind> get_kinds(const uct::iface_attr &attr)
{
    /* No get_short in this interface. */
    return kinds(attr, 0, flag::GET_BCOPY, flag::GET_ZCOPY);
}

size_t am_limit(const uct::iface_attr &attr, op_kind kind)
{
    return limit(attr.am, kind);
}

size_t put_limit(const uct::iface_attr &attr, op_kind kind)
{
    return limit(attr.put, kind);
}

size_t get_limit(const uct::iface_attr &attr, op_kind kind)
{
    return limit(attr.get, kind);
}

namespace {

/* The open registration scope's md and what it registered. */
uct::md *scope_md = nullptr;
std::vector<uct::mem_h> scope_memhs;

uct::mem_h register_entry(const uint8_t *buffer, size_t length)
{
    uct::mem_h memh = uct::MEM_HANDLE_NULL;
    if ((scope_md == nullptr) || (length == 0) ||
        (scope_md->mem_reg(const_cast<uint8_t *>(buffer), length, 0, &memh) != UCS_OK)) {
        return uct::MEM_HANDLE_NULL;
    }
    scope_memhs.push_back(memh);
    return memh;
}

} // namespace

registration_scope::registration_scope(uct::md &md)
{
    scope_md = (md.attr().flags & uct::md_flag::NEED_MEMH) ? &md : nullptr;
}

registration_scope::~registration_scope()
{
    for (uct::mem_h memh : scope_memhs) {
        scope_md->mem_dereg(memh);
    }
    scope_memhs.clear();
    scope_md = nullptr;
}

std::vector<uct::iov> split_iov(const uint8_t *buffer, size_t length, size_t iovcnt)
{
    std::vector<uct::iov> iov;
    const size_t piece = (iovcnt == 0) ? 0 : length / iovcnt;
    for (size_t i = 0, at = 0; i < iovcnt; ++i) {
        size_t len = (i + 1 == iovcnt) ? length - at : piece;
        iov.push_back({buffer + at, len, register_entry(buffer + at, len)});
        at += len;
    }
    return iov;
}

ucs_status_t send_am(uct::ep &ep, uct::am_id_t id, op_kind kind, const std::vector<uint8_t> &bytes,
                     counted_comp *comp, size_t zcopy_hdr, size_t iovcnt)
{
    switch (kind) {
    case op_kind::SHORT: {
        if (iovcnt > 1) {
            std::vector<uct::iov> iov;
            const size_t piece = bytes.size() / iovcnt;
            for (size_t i = 0, at = 0; i < iovcnt; ++i) {
                const size_t len = (i + 1 == iovcnt) ? bytes.size() - at : piece;
                iov.push_back({bytes.data() + at, len, uct::MEM_HANDLE_NULL});
                at += len;
            }
            /* An empty entry may have no buffer at all. */
            iov.insert(iov.begin() + 1, uct::iov{nullptr, 0, uct::MEM_HANDLE_NULL});
            return ep.am_short_iov(id, iov.data(), iov.size());
        }
        uint64_t header = 0;
        if (bytes.size() < sizeof(header)) {
            return UCS_ERR_INVALID_PARAM; /* a test bug, not the transport's */
        }
        std::memcpy(&header, bytes.data(), sizeof(header));
        return ep.am_short(id, header, bytes.data() + sizeof(header),
                           unsigned(bytes.size() - sizeof(header)));
    }
    case op_kind::BCOPY: {
        bytes_arg arg{bytes.data(), bytes.size()};
        return bcopy_status(ep.am_bcopy(id, pack_bytes, &arg, 0), bytes.size());
    }
    default: {
        auto iov = split_iov(bytes.data() + zcopy_hdr, bytes.size() - zcopy_hdr, iovcnt);
        return ep.am_zcopy(id, (zcopy_hdr == 0) ? nullptr : bytes.data(), unsigned(zcopy_hdr),
                           iov.data(), iov.size(), 0, comp);
    }
    }
}

ucs_status_t put(uct::ep &ep, op_kind kind, const uint8_t *buffer, size_t length,
                 uint64_t remote_addr, uct::rkey_t rkey, counted_comp *comp, size_t iovcnt)
{
    switch (kind) {
    case op_kind::SHORT:
        return ep.put_short(buffer, unsigned(length), remote_addr, rkey);
    case op_kind::BCOPY: {
        bytes_arg arg{buffer, length};
        return bcopy_status(ep.put_bcopy(pack_bytes, &arg, remote_addr, rkey), length);
    }
    default: {
        auto iov = split_iov(buffer, length, iovcnt);
        return ep.put_zcopy(iov.data(), iov.size(), remote_addr, rkey, comp);
    }
    }
}

ucs_status_t get(uct::ep &ep, op_kind kind, get_target *target, uint64_t remote_addr,
                 uct::rkey_t rkey, counted_comp *comp, size_t iovcnt)
{
    if (kind == op_kind::BCOPY) {
        return ep.get_bcopy(unpack_bytes, target, target->length, remote_addr, rkey, comp);
    }
    auto iov = split_iov(target->buffer, target->length, iovcnt);
    return ep.get_zcopy(iov.data(), iov.size(), remote_addr, rkey, comp);
}

} // namespace test::conform
