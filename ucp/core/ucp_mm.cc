/*
 * ucp_mem_map / ucp_mem_unmap / ucp_mem_query / ucp_mem_advise /
 * ucp_mem_print_info, and the internal registration helpers.
 */
#include "ucp_mm.h"

#include "live_handles.h"
#include "ucp_guard.h"

#include <ucp/ext/mem_cntr.h>

#include <ucs/config/parser.h>
#include <ucs/debug/log.h>
#include <ucs/sys/random.h>
#include <ucs/type/c_enum.h>
#include <ucs/memory/memtype_registry.h>
#include <ucs/sys/sys_info.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>

#include <sys/mman.h>

namespace ucp {

namespace {

constexpr unsigned known_map_flags = UCP_MEM_MAP_NONBLOCK | UCP_MEM_MAP_ALLOCATE |
                                     UCP_MEM_MAP_FIXED;
constexpr unsigned all_prot = UCP_MEM_MAP_PROT_LOCAL_READ | UCP_MEM_MAP_PROT_LOCAL_WRITE |
                              UCP_MEM_MAP_PROT_REMOTE_READ | UCP_MEM_MAP_PROT_REMOTE_WRITE;
constexpr uint64_t all_advise_fields = UCP_MEM_ADVISE_PARAM_FIELD_ADDRESS |
                                       UCP_MEM_ADVISE_PARAM_FIELD_LENGTH |
                                       UCP_MEM_ADVISE_PARAM_FIELD_ADVICE;

std::mutex g_md_mutex;

size_t page_size()
{
    return ucs::sys::page_size();
}

uintptr_t align_down(uintptr_t value, size_t alignment)
{
    return value / alignment * alignment;
}

uintptr_t align_up(uintptr_t value, size_t alignment)
{
    return align_down(value + alignment - 1, alignment);
}

uint64_t type_bit(ucs_memory_type_t type)
{
    return uint64_t(1) << type;
}

int mmap_prot(unsigned prot)
{
    int result = PROT_NONE;
    if (prot & UCP_MEM_MAP_PROT_LOCAL_READ) {
        result |= PROT_READ;
    }
    if (prot & UCP_MEM_MAP_PROT_LOCAL_WRITE) {
        result |= PROT_WRITE;
    }
    return result;
}

/*
 * Faults the pages of a range in now. The kernel's populate advice (5.14+)
 * does it without touching the data; older kernels get the plain hint.
 */
void populate(void *address, size_t length, bool writable)
{
    if ((madvise(address, length, writable ? MADV_POPULATE_WRITE : MADV_POPULATE_READ) == 0) ||
        (writable && (madvise(address, length, MADV_POPULATE_READ) == 0))) {
        return;
    }
    ucs_debug("populating %p+%zu: %s; falling back to MADV_WILLNEED", address, length,
              strerror(errno));
    madvise(address, length, MADV_WILLNEED);
}

/* An md that registers this memory and whose transports use the handle. */
bool md_registers(const ucp_context &ctx, unsigned md_index, ucs_memory_type_t type, size_t length)
{
    const uct::md_attr &attr = ctx.mds[md_index].md->attr();
    return (md_index < max_mds) && (attr.flags & uct::md_flag::REG) &&
           (attr.flags & (uct::md_flag::NEED_RKEY | uct::md_flag::NEED_MEMH)) &&
           (attr.reg_mem_types & type_bit(type)) && (length <= attr.max_reg);
}

/* ALLOC mds that can give this request's memory: directly mappable ones first. */
std::vector<unsigned> alloc_candidates(const ucp_context &ctx, const mem_map_request &req,
                                       ucs_memory_type_t type)
{
    std::vector<unsigned> order;
    for (bool want_rkey_ptr : {true, false}) {
        for (unsigned i = 0; i < ctx.mds.size() && i < max_mds; ++i) {
            const uct::md_attr &attr = ctx.mds[i].md->attr();
            const bool rkey_ptr      = (attr.flags & uct::md_flag::RKEY_PTR) != 0;
            if ((rkey_ptr == want_rkey_ptr) && (req.md_map & md_bit(i)) &&
                (attr.flags & uct::md_flag::ALLOC) &&
                (!(req.flags & UCP_MEM_MAP_FIXED) || (attr.flags & uct::md_flag::FIXED)) &&
                (attr.alloc_mem_types & type_bit(type)) && (req.length <= attr.max_alloc)) {
                order.push_back(i);
            }
        }
    }
    return order;
}

/* The pages an md allocated get the requested protection and population. */
ucs_status_t finish_md_alloc(const mem_map_request &req, ucp_mem &mem)
{
    const int prot = mmap_prot(mem.prot);
    if ((prot != (PROT_READ | PROT_WRITE)) && (mprotect(mem.address, mem.length, prot) != 0)) {
        ucs_error("ucp_mem_map: cannot set protection 0x%x on %p+%zu: %s", mem.prot, mem.address,
                  mem.length, strerror(errno));
        return UCS_ERR_INVALID_PARAM;
    }
    if (!(req.flags & UCP_MEM_MAP_NONBLOCK) && (prot != PROT_NONE)) {
        populate(mem.address, mem.length, (prot & PROT_WRITE) != 0);
    }
    return UCS_OK;
}

ucs_status_t mmap_alloc(const mem_map_request &req, ucp_mem &mem)
{
    const bool fixed    = (req.flags & UCP_MEM_MAP_FIXED) != 0;
    const size_t length = align_up(req.length, page_size());
    int flags           = MAP_PRIVATE | MAP_ANONYMOUS;
    /* NOREPLACE: a fixed address must never unmap what is already there. */
    flags |= fixed ? MAP_FIXED_NOREPLACE : 0;
    flags |= (req.flags & UCP_MEM_MAP_NONBLOCK) ? 0 : MAP_POPULATE;
    void *address = mmap(req.address, length, mmap_prot(mem.prot), flags, -1, 0);
    if (address == MAP_FAILED) {
        const int err = errno;
        if (fixed && (err == EEXIST)) {
            ucs_error("ucp_mem_map: %p+%zu is already mapped; UCP_MEM_MAP_FIXED "
                      "does not replace a mapping",
                      req.address, length);
            return UCS_ERR_ALREADY_EXISTS;
        }
        ucs_error("ucp_mem_map: cannot allocate %zu bytes: %s", length, strerror(err));
        return (err == ENOMEM) ? UCS_ERR_NO_MEMORY : UCS_ERR_INVALID_PARAM;
    }
    if (fixed && (address != req.address)) {
        /* A kernel older than 4.17 took the flag as a mere hint. */
        munmap(address, length);
        ucs_error("ucp_mem_map: %p+%zu is already mapped", req.address, length);
        return UCS_ERR_ALREADY_EXISTS;
    }
    mem.address      = address;
    mem.length       = length;
    mem.alloc_method = mem_alloc_method::MMAP;
    return UCS_OK;
}

ucs_status_t allocate(ucp_context &ctx, const mem_map_request &req, ucp_mem &mem)
{
    const bool fixed = (req.flags & UCP_MEM_MAP_FIXED) != 0;
    unsigned flags   = fixed ? uct::mem_flag::FIXED : 0;
    flags |= (req.flags & UCP_MEM_MAP_NONBLOCK) ? uct::mem_flag::NONBLOCK : 0;

    for (unsigned md_index : alloc_candidates(ctx, req, mem.mem_type)) {
        size_t length   = req.length;
        void *address   = req.address;
        uct::mem_h memh = nullptr;
        ucs_status_t status;
        {
            auto lock = md_lock(ctx);
            status = ctx.mds[md_index].md->mem_alloc_of_type(mem.mem_type, &length, &address, flags,
                                                             &memh);
        }
        if (status == UCS_OK) {
            mem.address             = address;
            mem.length              = length;
            mem.alloc_method        = mem_alloc_method::MD;
            mem.alloc_md_index      = md_index;
            mem.uct_memhs[md_index] = memh;
            mem.md_map |= md_bit(md_index);
            /* Device memory has no pages of ours to protect or populate. */
            return (mem.mem_type == UCS_MEMORY_TYPE_HOST) ? finish_md_alloc(req, mem) : UCS_OK;
        }
        if (fixed && (status == UCS_ERR_ALREADY_EXISTS)) {
            ucs_error("ucp_mem_map: %p+%zu is already mapped; UCP_MEM_MAP_FIXED "
                      "does not replace a mapping",
                      req.address, req.length);
            return status; /* no other method can use a taken range */
        }
        ucs_debug("ucp_mem_map: md %s could not allocate %zu bytes: %s",
                  ctx.mds[md_index].name.c_str(), req.length, ucs_status_string(status));
    }

    if (mem.mem_type != UCS_MEMORY_TYPE_HOST) {
        ucs_error("ucp_mem_map: no memory domain allocates %s memory",
                  ucs_memory_type_names[mem.mem_type]);
        return UCS_ERR_UNSUPPORTED;
    }
    return mmap_alloc(req, mem);
}

/* Undoes registrations and the allocation; returns the first failure. */
ucs_status_t release(ucp_context &ctx, ucp_mem &mem)
{
    ucs_status_t result = UCS_OK;
    auto lock           = md_lock(ctx);
    for (unsigned i = 0; i < mem.uct_memhs.size(); ++i) {
        const bool is_alloc = (mem.alloc_method == mem_alloc_method::MD) &&
                              (i == mem.alloc_md_index);
        if ((mem.uct_memhs[i] == nullptr) || is_alloc) {
            continue;
        }
        ucs_status_t status = ctx.mds[i].md->mem_dereg(mem.uct_memhs[i]);
        if (status != UCS_OK) {
            ucs_error("ucp_mem_unmap: md %s failed to deregister %p+%zu: %s",
                      ctx.mds[i].name.c_str(), mem.address, mem.length, ucs_status_string(status));
            result = (result == UCS_OK) ? status : result;
        }
        mem.uct_memhs[i] = nullptr;
    }

    ucs_status_t status = UCS_OK;
    if (mem.alloc_method == mem_alloc_method::MD) {
        status = ctx.mds[mem.alloc_md_index].md->mem_free(mem.uct_memhs[mem.alloc_md_index]);
        mem.uct_memhs[mem.alloc_md_index] = nullptr;
    } else if ((mem.alloc_method == mem_alloc_method::MMAP) &&
               (munmap(mem.address, mem.length) != 0)) {
        status = UCS_ERR_INVALID_ADDR;
    }
    if (status != UCS_OK) {
        ucs_error("ucp_mem_unmap: failed to free %p+%zu (%s): %s", mem.address, mem.length,
                  mem_alloc_method_name(mem.alloc_method), ucs_status_string(status));
        result = (result == UCS_OK) ? status : result;
    }
    mem.alloc_method = mem_alloc_method::NONE;
    mem.md_map       = 0;
    return result;
}

ucs_status_t register_on_mds(ucp_context &ctx, const mem_map_request &req, ucp_mem &mem)
{
    const unsigned flags = (req.flags & UCP_MEM_MAP_NONBLOCK) ? uct::mem_flag::NONBLOCK : 0;
    auto lock            = md_lock(ctx);
    for (unsigned i = 0; i < ctx.mds.size(); ++i) {
        if ((mem.uct_memhs[i] != nullptr) || !(req.md_map & md_bit(i)) ||
            !md_registers(ctx, i, mem.mem_type, mem.length)) {
            continue;
        }
        uct::mem_h memh     = nullptr;
        ucs_status_t status = ctx.mds[i].md->mem_reg(mem.address, mem.length, flags, &memh);
        if (status != UCS_OK) {
            ucs_error("ucp_mem_map: md %s failed to register %p+%zu: %s", ctx.mds[i].name.c_str(),
                      mem.address, mem.length, ucs_status_string(status));
            return status;
        }
        mem.uct_memhs[i] = memh;
        mem.md_map |= md_bit(i);
    }
    return UCS_OK;
}

/* ucp_mem_map_params_t -> mem_map_request, every field checked. */
ucs_status_t parse_map_params(const ucp_mem_map_params_t &params, mem_map_request *req)
{
    const uint64_t mask = params.field_mask;
    if (!(mask & UCP_MEM_MAP_PARAM_FIELD_LENGTH)) {
        ucs_error("ucp_mem_map: the length is required (UCP_MEM_MAP_PARAM_FIELD_LENGTH)");
        return UCS_ERR_INVALID_PARAM;
    }
    req->length        = params.length;
    req->address       = (mask & UCP_MEM_MAP_PARAM_FIELD_ADDRESS) ? params.address : nullptr;
    req->flags         = (mask & UCP_MEM_MAP_PARAM_FIELD_FLAGS) ? params.flags : 0;
    req->prot          = (mask & UCP_MEM_MAP_PARAM_FIELD_PROT) ? params.prot : all_prot;
    const int mem_type = (mask & UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE) ?
                             ucs::raw_enum(params.memory_type) :
                             int(UCS_MEMORY_TYPE_UNKNOWN);
    if (req->flags & ~known_map_flags) {
        ucs_error("ucp_mem_map: unknown flags 0x%x", req->flags & ~known_map_flags);
        return UCS_ERR_INVALID_PARAM;
    }
    if (req->prot & ~all_prot) {
        ucs_error("ucp_mem_map: unknown protection bits 0x%x", req->prot & ~all_prot);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((mem_type < 0) || (mem_type > int(UCS_MEMORY_TYPE_UNKNOWN))) {
        ucs_error("ucp_mem_map: invalid memory type %d", mem_type);
        return UCS_ERR_INVALID_PARAM;
    }
    req->mem_type = ucs_memory_type_t(mem_type);

    const bool allocate = (req->flags & UCP_MEM_MAP_ALLOCATE) != 0;
    const auto address  = reinterpret_cast<uintptr_t>(req->address);
    if (req->flags & UCP_MEM_MAP_FIXED) {
        if (!allocate) {
            ucs_error("ucp_mem_map: UCP_MEM_MAP_FIXED requires UCP_MEM_MAP_ALLOCATE");
            return UCS_ERR_INVALID_PARAM;
        }
        if ((address == 0) || (address % page_size() != 0)) {
            ucs_error("ucp_mem_map: UCP_MEM_MAP_FIXED requires a page-aligned "
                      "address, got %p",
                      req->address);
            return UCS_ERR_INVALID_PARAM;
        }
    }
    if (req->length == 0) {
        return UCS_OK; /* an empty handle, as UCX gives */
    }
    if (!allocate && (address == 0)) {
        ucs_error("ucp_mem_map: a NULL address with length %zu requires "
                  "UCP_MEM_MAP_ALLOCATE",
                  req->length);
        return UCS_ERR_INVALID_PARAM;
    }
    uintptr_t end;
    if (__builtin_add_overflow(address, align_up(req->length, page_size()), &end) ||
        (req->length > SIZE_MAX - page_size())) {
        ucs_error("ucp_mem_map: %p+%zu wraps around the address space", req->address, req->length);
        return UCS_ERR_INVALID_PARAM;
    }
    if (allocate && (req->mem_type == UCS_MEMORY_TYPE_UNKNOWN) &&
        (mask & UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE)) {
        ucs_error("ucp_mem_map: cannot allocate memory of type 'unknown'");
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

} // namespace

std::unique_lock<std::mutex> md_lock(const ucp_context &ctx)
{
    return ctx.mt_workers_shared ? std::unique_lock<std::mutex>(g_md_mutex) :
                                   std::unique_lock<std::mutex>();
}

const char *mem_alloc_method_name(mem_alloc_method method)
{
    switch (method) {
    case mem_alloc_method::NONE:
        return "none";
    case mem_alloc_method::MD:
        return "md";
    case mem_alloc_method::MMAP:
        return "mmap";
    }
    return "?";
}

ucs_status_t mem_map(ucp_context &ctx, const mem_map_request &req, ucp_mem **memh_p)
{
    auto mem       = std::make_unique<ucp_mem>();
    mem->context   = &ctx;
    mem->address   = req.address;
    mem->length    = req.length;
    mem->prot      = req.prot;
    mem->map_flags = req.flags;
    mem->secret    = ucs::sys::random_u64();
    mem->uct_memhs.assign(ctx.mds.size(), nullptr);

    const bool allocating = (req.flags & UCP_MEM_MAP_ALLOCATE) != 0;
    if (req.mem_type != UCS_MEMORY_TYPE_UNKNOWN) {
        mem->mem_type = req.mem_type;
    } else if (allocating || (req.length == 0)) {
        mem->mem_type = UCS_MEMORY_TYPE_HOST;
    } else {
        mem->mem_type = ucs::memtype::detect(req.address, req.length);
    }

    if (req.length > 0) {
        ucs_status_t status = allocating ? allocate(ctx, req, *mem) : UCS_OK;
        if (status == UCS_OK) {
            status = register_on_mds(ctx, req, *mem);
        }
        if (status != UCS_OK) {
            release(ctx, *mem);
            return status;
        }
    }
    /* Operations on this memory need not ask the detectors what it is. */
    ucs::memtype::remember(mem->address, mem->length, mem->mem_type);
    ucs_debug("mapped %p+%zu (%s, %s) on md map 0x%llx", mem->address, mem->length,
              ucs_memory_type_names[mem->mem_type], mem_alloc_method_name(mem->alloc_method),
              static_cast<unsigned long long>(mem->md_map));
    *memh_p = mem.release();
    return UCS_OK;
}

ucs_status_t mem_unmap(ucp_context &ctx, ucp_mem *memh)
{
    ucs::memtype::forget(memh->address, memh->length);
    ucs_status_t status = release(ctx, *memh);
    delete memh;
    return status;
}

ucs_status_t mem_reg_temp(ucp_context &ctx, unsigned md_index, void *address, size_t length,
                          uct::mem_h *memh_p)
{
    uintptr_t end;
    if ((md_index >= ctx.mds.size()) || (memh_p == nullptr) ||
        ((address == nullptr) && (length != 0)) ||
        __builtin_add_overflow(reinterpret_cast<uintptr_t>(address), length, &end)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (!(ctx.mds[md_index].md->attr().flags & uct::md_flag::REG)) {
        return UCS_ERR_UNSUPPORTED;
    }
    auto lock = md_lock(ctx);
    return ctx.mds[md_index].md->mem_reg(address, length, 0, memh_p);
}

ucs_status_t mem_dereg_temp(ucp_context &ctx, unsigned md_index, uct::mem_h memh)
{
    if ((md_index >= ctx.mds.size()) || (memh == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    auto lock = md_lock(ctx);
    return ctx.mds[md_index].md->mem_dereg(memh);
}

} // namespace ucp

namespace ucp {

bool live_memh(const ucp_mem *memh, const char *call)
{
    if (live_handles<ucp_mem>::instance().contains(memh)) {
        return true;
    }
    ucs_error("%s(%p): not a live memory handle (unmapped already?)", call,
              static_cast<const void *>(memh));
    return false;
}

} // namespace ucp

extern "C" {

ucs_status_t ucp_mem_map(ucp_context_h context, const ucp_mem_map_params_t *params,
                         ucp_mem_h *memh_p)
{
    if ((context == nullptr) || (params == nullptr) || (memh_p == nullptr)) {
        ucs_error("ucp_mem_map: NULL %s", (context == nullptr) ? "context" :
                                          (params == nullptr)  ? "params" :
                                                                 "memh_p");
        return UCS_ERR_INVALID_PARAM;
    }
    return ucp::guarded("ucp_mem_map", [&]() {
        ucp::mem_map_request req;
        ucs_status_t status = ucp::parse_map_params(*params, &req);
        if (status != UCS_OK) {
            return status;
        }
        status = ucp::mem_map(*context, req, memh_p);
        if ((status == UCS_OK) && ((*memh_p)->length > 0) &&
            ((*memh_p)->mem_type == UCS_MEMORY_TYPE_HOST)) {
            context->mapped_regions.add(reinterpret_cast<uintptr_t>((*memh_p)->address),
                                        (*memh_p)->length, (*memh_p)->secret);
        }
        if (status == UCS_OK) {
            ucp::live_handles<ucp_mem>::instance().add(*memh_p);
        }
        return status;
    });
}

ucs_status_t ucp_mem_unmap(ucp_context_h context, ucp_mem_h memh)
{
    if ((context != nullptr) && (memh == nullptr)) {
        /* Open MPI's osc frees every dynamic window this way: quietly refused. */
        ucs_debug("ucp_mem_unmap: NULL memh");
        return UCS_ERR_INVALID_PARAM;
    }
    if ((context == nullptr) || (memh == nullptr)) {
        ucs_error("ucp_mem_unmap: NULL %s", (context == nullptr) ? "context" : "memh");
        return UCS_ERR_INVALID_PARAM;
    }
    if (!ucp::live_memh(memh, "ucp_mem_unmap")) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (memh->context != context) {
        ucs_error("ucp_mem_unmap: memh of another context");
        return UCS_ERR_INVALID_PARAM;
    }
    ucp::live_handles<ucp_mem>::instance().remove(memh);
    return ucp::guarded("ucp_mem_unmap", [&]() {
        ucp::ext::mem_unbind_cntr(memh);
        if ((memh->length > 0) && (memh->mem_type == UCS_MEMORY_TYPE_HOST)) {
            context->mapped_regions.remove(reinterpret_cast<uintptr_t>(memh->address), memh->length,
                                           memh->secret);
        }
        return ucp::mem_unmap(*context, memh);
    });
}

ucs_status_t ucp_mem_query(const ucp_mem_h memh, ucp_mem_attr_t *attr)
{
    if ((memh == nullptr) || (attr == nullptr) || !ucp::live_memh(memh, "ucp_mem_query")) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (attr->field_mask & UCP_MEM_ATTR_FIELD_ADDRESS) {
        attr->address = memh->address;
    }
    if (attr->field_mask & UCP_MEM_ATTR_FIELD_LENGTH) {
        attr->length = memh->length;
    }
    if (attr->field_mask & UCP_MEM_ATTR_FIELD_MEM_TYPE) {
        attr->mem_type = memh->mem_type;
    }
    return UCS_OK;
}

ucs_status_t ucp_mem_advise(ucp_context_h context, ucp_mem_h memh, ucp_mem_advise_params_t *params)
{
    if ((context == nullptr) || (memh == nullptr) || (params == nullptr) ||
        !ucp::live_memh(memh, "ucp_mem_advise") || (memh->context != context)) {
        ucs_error("ucp_mem_advise: NULL or mismatched context, memh or params");
        return UCS_ERR_INVALID_PARAM;
    }
    if ((params->field_mask & ucp::all_advise_fields) != ucp::all_advise_fields) {
        ucs_error("ucp_mem_advise: address, length and advice are all required");
        return UCS_ERR_INVALID_PARAM;
    }
    const int advice = ucs::raw_enum(params->advice);
    if ((advice != UCP_MADV_NORMAL) && (advice != UCP_MADV_WILLNEED)) {
        ucs_error("ucp_mem_advise: unknown advice %d", advice);
        return UCS_ERR_INVALID_PARAM;
    }
    const auto address = reinterpret_cast<uintptr_t>(params->address);
    if (!memh->contains(address, params->length)) {
        ucs_error("ucp_mem_advise: %p+%zu is not inside the mapped %p+%zu", params->address,
                  params->length, memh->address, memh->length);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((params->length == 0) || (memh->mem_type != UCS_MEMORY_TYPE_HOST)) {
        return UCS_OK; /* nothing the host kernel can act on */
    }

    /* Advice is a hint: the kernel refusing it is not an error. */
    const size_t page     = ucp::page_size();
    const uintptr_t start = ucp::align_down(address, page);
    const uintptr_t end   = ucp::align_up(address + params->length, page);
    auto *range           = reinterpret_cast<void *>(start);
    if (advice == UCP_MADV_WILLNEED) {
        ucp::populate(range, end - start, (memh->prot & UCP_MEM_MAP_PROT_LOCAL_WRITE) != 0);
    } else if (madvise(range, end - start, MADV_NORMAL) != 0) {
        ucs_debug("ucp_mem_advise: madvise(%p, %zu, NORMAL): %s", range, size_t(end - start),
                  strerror(errno));
    }
    return UCS_OK;
}

void ucp_mem_print_info(const char *mem_size, ucp_context_h context, FILE *stream)
{
    if ((mem_size == nullptr) || (context == nullptr) || (stream == nullptr)) {
        return;
    }
    ucp::guarded("ucp_mem_print_info", [&]() {
        const auto &size_type = ucs::config::type_size;
        size_t length         = 0;
        if (!size_type.parse(mem_size, &length, size_type) || (length == ucs::config::size_inf) ||
            (length == ucs::config::size_auto)) {
            ucs_error("ucp_mem_print_info: '%s' is not a memory size (%s)", mem_size,
                      size_type.syntax(size_type).c_str());
            return UCS_ERR_INVALID_PARAM;
        }

        ucp::mem_map_request req;
        req.length          = length;
        req.flags           = UCP_MEM_MAP_ALLOCATE;
        req.prot            = ucp::all_prot;
        ucp_mem *memh       = nullptr;
        ucs_status_t status = ucp::mem_map(*context, req, &memh);
        if (status != UCS_OK) {
            std::fprintf(stream, "# failed to allocate %s: %s\n", mem_size,
                         ucs_status_string(status));
            return status;
        }

        std::string allocator = ucp::mem_alloc_method_name(memh->alloc_method);
        if (memh->alloc_method == ucp::mem_alloc_method::MD) {
            allocator += " " + context->mds[memh->alloc_md_index].name;
        }
        std::string registered;
        for (unsigned i = 0; i < context->mds.size(); ++i) {
            if (memh->uct_memh(i) != nullptr) {
                registered += " " + context->mds[i].name;
            }
        }
        std::fprintf(stream, "#\n# UCP memory allocation\n#\n");
        std::fprintf(stream, "#  allocated %zu bytes at address %p with %s, page size %zu\n",
                     memh->length, memh->address, allocator.c_str(), ucp::page_size());
        std::fprintf(stream, "#  registered on:%s\n#\n",
                     registered.empty() ? " (no memory domain)" : registered.c_str());
        return ucp::mem_unmap(*context, memh);
    });
}

} // extern "C"
