#include "mm_md.h"

#include "mm_iface.h"
#include "mm_node.h"

#include <ucs/debug/log.h>
#include <ucs/type/wire_reader.h>

#include <cstddef>
#include <cstring>
#include <new>

#include <unistd.h>

namespace uct::mm {

namespace {

/* A remote key as it travels: little-endian host layout, fixed size. */
struct __attribute__((packed)) packed_rkey {
    uint32_t magic;
    uint16_t version;
    uint16_t backend; /* backend_kind */
    uint32_t owner_pid;
    uint32_t reserved;
    uint64_t node;
    uint64_t segment_id;
    uint64_t segment_size;
    uint64_t address; /* where the segment starts in the owner */
};
/* Frozen: changing it requires bumping RKEY_VERSION, which rkey_unpack checks; magic
 * and version never move. */
static_assert((sizeof(packed_rkey) == 48) && (offsetof(packed_rkey, version) == 4),
              "packed key layout");

constexpr uint32_t RKEY_MAGIC   = 0x6b6d6d78; /* "xmmk" */
constexpr uint16_t RKEY_VERSION = 1;

/* What mem_alloc hands out as a memh. */
struct allocation {
    local_segment segment;
};

} // namespace

mm_component::mm_component(const char *name, const backend &seg_backend) :
    name_(name), backend_(seg_backend)
{
}

ucs_status_t mm_component::query_md_resources(std::vector<md_resource> *out)
{
    return single_md_resource(name_, out);
}

ucs_status_t mm_component::md_open(const char *md_name, md **md_p)
{
    if ((md_name == nullptr) || (md_p == nullptr) || (std::strcmp(md_name, name_) != 0)) {
        return UCS_ERR_NO_DEVICE;
    }
    auto *md = new (std::nothrow) mm_md(*this);
    if (md == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    *md_p = md;
    return UCS_OK;
}

ucs_status_t mm_component::rkey_unpack(const void *buffer, size_t length, rkey_bundle *rkey_p)
{
    packed_rkey packed;
    if ((buffer == nullptr) || (rkey_p == nullptr) ||
        !ucs::wire_reader(buffer, length).get(&packed)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if ((packed.magic != RKEY_MAGIC) || (packed.version != RKEY_VERSION) ||
        (packed.backend != uint16_t(backend_.kind())) || (packed.segment_size == 0) ||
        (packed.segment_size > backend_.max_size()) ||
        (packed.address > UINT64_MAX - packed.segment_size)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (packed.node != node_id()) {
        return UCS_ERR_UNREACHABLE;
    }

    void *local = nullptr;
    segment_ref ref{packed.owner_pid, packed.segment_id, packed.segment_size};
    ucs_status_t status = backend_.attach(ref, &local);
    if (status != UCS_OK) {
        return status;
    }
    auto *key = new (std::nothrow) mapped_rkey{MAPPED_RKEY_MAGIC, static_cast<uint8_t *>(local),
                                               packed.address,    packed.segment_size,
                                               &backend_,         packed.segment_size};
    if (key == nullptr) {
        backend_.detach(local, packed.segment_size);
        return UCS_ERR_NO_MEMORY;
    }
    rkey_p->rkey   = reinterpret_cast<rkey_t>(key);
    rkey_p->handle = key;
    return UCS_OK;
}

void mm_component::rkey_release(const rkey_bundle &rkey)
{
    auto *key = static_cast<mapped_rkey *>(rkey.handle);
    if ((key == nullptr) || (key->magic != MAPPED_RKEY_MAGIC)) {
        return;
    }
    key->seg_backend->detach(key->local, key->mapped_size);
    key->magic = 0;
    delete key;
}

ucs_status_t mm_component::rkey_ptr(const rkey_bundle &rkey, uint64_t remote_addr,
                                    void **local_addr_p)
{
    if (local_addr_p == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    uint8_t *local = rkey_translate(rkey.rkey, remote_addr, 1);
    if (local == nullptr) {
        return UCS_ERR_INVALID_ADDR;
    }
    *local_addr_p = local;
    return UCS_OK;
}

mm_md::mm_md(mm_component &comp) : component_(comp)
{
    attr_.flags     = md_flag::ALLOC | md_flag::FIXED | md_flag::NEED_RKEY | md_flag::RKEY_PTR;
    attr_.max_alloc = comp.seg_backend().max_size();
    attr_.max_reg   = 0;
    attr_.rkey_packed_size = sizeof(packed_rkey);
    attr_.reg_mem_types    = 0;
}

ucs_status_t mm_md::query_tl_resources(std::vector<tl_resource> *out)
{
    if (out == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    tl_resource res{};
    copy_resource_name(res.tl_name, component_.name());
    copy_resource_name(res.dev_name, DEVICE_NAME);
    res.type = device_type::SHM;
    out->push_back(res);
    return UCS_OK;
}

ucs_status_t mm_md::iface_open(worker &worker, const iface_params &params, iface **iface_p)
{
    mm_config config;
    ucs_status_t status = read_mm_config(params.env_prefix, &config);
    if (status != UCS_OK) {
        return status;
    }
    return iface_open_with_config(worker, params, config, iface_p);
}

ucs_status_t mm_md::iface_open_with_config(worker &worker, const iface_params &params,
                                           const mm_config &config, iface **iface_p)
{
    if (iface_p == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (((params.tl_name != nullptr) && (std::strcmp(params.tl_name, component_.name()) != 0)) ||
        ((params.dev_name != nullptr) && (std::strcmp(params.dev_name, DEVICE_NAME) != 0))) {
        return UCS_ERR_NO_DEVICE;
    }
    return mm_iface::open(*this, worker, params, config, iface_p);
}

ucs_status_t mm_md::mem_alloc(size_t *length_p, void **address_p, unsigned flags, mem_h *memh_p)
{
    if ((length_p == nullptr) || (address_p == nullptr) || (memh_p == nullptr) ||
        (*length_p == 0) || (*length_p > attr_.max_alloc)) {
        return UCS_ERR_INVALID_PARAM;
    }
    void *fixed_address = nullptr;
    if (flags & mem_flag::FIXED) {
        fixed_address = *address_p;
        if ((fixed_address == nullptr) ||
            (reinterpret_cast<uintptr_t>(fixed_address) % page_size() != 0)) {
            return UCS_ERR_INVALID_PARAM;
        }
    }
    auto *alloc = new (std::nothrow) allocation;
    if (alloc == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    ucs_status_t status = seg_backend().create(align_up(*length_p, page_size()), fixed_address,
                                               &alloc->segment);
    if (status != UCS_OK) {
        delete alloc;
        return status;
    }
    *length_p  = alloc->segment.size;
    *address_p = alloc->segment.address;
    *memh_p    = alloc;
    return UCS_OK;
}

ucs_status_t mm_md::mem_free(mem_h memh)
{
    if (memh == MEM_HANDLE_NULL) {
        return UCS_ERR_INVALID_PARAM;
    }
    auto *alloc = static_cast<allocation *>(memh);
    seg_backend().destroy(&alloc->segment);
    delete alloc;
    return UCS_OK;
}

ucs_status_t mm_md::mkey_pack(mem_h memh, void *buffer)
{
    if ((memh == MEM_HANDLE_NULL) || (buffer == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    const auto *alloc = static_cast<const allocation *>(memh);
    packed_rkey packed{};
    packed.magic        = RKEY_MAGIC;
    packed.version      = RKEY_VERSION;
    packed.backend      = uint16_t(seg_backend().kind());
    packed.owner_pid    = uint32_t(getpid());
    packed.node         = node_id();
    packed.segment_id   = alloc->segment.id;
    packed.segment_size = alloc->segment.size;
    packed.address      = reinterpret_cast<uintptr_t>(alloc->segment.address);
    std::memcpy(buffer, &packed, sizeof(packed));
    return UCS_OK;
}

} // namespace uct::mm
