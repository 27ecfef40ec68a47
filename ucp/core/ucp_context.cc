/*
 * ucp_init_version / ucp_cleanup / ucp_context_query / ucp_context_print_info
 * and transport resource discovery.
 */
#include "ucp_context.h"
#include "ucp_guard.h"
#include "ucp_request.h"
#include "unavailable_report.h"

#include <ucs/config/registry.h>
#include <ucs/debug/log.h>

#include <cstring>
#include <dlfcn.h>
#include <string>

namespace {

const char *const feature_names[] = {"TAG", "RMA", "AMO32", "AMO64", "WAKEUP", "STREAM", "AM"};
constexpr uint64_t all_features   = (1ull << std::size(feature_names)) - 1;

std::string features_string(uint64_t features)
{
    std::string text;
    for (size_t i = 0; i < std::size(feature_names); ++i) {
        if (features & (1ull << i)) {
            text += text.empty() ? "" : "|";
            text += feature_names[i];
        }
    }
    return text.empty() ? "none" : text;
}

std::string allow_list_text(const ucs_config_allow_list_t &list)
{
    if (list.mode == UCS_CONFIG_ALLOW_LIST_ALLOW_ALL) {
        return "all";
    }
    std::string text = (list.mode == UCS_CONFIG_ALLOW_LIST_NEGATE) ? "^" : "";
    for (unsigned i = 0; i < list.array.count; ++i) {
        text += (i == 0) ? "" : ",";
        text += list.array.names[i];
    }
    return text;
}

ucs_status_t apply_params(ucp_context &ctx, const ucp_params_t &params)
{
    const uint64_t mask = params.field_mask;
    if (!(mask & UCP_PARAM_FIELD_FEATURES) || (params.features == 0)) {
        ucs_error("ucp_init: ucp_params_t::features must name at least one "
                  "UCP_FEATURE_*");
        return UCS_ERR_INVALID_PARAM;
    }
    if (params.features & ~all_features) {
        ucs_error("ucp_init: unknown feature bits 0x%llx",
                  static_cast<unsigned long long>(params.features & ~all_features));
        return UCS_ERR_INVALID_PARAM;
    }
    ctx.features = params.features;

    if (mask & UCP_PARAM_FIELD_REQUEST_SIZE) {
        ctx.user_request_size = params.request_size;
    }
    if (mask & UCP_PARAM_FIELD_REQUEST_INIT) {
        ctx.request_init = params.request_init;
    }
    if (mask & UCP_PARAM_FIELD_REQUEST_CLEANUP) {
        ctx.request_cleanup = params.request_cleanup;
    }
    if (mask & UCP_PARAM_FIELD_TAG_SENDER_MASK) {
        ctx.tag_sender_mask = params.tag_sender_mask;
    }
    if (mask & UCP_PARAM_FIELD_MT_WORKERS_SHARED) {
        ctx.mt_workers_shared = (params.mt_workers_shared != 0);
    }
    ctx.mapped_regions.set_shared(ctx.mt_workers_shared);
    ctx.estimated_num_eps = ctx.config.estimated_num_eps;
    if (mask & UCP_PARAM_FIELD_ESTIMATED_NUM_EPS) {
        ctx.estimated_num_eps = params.estimated_num_eps;
    }
    ctx.estimated_num_ppn = ctx.config.estimated_num_ppn;
    if (mask & UCP_PARAM_FIELD_ESTIMATED_NUM_PPN) {
        ctx.estimated_num_ppn = params.estimated_num_ppn;
    }
    if ((mask & UCP_PARAM_FIELD_NAME) && (params.name != nullptr)) {
        ctx.name.assign(params.name, strnlen(params.name, UCP_ENTITY_NAME_MAX - 1));
    } else {
        ctx.name = "ucp_context_" + std::to_string(reinterpret_cast<uintptr_t>(&ctx) % 1000000);
    }
    return UCS_OK;
}

/* UCX 1.13's first info line: "Version 1.13.1 (loaded from /lib/.../libucp.so.0)". */
void log_version()
{
    if (!ucs::log_enabled(UCS_LOG_LEVEL_INFO)) {
        return;
    }
    Dl_info info;
    if ((dladdr(reinterpret_cast<void *>(&ucp_init_version), &info) != 0) &&
        (info.dli_fname != nullptr)) {
        ucs_info("Version %s (loaded from %s)", ucp_get_version_string(), info.dli_fname);
    } else {
        ucs_info("Version %s", ucp_get_version_string());
    }
}

ucs_status_t create_context(unsigned api_major, unsigned api_minor, const ucp_params_t &params,
                            const ucp_config_t *config, ucp_context_h *context_p)
{
    if (api_major > UCP_API_MAJOR) {
        ucs_error("ucp_init: the application was built for UCP API %u.%u, this "
                  "library provides %u.%u: a newer major version is not supported",
                  api_major, api_minor, UCP_API_MAJOR, UCP_API_MINOR);
        return UCS_ERR_UNSUPPORTED;
    }
    if ((api_major == UCP_API_MAJOR) && (api_minor > UCP_API_MINOR)) {
        ucs_diag("ucp_init: application built for UCP API %u.%u, library "
                 "provides %u.%u",
                 api_major, api_minor, UCP_API_MAJOR, UCP_API_MINOR);
    }

    log_version();
    auto ctx = std::make_unique<ucp_context>();
    ucs_status_t status;
    if (config != nullptr) {
        status = ucs::config::clone(&config->values, &ctx->config, ucp::context_config_table);
        ctx->env_prefix = config->env_prefix;
    } else {
        status = ucs::config::fill(&ctx->config, ucp::context_config_table);
    }
    if (status != UCS_OK) {
        return status;
    }
    ctx->config_filled = true;
    ucs::config::warn_unused_env_vars();
    if (!(ctx->config.multi_lane_max_ratio >= 1.0)) {
        ucs_error("UCX_MULTI_LANE_MAX_RATIO=%g: must be at least 1",
                  ctx->config.multi_lane_max_ratio);
        return UCS_ERR_INVALID_PARAM;
    }
    if (ctx->config.min_rndv_chunk_size == ucs::config::size_auto) {
        ucs_error("UCX_MIN_RNDV_CHUNK_SIZE=auto: takes a size or inf");
        return UCS_ERR_INVALID_PARAM;
    }

    status = apply_params(*ctx, params);
    if (status != UCS_OK) {
        return status;
    }
    status = ctx->discover_resources();
    if (status != UCS_OK) {
        return status;
    }
    status = ucp::create_rcaches(*ctx);
    if (status != UCS_OK) {
        return status;
    }
    ucs_debug("created ucp context '%s' with %zu resources on %zu mds", ctx->name.c_str(),
              ctx->tls.size(), ctx->mds.size());
    *context_p = ctx.release();
    return UCS_OK;
}

} // namespace

