/*
 * Per-operation registrations of user buffers (see ucp_buffer_reg.h).
 */
#include "ucp_buffer_reg.h"
#include "ucp_context.h"
#include "ucp_mm.h"

#include <ucs/debug/log.h>

#include <new>

namespace ucp {

/* Registers on the md as every per-operation registration does
 * (mem_reg_temp: under the context's md lock, since a cache shared by the
 * context's workers calls it from any of their threads). */
class md_rcache final : public ucs::rcache_registrar {
public:
    md_rcache(ucp_context &ctx, unsigned md_index) : ctx_(ctx), md_index_(md_index) {}

    ucs_status_t mem_reg(void *address, size_t length, void **handle_p) override
    {
        uct::mem_h memh     = nullptr;
        ucs_status_t status = mem_reg_temp(ctx_, md_index_, address, length, &memh);
        *handle_p           = memh;
        return status;
    }

    void mem_dereg(void *handle) override
    {
        ucs_status_t status = mem_dereg_temp(ctx_, md_index_, handle);
        if (status != UCS_OK) {
            ucs_warn("md %s: deregistering a cached region failed: %s",
                     ctx_.mds[md_index_].name.c_str(), ucs_status_string(status));
        }
    }

    std::unique_ptr<ucs::rcache> cache;

private:
    ucp_context &ctx_;
    unsigned md_index_;
};

void md_rcache_deleter::operator()(md_rcache *cache) const
{
    if (cache != nullptr) {
        cache->cache.reset(); /* deregisters through the adapter */
        delete cache;
    }
}

namespace {

/* Whether protocols register user buffers on this md per operation, and
 * host memory among them: the cache learns of unmapped host memory from
 * libucm, and of freed device memory from nothing (cuda_ipc registers per
 * operation and keeps its own cache, keyed by allocation). */
bool registers_host_per_operation(const uct::md_attr &attr)
{
    return (attr.flags & uct::md_flag::REG) &&
           (attr.flags & (uct::md_flag::NEED_MEMH | uct::md_flag::NEED_RKEY)) &&
           (attr.reg_mem_types & (1ull << UCS_MEMORY_TYPE_HOST));
}

} // namespace

ucs_status_t create_rcaches(ucp_context &ctx)
{
    const ucs_ternary_auto_value_t enable = ctx.config.rcache_enable;
    if (enable == UCS_NO) {
        return UCS_OK;
    }
    for (unsigned md_index = 0; md_index < ctx.mds.size(); ++md_index) {
        md_entry &m = ctx.mds[md_index];
        if (!registers_host_per_operation(m.md->attr())) {
            continue;
        }
        md_rcache_ptr adapter(new (std::nothrow) md_rcache(ctx, md_index));
        if (adapter == nullptr) {
            return UCS_ERR_NO_MEMORY;
        }
        ucs::rcache_params params;
        params.name        = m.name.c_str();
        params.registrar   = adapter.get();
        params.max_regions = ctx.config.rcache_max_regions;
        params.max_size    = ctx.config.rcache_max_size;
        /* A region cached over pages glibc gave back by itself would pin
         * and move stale pages: such an md caches only where the hooks see
         * those unmaps too, or when asked to. */
        const bool pins              = (m.md->attr().flags & uct::md_flag::REG_PINS);
        params.need_allocator_unmaps = pins && (enable != UCS_YES);
        ucs_status_t status          = ucs::rcache::create(params, &adapter->cache);
        if (status == UCS_ERR_UNSUPPORTED) {
            if (enable == UCS_YES) {
                ucs_error("UCX_RCACHE_ENABLE=yes, but the registration cache of md %s "
                          "needs memory events, which are disabled (UCX_MEM_EVENTS) "
                          "or cannot be hooked",
                          m.name.c_str());
                return status;
            }
            if (params.need_allocator_unmaps) {
                ucs_diag("md %s pins what it registers; its cache needs memory events that "
                         "see libc's own unmaps (UCX_MEM_MMAP_HOOK_MODE=bistro): registering "
                         "per operation (UCX_RCACHE_ENABLE=yes caches anyway)",
                         m.name.c_str());
            } else {
                ucs_diag("md %s: no registration cache without memory events: "
                         "registering per operation",
                         m.name.c_str());
            }
            continue;
        }
        if (status != UCS_OK) {
            return status;
        }
        m.rcache = std::move(adapter);
    }
    return UCS_OK;
}

ucs::rcache *md_cache(const ucp_context &ctx, unsigned md_index)
{
    const md_rcache *adapter = ctx.mds[md_index].rcache.get();
    return (adapter != nullptr) ? adapter->cache.get() : nullptr;
}

ucs_status_t buffer_reg_get(ucp_context &ctx, unsigned md_index, const void *address, size_t length,
                            buffer_reg *reg)
{
    ucs::rcache *cache = md_cache(ctx, md_index);
    if (cache == nullptr) {
        reg->region = nullptr;
        return mem_reg_temp(ctx, md_index, const_cast<void *>(address), length, &reg->memh);
    }
    ucs_status_t status = cache->get(address, length, &reg->region);
    reg->memh           = (status == UCS_OK) ? reg->region->handle() : nullptr;
    if (status != UCS_OK) {
        reg->region = nullptr;
    }
    return status;
}

void buffer_reg_put(ucp_context &ctx, unsigned md_index, buffer_reg *reg)
{
    if (reg->region != nullptr) {
        md_cache(ctx, md_index)->put(reg->region);
    } else if (reg->memh != nullptr) {
        mem_dereg_temp(ctx, md_index, reg->memh);
    }
    reg->memh   = nullptr;
    reg->region = nullptr;
}

} // namespace ucp
