#include <uct/ib/ib_md.h>
#include <uct/ib/rc_verbs.h>
#include <uct/ib/ud_verbs.h>

#include <uct/base/uct_module.h>
#include <ucs/debug/log.h>
#include <ucs/type/wire_reader.h>

#include <cstring>
#include <new>

namespace uct::ib {

namespace {

constexpr int reg_access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                           IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

} // namespace

ucs_status_t ib_component::query_md_resources(std::vector<md_resource> *out)
{
    for (const std::string &name : device_names()) {
        md_resource r;
        copy_resource_name(r.md_name, name.c_str());
        out->push_back(r);
    }
    return UCS_OK;
}

ucs_status_t ib_component::md_open(const char *md_name, md **md_p)
{
    ib_md_config config;
    ucs_status_t status = read_ib_md_config("", &config);
    if (status != UCS_OK) {
        return status;
    }
    std::unique_ptr<device> dev;
    status = device::open(md_name, config, &dev);
    if (status != UCS_OK) {
        return status;
    }
    *md_p = new ib_md(std::move(dev), config);
    return UCS_OK;
}

ucs_status_t ib_component::rkey_unpack(const void *buffer, size_t length, rkey_bundle *rkey_p)
{
    packed_rkey packed;
    ucs::wire_reader r(buffer, length);
    if ((buffer == nullptr) || (rkey_p == nullptr) || !r.get(&packed) ||
        (packed.magic != packed_rkey::MAGIC)) {
        return UCS_ERR_INVALID_PARAM;
    }
    auto *key = new (std::nothrow) remote_key{packed.address, packed.length, packed.rkey};
    if (key == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    rkey_p->rkey   = reinterpret_cast<rkey_t>(key);
    rkey_p->handle = key;
    return UCS_OK;
}

void ib_component::rkey_release(const rkey_bundle &rkey)
{
    delete static_cast<remote_key *>(rkey.handle);
}

ib_component &ib_component_instance()
{
    static ib_component instance;
    return instance;
}

UCT_REGISTER_TRANSPORT(ib, &ib_component_instance())

ib_md::ib_md(std::unique_ptr<device> dev, const ib_md_config &config) : dev_(std::move(dev))
{
    attr_.flags   = md_flag::REG | md_flag::NEED_MEMH | md_flag::NEED_RKEY | md_flag::REG_PINS;
    attr_.max_reg = dev_->attr().max_mr_size;
    attr_.rkey_packed_size = sizeof(packed_rkey);
    attr_.reg_overhead_s   = config.reg_overhead_s;
}

ucs_status_t ib_md::query_tl_resources(std::vector<tl_resource> *out)
{
    for (const port_info &port : dev_->ports()) {
        if (port.attr.state != IBV_PORT_ACTIVE) {
            continue;
        }
        const std::string dev_name = dev_->name() + ":" + std::to_string(port.num);
        for (const char *tl : {"rc_verbs", "ud_verbs"}) {
            tl_resource r;
            copy_resource_name(r.tl_name, tl);
            copy_resource_name(r.dev_name, dev_name.c_str());
            r.type = device_type::NET;
            out->push_back(r);
        }
    }
    return UCS_OK;
}

ucs_status_t ib_md::iface_open(worker &worker, const iface_params &params, iface **iface_p)
{
    std::string dev_name;
    unsigned port_num = 0;
    const bool ud = (params.tl_name != nullptr) && (std::strcmp(params.tl_name, "ud_verbs") == 0);
    if ((params.tl_name == nullptr) || (!ud && (std::strcmp(params.tl_name, "rc_verbs") != 0)) ||
        (params.dev_name == nullptr) || !parse_port_name(params.dev_name, &dev_name, &port_num) ||
        (dev_name != dev_->name())) {
        return UCS_ERR_NO_DEVICE;
    }
    const port_info *port = dev_->active_port(port_num);
    if (port == nullptr) {
        ucs_error("ib: %s is not an active port", params.dev_name);
        return UCS_ERR_NO_DEVICE;
    }
    if (ud) {
        ud_verbs_config config;
        ucs_status_t status = read_ud_verbs_config(params.env_prefix, &config);
        if (status != UCS_OK) {
            return status;
        }
        auto iface = std::make_unique<ud_verbs_iface>(*this, *port, worker, params, config);
        status     = iface->init();
        if (status != UCS_OK) {
            return status;
        }
        *iface_p = iface.release();
        return UCS_OK;
    }
    rc_verbs_config config;
    ucs_status_t status = read_rc_verbs_config(params.env_prefix, &config);
    if (status != UCS_OK) {
        return status;
    }
    auto iface = std::make_unique<rc_verbs_iface>(*this, *port, worker, params, config);
    status     = iface->init();
    if (status != UCS_OK) {
        return status;
    }
    *iface_p = iface.release();
    return UCS_OK;
}

ucs_status_t ib_md::mem_reg(void *address, size_t length, unsigned, mem_h *memh_p)
{
    if ((memh_p == nullptr) || ((address == nullptr) && (length != 0))) {
        return UCS_ERR_INVALID_PARAM;
    }
    ibv_mr *mr = ibv_reg_mr(dev_->pd(), address, length, reg_access);
    if (mr == nullptr) {
        ucs_error("ib: ibv_reg_mr(%p, %zu) on %s failed: %m", address, length,
                  dev_->name().c_str());
        return (errno == ENOMEM) ? UCS_ERR_NO_MEMORY : UCS_ERR_IO_ERROR;
    }
    *memh_p = mr;
    return UCS_OK;
}

ucs_status_t ib_md::mem_dereg(mem_h memh)
{
    if (memh == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (ibv_dereg_mr(static_cast<ibv_mr *>(memh)) != 0) {
        ucs_error("ib: ibv_dereg_mr failed: %m");
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

ucs_status_t ib_md::mkey_pack(mem_h memh, void *buffer)
{
    if ((memh == nullptr) || (buffer == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    const auto *mr = static_cast<const ibv_mr *>(memh);
    const packed_rkey packed{packed_rkey::MAGIC, mr->rkey, uint64_t(uintptr_t(mr->addr)),
                             uint64_t(mr->length)};
    std::memcpy(buffer, &packed, sizeof(packed));
    return UCS_OK;
}

} // namespace uct::ib