ucp_context::~ucp_context()
{
    tls.clear();
    mds.clear(); /* closes the mds */
    if (config_filled) {
        ucs::config::release(&config, ucp::context_config_table);
    }
}

uint64_t ucp_context::memory_types() const
{
    uint64_t types = 1ull << UCS_MEMORY_TYPE_HOST;
    for (const ucp::md_entry &m : mds) {
        types |= m.md->attr().access_mem_types;
    }
    return types;
}

ucs_status_t ucp_context::discover_resources()
{
    std::string seen; /* every resource found, for the error message */
    std::vector<ucp::found_resource> found;
    for (uct::component *component : uct::components()) {
        std::vector<uct::md_resource> md_resources;
        ucs_status_t status = component->query_md_resources(&md_resources);
        if (status != UCS_OK) {
            ucs_debug("component %s: no memory domains (%s)", component->name(),
                      ucs_status_string(status));
            continue;
        }
        for (const uct::md_resource &md_res : md_resources) {
            uct::md *raw_md = nullptr;
            status          = component->md_open(md_res.md_name, &raw_md);
            if (status != UCS_OK) {
                ucs_diag("failed to open memory domain %s of component %s: %s", md_res.md_name,
                         component->name(), ucs_status_string(status));
                continue;
            }
            std::unique_ptr<uct::md> md(raw_md);
            std::vector<uct::tl_resource> resources;
            status = md->query_tl_resources(&resources);
            if (status != UCS_OK) {
                ucs_diag("memory domain %s: failed to query resources: %s", md_res.md_name,
                         ucs_status_string(status));
                continue;
            }

            const auto md_index = static_cast<unsigned>(mds.size());
            bool used           = false;
            for (const uct::tl_resource &res : resources) {
                seen += seen.empty() ? "" : ", ";
                seen += std::string(res.tl_name) + "/" + res.dev_name;
                found.push_back({res.tl_name, res.dev_name, component->name(), res.type});
                if (!ucp::tl_allowed(config.tls, res.tl_name)) {
                    ucs_debug("%s/%s: not in UCX_TLS", res.tl_name, res.dev_name);
                    continue;
                }
                if (!ucp::device_allowed(config, res.type, res.dev_name)) {
                    ucs_debug("%s/%s: not in %s", res.tl_name, res.dev_name,
                              ucp::device_list_var(res.type));
                    continue;
                }
                tls.push_back({res, md_index});
                used = true;
            }
            /* An md that detects or allocates accelerator memory serves
             * ucp_mem_map and the staging copies even when UCX_TLS leaves
             * its transports out. */
            constexpr uint64_t host_bit = 1ull << UCS_MEMORY_TYPE_HOST;
            const uct::md_attr &attr    = md->attr();
            if (used || (attr.detect_mem_types != 0) ||
                ((attr.flags & uct::md_flag::ALLOC) && (attr.alloc_mem_types & ~host_bit))) {
                mds.push_back({component, std::move(md), md_res.md_name});
            }
        }
    }

    /* Before the error below, as UCX: the warning says what to use instead. */
    if (config.warn_invalid_config) {
        ucp::warn_unavailable(config, found);
    }

    if ((tls.size() > ucp::max_resources) || (mds.size() > ucp::max_resources)) {
        ucs_error("%zu transport resources on %zu memory domains: at most %u of each are "
                  "supported; narrow them with UCX_TLS or UCX_NET_DEVICES",
                  tls.size(), mds.size(), ucp::max_resources);
        return UCS_ERR_EXCEEDS_LIMIT;
    }
    if (tls.empty()) {
        ucs_error("no usable transport resource: UCX_TLS=%s, UCX_NET_DEVICES=%s, "
                  "UCX_SHM_DEVICES=%s, UCX_SELF_DEVICES=%s; available: %s",
                  allow_list_text(config.tls).c_str(), allow_list_text(config.net_devices).c_str(),
                  allow_list_text(config.shm_devices).c_str(),
                  allow_list_text(config.self_devices).c_str(),
                  seen.empty() ? "none (no transport is built in)" : seen.c_str());
        return UCS_ERR_NO_DEVICE;
    }

    return UCS_OK;
}

