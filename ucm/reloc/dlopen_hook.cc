#include "dlopen_hook.h"

#include "elf_object.h"

#include <ucm/api/ucm.h>
#include <ucm/mmap/install.h>
#include <ucm/util/log.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <unistd.h>

namespace ucm::reloc {

namespace {

struct caller_paths {
    const void *caller;
    bool found;
    char object_name[PATH_MAX];
    const char *runpath; /* in the object's string table */
    const char *rpath;
};

int find_caller(dl_phdr_info *info, size_t, void *arg)
{
    auto *ctx = static_cast<caller_paths *>(arg);
    elf_object object;
    if (!object.load(info) || !object.contains(ctx->caller)) {
        return 0;
    }
    ctx->found   = true;
    ctx->runpath = object.runpath();
    ctx->rpath   = object.rpath();
    snprintf(ctx->object_name, sizeof(ctx->object_name), "%s", object.name());
    return 1;
}

/* Directory of the object, as $ORIGIN means it. */
bool origin_of(const char *object_name, char *origin, size_t size)
{
    char resolved[PATH_MAX];
    if (object_name[0] == '\0') {
        /* The main program reports an empty name. */
        ssize_t length = readlink("/proc/self/exe", resolved, sizeof(resolved) - 1);
        if (length <= 0) {
            return false;
        }
        resolved[length] = '\0';
    } else if (realpath(object_name, resolved) == nullptr) {
        return false;
    }

    char *slash = strrchr(resolved, '/');
    if (slash == nullptr) {
        return false;
    }
    *slash  = '\0';
    int ret = snprintf(origin, size, "%s", (slash == resolved) ? "/" : resolved);
    return (ret > 0) && (static_cast<size_t>(ret) < size);
}

/* Expand $ORIGIN / ${ORIGIN} in one search-path entry. Entries with other
 * dynamic string tokens ($LIB, $PLATFORM) are skipped. */
bool expand_entry(const char *entry, size_t length, const char *origin, char *out, size_t size)
{
    size_t used = 0;
    for (size_t i = 0; i < length;) {
        const char *piece;
        size_t piece_length;
        if (entry[i] == '$') {
            const char *rest = entry + i + 1;
            size_t left      = length - i - 1;
            size_t token;
            if ((left >= 6) && (strncmp(rest, "ORIGIN", 6) == 0)) {
                token = 7;
            } else if ((left >= 8) && (strncmp(rest, "{ORIGIN}", 8) == 0)) {
                token = 9;
            } else {
                return false;
            }
            if (origin == nullptr) {
                return false;
            }
            piece        = origin;
            piece_length = strlen(origin);
            i += token;
        } else {
            piece        = entry + i;
            piece_length = 1;
            i += 1;
        }
        if (used + piece_length + 1 > size) {
            return false;
        }
        memcpy(out + used, piece, piece_length);
        used += piece_length;
    }
    out[used] = '\0';
    return used > 0;
}

/* Look for filename in each directory of a colon-separated list. */
bool search_list(const char *list, const char *origin, const char *filename, char *path,
                 size_t size)
{
    if (list == nullptr) {
        return false;
    }
    for (const char *entry = list; *entry != '\0';) {
        size_t length = strcspn(entry, ":");
        char dir[PATH_MAX];
        if (expand_entry(entry, length, origin, dir, sizeof(dir))) {
            int ret = snprintf(path, size, "%s/%s", dir, filename);
            if ((ret > 0) && (static_cast<size_t>(ret) < size) && (access(path, F_OK) == 0)) {
                return true;
            }
        }
        entry += length;
        if (*entry == ':') {
            ++entry;
        }
    }
    return false;
}

} // namespace

bool find_in_caller_paths(const char *filename, const void *caller, char *path, size_t size)
{
    if ((filename == nullptr) || (strchr(filename, '/') != nullptr)) {
        return false;
    }

    caller_paths ctx{};
    ctx.caller = caller;
    dl_iterate_phdr(find_caller, &ctx);
    if (!ctx.found || ((ctx.runpath == nullptr) && (ctx.rpath == nullptr))) {
        return false;
    }

    char origin_buf[PATH_MAX];
    const char *origin = origin_of(ctx.object_name, origin_buf, sizeof(origin_buf)) ? origin_buf :
                                                                                      nullptr;

    if (ctx.runpath != nullptr) {
        /* RUNPATH ranks after LD_LIBRARY_PATH; glibc finds those itself. */
        if (search_list(getenv("LD_LIBRARY_PATH"), nullptr, filename, path, size)) {
            return false;
        }
        return search_list(ctx.runpath, origin, filename, path, size);
    }
    return search_list(ctx.rpath, origin, filename, path, size);
}

void *dlopen_for(const char *filename, int flags, const void *caller)
{
    void *handle = nullptr;
    if ((filename != nullptr) && ucm_global_opts.dlopen_process_rpath &&
        (strchr(filename, '/') == nullptr)) {
        /* Already loaded under this name or soname: that is what glibc
         * would return, whatever the search path says. */
        handle = dlopen(filename, flags | RTLD_NOLOAD);
        if (handle == nullptr) {
            char path[PATH_MAX];
            if (find_in_caller_paths(filename, caller, path, sizeof(path))) {
                ucm_debug("dlopen(%s): found %s in the caller's paths", filename, path);
                handle = dlopen(path, flags);
            }
        }
    }
    if (handle == nullptr) {
        handle = dlopen(filename, flags);
    }

    if (handle != nullptr) {
        mm::refresh_hooks();
    }
    return handle;
}

void *hook_dlopen(const char *filename, int flags)
{
    return dlopen_for(filename, flags, __builtin_return_address(0));
}

} // namespace ucm::reloc
