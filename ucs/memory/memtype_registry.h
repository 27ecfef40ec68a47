/*
 * Which memory type a buffer lives in. Modules that know a memory type (the
 * CUDA module) register a detector for it; detect() asks them in memory-type
 * order and answers HOST when none claims the buffer. With no detector
 * registered, detect() is one load and one branch. Before the detectors
 * (each a driver call), memory of the malloc heap is host, and a region
 * remembered with its type answers that type.
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

/*
 * Regions whose memory type is known without asking the detectors (UCP
 * remembers what ucp_mem_map mapped, until ucp_mem_unmap): detect() of a
 * range inside one answers its type. Overlapping regions are allowed;
 * forget() removes one remembered with the same bounds.
 */
void remember(const void *address, size_t length, ucs_memory_type_t type);
void forget(const void *address, size_t length);

/*
 * Copies `length` bytes between memory of the copier's type and any other
 * memory the module can reach (host, or its own type), each side's type
 * given: the staging copy of the UCP protocols for buffers the CPU cannot
 * touch. Synchronous: the data is in place when it returns.
 */
using copier = ucs_status_t (*)(void *dest, ucs_memory_type_t dest_type, const void *src,
                                ucs_memory_type_t src_type, size_t length);

/*
 * One copier per memory type, kept for the life of the process (a module
 * that registers one stays loaded). UCS_ERR_INVALID_PARAM for HOST, an
 * invalid type or nullptr; UCS_ERR_ALREADY_EXISTS if the type has one.
 */
ucs_status_t register_copier(ucs_memory_type_t type, copier fn);

/* UCS_ERR_NO_ELEM if the type has none. A copy already running may still
 * call the old copier: its code must stay loaded. */
ucs_status_t unregister_copier(ucs_memory_type_t type);

/* Whether memory of `type` can be copied: HOST, or a type with a copier. */
bool can_copy(ucs_memory_type_t type) noexcept;

/*
 * Copies between `dest` (of dest_type) and `src` (of src_type): memcpy for
 * host to host, else the copier of the non-host type (the destination's if
 * both are). UCS_ERR_UNSUPPORTED when that type has no copier.
 */
ucs_status_t copy(void *dest, ucs_memory_type_t dest_type, const void *src,
                  ucs_memory_type_t src_type, size_t length) noexcept;

/*
 * Copies that may land later, for a pipeline of staging copies: start
 * queues a copy as the copier would make it (`src` must stay as it is until
 * finish returns) and finish returns once every copy the process started
 * has landed, with the first error of any. Registered with the copier by the
 * module, as one constant pair; a type without them copies in copy_start.
 */
struct async_copier {
    copier start;
    ucs_status_t (*finish)();
};

/* UCS_ERR_INVALID_PARAM for HOST, an invalid type or an incomplete pair;
 * UCS_ERR_ALREADY_EXISTS if the type has one. Kept like a copier. */
ucs_status_t register_async_copier(ucs_memory_type_t type, const async_copier *fns);
ucs_status_t unregister_async_copier(ucs_memory_type_t type);

/* copy(), possibly landing only at copy_finish() of the non-host type. */
ucs_status_t copy_start(void *dest, ucs_memory_type_t dest_type, const void *src,
                        ucs_memory_type_t src_type, size_t length) noexcept;

/* Waits for the copies copy_start queued for `type`; UCS_OK when none. */
ucs_status_t copy_finish(ucs_memory_type_t type) noexcept;

/*
 * Host buffers that staging copies go through (the protocols' bounce
 * buffers). A module may provide memory its copier moves fastest (page-
 * locked, for CUDA) and keep freed buffers for reuse; otherwise, or when it
 * has none to give, they are malloc'ed. bounce_free takes any pointer
 * bounce_alloc returned, whoever provided it, and ignores nullptr.
 */
struct host_allocator {
    void *(*alloc)(size_t length); /* nullptr: none to give */
    void (*release)(void *buffer, size_t length);
};

/* One allocator in the process (a module that registers one stays loaded). */
ucs_status_t register_bounce_allocator(const host_allocator *allocator);
ucs_status_t unregister_bounce_allocator();

void *bounce_alloc(size_t length) noexcept;
void bounce_free(void *buffer) noexcept;

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
