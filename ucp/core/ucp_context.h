/*
 * The UCP context: the application's features and settings, and the
 * transport resources chosen for them. Workers open interfaces on these.
 */
#ifndef UCP_CORE_UCP_CONTEXT_H
#define UCP_CORE_UCP_CONTEXT_H

#include "ucp_buffer_reg.h"
#include "ucp_config.h"

#include <ucp/rma/region_registry.h>
#include <uct/base/uct_md.h>

#include <memory>
#include <string>
#include <vector>

namespace ucp {

/* Most transport resources and memory domains a context takes: an ep's lanes
 * name them in 16 bits (ucp::lane). */
constexpr unsigned max_resources = 0xfffe;

/* An opened memory domain that at least one chosen resource lives on. */
struct md_entry {
    uct::component *component;
    std::unique_ptr<uct::md> md;
    std::string name;
    md_rcache_ptr rcache = {}; /* destroyed before the md */
};

/* A transport resource that passed UCX_TLS and the device lists. */
struct tl_entry {
    uct::tl_resource resource;
    unsigned md_index; /* into ucp_context::mds */
};

} // namespace ucp

struct ucp_context {
    ucp_context()                               = default;
    ucp_context(const ucp_context &)            = delete;
    ucp_context &operator=(const ucp_context &) = delete;
    ~ucp_context();

    /* Settings (a private copy of the ucp_config_t given to ucp_init). */
    ucp::context_config config{};
    bool config_filled = false;
    std::string env_prefix; /* "MPI" or "" */

    /* ucp_params_t, defaults where the field_mask left a field out. */
    uint64_t features                              = 0;
    size_t user_request_size                       = 0;
    ucp_request_init_callback_t request_init       = nullptr;
    ucp_request_cleanup_callback_t request_cleanup = nullptr;
    uint64_t tag_sender_mask                       = 0;
    bool mt_workers_shared                         = false;
    size_t estimated_num_eps                       = 1;
    size_t estimated_num_ppn                       = 1;
    std::string name;

    std::vector<ucp::md_entry> mds;
    std::vector<ucp::tl_entry> tls;

    /* What ucp_mem_map exposed: emulated RMA from peers is checked against it. */
    ucp::region_registry mapped_regions;

    ucs_thread_mode_t thread_mode() const
    {
        return mt_workers_shared ? UCS_THREAD_MODE_MULTI : UCS_THREAD_MODE_SINGLE;
    }

    /* Bit per ucs_memory_type_t some chosen md can access. */
    uint64_t memory_types() const;

    /* Opens every md with a resource that passes the configuration. */
    ucs_status_t discover_resources();
};

#endif
