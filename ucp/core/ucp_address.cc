/*
 * Packing and validating worker addresses (format in ucp_address.h).
 */
#include "ucp_address.h"

#include <ucs/debug/log.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <unistd.h>

namespace ucp {

namespace {

constexpr size_t max_dev_type = static_cast<size_t>(uct::device_type::SELF);

/* Sequential writer; the size was computed beforehand. */
class writer {
public:
    explicit writer(uint8_t *p) : m_p(p) {}

    template <typename T> void put(T value)
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

/* Sequential reader that refuses to go past its end. */
class reader {
public:
    reader(const uint8_t *p, size_t length) : m_p(p), m_left(length) {}

    template <typename T> bool get(T *value)
    {
        if (m_left < sizeof(T)) {
            return false;
        }
        std::memcpy(value, m_p, sizeof(T));
        advance(sizeof(T));
        return true;
    }

    bool bytes(size_t length, const uint8_t **data_p)
    {
        if (m_left < length) {
            return false;
        }
        *data_p = m_p;
        advance(length);
        return true;
    }

    /* A length-prefixed NUL-terminated string of [min_len, max_len] chars. */
    bool string(size_t min_len, size_t max_len, std::string *out)
    {
        uint8_t size;
        const uint8_t *data;
        if (!get(&size) || (size < min_len + 1) || (size > max_len + 1) ||
            !bytes(size, &data)) {
            return false;
        }
        /* The NUL must be the last byte and the only one. */
        if ((data[size - 1] != '\0') ||
            (std::memchr(data, '\0', size - 1) != nullptr)) {
            return false;
        }
        out->assign(reinterpret_cast<const char*>(data), size - 1);
        return true;
    }

    bool blob(std::vector<uint8_t> *out)
    {
        uint16_t size;
        const uint8_t *data;
        if (!get(&size) || !bytes(size, &data)) {
            return false;
        }
        out->assign(data, data + size);
        return true;
    }

    size_t left() const { return m_left; }

private:
    void advance(size_t n)
    {
        m_p    += n;
        m_left -= n;
    }

    const uint8_t *m_p;
    size_t        m_left;
};

bool string_fits(const std::string &s, size_t min_len, size_t max_len)
{
    return (s.size() >= min_len) && (s.size() <= max_len) &&
           (s.find('\0') == std::string::npos);
}

uint64_t fnv1a(uint64_t hash, const std::string &text)
{
    for (unsigned char c : text) {
        hash ^= c;
        hash *= 0x100000001b3ull;
    }
    return hash;
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
            (static_cast<size_t>(e.dev_type) > max_dev_type) ||
            (e.dev_addr.size() > UINT16_MAX) || (e.iface_addr.size() > UINT16_MAX)) {
            return 0;
        }
        size += 1 + e.tl_name.size() + 1 + 1 + e.md_name.size() + 1 + 1 +
                2 + e.dev_addr.size() + 2 + e.iface_addr.size();
    }
    return (size <= address_max_length) ? size : 0;
}

ucs_status_t pack_address(const unpacked_address &addr, void **buffer_p,
                          size_t *length_p)
{
    size_t size = address_packed_size(addr);
    if (size == 0) {
        ucs_error("worker address of '%s' does not fit the address format "
                  "(%zu entries)", addr.worker_name.c_str(), addr.entries.size());
        return UCS_ERR_INVALID_PARAM;
    }
    auto *buffer = static_cast<uint8_t*>(std::malloc(size));
    if (buffer == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }

    writer w(buffer);
    w.put<uint32_t>(address_magic);
    w.put<uint8_t>(address_version);
    w.put<uint8_t>(0);
    w.put<uint16_t>(static_cast<uint16_t>(addr.entries.size()));
    w.put<uint32_t>(static_cast<uint32_t>(size));
    w.put<uint32_t>(0);
    w.put<uint64_t>(addr.worker_uuid);
    w.put<uint64_t>(addr.node_id);
    w.string(addr.worker_name);
    for (const address_entry &e : addr.entries) {
        w.string(e.tl_name);
        w.string(e.md_name);
        w.put<uint8_t>(static_cast<uint8_t>(e.dev_type));
        w.put<uint16_t>(static_cast<uint16_t>(e.dev_addr.size()));
        w.bytes(e.dev_addr.data(), e.dev_addr.size());
        w.put<uint16_t>(static_cast<uint16_t>(e.iface_addr.size()));
        w.bytes(e.iface_addr.data(), e.iface_addr.size());
    }

    *buffer_p = buffer;
    *length_p = size;
    return UCS_OK;
}

ucs_status_t address_peek(const void *buffer, size_t length,
                          size_t *total_length_p, uint64_t *worker_uuid_p)
{
    if ((buffer == nullptr) || (length < address_header_size)) {
        return UCS_ERR_INVALID_PARAM;
    }
    reader r(static_cast<const uint8_t*>(buffer), length);
    uint32_t magic, total_length, reserved;
    uint8_t version, flags;
    uint16_t num_entries;
    uint64_t uuid;
    r.get(&magic);
    r.get(&version);
    r.get(&flags);
    r.get(&num_entries);
    r.get(&total_length);
    r.get(&reserved);
    r.get(&uuid);

    if (magic != address_magic) {
        ucs_debug("worker address: bad magic 0x%x", magic);
        return UCS_ERR_INVALID_PARAM;
    }
    if (version != address_version) {
        ucs_debug("worker address: version %u, expected %u", version,
                  address_version);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((flags != 0) || (reserved != 0) || (num_entries > address_max_entries) ||
        (total_length < address_header_size + 2) ||
        (total_length > address_max_length)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (total_length_p != nullptr) {
        *total_length_p = total_length;
    }
    if (worker_uuid_p != nullptr) {
        *worker_uuid_p = uuid;
    }
    return UCS_OK;
}

ucs_status_t unpack_address(const void *buffer, size_t length,
                            unpacked_address *out)
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
        ucs_debug("worker address: %zu bytes announced, %zu available",
                  total_length, length);
        return UCS_ERR_INVALID_PARAM;
    }

    auto *bytes = static_cast<const uint8_t*>(buffer);
    uint16_t num_entries;
    std::memcpy(&num_entries, bytes + 6, sizeof(num_entries));

    unpacked_address addr;
    std::memcpy(&addr.worker_uuid, bytes + 16, sizeof(addr.worker_uuid));
    std::memcpy(&addr.node_id, bytes + 24, sizeof(addr.node_id));

    reader r(bytes + address_header_size, total_length - address_header_size);
    if (!r.string(0, address_max_name, &addr.worker_name)) {
        return UCS_ERR_INVALID_PARAM;
    }
    addr.entries.resize(num_entries);
    for (address_entry &e : addr.entries) {
        uint8_t dev_type;
        if (!r.string(1, address_max_tl_name, &e.tl_name) ||
            !r.string(1, address_max_tl_name, &e.md_name) || !r.get(&dev_type) ||
            (dev_type > max_dev_type) || !r.blob(&e.dev_addr) ||
            !r.blob(&e.iface_addr)) {
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
    static const uint64_t id = [] {
        char host[256] = {};
        gethostname(host, sizeof(host) - 1);
        std::string boot_id;
        std::ifstream in("/proc/sys/kernel/random/boot_id");
        std::getline(in, boot_id);
        return fnv1a(fnv1a(0xcbf29ce484222325ull, host), boot_id);
    }();
    return id;
}

} // namespace ucp
