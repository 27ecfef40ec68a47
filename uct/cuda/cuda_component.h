/*
 * What the two CUDA components share: one memory domain each, offered and
 * opened only where the driver has a device; opening one registers the
 * module's memory-type services (cuda_memtype.h).
 */
#ifndef UCT_CUDA_CUDA_COMPONENT_H
#define UCT_CUDA_CUDA_COMPONENT_H

#include <uct/base/uct_md.h>
#include <uct/cuda/cuda_driver.h>
#include <uct/cuda/cuda_memtype.h>

#include <cstring>
#include <new>
#include <vector>

namespace uct::cuda {

/* query_md_resources: `md_name` where a GPU is, nothing elsewhere. */
inline ucs_status_t gpu_md_resource(const char *md_name, std::vector<md_resource> *out)
{
    return (driver() == nullptr) ? UCS_OK : single_md_resource(md_name, out);
}

/* md_open of the md called `md_name`, of type Md. */
template <typename Md>
ucs_status_t open_gpu_md(const char *wanted, const char *md_name, uct::md **md_p)
{
    if ((wanted == nullptr) || (std::strcmp(wanted, md_name) != 0) || (driver() == nullptr)) {
        return UCS_ERR_NO_DEVICE;
    }
    auto *md = new (std::nothrow) Md();
    if (md == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    register_memtype_services();
    *md_p = md;
    return UCS_OK;
}

} // namespace uct::cuda

#endif
