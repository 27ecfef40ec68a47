/*
 * Binary instrumentation ("bistro"): the first bytes of a function are
 * overwritten with a jump to a hook. Unlike a relocation slot, this also
 * catches calls made inside the function's own library (glibc's malloc
 * calls its munmap directly, never through a slot). The original code is
 * never run again: hooks reach the system through raw system calls
 * (mmap/originals.h).
 */
#ifndef UCM_BISTRO_ENTRY_PATCH_H_
#define UCM_BISTRO_ENTRY_PATCH_H_

#include <ucm/api/ucm.h>

#include <cstddef>

namespace ucm::bistro {

/* Whether entry patches exist for this CPU (x86-64 only). */
bool supported();

/* Overwrite the entry of `function` with a jump to `hook`. UCS_ERR_UNSUPPORTED
 * on other CPUs, when the function is shorter than the patch or its code
 * cannot be made writable. */
ucs_status_t patch(void *function, const void *hook);

/* Whether `function` starts with the jump to `hook`. */
bool jumps_to(const void *function, const void *hook);

} // namespace ucm::bistro

#endif
