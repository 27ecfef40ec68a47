/*
 * dlopen() interception: objects loaded after the hooks were installed get
 * patched too.
 *
 * glibc searches a bare library name in the RUNPATH/RPATH of the object
 * that called dlopen(). Behind the hook that caller would be libucm, so the
 * hook first searches the real caller's paths itself (controlled by
 * ucm_global_opts.dlopen_process_rpath).
 */
#ifndef UCM_RELOC_DLOPEN_HOOK_H_
#define UCM_RELOC_DLOPEN_HOOK_H_

#include <cstddef>

namespace ucm::reloc {

/* dlopen() on behalf of the code at `caller`, then patch new objects. */
void *dlopen_for(const char *filename, int flags, const void *caller);

/* The function written into other objects' dlopen slots. */
void *hook_dlopen(const char *filename, int flags);

/* Find a bare library name in the RUNPATH/RPATH of the object containing
 * `caller`, writing the full path into `path`. False when the name has a
 * slash, is not found there, or LD_LIBRARY_PATH takes precedence. */
bool find_in_caller_paths(const char *filename, const void *caller, char *path, size_t size);

} // namespace ucm::reloc

#endif
