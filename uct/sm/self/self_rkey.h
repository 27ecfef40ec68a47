/*
 * Remote keys of the self transport: region keys (uct/sm/base/region_key.h)
 * with self's own magic numbers, so keys of other transports are refused.
 */
#ifndef UCT_SM_SELF_SELF_RKEY_H
#define UCT_SM_SELF_SELF_RKEY_H

#include <uct/sm/base/region_key.h>

namespace uct::self {

using packed_rkey   = sm::packed_region_key;
using local_region  = sm::local_region;
using remote_region = sm::remote_region;
using sm::is_no_rkey;

constexpr uint16_t PACKED_RKEY_VERSION = sm::PACKED_REGION_KEY_VERSION;
constexpr uint32_t PACKED_RKEY_MAGIC   = 0x314b4c53; /* "SLK1" */
constexpr uint64_t LOCAL_REGION_MAGIC  = 0x6e6f696765726c73ull;
constexpr uint64_t REMOTE_REGION_MAGIC = 0x6e6f696765726d73ull;

inline constexpr sm::region_key_kind key_kind = {PACKED_RKEY_MAGIC, LOCAL_REGION_MAGIC,
                                                 REMOTE_REGION_MAGIC, "self"};

inline void pack_rkey(pid_t pid, const local_region &region, void *buffer)
{
    sm::pack_region_key(key_kind, pid, region, buffer);
}

inline ucs_status_t unpack_rkey(const void *buffer, size_t length, remote_region *region)
{
    return sm::unpack_region_key(key_kind, buffer, length, region);
}

} // namespace uct::self

#endif
