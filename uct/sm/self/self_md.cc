#include <uct/sm/self/self_md.h>

#include <uct/sm/self/self_iface.h>
#include <uct/sm/self/self_rkey.h>

#include <uct/base/uct_module.h>

#include <ucs/debug/log.h>

#include <cstring>
#include <new>
#include <unistd.h>

namespace uct::self {

self_component &component_instance()
{
    static self_component instance;
    return instance;
}

UCT_REGISTER_TRANSPORT(self, &component_instance())

ucs_status_t self_component::query_md_resources(std::vector<md_resource> *out)
{
    return single_md_resource(MD_NAME, out);
}

ucs_status_t self_component::md_open(const char *md_name, uct::md **md_p)
{
    if ((md_name == nullptr) || (std::strcmp(md_name, MD_NAME) != 0)) {
        return UCS_ERR_NO_DEVICE;
    }
    auto *md = new (std::nothrow) self_md();
    if (md == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    *md_p = md;
    return UCS_OK;
}

ucs_status_t self_component::rkey_unpack(const void *buffer, size_t length, rkey_bundle *rkey_p)
{
    return sm::region_rkey_unpack(key_kind, buffer, length, rkey_p);
}

void self_component::rkey_release(const rkey_bundle &rkey)
{
    sm::region_rkey_release(key_kind, rkey);
}

self_md::self_md()
{
    attr_.flags            = md_flag::REG | md_flag::NEED_RKEY;
    attr_.max_reg          = SIZE_MAX;
    attr_.rkey_packed_size = sizeof(packed_rkey);
    attr_.reg_overhead_s   = 10e-9;
}

ucs_status_t self_md::query_tl_resources(std::vector<tl_resource> *out)
{
    return single_tl_resource(TL_NAME, DEV_NAME, device_type::SELF, out);
}

ucs_status_t self_md::iface_open(uct::worker &worker, const iface_params &params,
                                 uct::iface **iface_p)
{
    if (((params.tl_name != nullptr) && (std::strcmp(params.tl_name, TL_NAME) != 0)) ||
        ((params.dev_name != nullptr) && (std::strcmp(params.dev_name, DEV_NAME) != 0))) {
        ucs_error("self: no such resource %s/%s", params.tl_name ? params.tl_name : "(null)",
                  params.dev_name ? params.dev_name : "(null)");
        return UCS_ERR_NO_DEVICE;
    }
    /* Read per iface, so each caller's env prefix applies. */
    self_config config;
    ucs_status_t status = read_self_config(params.env_prefix, &config);
    if (status != UCS_OK) {
        ucs_error("self: cannot open the iface: invalid UCX_SELF_* configuration");
        return status;
    }
    return self_iface::open(*this, worker, params, config, iface_p);
}

ucs_status_t self_md::mem_reg(void *address, size_t length, unsigned, mem_h *memh_p)
{
    return sm::region_mem_reg(key_kind, address, length, memh_p);
}

ucs_status_t self_md::mem_dereg(mem_h memh)
{
    return sm::region_mem_dereg(key_kind, memh);
}

ucs_status_t self_md::mkey_pack(mem_h memh, void *buffer)
{
    return sm::region_mkey_pack(key_kind, memh, buffer);
}

} // namespace uct::self
