#include <uct/tcp/tcp_md.h>

#include <uct/tcp/tcp_iface.h>
#include <uct/tcp/tcp_netif.h>
#include <uct/tcp/tcp_wire.h>
#include <uct/base/uct_module.h>

#include <ucs/debug/log.h>
#include <ucs/sys/random.h>
#include <ucs/type/wire_reader.h>

#include <cstring>
#include <new>


namespace uct::tcp {

const tcp_rkey *rkey_from(rkey_t rkey)
{
    auto *key = reinterpret_cast<const tcp_rkey *>(rkey);
    if (ucs_unlikely((key == nullptr) || (key->magic != RKEY_MAGIC))) {
        return nullptr;
    }
    return key;
}

ucs_status_t tcp_component::query_md_resources(std::vector<md_resource> *out)
{
    return single_md_resource("tcp", out);
}

ucs_status_t tcp_component::md_open(const char *md_name, md **md_p)
{
    if ((md_name == nullptr) || (md_p == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (std::strcmp(md_name, "tcp") != 0) {
        return UCS_ERR_NO_DEVICE;
    }
    tcp_md *md = new (std::nothrow) tcp_md();
    if (md == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    *md_p = md;
    return UCS_OK;
}

ucs_status_t tcp_component::rkey_unpack(const void *buffer, size_t length, rkey_bundle *rkey_p)
{
    packed_rkey packed;
    uint64_t end;
    if ((buffer == nullptr) || (rkey_p == nullptr) ||
        !ucs::wire_reader(buffer, length).get(&packed)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if ((packed.magic != RKEY_MAGIC) || (packed.region_id == 0) || (packed.length == 0) ||
        !ucs::checked_add(packed.address, packed.length, &end)) {
        ucs_debug("tcp: rejected a malformed remote key");
        return UCS_ERR_INVALID_PARAM;
    }
    auto *key = new (std::nothrow)
        tcp_rkey{RKEY_MAGIC, packed.region_id, packed.address, packed.length};
    if (key == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    rkey_p->rkey   = reinterpret_cast<rkey_t>(key);
    rkey_p->handle = key;
    return UCS_OK;
}

void tcp_component::rkey_release(const rkey_bundle &rkey)
{
    auto *key = static_cast<tcp_rkey *>(rkey.handle);
    if ((key != nullptr) && (key->magic == RKEY_MAGIC)) {
        key->magic = 0; /* a stale rkey_t now fails rkey_from() */
        delete key;
    }
}

tcp_component &tcp_component_instance()
{
    static tcp_component instance;
    return instance;
}

UCT_REGISTER_TRANSPORT(tcp, &tcp_component_instance())

tcp_md::tcp_md()
{
    attr_.flags            = md_flag::REG | md_flag::NEED_RKEY;
    attr_.max_reg          = SIZE_MAX;
    attr_.rkey_packed_size = sizeof(packed_rkey);
    attr_.reg_overhead_s   = 50e-9; /* a hash-map insert */
}

ucs_status_t tcp_md::query_tl_resources(std::vector<tl_resource> *out)
{
    if (out == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    try {
        out->clear();
        for (const auto &nif : discover_netifs()) {
            tl_resource res{};
            copy_resource_name(res.tl_name, "tcp");
            copy_resource_name(res.dev_name, nif.name.c_str());
            res.type = device_type::NET;
            out->push_back(res);
        }
    } catch (...) {
        return UCS_ERR_NO_MEMORY;
    }
    return UCS_OK;
}

ucs_status_t tcp_md::iface_open(worker &worker, const iface_params &params, iface **iface_p)
{
    /* Read per iface, so each caller's env prefix applies. */
    tcp_config config;
    ucs_status_t status = read_tcp_config(params.env_prefix, &config);
    if (status != UCS_OK) {
        ucs_error("tcp: cannot open the iface: invalid UCX_TCP_* configuration");
        return status;
    }
    return iface_open(worker, params, config, iface_p);
}

ucs_status_t tcp_md::iface_open(worker &worker, const iface_params &params,
                                const tcp_config &config, iface **iface_p)
{
    if (iface_p == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    if ((params.tl_name != nullptr) && (std::strcmp(params.tl_name, "tcp") != 0)) {
        return UCS_ERR_NO_DEVICE;
    }
    if (worker.thread_mode() == UCS_THREAD_MODE_MULTI) {
        /* No locks on the data path: callers serialize, or it is one thread. */
        return UCS_ERR_UNSUPPORTED;
    }
    ucs_status_t status = check_tcp_config(config);
    if (status != UCS_OK) {
        return status;
    }
    return tcp_iface::open(*this, worker, params, config, iface_p);
}

ucs_status_t tcp_md::mem_reg(void *address, size_t length, unsigned, mem_h *memh_p)
{
    auto start = reinterpret_cast<uint64_t>(address);
    if ((memh_p == nullptr) || (address == nullptr) || (length == 0) || (start + length < start)) {
        return UCS_ERR_INVALID_PARAM;
    }
    /* A random id is the region's secret: a peer reaches the region only
     * with a key that names it (and over a connection that proved it holds
     * this process's address). */
    uint64_t id;
    try {
        do {
            id = ucs::sys::random_u64();
        } while (!regions_.emplace(id, region{start, length}).second);
    } catch (...) {
        return UCS_ERR_NO_MEMORY;
    }
    /* The handle is the id itself: dereg and pack never dereference it. */
    *memh_p = reinterpret_cast<mem_h>(static_cast<uintptr_t>(id));
    return UCS_OK;
}

ucs_status_t tcp_md::mem_dereg(mem_h memh)
{
    auto id = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(memh));
    return (regions_.erase(id) == 1) ? UCS_OK : UCS_ERR_INVALID_PARAM;
}

ucs_status_t tcp_md::mkey_pack(mem_h memh, void *buffer)
{
    auto id = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(memh));
    auto it = regions_.find(id);
    if ((buffer == nullptr) || (it == regions_.end())) {
        return UCS_ERR_INVALID_PARAM;
    }
    packed_rkey packed{RKEY_MAGIC, id, it->second.address, it->second.length};
    std::memcpy(buffer, &packed, sizeof(packed));
    return UCS_OK;
}

} // namespace uct::tcp
