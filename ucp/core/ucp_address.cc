/*
 * Packing and validating worker addresses (format in ucp_address.h).
 */
#include "ucp_address.h"

#include <ucs/debug/log.h>
#include <ucs/sys/identity.h>
#include <ucs/type/wire_reader.h>

#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace ucp {

namespace {

constexpr size_t max_dev_type = static_cast<size_t>(uct::device_type::SELF);

/* The fixed header, as laid out on the wire. */
struct address_header {
    uint32_t magic;
    uint8_t version;
    uint8_t flags;
    uint16_t num_entries;
    uint32_t total_length;
    uint32_t reserved;
    uint64_t worker_uuid;
    uint64_t node_id;
};
/* Frozen: changing it requires bumping address_version, which peers check. The
 * magic and version never move: a peer of any version must be able to refuse us. */
static_assert(sizeof(address_header) == address_header_size, "the header is the wire layout");
static_assert((offsetof(address_header, version) == 4) &&
                  (offsetof(address_header, total_length) == 8) &&
                  (offsetof(address_header, worker_uuid) == 16),
              "address header layout");

/* Sequential writer; the size was computed beforehand. */
class writer {
public:
    explicit writer(uint8_t *p) : m_p(p) {}

    template <typename T>
    void put(T value)
    {
        std::memcpy(m_p, &value, sizeof(value));
        m_p += sizeof(value);
    }

    void bytes(const void *data, size_t length)
    {
        if (length != 0) {
            std::memcpy(m_p, data, length);
        }
        m_p += length;
    }

    void string(const std::string &s)
    {
        put<uint8_t>(static_cast<uint8_t>(s.size() + 1));
        bytes(s.c_str(), s.size() + 1);
    }

private:
    uint8_t *m_p;
};

/* A length-prefixed name of [min_len, max_len] characters. */
bool read_string(ucs::wire_reader &r, size_t min_len, size_t max_len, std::string *out)
{
    std::string_view text;
    if (!r.string(min_len, max_len, &text)) {
        return false;
    }
    out->assign(text);
    return true;
}

bool read_blob(ucs::wire_reader &r, std::vector<uint8_t> *out)
{
    const uint8_t *data;
    size_t length;
    if (!r.blob16(&data, &length)) {
        return false;
    }
    out->assign(data, data + length);
    return true;
}

bool string_fits(const std::string &s, size_t min_len, size_t max_len)
{
    return (s.size() >= min_len) && (s.size() <= max_len) && (s.find('\0') == std::string::npos);
}

} // namespace

size_t address_packed_size(const unpacked_address &addr)
{
    if (!string_fits(addr.worker_name, 0, address_max_name) ||
        (addr.entries.size() > address_max_entries)) {
        return 0;
    }
    size_t size = address_header_size + 1 + addr.worker_name.size() + 1;
    for (const address_entry &e : addr.entries) {
        if (!string_fits(e.tl_name, 1, address_max_tl_name) ||
            !string_fits(e.md_name, 1, address_max_tl_name) ||
            (static_cast<size_t>(e.dev_type) > max_dev_type) || (e.flags == 0) ||
            (e.flags & ~address_entry_flag::all) || (e.dev_addr.size() > UINT16_MAX) ||
            (e.iface_addr.size() > UINT16_MAX)) {
            return 0;
        }
        size += 1 + e.tl_name.size() + 1 + 1 + e.md_name.size() + 1 + 1 + 1 + 2 +
                e.dev_addr.size() + 2 + e.iface_addr.size();
    }
    return (size <= address_max_length) ? size : 0;
}

