#include <uct/cuda/cuda_memtype.h>

#include <uct/cuda/cuda_driver.h>

#include <ucs/debug/log.h>
#include <ucs/memory/block_cache.h>
#include <ucs/memory/memtype_registry.h>

#include <cstdint>
#include <cstring>
#include <mutex>

namespace uct::cuda {

namespace {

/*
 * detect() asks the CUDA detector, then the CUDA_MANAGED one, for the same
 * buffer: one driver query answers both. The first leaves its answer here
 * for the second, which takes it (valid for that one call only).
 */
struct last_query {
    const void *address    = nullptr;
    ucs_memory_type_t type = UCS_MEMORY_TYPE_HOST;
    bool valid             = false;
};
thread_local last_query t_last;

ucs_memory_type_t query_and_remember(const void *address)
{
    t_last = {address, pointer_memory_type(address), true};
    return t_last.type;
}

ucs_memory_type_t take_or_query(const void *address)
{
    if (t_last.valid && (t_last.address == address)) {
        t_last.valid = false;
        return t_last.type;
    }
    return pointer_memory_type(address);
}

/* Bigger copies go straight between the buffers. */
constexpr size_t pinned_size = 256 * 1024;

/* The stream of the staging copies and the pinned buffer of small ones. */
struct stager {
    std::mutex lock; /* copies of all threads share both */
    CUstream stream     = nullptr;
    void *pinned        = nullptr;
    ucs_status_t status = UCS_ERR_NO_DEVICE;
};

stager &the_stager()
{
    static stager s;
    static std::once_flag once;
    std::call_once(once, [] {
        const driver_api *api = driver();
        s.status = check(api->cuStreamCreate(&s.stream, CU_STREAM_DEFAULT), "cuStreamCreate");
        if ((s.status == UCS_OK) &&
            (check(api->cuMemHostAlloc(&s.pinned, pinned_size, 0), "cuMemHostAlloc") != UCS_OK)) {
            s.pinned = nullptr; /* small copies go directly then */
        }
    });
    return s;
}

/* The stager, in a current context; nullptr (why in *status) if none. */
stager *ready_stager(ucs_status_t *status)
{
    *status = ensure_context();
    if (*status != UCS_OK) {
        return nullptr;
    }
    stager &s = the_stager();
    *status   = s.status;
    return (s.status == UCS_OK) ? &s : nullptr;
}

ucs_status_t copy_and_wait(CUstream stream, void *dest, const void *src, size_t length)
{
    const driver_api *api = driver();
    ucs_status_t status   = check(api->cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dest),
                                                     reinterpret_cast<CUdeviceptr>(src), length,
                                                     stream),
                                  "cuMemcpyAsync");
    if (status != UCS_OK) {
        return status;
    }
    return check(api->cuStreamSynchronize(stream), "cuStreamSynchronize");
}

/* Only a new block needs a context: a small bounce buffer (a wireup
 * message) never makes one in a process that does not use the GPU. */
void *pin_block(size_t size)
{
    void *block = nullptr;
    if ((ensure_context() != UCS_OK) ||
        (driver()->cuMemHostAlloc(&block, size, 0) != CUDA_SUCCESS)) {
        ucs_debug("cuda: no pinned bounce buffer of %zu bytes", size);
        return nullptr;
    }
    return block;
}

void unpin_block(void *block, size_t)
{
    if (ensure_context() == UCS_OK) { /* the thread may have none current */
        driver()->cuMemFreeHost(block);
    }
}

/*
 * Pinned bounce buffers from 64 KiB (below, pinning costs more than it
 * saves) to 64 MiB, at most 128 MiB pinned per process: a window of sends
 * that each hold a staged copy reuses the same blocks (the first version
 * pinned and unpinned one per message beyond 64 MiB idle, and 4 MiB staged
 * sends fell from 3.9 to 1.2 GB/s).
 */
ucs::block_cache &the_pinned_blocks()
{
    static auto *blocks = new ucs::block_cache(/* outlives every bounce buffer */
                                               pin_block, unpin_block,
                                               {64 * 1024, 64 * 1024 * 1024, 128 * 1024 * 1024});
    return *blocks;
}

void *pinned_alloc(size_t length)
{
    return the_pinned_blocks().get(length);
}

void pinned_release(void *block, size_t length)
{
    the_pinned_blocks().put(block, length);
}

constexpr ucs::memtype::host_allocator pinned_allocator = {pinned_alloc, pinned_release};
constexpr ucs::memtype::async_copier async_staged_copy  = {staged_copy_start, staged_copy_finish};

} // namespace

