/*
 * Remote keys that name one region of one process, shared by the transports
 * that reach memory by address (cma, self). The owner packs
 * {magic, version, pid, address, length}; the peer unpacks it into a
 * remote_region and every operation is checked against those bounds, so a
 * peer can only touch memory the owner registered. Each transport has its
 * own magic numbers (region_key_kind), so one transport's key is never
 * accepted by another.
 */
#ifndef UCT_SM_BASE_REGION_KEY_H
#define UCT_SM_BASE_REGION_KEY_H

#include <uct/base/uct_md.h>

#include <cstddef>
#include <cstdint>
#include <sys/types.h>
#include <ucs/type/wire_reader.h>

namespace uct::sm {

/* Wire layout of a packed key (peers share the node, so host byte order). */
struct packed_region_key {
    uint32_t magic;
    uint16_t version;
    uint16_t reserved; /* must be zero */
    uint32_t pid;
    uint32_t reserved2; /* must be zero */
    uint64_t address;
    uint64_t length;
};
/* Frozen: changing it requires bumping PACKED_REGION_KEY_VERSION, which unpacking
 * checks; magic and version never move. */
static_assert((sizeof(packed_region_key) == 32) && (offsetof(packed_region_key, version) == 4),
              "packed key layout is part of the wire format");

constexpr uint16_t PACKED_REGION_KEY_VERSION = 1;

/* The per-transport identity of keys and handles. */
struct region_key_kind {
    uint32_t packed_magic; /* in packed keys */
    uint64_t local_magic;  /* in memory handles (local_region) */
    uint64_t remote_magic; /* in unpacked keys (remote_region) */
    const char *name;      /* for log messages */
};

/* A registration of local memory: what mem_reg returns as the memh. */
struct local_region {
    uint64_t magic;
    void *address;
    size_t length;
};

/* An unpacked key: rkey_t points at one of these. */
struct remote_region {
    uint64_t magic;
    uint64_t address;
    uint64_t length;
    pid_t pid;

    /* [addr, addr + len) inside [address, address + length), overflow-safe. */
    bool contains(uint64_t addr, uint64_t len) const
    {
        return ucs::range_inside(addr, len, address, length);
    }
};

/* rkey values that mean "no key" (the empty bundle, and UCX's invalid rkey). */
inline bool is_no_rkey(rkey_t rkey)
{
    return (rkey == 0) || (rkey == ~rkey_t(0));
}

void pack_region_key(const region_key_kind &kind, pid_t pid, const local_region &region,
                     void *buffer);

/*
 * Validates `length` bytes from a peer and fills `*region`. Anything but an
 * exact, well-formed key of this kind is UCS_ERR_INVALID_PARAM.
 */
ucs_status_t unpack_region_key(const region_key_kind &kind, const void *buffer, size_t length,
                               remote_region *region);

/* The md and component operations of a region-key transport. */
ucs_status_t region_mem_reg(const region_key_kind &kind, void *address, size_t length,
                            mem_h *memh_p);
ucs_status_t region_mem_dereg(const region_key_kind &kind, mem_h memh);
ucs_status_t region_mkey_pack(const region_key_kind &kind, mem_h memh, void *buffer);
ucs_status_t region_rkey_unpack(const region_key_kind &kind, const void *buffer, size_t length,
                                rkey_bundle *rkey_p);
void region_rkey_release(const region_key_kind &kind, const rkey_bundle &rkey);

} // namespace uct::sm

#endif
