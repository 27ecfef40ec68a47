/*
 * Remote keys. The owner of a ucp_mem packs a key (ucp_rkey_pack); a peer
 * unpacks it (ucp_ep_rkey_unpack -> ucp::rkey_unpack) into a ucp_rkey that
 * RMA and atomic protocols use: the region's bounds, against which every
 * operation is checked, and one uct key per memory domain the peer also has.
 *
 * The packed key arrives from another process, so unpacking validates every
 * byte of structure and never reads past the key. Layout (integers in the
 * packer's byte order, peers share the node or the architecture; no padding):
 *
 *   offset size
 *    0     4   magic            rkey_magic ("UCPK")
 *    4     1   version          rkey_version
 *    5     1   flags            rkey_flag bits (others 0)
 *    6     2   num_entries      <= rkey_max_entries
 *    8     4   total_length     bytes of the whole key, header included,
 *                               rkey_header_size..rkey_max_length
 *   12     1   mem_type         ucs_memory_type_t of the region (< LAST)
 *   13     1   remote_access    rkey_access bits
 *   14     2   reserved         0
 *   16     8   address          first byte of the region in the owner
 *   24     8   length           bytes of the region (address + length does
 *                               not wrap)
 *   32     8   secret           the mapping's random secret: the owner serves
 *                               an emulated operation only with it
 *   then num_entries times, one per md, no md twice:
 *          1   component_name_length  2..32, including the NUL
 *          n   component_name         NUL-terminated, no NUL before the end
 *          1   md_name_length         2..32, including the NUL
 *          n   md_name
 *          2   key_length             >= 1
 *          n   key                    uct::md::mkey_pack() bytes
 *   and the entries end exactly at total_length.
 *
 * Entries naming an md the unpacking context does not have, or whose
 * component cannot reach the memory from here (UCS_ERR_UNREACHABLE: another
 * node, a segment that is gone), are skipped: the rkey then has fewer
 * entries. A component that finds its key malformed makes the whole key
 * malformed.
 */
#ifndef UCP_CORE_UCP_RKEY_H
#define UCP_CORE_UCP_RKEY_H

#include "ucp_mm.h"

#include <ucp/rma/rkey_cache.h>

#include <uct/base/uct_md.h>
#include <ucs/type/wire_reader.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ucp {

constexpr uint32_t rkey_magic     = 0x4b504355; /* "UCPK" little-endian */
constexpr uint8_t rkey_version    = 2;          /* 2: the secret */
constexpr size_t rkey_header_size = 40;
constexpr size_t rkey_max_length  = 64 * 1024;
constexpr size_t rkey_max_entries = max_mds;
constexpr size_t rkey_max_name    = 31; /* name chars, without the NUL */

/* rkey header flags. A key with a flag a peer does not know is refused
 * there (rkey_peek), never misread. */
namespace rkey_flag {
/* A counter at the owner counts operations on the region
 * (ucp_mem_bind_cntr): every operation goes to the owner's CPU (emulated),
 * which counts it after the data is in place. */
constexpr uint8_t COUNTED = 1u << 0;
constexpr uint8_t ALL     = COUNTED;
} // namespace rkey_flag

/* What the owner lets peers do (from UCP_MEM_MAP_PROT_REMOTE_*). Advisory:
 * protocols may refuse an operation the key does not allow. */
namespace rkey_access {
constexpr uint8_t READ  = 1u << 0;
constexpr uint8_t WRITE = 1u << 1;
constexpr uint8_t ALL   = READ | WRITE;
} // namespace rkey_access

/* One md's part of an unpacked key. */
struct rkey_entry {
    unsigned md_index;         /* into ucp_context::mds of the unpacking context */
    uct::component *component; /* released the bundle; does rkey_ptr */
    uct::rkey_bundle bundle;   /* bundle.rkey goes to the uct ep operations */
};

/* Bytes rkey_pack() writes for memh's handles on the mds of md_map. */
size_t rkey_packed_size(const ucp_context &ctx, const ucp_mem &memh,
                        uint64_t md_map = ~uint64_t(0));