extern "C" {

ucs_status_t ucp_init_version(unsigned api_major_version, unsigned api_minor_version,
                              const ucp_params_t *params, const ucp_config_t *config,
                              ucp_context_h *context_p)
{
    if ((params == nullptr) || (context_p == nullptr)) {
        ucs_error("ucp_init: NULL %s", (params == nullptr) ? "params" : "context_p");
        return UCS_ERR_INVALID_PARAM;
    }
    return ucp::guarded("ucp_init", [&]() {
        return create_context(api_major_version, api_minor_version, *params, config, context_p);
    });
}

void ucp_cleanup(ucp_context_h context)
{
    delete context;
}

ucs_status_t ucp_context_query(ucp_context_h context, ucp_context_attr_t *attr)
{
    if ((context == nullptr) || (attr == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (attr->field_mask & UCP_ATTR_FIELD_REQUEST_SIZE) {
        attr->request_size = sizeof(ucp::request);
    }
    if (attr->field_mask & UCP_ATTR_FIELD_THREAD_MODE) {
        attr->thread_mode = context->thread_mode();
    }
    if (attr->field_mask & UCP_ATTR_FIELD_MEMORY_TYPES) {
        attr->memory_types = context->memory_types();
    }
    if (attr->field_mask & UCP_ATTR_FIELD_NAME) {
        std::snprintf(attr->name, sizeof(attr->name), "%s", context->name.c_str());
    }
    return UCS_OK;
}

void ucp_context_print_info(const ucp_context_h context, FILE *stream)
{
    if ((context == nullptr) || (stream == nullptr)) {
        return;
    }
    ucp::guarded("ucp_context_print_info", [&]() {
        std::fprintf(stream, "#\n# UCP context\n#\n");
        std::fprintf(stream, "#     name: %s\n", context->name.c_str());
        std::fprintf(stream, "#     features: %s\n", features_string(context->features).c_str());
        std::fprintf(stream, "#     thread mode: %s\n",
                     ucs_thread_mode_names[context->thread_mode()]);
        std::fprintf(stream, "#     estimated endpoints: %zu, processes per node: %zu\n",
                     context->estimated_num_eps, context->estimated_num_ppn);
        for (size_t i = 0; i < context->mds.size(); ++i) {
            std::fprintf(stream, "#     md %zu: %s (component %s)\n", i,
                         context->mds[i].name.c_str(), context->mds[i].component->name());
        }
        for (size_t i = 0; i < context->tls.size(); ++i) {
            const uct::tl_resource &res = context->tls[i].resource;
            std::fprintf(stream, "#     resource %zu: %s/%s (%s, md %u)\n", i, res.tl_name,
                         res.dev_name, ucp::device_type_name(res.type), context->tls[i].md_index);
        }
        std::fprintf(stream, "#\n");
        return UCS_OK;
    });
}

} // extern "C"
