/*
 * The cma component and memory domain. Registration records a region (no
 * pinning: the kernel pins pages per transfer); keys carry the region's
 * bounds and the owner's pid; the tl resource exists only where CMA is
 * usable (see cma_access.h).
 */
#ifndef UCT_SM_CMA_CMA_MD_H
#define UCT_SM_CMA_CMA_MD_H

#include <uct/base/uct_md.h>
#include <uct/sm/cma/cma_config.h>

namespace uct::cma {

constexpr const char *COMPONENT_NAME = "cma";
constexpr const char *MD_NAME        = "cma";
constexpr const char *TL_NAME        = "cma";
constexpr const char *DEV_NAME       = "memory";

class cma_component final : public uct::component {
public:
    const char *name() const override { return COMPONENT_NAME; }
    ucs_status_t query_md_resources(std::vector<md_resource> *out) override;
    ucs_status_t md_open(const char *md_name, uct::md **md_p) override;
    ucs_status_t rkey_unpack(const void *buffer, size_t length, rkey_bundle *rkey_p) override;
    void rkey_release(const rkey_bundle &rkey) override;
};

/* The process-wide instance registered with uct. */
cma_component &component_instance();

class cma_md final : public uct::md {
public:
    /* config.ptrace_scope_file decides usability; iface_open reads the
     * tunables from UCX_*CMA_* over the rest of config. */
    explicit cma_md(const cma_config &config);

    const md_attr &attr() const override { return attr_; }
    uct::component &owner() const override { return component_instance(); }
    const char *name() const override { return MD_NAME; }

    ucs_status_t query_tl_resources(std::vector<tl_resource> *out) override;
    ucs_status_t iface_open(uct::worker &worker, const iface_params &params,
                            uct::iface **iface_p) override;

    ucs_status_t mem_reg(void *address, size_t length, unsigned flags, mem_h *memh_p) override;
    ucs_status_t mem_dereg(mem_h memh) override;
    ucs_status_t mkey_pack(mem_h memh, void *buffer) override;

    const cma_config &config() const { return config_; }

private:
    cma_config config_;
    md_attr attr_;
};

} // namespace uct::cma

#endif
