/*
 * Small system queries libucm needs. None of them allocates heap memory:
 * they run inside memory hooks.
 */
#ifndef UCM_UTIL_SYS_H_
#define UCM_UTIL_SYS_H_

#include <cstddef>
#include <cstdint>

#include <ucm/api/ucm.h>

namespace ucm::sys {

size_t page_size();

/* False when UCX_MEM_EVENTS is set to a "no" value (n, no, off, 0, false). */
bool env_allows_events();

/* The hook method UCX_MEM_MMAP_HOOK_MODE (none, reloc or bistro) names;
 * `fallback` where it is unset or invalid. */
ucm_mmap_hook_mode_t env_hook_mode(ucm_mmap_hook_mode_t fallback);

/* Whether memory events may be used at all: the environment and
 * ucm_global_opts.enable_events both allow it. */
bool events_enabled();

/* Length of the mapping that starts exactly at addr, following adjacent
 * entries of the same file or segment in /proc/self/maps; 0 if none. */
size_t mapping_size(const void *addr);

/* Size of a System V shared memory segment, 0 if it cannot be queried. */
size_t shm_segment_size(int shmid);

inline uintptr_t align_down(uintptr_t value, size_t alignment)
{
    return value & ~(static_cast<uintptr_t>(alignment) - 1);
}

} // namespace ucm::sys

#endif
