/*
 * Loadable modules: shared objects named lib<framework>_<name>.so (e.g.
 * libuct_ib.so) that a layer opens at run time, so that the core libraries
 * run where a module's dependencies (rdma-core, the CUDA driver) are
 * missing. ucs only finds, filters and opens them; the layer that owns the
 * framework looks up and checks the module's entry point.
 *
 * Where (as UCX): the "ucx" directory next to libucs (so an installed or
 * relocated prefix finds its own <libdir>/ucx), then UCX_MODULE_DIR (the
 * configured <libdir>/ucx by default). A directory that does not exist is
 * skipped. When a name is found in both, the first one is used.
 * Which: UCX_MODULES, glob patterns on the module name ("all", "ib,cuda*",
 * "^cuda*"). Messages about loading are logged at UCX_MODULE_LOG_LEVEL.
 */
#ifndef UCS_SYS_MODULE_H
#define UCS_SYS_MODULE_H

#include <ucs/type/status.h>

#include <functional>
#include <string>
#include <vector>

namespace ucs::module {

/* A module file found on disk, before it is opened. */
struct candidate {
    std::string name; /* "ib" for libuct_ib.so */
    std::string path;
};

/* The directories searched, in order (existing or not). */
std::vector<std::string> search_dirs();

/* Whether UCX_MODULES lets a module of this name load. */
bool allowed(const std::string &name);

/* The modules of a framework in `dirs` that UCX_MODULES allows, one per
 * name (the first directory wins), sorted by name within a directory. */
std::vector<candidate> find(const char *framework, const std::vector<std::string> &dirs);

/*
 * Called with each opened module. UCS_OK keeps it loaded; any other status
 * (the module's entry point is missing or of another version: the callback
 * says why) unloads it.
 */
using init_fn = std::function<ucs_status_t(const candidate &module, void *dl_handle)>;

/* Finds and opens every allowed module of `framework` (RTLD_NOW |
 * RTLD_LOCAL), calling `init` for each; returns how many were kept. A
 * module that cannot be opened is reported and skipped. */
unsigned load_all(const char *framework, const init_fn &init);

} // namespace ucs::module

#endif