/*
 * Packs a key for [address, address + length), which must lie inside memh
 * (a protocol may expose only part of a handle), with memh's handles on the
 * mds of md_map, into `buffer` of `buffer_length` bytes (at least
 * rkey_packed_size()). UCS_ERR_INVALID_PARAM for a range outside memh or a
 * short buffer. Allocates nothing.
 */
ucs_status_t rkey_pack(const ucp_context &ctx, const ucp_mem &memh, uint64_t md_map,
                       uint64_t address, uint64_t length, void *buffer, size_t buffer_length,
                       size_t *packed_length_p);

/*
 * Validates the fixed header and returns total_length. `length` is how many
 * bytes the caller knows to be readable (>= rkey_header_size).
 */
ucs_status_t rkey_peek(const void *buffer, size_t length, size_t *total_length_p);

/*
 * Unpacks a key of at most `length` readable bytes. Anything malformed:
 * UCS_ERR_INVALID_PARAM and nothing allocated. Destroy with ucp_rkey_destroy.
 */
ucs_status_t rkey_unpack(ucp_context &ctx, const void *buffer, size_t length, ucp_rkey_h *rkey_p);

/*
 * UCX's packed key of a handle registered on no memory domain: a zero md
 * map and a host memory type. Open MPI 4.1's osc ucx passes such bytes to
 * ucp_ep_rkey_unpack for dynamic windows (for a region its lookup misses it
 * reads the "key" from just before its buffer), and UCX then reaches the
 * memory with active messages. We unpack it to a key with no entries, no
 * bounds and no secret, so that ucp_ep_rkey_unpack succeeds as on UCX; but
 * it opens nothing: every operation through it is emulated, and the target
 * refuses it (UCS_ERR_INVALID_ADDR), since every region it mapped has a
 * secret and this key has none. It must not be a master key to every
 * region of the target (issue 16).
 */
constexpr uint8_t ucx_empty_key[9] = {};

/*
 * What ucp_ep_rkey_unpack calls (the public call passes no length): reads
 * the header (rkey_header_size bytes), then total_length bytes; or the
 * bytes of ucx_empty_key.
 */
ucs_status_t rkey_unpack(ucp_context &ctx, const void *buffer, ucp_rkey_h *rkey_p);

/*
 * How many remote keys ucp_rkey_destroy has released so far. Something that
 * keeps a key to use later (a triggered operation) notes it and checks the
 * key against the live-handle registry (a lock and a lookup) only when a
 * key was destroyed meanwhile.
 */
uint64_t rkeys_destroyed();

} // namespace ucp

struct ucp_rkey {
    uint64_t address           = 0; /* the region in the owner */
    uint64_t length            = 0;
    ucs_memory_type_t mem_type = UCS_MEMORY_TYPE_HOST;
    uint8_t remote_access      = 0;       /* ucp::rkey_access */
    uint64_t secret            = 0;       /* the owner's mapping secret; 0 opens nothing */
    bool counted               = false;   /* rkey_flag::COUNTED: emulated only */
    uint64_t md_map            = 0;       /* bit per md index with an entry */
    std::vector<ucp::rkey_entry> entries; /* ascending md_index, one per bit */
    ucp::rma::rkey_cache rma_cache;       /* ucp/rma's choices for this key */

    /*
     * [addr, addr + len) lies inside the region (overflow-safe). Every RMA
     * and atomic checks this before it goes out.
     */
    bool covers(uint64_t addr, size_t len) const
    {
        return ucs::range_inside(addr, len, address, length);
    }

    /* Whether the owner allowed these rkey_access bits. */
    bool allows(uint8_t access) const { return (remote_access & access) == access; }

    /* The entry for the md a lane uses, or null when the key has none. O(1). */
    const ucp::rkey_entry *find(unsigned md_index) const
    {
        const uint64_t bit = ucp::md_bit(md_index);
        if (!(md_map & bit)) {
            return nullptr;
        }
        return &entries[std::popcount(md_map & (bit - 1))];
    }
};

#endif
