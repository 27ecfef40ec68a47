/*
 * Finding, filtering and opening loadable modules (see module.h).
 */
#include <ucs/sys/module.h>

#include <ucs/config/global_opts.h>
#include <ucs/debug/log.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <dlfcn.h>
#include <fnmatch.h>
#include <memory>

#define ucs_module_log(_fmt, ...) \
    ucs_log(ucs::global_opts().module_log_level, "module: " _fmt, ##__VA_ARGS__)

namespace ucs::module {

namespace {

/* The directory libucs was loaded from ("" if unknown). */
std::string library_dir()
{
    Dl_info info;
    if ((dladdr(reinterpret_cast<void *>(&search_dirs), &info) == 0) ||
        (info.dli_fname == nullptr)) {
        return {};
    }
    /* Resolved: the loader may have found it through "$ORIGIN/../lib". */
    char resolved[PATH_MAX];
    std::string path = (realpath(info.dli_fname, resolved) != nullptr) ? resolved : info.dli_fname;
    const size_t slash = path.rfind('/');
    return (slash == std::string::npos) ? std::string(".") : path.substr(0, slash);
}

bool pattern_listed(const ucs_config_names_array_t &list, const std::string &name)
{
    for (unsigned i = 0; i < list.count; ++i) {
        if (fnmatch(list.names[i], name.c_str(), 0) == 0) {
            return true;
        }
    }
    return false;
}

} // namespace

std::vector<std::string> search_dirs()
{
    std::vector<std::string> dirs;
    const std::string own = library_dir();
    if (!own.empty()) {
        dirs.push_back(own + "/ucx");
    }
    const char *configured = global_opts().module_dir;
    if ((configured != nullptr) && (configured[0] != '\0') &&
        (std::find(dirs.begin(), dirs.end(), configured) == dirs.end())) {
        dirs.emplace_back(configured);
    }
    return dirs;
}

bool allowed(const std::string &name)
{
    const ucs_config_allow_list_t &list = global_opts().modules;
    switch (list.mode) {
    case UCS_CONFIG_ALLOW_LIST_ALLOW_ALL:
        return true;
    case UCS_CONFIG_ALLOW_LIST_NEGATE:
        return !pattern_listed(list.array, name);
    case UCS_CONFIG_ALLOW_LIST_ALLOW:
    default:
        return pattern_listed(list.array, name);
    }
}

std::vector<candidate> find(const char *framework, const std::vector<std::string> &dirs)
{
    const std::string prefix = std::string("lib") + framework + "_";
    const std::string suffix = ".so";
    std::vector<candidate> found;
    for (const std::string &dir : dirs) {
        std::unique_ptr<DIR, int (*)(DIR *)> d(opendir(dir.c_str()), closedir);
        if (d == nullptr) {
            ucs_module_log("%s: %s (skipped)", dir.c_str(), strerror(errno));
            continue;
        }
        std::vector<candidate> here;
        while (const dirent *entry = readdir(d.get())) {
            const std::string file = entry->d_name;
            if ((file.size() <= prefix.size() + suffix.size()) ||
                (file.compare(0, prefix.size(), prefix) != 0) ||
                (file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0)) {
                continue;
            }
            candidate c{file.substr(prefix.size(), file.size() - prefix.size() - suffix.size()),
                        dir + "/" + file};
            if (!allowed(c.name)) {
                ucs_module_log("%s: not in UCX_MODULES", c.path.c_str());
                continue;
            }
            const auto same_name = [&](const candidate &o) { return o.name == c.name; };
            if (std::any_of(found.begin(), found.end(), same_name) ||
                std::any_of(here.begin(), here.end(), same_name)) {
                ucs_module_log("%s: module '%s' already found", c.path.c_str(), c.name.c_str());
                continue;
            }
            here.push_back(std::move(c));
        }
        std::sort(here.begin(), here.end(),
                  [](const candidate &a, const candidate &b) { return a.name < b.name; });
        found.insert(found.end(), here.begin(), here.end());
    }
    return found;
}

unsigned load_all(const char *framework, const init_fn &init)
{
    unsigned kept = 0;
    for (const candidate &c : find(framework, search_dirs())) {
        void *handle = dlopen(c.path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (handle == nullptr) {
            const char *why = dlerror();
            /* Expected where its dependencies are missing (no rdma-core, no
             * CUDA driver): said at UCX_MODULE_LOG_LEVEL, as UCX does. */
            ucs_module_log("%s (%s) cannot be loaded: %s", c.name.c_str(), c.path.c_str(),
                           (why != nullptr) ? why : "unknown error");
            continue;
        }
        if (init(c, handle) != UCS_OK) {
            dlclose(handle);
            continue;
        }
        ucs_module_log("loaded %s (%s)", c.name.c_str(), c.path.c_str());
        ++kept;
    }
    return kept;
}

} // namespace ucs::module
