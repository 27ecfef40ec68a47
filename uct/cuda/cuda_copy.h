/*
 * cuda_copy: copies between host and device memory inside this process.
 * Its md detects CUDA and CUDA managed memory (and, when it opens, gives
 * ucs's memory-type registry the detectors and the staging copier that
 * the UCP protocols use for device buffers) and allocates device and
 * managed memory (ucp_mem_map ALLOCATE); its transport does put/get
 * between local buffers of any kind on the copy engine.
 */
#ifndef UCT_CUDA_CUDA_COPY_H
#define UCT_CUDA_CUDA_COPY_H

#include <uct/base/uct_md.h>

namespace uct::cuda {

constexpr const char *COPY_COMPONENT_NAME = "cuda_cpy";
constexpr const char *COPY_MD_NAME        = "cuda_cpy";
constexpr const char *COPY_TL_NAME        = "cuda_copy";

class copy_component final : public uct::component {
public:
    const char *name() const override { return COPY_COMPONENT_NAME; }
    ucs_status_t query_md_resources(std::vector<md_resource> *out) override;
    ucs_status_t md_open(const char *md_name, uct::md **md_p) override;
};

copy_component &copy_component_instance();

class copy_md final : public uct::md {
public:
    copy_md();

    const md_attr &attr() const override { return attr_; }
    uct::component &owner() const override { return copy_component_instance(); }
    const char *name() const override { return COPY_MD_NAME; }

    ucs_status_t query_tl_resources(std::vector<tl_resource> *out) override;
    ucs_status_t iface_open(uct::worker &worker, const iface_params &params,
                            uct::iface **iface_p) override;
    ucs_status_t detect_memory_type(const void *address, size_t length,
                                    ucs_memory_type_t *type_p) override;
    /* cuMemAlloc (CUDA) or cuMemAllocManaged (CUDA_MANAGED). */
    ucs_status_t mem_alloc_of_type(ucs_memory_type_t type, size_t *length_p, void **address_p,
                                   unsigned flags, mem_h *memh_p) override;
    ucs_status_t mem_free(mem_h memh) override;

private:
    md_attr attr_;
};

} // namespace uct::cuda

#endif
