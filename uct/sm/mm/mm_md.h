/*
 * The "posix" and "sysv" components: one memory domain each, named like the
 * component, with one transport resource ("posix"/"sysv" on device
 * "memory"). The md allocates memory peers can map (mem_alloc, anywhere or
 * at a fixed address without replacing a mapping), packs keys
 * for it, and the component maps a peer's key (rkey_unpack) so that rkey_ptr
 * and the ep's put/get are plain memory copies, bounds-checked against the
 * region the key describes.
 */
#ifndef UCT_SM_MM_MM_MD_H
#define UCT_SM_MM_MM_MD_H

#include "mm_config.h"
#include "mm_segment.h"

#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <ucs/type/wire_reader.h>

namespace uct::mm {

constexpr const char *DEVICE_NAME = "memory";

class mm_component final : public uct::component {
public:
    mm_component(const char *name, const backend &seg_backend);

    const char *name() const override { return name_; }
    ucs_status_t query_md_resources(std::vector<md_resource> *out) override;
    ucs_status_t md_open(const char *md_name, md **md_p) override;

    ucs_status_t rkey_unpack(const void *buffer, size_t length, rkey_bundle *rkey_p) override;
    void rkey_release(const rkey_bundle &rkey) override;
    ucs_status_t rkey_ptr(const rkey_bundle &rkey, uint64_t remote_addr,
                          void **local_addr_p) override;

    const backend &seg_backend() const { return backend_; }

private:
    const char *name_;
    const backend &backend_;
};

class mm_md final : public uct::md {
public:
    explicit mm_md(mm_component &comp);

    const md_attr &attr() const override { return attr_; }
    component &owner() const override { return component_; }
    const char *name() const override { return component_.name(); }

    ucs_status_t query_tl_resources(std::vector<tl_resource> *out) override;

    /* Opens with the UCX_MM_* configuration (read_mm_config). */
    ucs_status_t iface_open(worker &worker, const iface_params &params, iface **iface_p) override;
    /* Opens with explicit tunables (tests and benchmarks use it). */
    ucs_status_t iface_open_with_config(worker &worker, const iface_params &params,
                                        const mm_config &config, iface **iface_p);

    ucs_status_t mem_alloc(size_t *length_p, void **address_p, unsigned flags,
                           mem_h *memh_p) override;
    ucs_status_t mem_free(mem_h memh) override;
    ucs_status_t mkey_pack(mem_h memh, void *buffer) override;

    const backend &seg_backend() const { return component_.seg_backend(); }

private:
    mm_component &component_;
    md_attr attr_;
};

/* A peer's region mapped here; an rkey_t points at one. */
struct mapped_rkey {
    uint64_t magic;
    uint8_t *local;  /* where the region starts in this process */
    uint64_t remote; /* where it starts in the owner */
    uint64_t length;
    const backend *seg_backend;
    size_t mapped_size;
};

constexpr uint64_t MAPPED_RKEY_MAGIC = 0x59454b52676e786dull;

/*
 * Local address of [remote_addr, remote_addr + length) under `rkey`, or
 * nullptr if the key is not ours or the range leaves the region.
 */
inline uint8_t *rkey_translate(rkey_t rkey, uint64_t remote_addr, size_t length)
{
    auto *key = reinterpret_cast<const mapped_rkey *>(rkey);
    if (ucs_unlikely((key == nullptr) || (key->magic != MAPPED_RKEY_MAGIC))) {
        return nullptr;
    }
    if (ucs_unlikely(!ucs::range_inside(remote_addr, length, key->remote, key->length))) {
        return nullptr;
    }
    return key->local + (remote_addr - key->remote);
}

} // namespace uct::mm

#endif
