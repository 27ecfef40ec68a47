#include <uct/sm/cma/cma_md.h>

#include <uct/sm/cma/cma_access.h>
#include <uct/sm/cma/cma_iface.h>
#include <uct/sm/cma/cma_rkey.h>

#include <ucs/debug/log.h>

#include <cstring>
#include <new>
#include <unistd.h>

namespace uct::cma {

cma_config default_cma_config()
{
    return cma_config{};
}

cma_component &component_instance()
{
    static cma_component instance;
    return instance;
}

namespace {

const bool registered = (uct::register_component(&component_instance()), true);

void copy_name(char (&dest)[32], const char *src)
{
    std::strncpy(dest, src, sizeof(dest) - 1);
    dest[sizeof(dest) - 1] = '\0';
}

} // namespace

ucs_status_t cma_component::query_md_resources(std::vector<md_resource> *out)
{
    (void)registered;
    try {
        md_resource res{};
        copy_name(res.md_name, MD_NAME);
        out->push_back(res);
    } catch (...) {
        return UCS_ERR_NO_MEMORY;
    }
    return UCS_OK;
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

ucs_status_t cma_component::rkey_unpack(const void *buffer, size_t length,
                                        rkey_bundle *rkey_p)
{
    remote_region region;
    ucs_status_t status = unpack_rkey(buffer, length, &region);
    if (status != UCS_OK) {
        return status;
    }
    auto *copy = new (std::nothrow) remote_region(region);
    if (copy == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    rkey_p->rkey   = reinterpret_cast<rkey_t>(copy);
    rkey_p->handle = copy;
    return UCS_OK;
}

void cma_component::rkey_release(const rkey_bundle &rkey)
{
    auto *region = static_cast<remote_region*>(rkey.handle);
    if (region == nullptr) {
        return;
    }
    if (region->magic != REMOTE_REGION_MAGIC) {
        ucs_error("cma: releasing an rkey that is not a cma key (%p)", rkey.handle);
        return;
    }
    region->magic = 0;   /* a second release is caught above, not a double free */
    delete region;
}

cma_md::cma_md(const cma_config &config) : config_(config)
{
    attr_.flags            = md_flag::REG | md_flag::NEED_RKEY;
    attr_.max_reg          = SIZE_MAX;
    attr_.rkey_packed_size = sizeof(packed_rkey);
    attr_.reg_overhead_s   = 10e-9;   /* a small allocation, no pinning */
}

ucs_status_t cma_md::query_tl_resources(std::vector<tl_resource> *out)
{
    std::string reason;
    if (!cma_usable(config_, &reason)) {
        ucs_diag("cma transport is not usable: %s", reason.c_str());
        return UCS_OK;     /* no resources: nothing to offer, nothing broken */
    }
    try {
        tl_resource res{};
        copy_name(res.tl_name, TL_NAME);
        copy_name(res.dev_name, DEV_NAME);
        res.type = device_type::SHM;
        out->push_back(res);
    } catch (...) {
        return UCS_ERR_NO_MEMORY;
    }
    return UCS_OK;
}

ucs_status_t cma_md::iface_open(uct::worker &worker, const iface_params &params,
                                uct::iface **iface_p)
{
    if (((params.tl_name != nullptr) && (std::strcmp(params.tl_name, TL_NAME) != 0)) ||
        ((params.dev_name != nullptr) && (std::strcmp(params.dev_name, DEV_NAME) != 0))) {
        ucs_error("cma: no such resource %s/%s",
                  params.tl_name ? params.tl_name : "(null)",
                  params.dev_name ? params.dev_name : "(null)");
        return UCS_ERR_NO_DEVICE;
    }
    std::string reason;
    if (!cma_usable(config_, &reason)) {
        ucs_error("cma transport cannot be used: %s", reason.c_str());
        return UCS_ERR_UNSUPPORTED;
    }
    auto *iface = new (std::nothrow) cma_iface(*this, worker, params, config_);
    if (iface == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    *iface_p = iface;
    return UCS_OK;
}

ucs_status_t cma_md::mem_reg(void *address, size_t length, unsigned, mem_h *memh_p)
{
    uint64_t end;
    if ((memh_p == nullptr) || ((address == nullptr) && (length != 0)) ||
        __builtin_add_overflow(reinterpret_cast<uintptr_t>(address), length, &end)) {
        return UCS_ERR_INVALID_PARAM;
    }
    auto *region = new (std::nothrow) local_region{LOCAL_REGION_MAGIC, address, length};
    if (region == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    *memh_p = region;
    return UCS_OK;
}

ucs_status_t cma_md::mem_dereg(mem_h memh)
{
    auto *region = static_cast<local_region*>(memh);
    if ((region == nullptr) || (region->magic != LOCAL_REGION_MAGIC)) {
        return UCS_ERR_INVALID_PARAM;
    }
    region->magic = 0;
    delete region;
    return UCS_OK;
}

ucs_status_t cma_md::mkey_pack(mem_h memh, void *buffer)
{
    auto *region = static_cast<const local_region*>(memh);
    if ((region == nullptr) || (buffer == nullptr) ||
        (region->magic != LOCAL_REGION_MAGIC)) {
        return UCS_ERR_INVALID_PARAM;
    }
    pack_rkey(getpid(), *region, buffer);
    return UCS_OK;
}

} // namespace uct::cma
