/*
 * ucx_info: what this build is and what it can use. Flags follow UCX's tool.
 */
#include "ucx_ng_config.h"
#include "info_options.h"
#include "print_devices.h"
#include "print_system.h"
#include "print_types.h"
#include "print_ucp.h"

#include <ucp/api/ucp.h>

#include <ucs/config/file.h>
#include <ucs/config/global_opts.h>
#include <ucs/config/registry.h>
#include <ucs/config/types.h>
#include <ucs/type/status.h>
#include <uct/base/uct_module.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace {

void print_version()
{
    std::printf("# Library version: %d.%d.%d (UCP API, ABI-compatible)\n", UCX_API_MAJOR,
                UCX_API_MINOR, UCX_API_RELEASE);
    std::printf("# Project version: ucx-ng %s\n", UCX_NG_VERSION);
    std::printf("# Library path: built with %s, %s build\n", UCX_NG_CXX, UCX_NG_BUILD_TYPE);
    /* As UCX 1.13 reads them; a later file overrides an earlier one. */
    for (const std::string &path : ucs::config::file_paths()) {
        std::printf("# Configuration file: %s%s\n", path.c_str(),
                    (access(path.c_str(), R_OK) == 0) ? "" : " (not found)");
    }
    /* As UCX's -v: the modules found in the module directories. */
    for (const uct::loaded_module &m : uct::loaded_modules()) {
        std::printf("# Module: %s (%s)\n", m.name.c_str(), m.path.c_str());
    }
}

void print_build_config()
{
    std::printf("#define UCX_NG_VERSION    \"%s\"\n", UCX_NG_VERSION);
    std::printf("#define UCX_API_VERSION   \"%d.%d\"\n", UCX_API_MAJOR, UCX_API_MINOR);
    std::printf("#define BUILD_TYPE        \"%s\"\n", UCX_NG_BUILD_TYPE);
    std::printf("#define COMPILER          \"%s\"\n", UCX_NG_CXX);
    std::printf("#define MODULE_DIR        \"%s\"\n", UCX_NG_MODULE_DIR);
    std::printf("#define HAVE_VERBS        %d\n", HAVE_VERBS);
    std::printf("#define HAVE_CUDA         %d\n", HAVE_CUDA);
    std::printf("# rdma-core %s at build time (%s); CUDA headers %s (%s)\n",
                HAVE_RDMA_CORE_FOUND ? "found" : "not found",
                HAVE_VERBS ? "the ib module is built" : "no ib module",
                HAVE_CUDA_TOOLKIT_FOUND ? "found" : "not found",
                HAVE_CUDA ? "the cuda module is built" : "no cuda module");
}

} // namespace

int main(int argc, char **argv)
{
    info::options opts;
    int exit_code;
    if (!info::parse_options(argc, argv, &opts, &exit_code)) {
        return exit_code;
    }

    /* A malformed UCX_* value was already reported by name when libucs
     * loaded; refuse to go on with a half-applied configuration. */
    ucs::global_init();
    if (ucs::global_opts_status() != UCS_OK) {
        std::fprintf(stderr, "ucx_info: invalid configuration: %s\n",
                     ucs_status_string(ucs::global_opts_status()));
        return 1;
    }
    int result = 0;
    if (opts.version) {
        print_version();
    }
    if (opts.system) {
        info::print_system(stdout);
    }
    if (opts.build) {
        print_build_config();
    }
    if (opts.types) {
        info::print_types(stdout);
    }
    if (opts.config_flags & UCS_CONFIG_PRINT_CONFIG) {
        /* Reading the UCP settings makes ucx_info use libucp, so the linker
         * keeps it and its table (UCX_TLS, UCX_RNDV_*, ...) is registered. */
        ucp_config_t *ucp_config = nullptr;
        if (ucp_config_read(nullptr, nullptr, &ucp_config) == UCS_OK) {
            ucp_config_release(ucp_config);
        }
        /* The loadable modules' tables (UCX_RC_VERBS_*, ...) too. */
        uct::components();
        if (ucs::config::print_all(stdout, opts.config_flags) != UCS_OK) {
            result = 1;
        }
    }
    if (opts.devices && (info::print_devices(stdout, opts.tl_filter) == 0) &&
        !opts.tl_filter.empty()) {
        result = 1;
    }
    if (opts.topology) {
        info::print_topology(stdout);
    }
    if (opts.memcpy_bw) {
        info::print_memcpy_bandwidth(stdout);
    }
    if (opts.wants_ucp() && (info::print_ucp(opts) != 0)) {
        result = 1;
    }
    return result;
}
