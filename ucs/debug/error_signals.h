/*
 * UCX_HANDLE_ERRORS and UCX_ERROR_SIGNALS: what a crashing process reports.
 *
 * When libucs initialises, each signal of UCX_ERROR_SIGNALS gets a handler
 * (unless UCX_HANDLE_ERRORS is "none" or names no action) that, as UCX 1.13:
 *  - puts back the handlers that were there before, so that a fault inside
 *    the report ends the process the ordinary way;
 *  - writes "[host:pid:thread:tid] Caught signal 11 (Segmentation fault:
 *    address not mapped to object at address 0x8)" to stderr;
 *  - bt:     writes the symbolised backtrace of the faulting thread;
 *  - freeze: writes "Process frozen..." and stops there, waiting for a
 *            debugger (gdb -p PID) or a kill;
 *  - debug:  UCX starts UCX_GDB_COMMAND on the process; this build starts no
 *            debugger and writes the backtrace as bt does, saying so;
 *  - raises the signal again, so the previous handler (or the default
 *    action: core dump, exit status 128+N) sees it.
 * Other threads that fault meanwhile wait for the first report to finish.
 */
#ifndef UCS_DEBUG_ERROR_SIGNALS_H
#define UCS_DEBUG_ERROR_SIGNALS_H

#include <ucs/config/types.h>

#include <string>
#include <vector>

namespace ucs::debug {

/*
 * Installs the handlers for handle_errors (a bit mask of ucs_handle_error_t)
 * on the named signals ("SEGV", "SIGSEGV" or a number). A name that is not a
 * signal is reported as an error and skipped. Does nothing when called again.
 */
void error_signals_install(unsigned handle_errors, const std::vector<std::string> &signal_names);

/* Puts back the previous handlers where ours is still installed. */
void error_signals_restore();

/* The signal number of "SEGV", "SIGSEGV" or "11"; -1 if it names none. */
int signal_from_name(const std::string &name);

} // namespace ucs::debug

#endif
