/*
 * ucx_info: what this build is and what it can use. Flags follow UCX's tool.
 */
#include "ucx_ng_config.h"
#include "print_devices.h"

#include <ucs/config/global_opts.h>
#include <ucs/config/registry.h>
#include <ucs/config/types.h>
#include <ucs/type/status.h>
#include <uct/base/uct_module.h>

#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace {

void usage(FILE *out)
{
    std::fprintf(out,
        "Usage: ucx_info [options]\n"
        "At least one of the following options has to be set:\n"
        "  -v         Show version information\n"
        "  -d         Show devices and transports\n"
        "  -b         Show build configuration\n"
        "  -c         Show UCX configuration\n"
        "  -f         Display fully decorated output (with -c: each field's documentation)\n"
        "  -a         Show also hidden configuration\n"
        "  -h         Show this help message\n");
}

void print_version()
{
    std::printf("# Library version: %d.%d.%d (UCP API, ABI-compatible)\n",
                UCX_API_MAJOR, UCX_API_MINOR, UCX_API_RELEASE);
    std::printf("# Project version: ucx-ng %s\n", UCX_NG_VERSION);
    std::printf("# Library path: built with %s, %s build\n", UCX_NG_CXX,
                UCX_NG_BUILD_TYPE);
    std::printf("# Configuration file: %s\n", UCX_NG_SYSCONF_FILE);
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
    std::printf("# rdma-core %s, CUDA toolkit %s at build time (no verbs or CUDA "
                "transport is built yet)\n", HAVE_RDMA_CORE_FOUND ? "found" : "not found",
                HAVE_CUDA_TOOLKIT_FOUND ? "found" : "not found");
}

} // namespace

int main(int argc, char **argv)
{
    bool version = false, devices = false, build = false, config = false;
    unsigned print_flags = 0;
    int c;

    while ((c = getopt(argc, argv, "vdbcfah")) != -1) {
        switch (c) {
        case 'v': version = true; break;
        case 'd': devices = true; break;
        case 'b': build = true; break;
        case 'c':
            config = true;
            print_flags |= UCS_CONFIG_PRINT_CONFIG;
            break;
        case 'f':
            print_flags |= UCS_CONFIG_PRINT_DOC | UCS_CONFIG_PRINT_HEADER;
            break;
        case 'a':
            print_flags |= UCS_CONFIG_PRINT_HIDDEN;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (!version && !devices && !build && !config) {
        usage(stderr);
        return 2;
    }

    /* A malformed UCX_* value was already reported by name when libucs
     * loaded; refuse to go on with a half-applied configuration. */
    ucs::global_init();
    if (ucs::global_opts_status() != UCS_OK) {
        std::fprintf(stderr, "ucx_info: invalid configuration: %s\n",
                     ucs_status_string(ucs::global_opts_status()));
        return 1;
    }
    if (version) {
        print_version();
    }
    if (build) {
        print_build_config();
    }
    if (config &&
        (ucs::config::print_all(stdout, print_flags) != UCS_OK)) {
        return 1;
    }
    if (devices) {
        info::print_devices(stdout);
    }
    return 0;
}
