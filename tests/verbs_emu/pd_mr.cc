/* Protection domains and memory registration. */
#include "objects.h"

#include <algorithm>
#include <cerrno>
#include <unordered_map>
#include <vector>

#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

namespace verbs_emu {

namespace {

std::unordered_map<uint32_t, emu_mr *> g_local_mrs;

/* Like pinning: every page of the range must be mapped, and the ends
 * readable. EFAULT otherwise. */
bool range_is_mapped(const void *addr, size_t length)
{
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    uintptr_t start   = reinterpret_cast<uintptr_t>(addr) & ~(page - 1);
    uintptr_t end     = reinterpret_cast<uintptr_t>(addr) + length;
    if (end < reinterpret_cast<uintptr_t>(addr)) {
        return false;
    }
    std::vector<unsigned char> residency(4096);
    while (start < end) {
        size_t span = std::min<uintptr_t>(end - start, residency.size() * page);
        /* mincore fails with ENOMEM on any unmapped page of the span */
        if (mincore(reinterpret_cast<void *>(start), span, residency.data()) != 0) {
            return false;
        }
        start += span;
    }
    char probe;
    struct iovec local     = {&probe, 1};
    struct iovec remote[2] = {{const_cast<void *>(addr), 1},
                              {static_cast<char *>(const_cast<void *>(addr)) + length - 1, 1}};
    for (const struct iovec &end_byte : remote) {
        if (process_vm_readv(getpid(), &local, 1, &end_byte, 1, 0) != 1) {
            return false;
        }
    }
    return true;
}

struct ibv_mr *register_mr(struct ibv_pd *ibv_pd, void *addr, size_t length, uint64_t iova,
                           unsigned access)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_pd *pd = lookup<emu_pd>(ibv_pd);
    if (pd == nullptr || length == 0) {
        errno = EINVAL;
        return nullptr;
    }
    if ((access & IBV_ACCESS_ON_DEMAND) ||
        /* the IB spec: remote write or atomic access needs local write */
        ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
         !(access & IBV_ACCESS_LOCAL_WRITE))) {
        errno = EINVAL;
        return nullptr;
    }
    if (iova + length < iova) {
        errno = EINVAL;
        return nullptr;
    }
    if (!range_is_mapped(addr, length)) {
        errno = EFAULT;
        return nullptr;
    }
    auto *mr = new (std::nothrow) emu_mr();
    if (mr == nullptr) {
        errno = ENOMEM;
        return nullptr;
    }
    mr_view entry;
    entry.owner  = getpid();
    entry.addr   = reinterpret_cast<uint64_t>(addr);
    entry.iova   = iova;
    entry.length = length;
    entry.access = access;
    uint32_t key = 0;
    int rc       = fabric_alloc_mr(entry, &key);
    if (rc != 0) {
        delete mr;
        errno = rc;
        return nullptr;
    }
    mr->pd           = pd;
    mr->iova         = iova;
    mr->access       = access;
    mr->ibv.context  = pd->ibv.context;
    mr->ibv.pd       = ibv_pd;
    mr->ibv.addr     = addr;
    mr->ibv.length   = length;
    mr->ibv.handle   = key;
    mr->ibv.lkey     = key;
    mr->ibv.rkey     = key;
    g_local_mrs[key] = mr;
    ++pd->users;
    register_object(mr);
    return &mr->ibv;
}

} // namespace

void forget_local_mrs()
{
    g_local_mrs.clear();
}

emu_mr *find_local_mr(uint32_t lkey)
{
    auto it = g_local_mrs.find(lkey);
    return (it == g_local_mrs.end()) ? nullptr : it->second;
}

bool resolve_local_sges(const emu_pd *pd, const struct ibv_sge *sges, size_t count, uint32_t access,
                        gather_list *out)
{
    for (size_t i = 0; i < count; ++i) {
        const struct ibv_sge &sge = sges[i];
        if (sge.length == 0) {
            continue;
        }
        emu_mr *mr = find_local_mr(sge.lkey);
        if (mr == nullptr || mr->pd != pd || (mr->access & access) != access ||
            sge.addr < mr->iova || sge.addr + sge.length < sge.addr ||
            sge.addr + sge.length > mr->iova + mr->ibv.length) {
            return false;
        }
        uint64_t host = reinterpret_cast<uint64_t>(mr->ibv.addr) + (sge.addr - mr->iova);
        out->push_back({reinterpret_cast<void *>(host), sge.length});
    }
    return true;
}

} // namespace verbs_emu

using namespace verbs_emu;

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_context *ctx = lookup<emu_context>(context);
    if (ctx == nullptr) {
        errno = EINVAL;
        return nullptr;
    }
    auto *pd = new (std::nothrow) emu_pd();
    if (pd == nullptr) {
        errno = ENOMEM;
        return nullptr;
    }
    static uint32_t next_handle = 1;
    pd->ibv.context             = context;
    pd->ibv.handle              = next_handle++;
    ++ctx->users;
    register_object(pd);
    return &pd->ibv;
}

int ibv_dealloc_pd(struct ibv_pd *ibv_pd)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_pd *pd = lookup<emu_pd>(ibv_pd);
    if (pd == nullptr) {
        return EINVAL;
    }
    if (pd->users > 0) {
        return EBUSY;
    }
    emu_context *ctx = lookup<emu_context>(pd->ibv.context);
    if (ctx != nullptr) {
        --ctx->users;
    }
    unregister_object(pd);
    delete pd;
    return 0;
}

struct ibv_mr *(ibv_reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access)
{
    return register_mr(pd, addr, length, reinterpret_cast<uint64_t>(addr), unsigned(access));
}

struct ibv_mr *(ibv_reg_mr_iova)(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
                                 int access)
{
    return register_mr(pd, addr, length, iova, unsigned(access));
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
                                unsigned int access)
{
    return register_mr(pd, addr, length, iova, access);
}

int ibv_dereg_mr(struct ibv_mr *ibv_mr)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_mr *mr = lookup<emu_mr>(ibv_mr);
    if (mr == nullptr) {
        return EINVAL;
    }
    /* remote accesses with this key fail from now on */
    fabric_free_mr(mr->ibv.rkey);
    g_local_mrs.erase(mr->ibv.lkey);
    --mr->pd->users;
    unregister_object(mr);
    delete mr;
    return 0;
}
