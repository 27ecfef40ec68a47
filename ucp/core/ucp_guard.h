/*
 * Running C++ code behind an extern "C" entry point: no exception may cross
 * into the caller, so every entry point runs its body through guarded().
 */
#ifndef UCP_CORE_UCP_GUARD_H
#define UCP_CORE_UCP_GUARD_H

#include <ucs/debug/log.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/type/status.h>

#include <exception>
#include <new>

namespace ucp {

/* Runs body (returning ucs_status_t); an escaping exception becomes a status.
 * Always inlined: the hot entry points (sends, receives, progress) would
 * otherwise call an out-of-line copy with every argument captured on the
 * stack (the handlers cost nothing until something throws). */
template <typename Body>
UCS_F_ALWAYS_INLINE ucs_status_t guarded(const char *what, Body &&body) noexcept
{
    try {
        return body();
    } catch (const std::bad_alloc &) {
        ucs_error("%s: out of memory", what);
        return UCS_ERR_NO_MEMORY;
    } catch (const std::exception &e) {
        ucs_error("%s: %s", what, e.what());
        return UCS_ERR_NO_MESSAGE;
    } catch (...) {
        ucs_error("%s: unexpected failure", what);
        return UCS_ERR_NO_MESSAGE;
    }
}

} // namespace ucp

#endif
