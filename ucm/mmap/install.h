/*
 * Installing the memory hooks: which symbols each event needs, patching
 * them (once, under a mutex), re-patching after dlopen(), and checking
 * that the installed hooks deliver events.
 */
#ifndef UCM_MMAP_INSTALL_H_
#define UCM_MMAP_INSTALL_H_

#include <ucm/api/ucm.h>

namespace ucm::mm {

/* Install the hooks that deliver `events` (native and VM bits). Hooks stay
 * installed for the life of the process. The first install chooses the
 * method (ucm_global_opts.mmap_hook_mode: libc's entries, or relocation slots).
 * UCS_ERR_UNSUPPORTED when hooks are disabled or some relocation slot could
 * not be patched. */
ucs_status_t install(int events);

/* Events whose hooks are in place. */
int installed_events();

/* How the hooks in place were installed; NONE before the first install. */
ucm_mmap_hook_mode_t installed_mode();

/* Patch objects loaded since the last pass with the hooks installed so
 * far; a no-op before the first install. */
void refresh_hooks();

/* Check that every slot of the hooks for `events` still points at the hook
 * and that a call through the hook reaches a handler with the right
 * arguments. UCS_OK or UCS_ERR_UNSUPPORTED. */
ucs_status_t self_test(int events);

/* fork() support for the install mutex (see event::fork_prepare). */
void fork_prepare();
void fork_parent();
void fork_child();

} // namespace ucm::mm

#endif
