/*
 * Memory handles (ucp_mem_h): a region of memory registered on the context's
 * memory domains, possibly allocated by UCP itself. ucp_mem_map() registers
 * on every md that can register memory of the region's type and whose
 * transports need a key or a local handle; with UCP_MEM_MAP_ALLOCATE it first
 * allocates, preferring an md whose memory peers on the node can map
 * directly (posix/sysv segments, so that ucp_rkey_ptr works), else mmap.
 *
 * Protocols find the uct handle for a lane's md with uct_memh(md_index).
 */
#ifndef UCP_CORE_UCP_MM_H
#define UCP_CORE_UCP_MM_H

#include "ucp_context.h"

#include <ucp/api/ucp.h>
#include <uct/base/uct_md.h>
#include <ucs/type/wire_reader.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace ucp {

/* Whether memh is a handle ucp_mem_map gave out and ucp_mem_unmap has not
 * taken back; logs an error naming `call` if not. */
bool live_memh(const ucp_mem *memh, const char *call);

/* md indices of a context that bitmaps (md_map) can name. */
constexpr unsigned max_mds = 64;

inline constexpr uint64_t md_bit(unsigned md_index)
{
    return (md_index < max_mds) ? (uint64_t(1) << md_index) : 0;
}

/*
 * Held around md calls that change or read an md's registrations (mem_reg,
 * mem_dereg, mem_alloc, mem_free, mkey_pack) when the context is shared by
 * threads (UCP_PARAM_FIELD_MT_WORKERS_SHARED): not every md locks inside.
 * Empty (no lock taken) for a single-threaded context.
 */
std::unique_lock<std::mutex> md_lock(const ucp_context &ctx);

/* Who provided the memory of a ucp_mem. */
enum class mem_alloc_method : uint8_t {
    NONE, /* the application's memory, only registered */
    MD,   /* an md's mem_alloc (ucp_mem::alloc_md_index) */
    MMAP  /* anonymous mmap */
};

const char *mem_alloc_method_name(mem_alloc_method method);

/* What ucp_mem_map() was asked for, after checking the parameters. */
struct mem_map_request {
    void *address              = nullptr; /* to register; or hint / fixed address */
    size_t length              = 0;
    unsigned flags             = 0;                       /* UCP_MEM_MAP_* */
    unsigned prot              = 0;                       /* UCP_MEM_MAP_PROT_* */
    ucs_memory_type_t mem_type = UCS_MEMORY_TYPE_UNKNOWN; /* UNKNOWN: detect */
    uint64_t md_map            = ~uint64_t(0);            /* register on these mds at most */
};

/*
 * Maps (allocates and/or registers) as ucp_mem_map does; `req` must already
 * be valid (see the public function's checks). Used by ucp_mem_map and by
 * protocols that need a full handle for a user buffer on some mds.
 */
ucs_status_t mem_map(ucp_context &ctx, const mem_map_request &req, ucp_mem **memh_p);

/* Deregisters and frees what mem_map did, and deletes the handle. */
ucs_status_t mem_unmap(ucp_context &ctx, ucp_mem *memh);

/*
 * One registration of [address, address + length) on one md, for a
 * protocol that needs it only for one operation (e.g. a cma rendezvous of an
 * unmapped user buffer). UCS_ERR_INVALID_PARAM for a bad md index or range,
 * UCS_ERR_UNSUPPORTED when the md cannot register memory.
 */
ucs_status_t mem_reg_temp(ucp_context &ctx, unsigned md_index, void *address, size_t length,
                          uct::mem_h *memh_p);
ucs_status_t mem_dereg_temp(ucp_context &ctx, unsigned md_index, uct::mem_h memh);

} // namespace ucp

struct ucp_cntr;

struct ucp_mem {
    ucp_context *context               = nullptr;
    void *address                      = nullptr;
    size_t length                      = 0;
    ucs_memory_type_t mem_type         = UCS_MEMORY_TYPE_HOST;
    unsigned prot                      = 0; /* UCP_MEM_MAP_PROT_* */
    unsigned map_flags                 = 0; /* UCP_MEM_MAP_* it was mapped with */
    ucp::mem_alloc_method alloc_method = ucp::mem_alloc_method::NONE;
    unsigned alloc_md_index            = 0; /* with alloc_method MD */
    uint64_t md_map                    = 0; /* mds holding a handle (alloc or reg) */
    std::vector<uct::mem_h> uct_memhs;      /* by md index; null where none */
    /* Random, never 0: packed into its remote keys; a peer's emulated put,
     * get or atomic must present it (region_registry). */
    uint64_t secret = 0;
    /* ucp_mem_bind_cntr: the counter peers' operations count on here
     * (its keys then say so), and which ones (UCP_MEM_CNTR_REMOTE_*). */
    ucp_cntr *cntr       = nullptr;
    uint64_t cntr_events = 0;

    /* The uct handle of this memory on md `md_index`, null if none. */
    uct::mem_h uct_memh(unsigned md_index) const
    {
        return (md_index < uct_memhs.size()) ? uct_memhs[md_index] : nullptr;
    }

    /* [addr, addr + len) lies inside the region (overflow-safe). */
    bool contains(uint64_t addr, size_t len) const
    {
        return ucs::range_inside(addr, len, reinterpret_cast<uintptr_t>(address), length);
    }
};

#endif
