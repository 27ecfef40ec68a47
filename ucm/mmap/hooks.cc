#include "hooks.h"

#include "originals.h"

#include <ucm/event/handlers.h>
#include <ucm/util/sys.h>

#include <cstdarg>
#include <sys/mman.h>
#include <sys/shm.h>
#include <unistd.h>

namespace ucm::mm {

namespace {

/* The 5th mremap() argument has no place in ucm_event_t; the hook passes it
 * to call_original() through the (dispatching) thread. */
__attribute__((tls_model("initial-exec"))) thread_local void *tls_mremap_target;

constexpr int mmap_events    = UCM_EVENT_MMAP | UCM_EVENT_VM_MAPPED | UCM_EVENT_VM_UNMAPPED;
constexpr int munmap_events  = UCM_EVENT_MUNMAP | UCM_EVENT_VM_UNMAPPED;
constexpr int mremap_events  = UCM_EVENT_MREMAP | UCM_EVENT_VM_MAPPED | UCM_EVENT_VM_UNMAPPED;
constexpr int shmat_events   = UCM_EVENT_SHMAT | UCM_EVENT_VM_MAPPED | UCM_EVENT_VM_UNMAPPED;
constexpr int shmdt_events   = UCM_EVENT_SHMDT | UCM_EVENT_VM_UNMAPPED;
constexpr int sbrk_events    = UCM_EVENT_SBRK | UCM_EVENT_VM_MAPPED | UCM_EVENT_VM_UNMAPPED;
constexpr int brk_events     = UCM_EVENT_BRK | UCM_EVENT_VM_MAPPED | UCM_EVENT_VM_UNMAPPED;
constexpr int madvise_events = UCM_EVENT_MADVISE | UCM_EVENT_VM_UNMAPPED;

void *const failed_ptr = reinterpret_cast<void *>(-1); /* MAP_FAILED too */

} // namespace

void call_original(ucm_event_type_t type, ucm_event_t *event)
{
    switch (type) {
    case UCM_EVENT_MMAP:
        if (event->mmap.result == failed_ptr) {
            event->mmap.result = orig::mmap(event->mmap.address, event->mmap.size, event->mmap.prot,
                                            event->mmap.flags, event->mmap.fd, event->mmap.offset);
        }
        break;
    case UCM_EVENT_MUNMAP:
        if (event->munmap.result == -1) {
            event->munmap.result = orig::munmap(event->munmap.address, event->munmap.size);
        }
        break;
    case UCM_EVENT_MREMAP:
        if (event->mremap.result == failed_ptr) {
            event->mremap.result = orig::mremap(event->mremap.address, event->mremap.old_size,
                                                event->mremap.new_size, event->mremap.flags,
                                                tls_mremap_target);
        }
        break;
    case UCM_EVENT_SHMAT:
        if (event->shmat.result == failed_ptr) {
            event->shmat.result = orig::shmat(event->shmat.shmid, event->shmat.shmaddr,
                                              event->shmat.shmflg);
        }
        break;
    case UCM_EVENT_SHMDT:
        if (event->shmdt.result == -1) {
            event->shmdt.result = orig::shmdt(event->shmdt.shmaddr);
        }
        break;
    case UCM_EVENT_SBRK:
        if (event->sbrk.result == failed_ptr) {
            event->sbrk.result = orig::sbrk(event->sbrk.increment);
        }
        break;
    case UCM_EVENT_MADVISE:
        if (event->madvise.result == -1) {
            event->madvise.result = orig::madvise(event->madvise.addr, event->madvise.length,
                                                  event->madvise.advice);
        }
        break;
    case UCM_EVENT_BRK:
        if (event->brk.result == -1) {
            event->brk.result = orig::brk(event->brk.addr);
        }
        break;
    default:
        break;
    }
}

bool advice_releases_memory(int advice)
{
    switch (advice) {
    case MADV_DONTNEED:
    case MADV_REMOVE:
#ifdef MADV_FREE
    case MADV_FREE:
#endif
#ifdef MADV_DONTNEED_LOCKED
    case MADV_DONTNEED_LOCKED:
#endif
        return true;
    default:
        return false;
    }
}

void *mmap_with_events(void *addr, size_t length, int prot, int flags, int fd, off_t offset)
{
    event::dispatch_scope scope;
    if (!scope.active()) {
        return orig::mmap(addr, length, prot, flags, fd, offset);
    }

    if (flags & MAP_FIXED) {
        /* A fixed mapping silently replaces whatever was there. */
        event::dispatch_vm_unmapped(addr, length);
    }

    ucm_event_t event;
    event.mmap.result  = failed_ptr;
    event.mmap.address = addr;
    event.mmap.size    = length;
    event.mmap.prot    = prot;
    event.mmap.flags   = flags;
    event.mmap.fd      = fd;
    event.mmap.offset  = offset;
    event::dispatch(UCM_EVENT_MMAP, &event);

    if (event.mmap.result != failed_ptr) {
        event::dispatch_vm_mapped(event.mmap.result, event.mmap.size);
    }
    return event.mmap.result;
}

int munmap_with_events(void *addr, size_t length)
{
    event::dispatch_scope scope;
    if (!scope.active()) {
        return orig::munmap(addr, length);
    }

    event::dispatch_vm_unmapped(addr, length);

    ucm_event_t event;
    event.munmap.result  = -1;
    event.munmap.address = addr;
    event.munmap.size    = length;
    event::dispatch(UCM_EVENT_MUNMAP, &event);
    return event.munmap.result;
}

void *mremap_with_events(void *old_address, size_t old_size, size_t new_size, int flags,
                         void *new_address)
{
    event::dispatch_scope scope;
    if (!scope.active()) {
        return orig::mremap(old_address, old_size, new_size, flags, new_address);
    }

    event::dispatch_vm_unmapped(old_address, old_size);
    if (flags & MREMAP_FIXED) {
        event::dispatch_vm_unmapped(new_address, new_size);
    }

    ucm_event_t event;
    event.mremap.result   = failed_ptr;
    event.mremap.address  = old_address;
    event.mremap.old_size = old_size;
    event.mremap.new_size = new_size;
    event.mremap.flags    = flags;
    tls_mremap_target     = new_address;
    event::dispatch(UCM_EVENT_MREMAP, &event);

    if (event.mremap.result != failed_ptr) {
        event::dispatch_vm_mapped(event.mremap.result, event.mremap.new_size);
    }
    return event.mremap.result;
}

void *shmat_with_events(int shmid, const void *shmaddr, int shmflg)
{
    event::dispatch_scope scope;
    if (!scope.active()) {
        return orig::shmat(shmid, shmaddr, shmflg);
    }

    size_t size = sys::shm_segment_size(shmid);
    if ((shmflg & SHM_REMAP) && (shmaddr != nullptr)) {
        event::dispatch_vm_unmapped(const_cast<void *>(shmaddr), size);
    }

    ucm_event_t event;
    event.shmat.result  = failed_ptr;
    event.shmat.shmid   = shmid;
    event.shmat.shmaddr = shmaddr;
    event.shmat.shmflg  = shmflg;
    event::dispatch(UCM_EVENT_SHMAT, &event);

    if (event.shmat.result != failed_ptr) {
        event::dispatch_vm_mapped(event.shmat.result, size);
    }
    return event.shmat.result;
}

int shmdt_with_events(const void *shmaddr)
{
    event::dispatch_scope scope;
    if (!scope.active()) {
        return orig::shmdt(shmaddr);
    }

    /* shmdt() takes no size: ask the kernel's view of the mapping. */
    size_t size = sys::mapping_size(shmaddr);
    if (size != 0) {
        event::dispatch_vm_unmapped(const_cast<void *>(shmaddr), size);
    }

    ucm_event_t event;
    event.shmdt.result  = -1;
    event.shmdt.shmaddr = shmaddr;
    event::dispatch(UCM_EVENT_SHMDT, &event);
    return event.shmdt.result;
}

void *sbrk_with_events(intptr_t increment)
{
    event::dispatch_scope scope;
    if (!scope.active()) {
        return orig::sbrk(increment);
    }

    if (increment < 0) {
        auto *end = static_cast<char *>(orig::current_brk());
        event::dispatch_vm_unmapped(end + increment, static_cast<size_t>(-increment));
    }

    ucm_event_t event;
    event.sbrk.result    = failed_ptr;
    event.sbrk.increment = increment;
    event::dispatch(UCM_EVENT_SBRK, &event);

    if ((event.sbrk.result != failed_ptr) && (event.sbrk.increment > 0)) {
        event::dispatch_vm_mapped(event.sbrk.result, static_cast<size_t>(event.sbrk.increment));
    }
    return event.sbrk.result;
}

int brk_with_events(void *addr)
{
    event::dispatch_scope scope;
    if (!scope.active()) {
        return orig::brk(addr);
    }

    auto *old_end = static_cast<char *>(orig::current_brk());
    auto *new_end = static_cast<char *>(addr);
    if (new_end < old_end) {
        event::dispatch_vm_unmapped(new_end, old_end - new_end);
    }

    ucm_event_t event;
    event.brk.result = -1;
    event.brk.addr   = addr;
    event::dispatch(UCM_EVENT_BRK, &event);

    if ((event.brk.result == 0) && (new_end > old_end)) {
        event::dispatch_vm_mapped(old_end, new_end - old_end);
    }
    return event.brk.result;
}

int madvise_with_events(void *addr, size_t length, int advice)
{
    event::dispatch_scope scope;
    if (!scope.active()) {
        return orig::madvise(addr, length, advice);
    }

    if (advice_releases_memory(advice)) {
        event::dispatch_vm_unmapped(addr, length);
    }

    ucm_event_t event;
    event.madvise.result = -1;
    event.madvise.addr   = addr;
    event.madvise.length = length;
    event.madvise.advice = advice;
    event::dispatch(UCM_EVENT_MADVISE, &event);
    return event.madvise.result;
}

void *hook_mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset)
{
    if (!event::wanted(mmap_events)) {
        return orig::mmap(addr, length, prot, flags, fd, offset);
    }
    return mmap_with_events(addr, length, prot, flags, fd, offset);
}

