/*
 * The self component and memory domain: registration records a region of
 * this process, keys carry its bounds, and the single tl resource is the
 * loopback device "memory0".
 */
#ifndef UCT_SM_SELF_SELF_MD_H
#define UCT_SM_SELF_SELF_MD_H

#include <uct/base/uct_md.h>
#include <uct/sm/self/self_config.h>

namespace uct::self {

constexpr const char *COMPONENT_NAME = "self";
constexpr const char *MD_NAME        = "self";
constexpr const char *TL_NAME        = "self";
constexpr const char *DEV_NAME       = "memory0";

class self_component final : public uct::component {
public:
    const char *name() const override { return COMPONENT_NAME; }
    ucs_status_t query_md_resources(std::vector<md_resource> *out) override;
    ucs_status_t md_open(const char *md_name, uct::md **md_p) override;
    ucs_status_t rkey_unpack(const void *buffer, size_t length, rkey_bundle *rkey_p) override;
    void rkey_release(const rkey_bundle &rkey) override;
};

/* The process-wide instance registered with uct. */
self_component &component_instance();

class self_md final : public uct::md {
public:
    self_md();

    const md_attr &attr() const override { return attr_; }
    uct::component &owner() const override { return component_instance(); }
    const char *name() const override { return MD_NAME; }

    ucs_status_t query_tl_resources(std::vector<tl_resource> *out) override;
    /* Opens with the UCX_SELF_* configuration (read_self_config). */
    ucs_status_t iface_open(uct::worker &worker, const iface_params &params,
                            uct::iface **iface_p) override;

    ucs_status_t mem_reg(void *address, size_t length, unsigned flags, mem_h *memh_p) override;
    ucs_status_t mem_dereg(mem_h memh) override;
    ucs_status_t mkey_pack(mem_h memh, void *buffer) override;

private:
    md_attr attr_;
};

} // namespace uct::self

#endif
