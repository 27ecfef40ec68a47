/*
 * Helpers of the memory-handle and remote-key tests: mapping parameters,
 * an owning memh, and what the kernel says about a range (resident pages,
 * protection, free address ranges).
 */
#ifndef TEST_UCP_MEM_TEST_UTIL_H
#define TEST_UCP_MEM_TEST_UTIL_H

#include "ucp_test_util.h"

#include <ucp/api/ucp.h>
#include <ucp/core/ucp_context.h>
#include <ucp/core/ucp_mm.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

namespace mem_test {

inline size_t page_size()
{
    return size_t(sysconf(_SC_PAGESIZE));
}

inline ucp_params_t rma_params()
{
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_RMA | UCP_FEATURE_AMO64;
    return params;
}

inline ucp_mem_map_params_t map_params(void *address, size_t length, unsigned flags = 0)
{
    ucp_mem_map_params_t params{};
    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                        UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    params.address = address;
    params.length  = length;
    params.flags   = flags;
    return params;
}

/* A ucp_mem_map result, unmapped when destroyed. */
class mapped {
public:
    mapped(ucp_context_h context, const ucp_mem_map_params_t &params) : context_(context)
    {
        status = ucp_mem_map(context, &params, &memh);
    }

    ~mapped()
    {
        if (status == UCS_OK) {
            ucp_mem_unmap(context_, memh);
        }
    }

    mapped(const mapped &)            = delete;
    mapped &operator=(const mapped &) = delete;

    ucs_status_t unmap()
    {
        ucs_status_t result = ucp_mem_unmap(context_, memh);
        status              = UCS_ERR_NO_ELEM;
        return result;
    }

    char *address() const { return static_cast<char *>(memh->address); }
    uint64_t raddr() const { return reinterpret_cast<uintptr_t>(memh->address); }
    size_t length() const { return memh->length; }

    ucp_mem_h memh = nullptr;
    ucs_status_t status;

private:
    ucp_context_h context_;
};

/* Pages of [address, address + length) in memory now (mincore). */
inline size_t resident_pages(const void *address, size_t length)
{
    const size_t page  = page_size();
    const auto start   = reinterpret_cast<uintptr_t>(address) / page * page;
    const size_t count = (reinterpret_cast<uintptr_t>(address) + length - start + page - 1) / page;
    std::vector<unsigned char> vec(count);
    if (mincore(reinterpret_cast<void *>(start), count * page, vec.data()) != 0) {
        return SIZE_MAX;
    }
    size_t resident = 0;
    for (unsigned char v : vec) {
        resident += v & 1;
    }
    return resident;
}

/* "rw-p"-style permissions of the mapping holding address, "" if none. */
inline std::string permissions_of(const void *address)
{
    std::ifstream maps("/proc/self/maps");
    std::string line;
    const auto target = reinterpret_cast<uintptr_t>(address);
    while (std::getline(maps, line)) {
        unsigned long start = 0, end = 0;
        char perms[8] = {};
        if ((std::sscanf(line.c_str(), "%lx-%lx %7s", &start, &end, perms) == 3) &&
            (target >= start) && (target < end)) {
            return perms;
        }
    }
    return "";
}

/* An address range nothing is mapped at right now. */
inline void *free_range(size_t length)
{
    void *hole = mmap(nullptr, length, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (hole == MAP_FAILED) {
        return nullptr;
    }
    munmap(hole, length);
    return hole;
}

/* The context's md index with this name, -1 if absent. */
inline int md_index_of(ucp_context_h context, const std::string &name)
{
    for (size_t i = 0; i < context->mds.size(); ++i) {
        if (context->mds[i].name == name) {
            return int(i);
        }
    }
    return -1;
}

/* Whether the context has an md that allocates memory peers can map. */
inline bool has_rkey_ptr_alloc(ucp_context_h context)
{
    for (const auto &md : context->mds) {
        const uint64_t need = uct::md_flag::ALLOC | uct::md_flag::RKEY_PTR;
        if ((md.md->attr().flags & need) == need) {
            return true;
        }
    }
    return false;
}

/* Mds of the context that ucp_mem_map registers ordinary host memory on. */
inline uint64_t registering_mds(ucp_context_h context)
{
    uint64_t map = 0;
    for (size_t i = 0; i < context->mds.size(); ++i) {
        const uct::md_attr &attr = context->mds[i].md->attr();
        if ((attr.flags & uct::md_flag::REG) &&
            (attr.flags & (uct::md_flag::NEED_RKEY | uct::md_flag::NEED_MEMH))) {
            map |= ucp::md_bit(unsigned(i));
        }
    }
    return map;
}

} // namespace mem_test

#endif