ucs_status_t pack_address(const unpacked_address &addr, void **buffer_p, size_t *length_p)
{
    size_t size = address_packed_size(addr);
    if (size == 0) {
        ucs_error("worker address of '%s' does not fit the address format "
                  "(%zu entries)",
                  addr.worker_name.c_str(), addr.entries.size());
        return UCS_ERR_INVALID_PARAM;
    }
    auto *buffer = static_cast<uint8_t *>(std::malloc(size));
    if (buffer == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }

    writer w(buffer);
    w.put(address_header{address_magic, address_version,
                         addr.net_only ? address_flag::NET_ONLY : uint8_t(0),
                         static_cast<uint16_t>(addr.entries.size()), static_cast<uint32_t>(size), 0,
                         addr.worker_uuid, addr.node_id});
    w.string(addr.worker_name);
    for (const address_entry &e : addr.entries) {
        w.string(e.tl_name);
        w.string(e.md_name);
        w.put<uint8_t>(static_cast<uint8_t>(e.dev_type));
        w.put<uint8_t>(e.flags);
        w.put<uint16_t>(static_cast<uint16_t>(e.dev_addr.size()));
        w.bytes(e.dev_addr.data(), e.dev_addr.size());
        w.put<uint16_t>(static_cast<uint16_t>(e.iface_addr.size()));
        w.bytes(e.iface_addr.data(), e.iface_addr.size());
    }

    *buffer_p = buffer;
    *length_p = size;
    return UCS_OK;
}

ucs_status_t address_peek(const void *buffer, size_t length, size_t *total_length_p,
                          uint64_t *worker_uuid_p)
{
    if ((buffer == nullptr) || (length < address_header_size)) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucs::wire_reader r(buffer, length);
    address_header h;
    r.get(&h);

    if (h.magic != address_magic) {
        ucs_debug("worker address: bad magic 0x%x", h.magic);
        return UCS_ERR_INVALID_PARAM;
    }
    if (h.version != address_version) {
        ucs_debug("worker address: version %u, expected %u", h.version, address_version);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((h.flags & ~address_flag::all) || (h.reserved != 0) ||
        (h.num_entries > address_max_entries) || (h.total_length < address_header_size + 2) ||
        (h.total_length > address_max_length)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (total_length_p != nullptr) {
        *total_length_p = h.total_length;
    }
    if (worker_uuid_p != nullptr) {
        *worker_uuid_p = h.worker_uuid;
    }
    return UCS_OK;
}

ucs_status_t unpack_address(const void *buffer, size_t length, unpacked_address *out)
{
    if (out == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    size_t total_length;
    ucs_status_t status = address_peek(buffer, length, &total_length, nullptr);
    if (status != UCS_OK) {
        return status;
    }
    if (total_length > length) {
        ucs_debug("worker address: %zu bytes announced, %zu available", total_length, length);
        return UCS_ERR_INVALID_PARAM;
    }

    ucs::wire_reader r(buffer, total_length);
    address_header h;
    r.get(&h);
    unpacked_address addr;
    addr.worker_uuid = h.worker_uuid;
    addr.node_id     = h.node_id;
    addr.net_only    = (h.flags & address_flag::NET_ONLY);
    if (!read_string(r, 0, address_max_name, &addr.worker_name)) {
        return UCS_ERR_INVALID_PARAM;
    }
    addr.entries.resize(h.num_entries);
    for (address_entry &e : addr.entries) {
        uint8_t dev_type;
        if (!read_string(r, 1, address_max_tl_name, &e.tl_name) ||
            !read_string(r, 1, address_max_tl_name, &e.md_name) || !r.get(&dev_type) ||
            (dev_type > max_dev_type) || !r.get(&e.flags) || (e.flags == 0) ||
            (e.flags & ~address_entry_flag::all) || !read_blob(r, &e.dev_addr) ||
            !read_blob(r, &e.iface_addr)) {
            return UCS_ERR_INVALID_PARAM;
        }
        e.dev_type = static_cast<uct::device_type>(dev_type);
    }
    if (r.left() != 0) {
        ucs_debug("worker address: %zu stray bytes after the entries", r.left());
        return UCS_ERR_INVALID_PARAM;
    }
    *out = std::move(addr);
    return UCS_OK;
}

uint64_t local_node_id()
{
    return ucs::sys::machine_id();
}

} // namespace ucp
