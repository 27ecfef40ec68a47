/*
 * The tcp component and memory domain. Sockets cannot reach remote memory,
 * so RMA is emulated with messages: the md records every registered region
 * under a random 64-bit id, a packed key names that id and the region's
 * bounds, and the target checks each request against its own record before
 * touching memory. The id is the region's secret: without the key, a peer
 * cannot name a region.
 */
#ifndef UCT_TCP_TCP_MD_H
#define UCT_TCP_TCP_MD_H

#include <uct/base/uct_md.h>
#include <uct/tcp/tcp_config.h>
#include <ucs/type/wire_reader.h>

#include <cstdint>
#include <unordered_map>

namespace uct::tcp {

/* An unpacked remote key; ep operations receive a pointer to it as rkey_t. */
struct tcp_rkey {
    uint64_t magic; /* RKEY_MAGIC while alive */
    uint64_t region_id;
    uint64_t address;
    uint64_t length;

    /* [address, address + length) lies inside the key's bounds. */
    bool covers(uint64_t remote_addr, uint64_t len) const
    {
        return ucs::range_inside(remote_addr, len, address, length);
    }
};

/* The key behind an rkey_t, or nullptr when it is not one of ours. */
const tcp_rkey *rkey_from(rkey_t rkey);

class tcp_component : public component {
public:
    const char *name() const override { return "tcp"; }
    ucs_status_t query_md_resources(std::vector<md_resource> *out) override;
    ucs_status_t md_open(const char *md_name, md **md_p) override;
    ucs_status_t rkey_unpack(const void *buffer, size_t length, rkey_bundle *rkey_p) override;
    void rkey_release(const rkey_bundle &rkey) override;
};

tcp_component &tcp_component_instance();

class tcp_md : public md {
public:
    tcp_md();

    const md_attr &attr() const override { return attr_; }
    component &owner() const override { return tcp_component_instance(); }
    const char *name() const override { return "tcp"; }

    ucs_status_t query_tl_resources(std::vector<tl_resource> *out) override;
    /* Opens with the UCX_TCP_* configuration (read_tcp_config). */
    ucs_status_t iface_open(worker &worker, const iface_params &params, iface **iface_p) override;
    /* Same, with explicit tunables (tests). */
    ucs_status_t iface_open(worker &worker, const iface_params &params, const tcp_config &config,
                            iface **iface_p);

    ucs_status_t mem_reg(void *address, size_t length, unsigned flags, mem_h *memh_p) override;
    ucs_status_t mem_dereg(mem_h memh) override;
    ucs_status_t mkey_pack(mem_h memh, void *buffer) override;

    /*
     * Local memory for [address, address + length) of region `region_id`, or
     * nullptr when the region is unknown (never registered or deregistered)
     * or the range leaves it. The arguments come from the wire.
     */
    void *region_ptr(uint64_t region_id, uint64_t address, uint64_t length) const
    {
        auto it = regions_.find(region_id);
        if (ucs_unlikely(it == regions_.end())) {
            return nullptr;
        }
        const region &r = it->second;
        if (ucs_unlikely(!ucs::range_inside(address, length, r.address, r.length))) {
            return nullptr;
        }
        return reinterpret_cast<void *>(address);
    }

private:
    struct region {
        uint64_t address;
        uint64_t length;
    };

    md_attr attr_;
    std::unordered_map<uint64_t, region> regions_;
};

} // namespace uct::tcp

#endif
