/*
 * Backtraces of the calling thread for crash reports: capture (glibc's
 * backtrace(), async-signal-safe once prepared) and symbolisation with
 * elfutils' libdw (function, source file and line from the symbol tables
 * and DWARF of every loaded object).
 */
#ifndef UCS_DEBUG_BACKTRACE_H
#define UCS_DEBUG_BACKTRACE_H

#include <cstddef>

namespace ucs::debug {

/*
 * Loads what backtrace_capture() needs (the unwinder in libgcc_s), so that a
 * later capture from a signal handler neither allocates nor loads anything.
 */
void backtrace_prepare();

/* Return addresses of the calling thread's stack, innermost first. */
size_t backtrace_capture(void **frames, size_t max_frames);

/*
 * Writes UCX's report of frames to fd:
 *     ==== backtrace (tid:  20768) ====
 *      0 0x00005597f1a2b1af crash_here()  /src/crash.c:4
 *     =================================
 * Frames after the first are return addresses: their line is looked up
 * one byte earlier, at the call. Symbolising allocates, so this is not
 * async-signal-safe (as in UCX); the lines are written with write(2). A fault
 * inside libdw (malformed debug information) is caught: the remaining
 * frames are written without symbols. Needs a few hundred KiB of stack.
 */
void backtrace_write(int fd, void *const *frames, size_t count);

} // namespace ucs::debug

#endif
