#include <uct/cuda/cuda_ipc.h>

#include <uct/cuda/cuda_component.h>
#include <uct/cuda/cuda_iface.h>
#include <uct/cuda/cuda_memtype.h>

#include <ucs/debug/log.h>
#include <ucs/sys/identity.h>
#include <ucs/sys/process.h>

#include <cstring>
#include <memory>
#include <new>
#include <unistd.h>
#include <vector>

namespace uct::cuda {

namespace {

constexpr uint32_t key_magic = 0x43495043; /* "CIPC" */
/* Opened handles kept once unused; beyond it the least recent is closed. */
constexpr size_t max_unused_handles = 64;
/* Allocations whose handles md remembers; beyond it the list restarts. */
constexpr size_t max_known_allocations = 4096;

struct ipc_memh {
    CUipcMemHandle handle;
    uint64_t base;
    uint64_t length;
};

/* The process's opened peer handles, shared by every md and worker. */
class opened_handles {
public:
    struct entry {
        CUipcMemHandle handle;
        CUdeviceptr mapped;
        unsigned refs;
        uint64_t last_use;
    };

    ucs_status_t open(const CUipcMemHandle &handle, entry **entry_p)
    {
        std::lock_guard<std::mutex> guard(lock_);
        for (auto &e : entries_) {
            if (std::memcmp(&e->handle, &handle, sizeof(handle)) == 0) {
                ++e->refs;
                e->last_use = ++clock_;
                *entry_p    = e.get();
                return UCS_OK;
            }
        }
        ucs_status_t status = ensure_context();
        if (status != UCS_OK) {
            return status;
        }
        CUdeviceptr mapped = 0;
        status             = check(driver()->cuIpcOpenMemHandle(&mapped, handle,
                                                                CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
                                   "cuIpcOpenMemHandle");
        if (status != UCS_OK) {
            return status;
        }
        try {
            entries_.push_back(std::make_unique<entry>(entry{handle, mapped, 1, ++clock_}));
        } catch (...) {
            driver()->cuIpcCloseMemHandle(mapped);
            return UCS_ERR_NO_MEMORY;
        }
        *entry_p = entries_.back().get();
        trim();
        return UCS_OK;
    }

    void release(entry *e)
    {
        std::lock_guard<std::mutex> guard(lock_);
        --e->refs;
        trim();
    }

private:
    /* Closes the least recently used unreferenced handles beyond the limit. */
    void trim()
    {
        size_t unused = 0;
        for (const auto &e : entries_) {
            unused += (e->refs == 0);
        }
        while (unused > max_unused_handles) {
            auto oldest = entries_.end();
            for (auto it = entries_.begin(); it != entries_.end(); ++it) {
                if (((*it)->refs == 0) &&
                    ((oldest == entries_.end()) || ((*it)->last_use < (*oldest)->last_use))) {
                    oldest = it;
                }
            }
            driver()->cuIpcCloseMemHandle((*oldest)->mapped);
            entries_.erase(oldest);
            --unused;
        }
    }

    std::mutex lock_;
    std::vector<std::unique_ptr<entry>> entries_;
    uint64_t clock_ = 0;
};

opened_handles &handles()
{
    static auto *instance = new opened_handles(); /* outlives every key */
    return *instance;
}

/* An unpacked key: the peer's allocation and where it is mapped here. */
struct ipc_rkey {
    uint64_t base;
    uint64_t length;
    char *mapped;
    opened_handles::entry *opened; /* nullptr: our own memory */
};

} // namespace

char *ipc_target(rkey_t rkey, uint64_t remote_addr, size_t length)
{
    const auto *key = reinterpret_cast<const ipc_rkey *>(rkey);
    if ((key == nullptr) || (remote_addr < key->base) || (remote_addr - key->base > key->length) ||
        (length > key->length - (remote_addr - key->base))) {
        return nullptr;
    }
    return key->mapped + (remote_addr - key->base);
}

ipc_component &ipc_component_instance()
{
    static ipc_component instance;
    return instance;
}

ucs_status_t ipc_component::query_md_resources(std::vector<md_resource> *out)
{
    return gpu_md_resource(IPC_NAME, out);
}

ucs_status_t ipc_component::md_open(const char *md_name, uct::md **md_p)
{
    return open_gpu_md<ipc_md>(md_name, IPC_NAME, md_p);
}

ucs_status_t ipc_component::rkey_unpack(const void *buffer, size_t length, rkey_bundle *rkey_p)
{
    ipc_packed_key packed;
    if ((buffer == nullptr) || (length < sizeof(packed))) {
        return UCS_ERR_INVALID_PARAM;
    }
    std::memcpy(&packed, buffer, sizeof(packed));
    if ((packed.magic != key_magic) || (packed.base + packed.length < packed.base)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (packed.node != ucs::sys::machine_id()) {
        return UCS_ERR_UNREACHABLE;
    }
    auto key = std::make_unique<ipc_rkey>(ipc_rkey{packed.base, packed.length, nullptr, nullptr});
    if ((packed.pid == uint32_t(getpid())) && (packed.start_time == ucs::sys::self_start_time())) {
        key->mapped = reinterpret_cast<char *>(packed.base); /* our own allocation */
    } else {
        ucs_status_t status = handles().open(packed.handle, &key->opened);
        if (status != UCS_OK) {
            return status;
        }
        key->mapped = reinterpret_cast<char *>(key->opened->mapped);
    }
    rkey_p->rkey   = reinterpret_cast<rkey_t>(key.get());
    rkey_p->handle = key.release();
    return UCS_OK;
}

void ipc_component::rkey_release(const rkey_bundle &rkey)
{
    auto *key = static_cast<ipc_rkey *>(rkey.handle);
    if (key == nullptr) {
        return;
    }
    if (key->opened != nullptr) {
        handles().release(key->opened);
    }
    delete key;
}

ipc_md::ipc_md()
{
    attr_.flags            = md_flag::REG | md_flag::NEED_RKEY;
    attr_.max_reg          = SIZE_MAX;
    attr_.rkey_packed_size = sizeof(ipc_packed_key);
    attr_.reg_mem_types    = 1ull << UCS_MEMORY_TYPE_CUDA;
    /* The copy engine writes wherever unified addressing reaches. */
    attr_.access_mem_types = (1ull << UCS_MEMORY_TYPE_HOST) | (1ull << UCS_MEMORY_TYPE_CUDA) |
                             (1ull << UCS_MEMORY_TYPE_CUDA_MANAGED);
    attr_.reg_overhead_s = 1e-6;
}

ipc_md::~ipc_md() = default;

ucs_status_t ipc_md::query_tl_resources(std::vector<tl_resource> *out)
{
    return single_tl_resource(IPC_NAME, DEV_NAME, device_type::ACC, out);
}

ucs_status_t ipc_md::iface_open(uct::worker &worker, const iface_params &, uct::iface **iface_p)
{
    auto *iface = new (std::nothrow) cuda_iface(*this, worker, transport_kind::IPC);
    if (iface == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    *iface_p = iface;
    return UCS_OK;
}

ucs_status_t ipc_md::mem_reg(void *address, size_t length, unsigned, mem_h *memh_p)
{
    const driver_api *api            = driver();
    CUdeviceptr start                = 0;
    size_t range                     = 0;
    unsigned long long buffer_id     = 0;
    unsigned int memory_type         = 0;
    unsigned int is_managed          = 0;
    CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                        CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                        CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                        CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                        CU_POINTER_ATTRIBUTE_IS_MANAGED};
    void *data[]                     = {&start, &range, &buffer_id, &memory_type, &is_managed};
    if ((api == nullptr) ||
        (api->cuPointerGetAttributes(5, attributes, data, reinterpret_cast<CUdeviceptr>(address)) !=
         CUDA_SUCCESS) ||
        (memory_type != CU_MEMORYTYPE_DEVICE) || (is_managed != 0) ||
        (reinterpret_cast<uintptr_t>(address) + length > start + range)) {
        return UCS_ERR_UNSUPPORTED; /* not (all) in one device allocation */
    }

    auto memh = std::make_unique<ipc_memh>();
    {
        std::lock_guard<std::mutex> guard(lock_);
        auto known = handles_.find(buffer_id);
        if (known != handles_.end()) {
            memh->handle = known->second.handle;
        } else {
            ucs_status_t status = ensure_context();
            if (status == UCS_OK) {
                status = check(api->cuIpcGetMemHandle(&memh->handle, start), "cuIpcGetMemHandle");
            }
            if (status != UCS_OK) {
                return status;
            }
            /* Copies into exported memory synchronise with the owner's work. */
            unsigned int sync = 1;
            api->cuPointerSetAttribute(&sync, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, start);
            if (handles_.size() >= max_known_allocations) {
                handles_.clear();
            }
            handles_[buffer_id] = {memh->handle, start, range};
        }
    }
    memh->base   = start;
    memh->length = range;
    *memh_p      = memh.release();
    return UCS_OK;
}

ucs_status_t ipc_md::mem_dereg(mem_h memh)
{
    delete static_cast<ipc_memh *>(memh);
    return UCS_OK;
}

ucs_status_t ipc_md::mkey_pack(mem_h memh, void *buffer)
{
    const auto *m = static_cast<const ipc_memh *>(memh);
    if (m == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    ipc_packed_key packed{};
    packed.magic      = key_magic;
    packed.pid        = uint32_t(getpid());
    packed.start_time = ucs::sys::self_start_time();
    packed.node       = ucs::sys::machine_id();
    packed.base       = m->base;
    packed.length     = m->length;
    packed.handle     = m->handle;
    std::memcpy(buffer, &packed, sizeof(packed));
    return UCS_OK;
}

} // namespace uct::cuda
