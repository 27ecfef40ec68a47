/*
 * The "ib" component: one md per verbs device. The md registers memory
 * with ibv_reg_mr (a memory handle is the ibv_mr; its rkey goes to peers)
 * and opens the verbs transports on the device's active ports
 * ("mlx5_0:1"). Remote keys are the 32-bit rkey, packed with a magic word
 * so that a blank or foreign key is refused on unpack.
 */
#ifndef UCT_IB_IB_MD_H
#define UCT_IB_IB_MD_H

#include <uct/base/uct_md.h>
#include <uct/ib/ib_device.h>
#include <ucs/type/wire_reader.h>

#include <memory>

namespace uct::ib {

struct packed_rkey {
    uint32_t magic;
    uint32_t rkey;
    uint64_t address; /* the registered range: the initiator refuses */
    uint64_t length;  /* what lies outside before the device would fail the QP */
    static constexpr uint32_t MAGIC = 0x31424b49; /* "IKB1" */
};
static_assert(sizeof(packed_rkey) == 24, "packed_rkey layout");

/* A remote key as unpacked; rkey_t points at it. */
struct remote_key {
    uint64_t address;
    uint64_t length;
    uint32_t rkey;

    /* [addr, addr + len) lies inside the registered range. */
    bool covers(uint64_t addr, uint64_t len) const
    {
        return ucs::range_inside(addr, len, address, length);
    }
};

inline const remote_key &remote_key_of(rkey_t rkey)
{
    return *reinterpret_cast<const remote_key *>(rkey);
}

class ib_component : public component {
public:
    const char *name() const override { return "ib"; }
    ucs_status_t query_md_resources(std::vector<md_resource> *out) override;
    ucs_status_t md_open(const char *md_name, md **md_p) override;
    ucs_status_t rkey_unpack(const void *buffer, size_t length, rkey_bundle *rkey_p) override;
    void rkey_release(const rkey_bundle &rkey) override;
};

ib_component &ib_component_instance();

class ib_md : public md {
public:
    explicit ib_md(std::unique_ptr<device> dev, const ib_md_config &config);

    const md_attr &attr() const override { return attr_; }
    component &owner() const override { return ib_component_instance(); }
    const char *name() const override { return dev_->name().c_str(); }

    ucs_status_t query_tl_resources(std::vector<tl_resource> *out) override;
    ucs_status_t iface_open(worker &worker, const iface_params &params, iface **iface_p) override;

    ucs_status_t mem_reg(void *address, size_t length, unsigned flags, mem_h *memh_p) override;
    ucs_status_t mem_dereg(mem_h memh) override;
    ucs_status_t mkey_pack(mem_h memh, void *buffer) override;

    device &dev() const { return *dev_; }

private:
    std::unique_ptr<device> dev_;
    md_attr attr_;
};

/* The lkey of a memory handle of this md (an iov's memh). */
inline uint32_t memh_lkey(mem_h memh)
{
    return static_cast<const ibv_mr *>(memh)->lkey;
}

} // namespace uct::ib

#endif
