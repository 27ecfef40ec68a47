#include "modules.h"

#include <climits>
#include <cstdlib>
#include <cstring>

#include <dlfcn.h>
#include <unistd.h>

#ifndef PERFTEST_MODULE_DIR
#define PERFTEST_MODULE_DIR "."
#endif
#ifndef PERFTEST_MODULE_RELDIR
#define PERFTEST_MODULE_RELDIR "."
#endif

namespace perftest {

namespace {

std::string executable_dir()
{
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
    if (n <= 0) {
        return ".";
    }
    path[n]     = '\0';
    char *slash = std::strrchr(path, '/');
    if (slash != nullptr) {
        *slash = '\0';
    }
    return path;
}

} // namespace

void *open_module(const char *file_name, int flags, std::string *error)
{
    std::string error_text;
    /* The build tree, the install the tool is part of, the configured one. */
    const std::string here = executable_dir();
    for (const std::string &dir :
         {here, here + "/" + PERFTEST_MODULE_RELDIR, std::string(PERFTEST_MODULE_DIR)}) {
        std::string path = dir + "/" + file_name;
        if (access(path.c_str(), R_OK) != 0) {
            continue;
        }
        void *handle = dlopen(path.c_str(), RTLD_NOW | flags);
        if (handle != nullptr) {
            return handle;
        }
        const char *why = dlerror();
        *error          = why ? why : path + ": cannot be loaded";
        return nullptr;
    }
    *error = std::string(file_name) + " not found next to ucx_perftest nor in " +
             PERFTEST_MODULE_DIR;
    return nullptr;
}

std::string ucp_library_path()
{
    std::string why;
    void *handle = open_module("perftest_ucp.so", RTLD_LOCAL, &why);
    void *symbol = (handle != nullptr) ? dlsym(handle, "ucp_init_version") : nullptr;
    Dl_info info;
    if ((symbol == nullptr) || (dladdr(symbol, &info) == 0) || (info.dli_fname == nullptr)) {
        return {};
    }
    char resolved[PATH_MAX];
    return (realpath(info.dli_fname, resolved) != nullptr) ? resolved : info.dli_fname;
}

module_run_fn load_test_module(api_kind api, std::string *error)
{
    const bool ucp = (api == api_kind::UCP);
    std::string why;
    void *handle = open_module(ucp ? "perftest_ucp.so" : "perftest_uct.so", RTLD_LOCAL, &why);
    if (handle == nullptr) {
        *error = std::string("cannot load the ") + (ucp ? "UCP" : "uct") + " tests: " + why;
        if (why.find("undefined symbol") != std::string::npos) {
            *error += ucp ? " (the libucp in use lacks part of the UCP API)" :
                            " (uct tests need ucx-ng's libuct)";
        }
        return nullptr;
    }
    auto fn = reinterpret_cast<module_run_fn>(dlsym(handle, MODULE_RUN_SYMBOL));
    if (fn == nullptr) {
        *error = std::string("the module has no ") + MODULE_RUN_SYMBOL;
    }
    return fn;
}

} // namespace perftest
