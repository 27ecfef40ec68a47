#include <uct/sm/base/region_key.h>

#include <ucs/debug/log.h>
#include <ucs/type/wire_reader.h>

#include <climits>
#include <cstring>
#include <new>
#include <unistd.h>

namespace uct::sm {

void pack_region_key(const region_key_kind &kind, pid_t pid, const local_region &region,
                     void *buffer)
{
    packed_region_key key{};
    key.magic   = kind.packed_magic;
    key.version = PACKED_REGION_KEY_VERSION;
    key.pid     = static_cast<uint32_t>(pid);
    key.address = reinterpret_cast<uintptr_t>(region.address);
    key.length  = region.length;
    std::memcpy(buffer, &key, sizeof(key));
}

ucs_status_t unpack_region_key(const region_key_kind &kind, const void *buffer, size_t length,
                               remote_region *region)
{
    ucs::wire_reader r(buffer, length);
    packed_region_key key;
    if ((buffer == nullptr) || !r.get(&key) || !r.at_end()) {
        ucs_debug("%s rkey: %zu bytes, expected %zu", kind.name, length, sizeof(packed_region_key));
        return UCS_ERR_INVALID_PARAM;
    }
    uint64_t end;
    if ((key.magic != kind.packed_magic) || (key.version != PACKED_REGION_KEY_VERSION) ||
        (key.reserved != 0) || (key.reserved2 != 0) || (key.pid == 0) ||
        (key.pid > uint32_t(INT32_MAX)) || __builtin_add_overflow(key.address, key.length, &end)) {
        ucs_debug("%s rkey: malformed key (magic 0x%x version %u pid %u)", kind.name, key.magic,
                  key.version, key.pid);
        return UCS_ERR_INVALID_PARAM;
    }

    region->magic   = kind.remote_magic;
    region->address = key.address;
    region->length  = key.length;
    region->pid     = static_cast<pid_t>(key.pid);
    return UCS_OK;
}

ucs_status_t region_mem_reg(const region_key_kind &kind, void *address, size_t length,
                            mem_h *memh_p)
{
    uint64_t end;
    if ((memh_p == nullptr) || ((address == nullptr) && (length != 0)) ||
        __builtin_add_overflow(reinterpret_cast<uintptr_t>(address), length, &end)) {
        return UCS_ERR_INVALID_PARAM;
    }
    auto *region = new (std::nothrow) local_region{kind.local_magic, address, length};
    if (region == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    *memh_p = region;
    return UCS_OK;
}

ucs_status_t region_mem_dereg(const region_key_kind &kind, mem_h memh)
{
    auto *region = static_cast<local_region *>(memh);
    if ((region == nullptr) || (region->magic != kind.local_magic)) {
        return UCS_ERR_INVALID_PARAM;
    }
    region->magic = 0;
    delete region;
    return UCS_OK;
}

ucs_status_t region_mkey_pack(const region_key_kind &kind, mem_h memh, void *buffer)
{
    auto *region = static_cast<const local_region *>(memh);
    if ((region == nullptr) || (buffer == nullptr) || (region->magic != kind.local_magic)) {
        return UCS_ERR_INVALID_PARAM;
    }
    pack_region_key(kind, getpid(), *region, buffer);
    return UCS_OK;
}

ucs_status_t region_rkey_unpack(const region_key_kind &kind, const void *buffer, size_t length,
                                rkey_bundle *rkey_p)
{
    remote_region region;
    ucs_status_t status = unpack_region_key(kind, buffer, length, &region);
    if (status != UCS_OK) {
        return status;
    }
    auto *copy = new (std::nothrow) remote_region(region);
    if (copy == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    rkey_p->rkey   = reinterpret_cast<rkey_t>(copy);
    rkey_p->handle = copy;
    return UCS_OK;
}

void region_rkey_release(const region_key_kind &kind, const rkey_bundle &rkey)
{
    auto *region = static_cast<remote_region *>(rkey.handle);
    if (region == nullptr) {
        return;
    }
    if (region->magic != kind.remote_magic) {
        ucs_error("%s: releasing an rkey that is not a %s key (%p)", kind.name, kind.name,
                  rkey.handle);
        return;
    }
    region->magic = 0; /* a second release is caught above, not a double free */
    delete region;
}

} // namespace uct::sm
