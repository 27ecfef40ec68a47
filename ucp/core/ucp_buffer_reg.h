/*
 * Registrations of user buffers for one operation (rendezvous, eager and
 * RMA zero-copy): through the md's registration cache (ucs/memory/rcache.h)
 * when the context has one for that md, else one mem_reg per operation.
 *
 * A context gets a cache for each md that registers memory (md_flag::REG)
 * and whose transports need a local handle or a remote key for it
 * (NEED_MEMH, NEED_RKEY), unless UCX_RCACHE_ENABLE=no or libucm cannot
 * deliver memory events (then "try" registers per operation and "yes"
 * fails ucp_init). UCX_RCACHE_MAX_REGIONS and UCX_RCACHE_MAX_SIZE bound
 * each cache.
 */
#ifndef UCP_CORE_UCP_BUFFER_REG_H
#define UCP_CORE_UCP_BUFFER_REG_H

#include <uct/base/uct_types.h>
#include <ucs/memory/rcache.h>

#include <memory>

struct ucp_context;

namespace ucp {

/* A buffer registered on one md. Zero-initialised: nothing registered. */
struct buffer_reg {
    uct::mem_h memh;            /* what uct calls take */
    ucs::rcache_region *region; /* non-null: held from the md's cache */

    bool held() const { return (memh != nullptr) || (region != nullptr); }
};

/* The cache of one md and the adapter it registers through. */
class md_rcache;

struct md_rcache_deleter {
    void operator()(md_rcache *cache) const;
};
using md_rcache_ptr = std::unique_ptr<md_rcache, md_rcache_deleter>;

/* Creates the caches of every md of the context, per UCX_RCACHE_ENABLE. */
ucs_status_t create_rcaches(ucp_context &ctx);

/* The md's cache, nullptr when it has none. */
ucs::rcache *md_cache(const ucp_context &ctx, unsigned md_index);

/*
 * Registers [address, address + length) on md `md_index` for one
 * operation; *reg must hold nothing. UCS_ERR_UNSUPPORTED if the md cannot
 * register memory, or the md's error.
 */
ucs_status_t buffer_reg_get(ucp_context &ctx, unsigned md_index, const void *address, size_t length,
                            buffer_reg *reg);

/* Gives a held registration back (to the cache, or deregisters); *reg then
 * holds nothing. */
void buffer_reg_put(ucp_context &ctx, unsigned md_index, buffer_reg *reg);

/* buffer_reg_put if *reg holds something: every send's release calls it. */
inline void buffer_reg_release(ucp_context &ctx, unsigned md_index, buffer_reg *reg)
{
    if (reg->held()) {
        buffer_reg_put(ctx, md_index, reg);
    }
}

} // namespace ucp

#endif