int hook_munmap(void *addr, size_t length)
{
    if (!event::wanted(munmap_events)) {
        return orig::munmap(addr, length);
    }
    return munmap_with_events(addr, length);
}

void *hook_mremap(void *old_address, size_t old_size, size_t new_size, int flags, ...)
{
    void *new_address = nullptr;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        new_address = va_arg(ap, void *);
        va_end(ap);
    }

    if (!event::wanted(mremap_events)) {
        return orig::mremap(old_address, old_size, new_size, flags, new_address);
    }
    return mremap_with_events(old_address, old_size, new_size, flags, new_address);
}

void *hook_shmat(int shmid, const void *shmaddr, int shmflg)
{
    if (!event::wanted(shmat_events)) {
        return orig::shmat(shmid, shmaddr, shmflg);
    }
    return shmat_with_events(shmid, shmaddr, shmflg);
}

int hook_shmdt(const void *shmaddr)
{
    if (!event::wanted(shmdt_events)) {
        return orig::shmdt(shmaddr);
    }
    return shmdt_with_events(shmaddr);
}

void *hook_sbrk(intptr_t increment)
{
    if (!event::wanted(sbrk_events)) {
        return orig::sbrk(increment);
    }
    return sbrk_with_events(increment);
}

int hook_brk(void *addr)
{
    if (!event::wanted(brk_events)) {
        return orig::brk(addr);
    }
    return brk_with_events(addr);
}

int hook_madvise(void *addr, size_t length, int advice)
{
    if (!event::wanted(madvise_events)) {
        return orig::madvise(addr, length, advice);
    }
    return madvise_with_events(addr, length, advice);
}

} // namespace ucm::mm
