#include "print_types.h"

#include <ucp/api/ucp.h>
#include <ucp/core/ucp_context.h>
#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_listener.h>
#include <ucp/core/ucp_mm.h>
#include <ucp/core/ucp_request.h>
#include <ucp/core/ucp_rkey.h>
#include <ucp/core/ucp_worker.h>
#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <uct/base/uct_worker.h>
#include <ucs/async/async_context.h>
#include <ucs/datastruct/arbiter.h>
#include <ucs/memory/mpool.h>

#include <string>

namespace info {

namespace {

/* UCX's layout: "    sizeof(name) = ....... N", dots up to a column. */
void print_size(FILE *out, const char *name, size_t size)
{
    std::string label      = std::string("sizeof(") + name + ") = ";
    constexpr size_t width = 40;
    if (label.size() < width) {
        label += std::string(width - label.size(), '.');
    }
    std::fprintf(out, "    %s %zu\n", label.c_str(), size);
}

#define PRINT_SIZE(_out, _type) print_size(_out, #_type, sizeof(_type))

} // namespace

void print_types(FILE *out)
{
    std::fprintf(out, "UCS:\n");
    PRINT_SIZE(out, ucs::mpool);
    PRINT_SIZE(out, ucs::async_context);
    PRINT_SIZE(out, ucs::arbiter);
    PRINT_SIZE(out, ucs::arbiter_group);
    PRINT_SIZE(out, ucs::arbiter_elem);
    PRINT_SIZE(out, ucs_config_allow_list_t);
    PRINT_SIZE(out, ucs_sock_addr_t);

    std::fprintf(out, "\nUCT:\n");
    PRINT_SIZE(out, uct::worker);
    PRINT_SIZE(out, uct::iface_attr);
    PRINT_SIZE(out, uct::iface_params);
    PRINT_SIZE(out, uct::md_attr);
    PRINT_SIZE(out, uct::tl_resource);
    PRINT_SIZE(out, uct::rkey_bundle);
    PRINT_SIZE(out, uct::completion);
    PRINT_SIZE(out, uct::pending_req);
    PRINT_SIZE(out, uct::iov);

    std::fprintf(out, "\nUCP:\n");
    PRINT_SIZE(out, ucp_context);
    PRINT_SIZE(out, ucp_worker);
    PRINT_SIZE(out, ucp_ep);
    PRINT_SIZE(out, ucp::request);
    PRINT_SIZE(out, ucp_mem);
    PRINT_SIZE(out, ucp_rkey);
    PRINT_SIZE(out, ucp_listener);
    PRINT_SIZE(out, ucp_params_t);
    PRINT_SIZE(out, ucp_worker_params_t);
    PRINT_SIZE(out, ucp_ep_params_t);
    PRINT_SIZE(out, ucp_request_param_t);
    PRINT_SIZE(out, ucp_tag_recv_info_t);
    PRINT_SIZE(out, ucp_am_recv_param_t);
    PRINT_SIZE(out, ucp_mem_map_params_t);
}

} // namespace info
