/*
 * Which memory type a buffer lives in. Modules that know a memory type (the
 * CUDA module) register a detector for it; detect() asks them in memory-type
 * order and answers HOST when none claims the buffer. With no detector
 * registered, detect() is one load and one branch.
 *
 * detect() takes no lock and may run on any thread, concurrently with
 * register/unregister. A detect() that started before unregister_detector()
 * returned may still call that detector, so the registry keeps every copy of
 * a detector until the process exits; what the detector points to (and its
 * code: do not unload it) must stay valid as well.
 */
#ifndef UCS_MEMORY_MEMTYPE_REGISTRY_H
#define UCS_MEMORY_MEMTYPE_REGISTRY_H

#include <ucs/memory/memory_type.h>
#include <ucs/type/status.h>

#include <atomic>
#include <cstddef>
#include <functional>

namespace ucs::memtype {

/* True when [address, address + length) is memory of the detector's type. */
using detector = std::function<bool(const void *address, size_t length)>;

namespace detail {

extern std::atomic<bool> g_have_detectors;

ucs_memory_type_t detect_slow(const void *address, size_t length) noexcept;

} // namespace detail

/*
 * One detector per memory type. UCS_ERR_INVALID_PARAM for HOST, an invalid
 * type or an empty callable; UCS_ERR_ALREADY_EXISTS if the type has one.
 */
ucs_status_t register_detector(ucs_memory_type_t type, detector fn);

/* UCS_ERR_NO_ELEM if the type has no detector. */
ucs_status_t unregister_detector(ucs_memory_type_t type);

inline bool have_detectors() noexcept
{
    return detail::g_have_detectors.load(std::memory_order_relaxed);
}

inline ucs_memory_type_t detect(const void *address, size_t length) noexcept
{
    if (ucs_likely(!have_detectors())) {
        return UCS_MEMORY_TYPE_HOST;
    }
    return detail::detect_slow(address, length);
}

} // namespace ucs::memtype

#endif
