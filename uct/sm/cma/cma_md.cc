#include <uct/sm/cma/cma_md.h>

#include <uct/sm/cma/cma_access.h>
#include <uct/sm/cma/cma_iface.h>
#include <uct/sm/cma/cma_rkey.h>

#include <uct/base/uct_module.h>

#include <ucs/debug/log.h>

#include <cstring>
#include <new>
#include <unistd.h>

namespace uct::cma {

cma_component &component_instance()
{
    static cma_component instance;
    return instance;
}

UCT_REGISTER_TRANSPORT(cma, &component_instance())

ucs_status_t cma_component::query_md_resources(std::vector<md_resource> *out)
{
    return single_md_resource(MD_NAME, out);
}

ucs_status_t cma_component::md_open(const char *md_name, uct::md **md_p)
{
    if ((md_name == nullptr) || (std::strcmp(md_name, MD_NAME) != 0)) {
        return UCS_ERR_NO_DEVICE;
    }
    auto *md = new (std::nothrow) cma_md(default_cma_config());
    if (md == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    *md_p = md;
    return UCS_OK;
}

ucs_status_t cma_component::rkey_unpack(const void *buffer, size_t length, rkey_bundle *rkey_p)
{
    return sm::region_rkey_unpack(key_kind, buffer, length, rkey_p);
}

void cma_component::rkey_release(const rkey_bundle &rkey)
{
    sm::region_rkey_release(key_kind, rkey);
}

cma_md::cma_md(const cma_config &config) : config_(config)
{
    attr_.flags            = md_flag::REG | md_flag::NEED_RKEY;
    attr_.max_reg          = SIZE_MAX;
    attr_.rkey_packed_size = sizeof(packed_rkey);
    attr_.reg_overhead_s   = 10e-9; /* a small allocation, no pinning */
}

ucs_status_t cma_md::query_tl_resources(std::vector<tl_resource> *out)
{
    std::string reason;
    if (!cma_usable(config_, &reason)) {
        ucs_diag("cma transport is not usable: %s", reason.c_str());
        return UCS_OK; /* no resources: nothing to offer, nothing broken */
    }
    return single_tl_resource(TL_NAME, DEV_NAME, device_type::SHM, out);
}

ucs_status_t cma_md::iface_open(uct::worker &worker, const iface_params &params,
                                uct::iface **iface_p)
{
    if (((params.tl_name != nullptr) && (std::strcmp(params.tl_name, TL_NAME) != 0)) ||
        ((params.dev_name != nullptr) && (std::strcmp(params.dev_name, DEV_NAME) != 0))) {
        ucs_error("cma: no such resource %s/%s", params.tl_name ? params.tl_name : "(null)",
                  params.dev_name ? params.dev_name : "(null)");
        return UCS_ERR_NO_DEVICE;
    }
    /* The md's config names the ptrace policy file; the tunables come from
     * UCX_[<prefix>_]CMA_* now, so each iface sees the caller's prefix. */
    cma_config config   = config_;
    ucs_status_t status = read_cma_config(params.env_prefix, &config);
    if (status != UCS_OK) {
        ucs_error("cma: cannot open the iface: invalid UCX_CMA_* configuration");
        return status;
    }
    std::string reason;
    if (!cma_usable(config, &reason)) {
        ucs_error("cma transport cannot be used: %s", reason.c_str());
        return UCS_ERR_UNSUPPORTED;
    }
    auto *iface = new (std::nothrow) cma_iface(*this, worker, params, config);
    if (iface == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    status = iface->init();
    if (status != UCS_OK) {
        delete iface;
        return status;
    }
    *iface_p = iface;
    return UCS_OK;
}

ucs_status_t cma_md::mem_reg(void *address, size_t length, unsigned, mem_h *memh_p)
{
    return sm::region_mem_reg(key_kind, address, length, memh_p);
}

ucs_status_t cma_md::mem_dereg(mem_h memh)
{
    return sm::region_mem_dereg(key_kind, memh);
}

ucs_status_t cma_md::mkey_pack(mem_h memh, void *buffer)
{
    return sm::region_mkey_pack(key_kind, memh, buffer);
}

} // namespace uct::cma