ucs_memory_type_t pointer_memory_type(const void *address)
{
    const driver_api *api = driver();
    if ((api == nullptr) || (address == nullptr)) {
        return UCS_MEMORY_TYPE_HOST;
    }
    unsigned int memory_type         = 0; /* CUmemorytype; 0 when unknown to the driver */
    unsigned int is_managed          = 0;
    CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                        CU_POINTER_ATTRIBUTE_IS_MANAGED};
    void *data[]                     = {&memory_type, &is_managed};
    /* Unknown pointers (host memory) succeed with the attributes left 0. */
    if (api->cuPointerGetAttributes(2, attributes, data, reinterpret_cast<CUdeviceptr>(address)) !=
        CUDA_SUCCESS) {
        return UCS_MEMORY_TYPE_HOST;
    }
    if (is_managed != 0) {
        return UCS_MEMORY_TYPE_CUDA_MANAGED;
    }
    return (memory_type == CU_MEMORYTYPE_DEVICE) ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
}

ucs_status_t staged_copy(void *dest, ucs_memory_type_t dest_type, const void *src,
                         ucs_memory_type_t src_type, size_t length)
{
    if (length == 0) {
        return UCS_OK;
    }
    ucs_status_t status;
    stager *ready = ready_stager(&status);
    if (ready == nullptr) {
        return status;
    }
    stager &s = *ready;
    std::lock_guard<std::mutex> guard(s.lock);
    const bool to_device = (src_type == UCS_MEMORY_TYPE_HOST) &&
                           (dest_type != UCS_MEMORY_TYPE_HOST) &&
                           (dest_type != UCS_MEMORY_TYPE_UNKNOWN);
    const bool from_device = (dest_type == UCS_MEMORY_TYPE_HOST) &&
                             (src_type != UCS_MEMORY_TYPE_HOST) &&
                             (src_type != UCS_MEMORY_TYPE_UNKNOWN);
    if ((s.pinned == nullptr) || (length > pinned_size) || !(to_device || from_device)) {
        return copy_and_wait(s.stream, dest, src, length);
    }
    if (to_device) {
        std::memcpy(s.pinned, src, length);
        return copy_and_wait(s.stream, dest, s.pinned, length);
    }
    status = copy_and_wait(s.stream, s.pinned, src, length);
    if (status == UCS_OK) {
        std::memcpy(dest, s.pinned, length);
    }
    return status;
}

ucs_status_t staged_copy_start(void *dest, ucs_memory_type_t dest_type, const void *src,
                               ucs_memory_type_t src_type, size_t length)
{
    /* Small copies gain nothing from overlap: the pinned path waits. */
    if (length <= pinned_size) {
        return staged_copy(dest, dest_type, src, src_type, length);
    }
    ucs_status_t status;
    stager *s = ready_stager(&status);
    if (s == nullptr) {
        return status;
    }
    std::lock_guard<std::mutex> guard(s->lock);
    return check(driver()->cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dest),
                                         reinterpret_cast<CUdeviceptr>(src), length, s->stream),
                 "cuMemcpyAsync");
}

ucs_status_t staged_copy_finish()
{
    ucs_status_t status;
    stager *s = ready_stager(&status);
    if (s == nullptr) {
        return status;
    }
    std::lock_guard<std::mutex> guard(s->lock);
    return check(driver()->cuStreamSynchronize(s->stream), "cuStreamSynchronize");
}

void register_memtype_services()
{
    static std::once_flag once;
    std::call_once(once, [] {
        auto cuda = [](const void *address, size_t) {
            return query_and_remember(address) == UCS_MEMORY_TYPE_CUDA;
        };
        auto managed = [](const void *address, size_t) {
            return take_or_query(address) == UCS_MEMORY_TYPE_CUDA_MANAGED;
        };
        for (auto [type, status] :
             {std::pair{UCS_MEMORY_TYPE_CUDA,
                        ucs::memtype::register_detector(UCS_MEMORY_TYPE_CUDA, cuda)},
              std::pair{UCS_MEMORY_TYPE_CUDA_MANAGED,
                        ucs::memtype::register_detector(UCS_MEMORY_TYPE_CUDA_MANAGED, managed)},
              std::pair{UCS_MEMORY_TYPE_CUDA,
                        ucs::memtype::register_copier(UCS_MEMORY_TYPE_CUDA, staged_copy)},
              std::pair{UCS_MEMORY_TYPE_CUDA_MANAGED,
                        ucs::memtype::register_copier(UCS_MEMORY_TYPE_CUDA_MANAGED,
                                                      staged_copy)}}) {
            if (status != UCS_OK) {
                ucs_diag("cuda: %s memory service not registered: %s", ucs_memory_type_names[type],
                         ucs_status_string(status));
            }
        }
        for (auto type : {UCS_MEMORY_TYPE_CUDA, UCS_MEMORY_TYPE_CUDA_MANAGED}) {
            ucs_status_t status = ucs::memtype::register_async_copier(type, &async_staged_copy);
            if (status != UCS_OK) {
                ucs_diag("cuda: %s asynchronous copier not registered: %s",
                         ucs_memory_type_names[type], ucs_status_string(status));
            }
        }
        ucs_status_t status = ucs::memtype::register_bounce_allocator(&pinned_allocator);
        if (status != UCS_OK) {
            ucs_diag("cuda: pinned bounce buffers not registered: %s", ucs_status_string(status));
        }
    });
}

} // namespace uct::cuda
