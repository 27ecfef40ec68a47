/*
 * Remote keys of the self transport: the same idea as cma's, for memory of
 * this very process. A key carries {magic, version, pid, address, length};
 * RMA and atomics through it must stay inside the region, and a key packed
 * by another process is refused.
 */
#ifndef UCT_SM_SELF_SELF_RKEY_H
#define UCT_SM_SELF_SELF_RKEY_H

#include <uct/base/uct_types.h>

#include <cstdint>
#include <sys/types.h>

namespace uct::self {

struct packed_rkey {
    uint32_t magic;
    uint16_t version;
    uint16_t reserved;      /* must be zero */
    uint32_t pid;
    uint32_t reserved2;     /* must be zero */
    uint64_t address;
    uint64_t length;
};
static_assert(sizeof(packed_rkey) == 32, "packed key layout is part of the wire format");

constexpr uint32_t PACKED_RKEY_MAGIC   = 0x314b4c53;   /* "SLK1" */
constexpr uint16_t PACKED_RKEY_VERSION = 1;

/* What mem_reg returns as the memh. */
struct local_region {
    uint64_t magic;
    void     *address;
    size_t   length;
};
constexpr uint64_t LOCAL_REGION_MAGIC = 0x6e6f696765726c73ull;

/* An unpacked key: rkey_t points at one of these. */
struct remote_region {
    uint64_t magic;
    uint64_t address;
    uint64_t length;
    pid_t    pid;

    /* [addr, addr + len) inside [address, address + length), overflow-safe. */
    bool contains(uint64_t addr, uint64_t len) const
    {
        return (addr >= address) && (len <= length) &&
               (addr - address <= length - len);
    }
};
constexpr uint64_t REMOTE_REGION_MAGIC = 0x6e6f696765726d73ull;

inline bool is_no_rkey(rkey_t rkey)
{
    return (rkey == 0) || (rkey == ~rkey_t(0));
}

void pack_rkey(pid_t pid, const local_region &region, void *buffer);

/* Anything but an exact, well-formed key is UCS_ERR_INVALID_PARAM. */
ucs_status_t unpack_rkey(const void *buffer, size_t length, remote_region *region);

} // namespace uct::self

#endif
