#include <uct/cuda/cuda_copy.h>

#include <uct/cuda/cuda_component.h>
#include <uct/cuda/cuda_iface.h>
#include <uct/cuda/cuda_ipc.h>
#include <uct/cuda/cuda_memtype.h>

#include <uct/base/uct_module.h>

#include <cstring>
#include <new>

namespace uct::cuda {

copy_component &copy_component_instance()
{
    static copy_component instance;
    return instance;
}

/* libuct_cuda.so: both CUDA transports. */
UCT_REGISTER_TRANSPORT(cuda, &copy_component_instance(), &ipc_component_instance())

ucs_status_t copy_component::query_md_resources(std::vector<md_resource> *out)
{
    return gpu_md_resource(COPY_MD_NAME, out);
}

ucs_status_t copy_component::md_open(const char *md_name, uct::md **md_p)
{
    return open_gpu_md<copy_md>(md_name, COPY_MD_NAME, md_p);
}

copy_md::copy_md()
{
    constexpr uint64_t cuda_types = (1ull << UCS_MEMORY_TYPE_CUDA) |
                                    (1ull << UCS_MEMORY_TYPE_CUDA_MANAGED);
    attr_.flags            = md_flag::ALLOC;
    attr_.max_alloc        = SIZE_MAX;
    attr_.alloc_mem_types  = cuda_types;
    attr_.reg_mem_types    = 0;
    attr_.detect_mem_types = cuda_types;
    attr_.access_mem_types = cuda_types | (1ull << UCS_MEMORY_TYPE_HOST);
}

ucs_status_t copy_md::query_tl_resources(std::vector<tl_resource> *out)
{
    return single_tl_resource(COPY_TL_NAME, DEV_NAME, device_type::ACC, out);
}

ucs_status_t copy_md::iface_open(uct::worker &worker, const iface_params &, uct::iface **iface_p)
{
    auto *iface = new (std::nothrow) cuda_iface(*this, worker, transport_kind::COPY);
    if (iface == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    *iface_p = iface;
    return UCS_OK;
}

ucs_status_t copy_md::detect_memory_type(const void *address, size_t, ucs_memory_type_t *type_p)
{
    *type_p = pointer_memory_type(address);
    return UCS_OK;
}

ucs_status_t copy_md::mem_alloc_of_type(ucs_memory_type_t type, size_t *length_p, void **address_p,
                                        unsigned flags, mem_h *memh_p)
{
    if (((type != UCS_MEMORY_TYPE_CUDA) && (type != UCS_MEMORY_TYPE_CUDA_MANAGED)) ||
        (flags & mem_flag::FIXED) || (*length_p == 0)) {
        return UCS_ERR_UNSUPPORTED;
    }
    ucs_status_t status = ensure_context();
    if (status != UCS_OK) {
        return status;
    }
    CUdeviceptr address = 0;
    status              = (type == UCS_MEMORY_TYPE_CUDA) ?
                              check(driver()->cuMemAlloc(&address, *length_p), "cuMemAlloc") :
                              check(driver()->cuMemAllocManaged(&address, *length_p, CU_MEM_ATTACH_GLOBAL),
                                    "cuMemAllocManaged");
    if (status != UCS_OK) {
        return UCS_ERR_NO_MEMORY;
    }
    *address_p = reinterpret_cast<void *>(address);
    *memh_p    = reinterpret_cast<mem_h>(address);
    return UCS_OK;
}

ucs_status_t copy_md::mem_free(mem_h memh)
{
    if ((memh == nullptr) || (ensure_context() != UCS_OK)) {
        return UCS_ERR_INVALID_PARAM;
    }
    return check(driver()->cuMemFree(reinterpret_cast<CUdeviceptr>(memh)), "cuMemFree");
}

} // namespace uct::cuda
