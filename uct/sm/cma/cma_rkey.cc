#include <uct/sm/cma/cma_rkey.h>

#include <ucs/debug/log.h>

#include <cstring>

namespace uct::cma {

void pack_rkey(pid_t pid, const local_region &region, void *buffer)
{
    packed_rkey key{};
    key.magic   = PACKED_RKEY_MAGIC;
    key.version = PACKED_RKEY_VERSION;
    key.pid     = static_cast<uint32_t>(pid);
    key.address = reinterpret_cast<uintptr_t>(region.address);
    key.length  = region.length;
    std::memcpy(buffer, &key, sizeof(key));
}

ucs_status_t unpack_rkey(const void *buffer, size_t length, remote_region *region)
{
    if ((buffer == nullptr) || (length != sizeof(packed_rkey))) {
        ucs_debug("cma rkey: %zu bytes, expected %zu", length, sizeof(packed_rkey));
        return UCS_ERR_INVALID_PARAM;
    }

    packed_rkey key;
    std::memcpy(&key, buffer, sizeof(key));   /* the buffer may be unaligned */
    uint64_t end;
    if ((key.magic != PACKED_RKEY_MAGIC) || (key.version != PACKED_RKEY_VERSION) ||
        (key.reserved != 0) || (key.reserved2 != 0) ||
        (key.pid == 0) || (key.pid > uint32_t(INT32_MAX)) ||
        __builtin_add_overflow(key.address, key.length, &end)) {
        ucs_debug("cma rkey: malformed key (magic 0x%x version %u pid %u)",
                  key.magic, key.version, key.pid);
        return UCS_ERR_INVALID_PARAM;
    }

    region->magic   = REMOTE_REGION_MAGIC;
    region->address = key.address;
    region->length  = key.length;
    region->pid     = static_cast<pid_t>(key.pid);
    return UCS_OK;
}

} // namespace uct::cma
