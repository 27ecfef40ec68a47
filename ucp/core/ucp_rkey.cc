/*
 * Remote key packing and unpacking (format in ucp_rkey.h), and
 * ucp_rkey_pack / ucp_rkey_buffer_release / ucp_rkey_ptr / ucp_rkey_destroy.
 */
#include "ucp_rkey.h"

#include "live_handles.h"
#include "ucp_guard.h"

#include <ucs/debug/log.h>
#include <ucs/type/wire_reader.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string_view>

namespace ucp {

namespace {

struct rkey_header {
    uint32_t magic;
    uint8_t version;
    uint8_t flags;
    uint16_t num_entries;
    uint32_t total_length;
    uint8_t mem_type;
    uint8_t remote_access;
    uint16_t reserved;
    uint64_t address;
    uint64_t length;
    uint64_t secret;
};
/* Frozen: changing it requires bumping rkey_version, which peers check. The magic
 * and version never move: a peer of any version must be able to refuse the key. */
static_assert(sizeof(rkey_header) == rkey_header_size, "the header is the wire layout");
static_assert((offsetof(rkey_header, version) == 4) && (offsetof(rkey_header, mem_type) == 12) &&
                  (offsetof(rkey_header, secret) == 32),
              "rkey header layout");

/* An entry as found in the packed bytes (pointers into the buffer). */
struct packed_entry {
    std::string_view component;
    std::string_view md;
    const uint8_t *key;
    size_t key_length;
};

const char *component_name(const ucp_context &ctx, unsigned md_index)
{
    return ctx.mds[md_index].component->name();
}

/* Whether md_index's handle in memh goes into a key, and its entry size. */
size_t entry_size(const ucp_context &ctx, const ucp_mem &memh, uint64_t md_map, unsigned md_index)
{
    if ((md_index >= ctx.mds.size()) || !(memh.md_map & md_map & md_bit(md_index)) ||
        (memh.uct_memh(md_index) == nullptr)) {
        return 0;
    }
    const size_t key_length  = ctx.mds[md_index].md->attr().rkey_packed_size;
    const size_t comp_length = std::strlen(component_name(ctx, md_index));
    const size_t md_length   = ctx.mds[md_index].name.size();
    if ((key_length == 0) || (key_length > UINT16_MAX) || (comp_length == 0) ||
        (comp_length > rkey_max_name) || (md_length == 0) || (md_length > rkey_max_name)) {
        return 0;
    }
    return 1 + comp_length + 1 + 1 + md_length + 1 + 2 + key_length;
}

uint8_t access_of(unsigned prot)
{
    uint8_t access = 0;
    access |= (prot & UCP_MEM_MAP_PROT_REMOTE_READ) ? rkey_access::READ : 0;
    access |= (prot & UCP_MEM_MAP_PROT_REMOTE_WRITE) ? rkey_access::WRITE : 0;
    return access;
}

/* Parses and validates the whole structure; touches no component. */
ucs_status_t parse(const void *buffer, size_t length, rkey_header *header,
                   std::vector<packed_entry> *entries)
{
    size_t total_length;
    ucs_status_t status = rkey_peek(buffer, length, &total_length);
    if (status != UCS_OK) {
        return status;
    }
    if (total_length > length) {
        ucs_debug("rkey: %zu bytes, the header says %zu", length, total_length);
        return UCS_ERR_INVALID_PARAM;
    }
    ucs::wire_reader r(buffer, total_length);
    r.get(header);
    entries->reserve(header->num_entries);
    for (unsigned i = 0; i < header->num_entries; ++i) {
        packed_entry entry;
        if (!r.string(1, rkey_max_name, &entry.component) ||
            !r.string(1, rkey_max_name, &entry.md) || !r.blob16(&entry.key, &entry.key_length) ||
            (entry.key_length == 0)) {
            ucs_debug("rkey: entry %u is malformed", i);
            return UCS_ERR_INVALID_PARAM;
        }
        for (const packed_entry &other : *entries) {
            if ((other.component == entry.component) && (other.md == entry.md)) {
                ucs_debug("rkey: md %.*s appears twice", int(entry.md.size()), entry.md.data());
                return UCS_ERR_INVALID_PARAM;
            }
        }
        entries->push_back(entry);
    }
    if (!r.at_end()) {
        ucs_debug("rkey: %zu stray bytes after the entries", r.left());
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

/* The unpacking context's md an entry names, or -1. */
int find_md(const ucp_context &ctx, const packed_entry &entry)
{
    for (unsigned i = 0; i < ctx.mds.size(); ++i) {
        if ((entry.md == ctx.mds[i].name) && (entry.component == component_name(ctx, i))) {
            return int(i);
        }
    }
    return -1;
}

using live_rkeys = live_handles<ucp_rkey>;

std::atomic<uint64_t> destroyed_rkeys{0};

ucp_rkey_h hand_out(std::unique_ptr<ucp_rkey> rkey)
{
    live_rkeys::instance().add(rkey.get());
    return rkey.release();
}

void release_entries(ucp_rkey &rkey)
{
    for (const rkey_entry &entry : rkey.entries) {
        entry.component->rkey_release(entry.bundle);
    }
    rkey.entries.clear();
    rkey.md_map = 0;
}

} // namespace

size_t rkey_packed_size(const ucp_context &ctx, const ucp_mem &memh, uint64_t md_map)
{
    size_t size = rkey_header_size;
    for (unsigned i = 0; i < ctx.mds.size(); ++i) {
        size += entry_size(ctx, memh, md_map, i);
    }
    return size;
}

ucs_status_t rkey_pack(const ucp_context &ctx, const ucp_mem &memh, uint64_t md_map,
                       uint64_t address, uint64_t length, void *buffer, size_t buffer_length,
                       size_t *packed_length_p)
{
    const size_t total_length = rkey_packed_size(ctx, memh, md_map);
    if ((buffer == nullptr) || (packed_length_p == nullptr) || (buffer_length < total_length) ||
        (total_length > rkey_max_length) || !memh.contains(address, length)) {
        return UCS_ERR_INVALID_PARAM;
    }

    rkey_header header{};
    header.magic         = rkey_magic;
    header.version       = rkey_version;
    header.total_length  = uint32_t(total_length);
    header.mem_type      = uint8_t(memh.mem_type);
    header.remote_access = access_of(memh.prot);
    header.address       = address;
    header.length        = length;
    header.secret        = memh.secret;
    header.flags         = (memh.cntr != nullptr) ? rkey_flag::COUNTED : 0;

    auto *bytes   = static_cast<uint8_t *>(buffer);
    size_t offset = rkey_header_size;
    auto lock     = md_lock(ctx);
    for (unsigned i = 0; i < ctx.mds.size(); ++i) {
        if (entry_size(ctx, memh, md_map, i) == 0) {
            continue;
        }
        for (std::string_view name :
             {std::string_view(component_name(ctx, i)), std::string_view(ctx.mds[i].name)}) {
            bytes[offset++] = uint8_t(name.size() + 1);
            std::memcpy(bytes + offset, name.data(), name.size());
            offset += name.size();
            bytes[offset++] = '\0';
        }
        const auto key_length = uint16_t(ctx.mds[i].md->attr().rkey_packed_size);
        std::memcpy(bytes + offset, &key_length, sizeof(key_length));
        offset += sizeof(key_length);
        ucs_status_t status = ctx.mds[i].md->mkey_pack(memh.uct_memh(i), bytes + offset);
        if (status != UCS_OK) {
            ucs_error("rkey_pack: md %s failed to pack a key: %s", ctx.mds[i].name.c_str(),
                      ucs_status_string(status));
            return status;
        }
        offset += key_length;
        ++header.num_entries;
    }
    std::memcpy(bytes, &header, sizeof(header));
    *packed_length_p = offset;
    return UCS_OK;
}

ucs_status_t rkey_peek(const void *buffer, size_t length, size_t *total_length_p)
{
    if ((buffer == nullptr) || (length < rkey_header_size)) {
        return UCS_ERR_INVALID_PARAM;
    }
    rkey_header header;
    ucs::wire_reader(buffer, length).get(&header);
    uint64_t end;
    if ((header.magic != rkey_magic) || (header.version != rkey_version) ||
        (header.flags & ~rkey_flag::ALL) || (header.reserved != 0) ||
        (header.num_entries > rkey_max_entries) || (header.total_length < rkey_header_size) ||
        (header.total_length > rkey_max_length) || (header.mem_type >= UCS_MEMORY_TYPE_LAST) ||
        (header.remote_access & ~rkey_access::ALL) ||
        __builtin_add_overflow(header.address, header.length, &end)) {
        ucs_debug("rkey: malformed header (magic 0x%x version %u length %u)", header.magic,
                  header.version, header.total_length);
        return UCS_ERR_INVALID_PARAM;
    }
    *total_length_p = header.total_length;
    return UCS_OK;
}

namespace {

ucs_status_t unpack(ucp_context &ctx, const void *buffer, size_t length, ucp_rkey_h *rkey_p)
{
    rkey_header header;
    std::vector<packed_entry> packed;
    ucs_status_t status = parse(buffer, length, &header, &packed);
    if (status != UCS_OK) {
        return status;
    }

    auto rkey           = std::make_unique<ucp_rkey>();
    rkey->address       = header.address;
    rkey->length        = header.length;
    rkey->mem_type      = ucs_memory_type_t(header.mem_type);
    rkey->remote_access = header.remote_access;
    rkey->secret        = header.secret;
    rkey->counted       = header.flags & rkey_flag::COUNTED;
    rkey->entries.reserve(packed.size());
    for (const packed_entry &entry : packed) {
        const int md_index = find_md(ctx, entry);
        if ((md_index < 0) || (unsigned(md_index) >= max_mds)) {
            ucs_debug("rkey: no local md %.*s/%.*s, entry skipped", int(entry.component.size()),
                      entry.component.data(), int(entry.md.size()), entry.md.data());
            continue;
        }
        uct::component *component = ctx.mds[md_index].component;
        uct::rkey_bundle bundle;
        status = component->rkey_unpack(entry.key, entry.key_length, &bundle);
        if ((status == UCS_ERR_INVALID_PARAM) || (status == UCS_ERR_NO_MEMORY)) {
            ucs_debug("rkey: md %s refused its key: %s", ctx.mds[md_index].name.c_str(),
                      ucs_status_string(status));
            release_entries(*rkey);
            return status;
        }
        if (status != UCS_OK) {
            ucs_debug("rkey: md %s cannot use its key here (%s), entry skipped",
                      ctx.mds[md_index].name.c_str(), ucs_status_string(status));
            continue;
        }
        rkey->entries.push_back({unsigned(md_index), component, bundle});
        rkey->md_map |= md_bit(unsigned(md_index));
    }
    /* find() indexes the entries by rank of md index. */
    std::sort(rkey->entries.begin(), rkey->entries.end(),
              [](const rkey_entry &a, const rkey_entry &b) { return a.md_index < b.md_index; });
    *rkey_p = hand_out(std::move(rkey));
    return UCS_OK;
}

} // namespace

ucs_status_t rkey_unpack(ucp_context &ctx, const void *buffer, size_t length, ucp_rkey_h *rkey_p)
{
    if (rkey_p == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    return guarded("rkey_unpack", [&]() { return unpack(ctx, buffer, length, rkey_p); });
}

ucs_status_t rkey_unpack(ucp_context &ctx, const void *buffer, ucp_rkey_h *rkey_p)
{
    if ((buffer != nullptr) && (rkey_p != nullptr) &&
        (std::memcmp(buffer, ucx_empty_key, sizeof(ucx_empty_key)) == 0)) {
        return guarded("rkey_unpack", [&]() {
            auto rkey           = std::make_unique<ucp_rkey>();
            rkey->address       = 0;
            rkey->length        = UINT64_MAX; /* bounded by the target's regions instead */
            rkey->remote_access = rkey_access::ALL;
            *rkey_p             = hand_out(std::move(rkey));
            return UCS_OK;
        });
    }
    size_t total_length;
    ucs_status_t status = rkey_peek(buffer, rkey_header_size, &total_length);
    if (status != UCS_OK) {
        return status;
    }
    return rkey_unpack(ctx, buffer, total_length, rkey_p);
}

uint64_t rkeys_destroyed()
{
    return destroyed_rkeys.load(std::memory_order_seq_cst);
}

} // namespace ucp

extern "C" {

ucs_status_t ucp_rkey_pack(ucp_context_h context, ucp_mem_h memh, void **rkey_buffer_p,
                           size_t *size_p)
{
    if ((context == nullptr) || (memh == nullptr) || (rkey_buffer_p == nullptr) ||
        (size_p == nullptr) || !ucp::live_memh(memh, "ucp_rkey_pack") ||
        (memh->context != context)) {
        ucs_error("ucp_rkey_pack: NULL or mismatched context, memh or output");
        return UCS_ERR_INVALID_PARAM;
    }
    return ucp::guarded("ucp_rkey_pack", [&]() {
        const uint64_t all = ~uint64_t(0);
        const size_t size  = ucp::rkey_packed_size(*context, *memh, all);
        void *buffer       = std::malloc(size);
        if (buffer == nullptr) {
            return UCS_ERR_NO_MEMORY;
        }
        size_t packed       = 0;
        ucs_status_t status = ucp::rkey_pack(*context, *memh, all,
                                             reinterpret_cast<uintptr_t>(memh->address),
                                             memh->length, buffer, size, &packed);
        if (status != UCS_OK) {
            std::free(buffer);
            return status;
        }
        *rkey_buffer_p = buffer;
        *size_p        = packed;
        return UCS_OK;
    });
}

void ucp_rkey_buffer_release(void *rkey_buffer)
{
    std::free(rkey_buffer);
}

ucs_status_t ucp_rkey_ptr(ucp_rkey_h rkey, uint64_t raddr, void **addr_p)
{
    if ((rkey == nullptr) || (addr_p == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (!rkey->covers(raddr, 1)) {
        ucs_debug("ucp_rkey_ptr: 0x%llx is outside the region 0x%llx+%llu",
                  static_cast<unsigned long long>(raddr),
                  static_cast<unsigned long long>(rkey->address),
                  static_cast<unsigned long long>(rkey->length));
        return UCS_ERR_INVALID_ADDR;
    }
    for (const ucp::rkey_entry &entry : rkey->entries) {
        void *local = nullptr;
        if (entry.component->rkey_ptr(entry.bundle, raddr, &local) == UCS_OK) {
            *addr_p = local;
            return UCS_OK;
        }
    }
    return UCS_ERR_UNREACHABLE;
}

void ucp_rkey_destroy(ucp_rkey_h rkey)
{
    if (rkey == nullptr) {
        return;
    }
    if (!ucp::live_handles<ucp_rkey>::instance().remove(rkey)) {
        ucs_warn("ucp_rkey_destroy(%p): not a live remote key (destroyed already?), "
                 "ignored",
                 static_cast<void *>(rkey));
        return;
    }
    ucp::destroyed_rkeys.fetch_add(1, std::memory_order_seq_cst);
    ucp::release_entries(*rkey);
    delete rkey;
}

} // extern "C"
