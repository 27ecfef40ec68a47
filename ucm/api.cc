/*
 * The exported C API of libucm (see ucm/api/ucm.h).
 */
#include <ucm/api/ucm.h>

#include <ucm/event/handlers.h>
#include <ucm/mmap/hooks.h>
#include <ucm/mmap/install.h>
#include <ucm/mmap/originals.h>
#include <ucm/reloc/dlopen_hook.h>
#include <ucm/util/log.h>
#include <ucm/util/sys.h>

#include <atomic>
#include <pthread.h>
#include <cerrno>
#include <sys/mman.h>
#include <sys/shm.h>
#include <unistd.h>

ucm_global_config_t ucm_global_opts = {
    UCS_LOG_LEVEL_WARN, /* log_level */
    1,                  /* enable_events */
#if defined(__x86_64__)
    UCM_MMAP_HOOK_BISTRO, /* mmap_hook_mode: libc's entries, as UCX's default */
#else
    UCM_MMAP_HOOK_RELOC, /* mmap_hook_mode */
#endif
    0,                            /* enable_malloc_hooks: not implemented */
    0,                            /* enable_malloc_reloc: not implemented */
    0,                            /* cuda_hook_modes: not implemented */
    0,                            /* enable_dynamic_mmap_thresh */
    16,                           /* alloc_alignment */
    1,                            /* dlopen_process_rpath */
    UCM_UNLOAD_PREVENT_MODE_LAZY, /* module_unload_prevent_mode */
};

using namespace ucm;

namespace {

std::atomic<int> external_events{0};

int external()
{
    return external_events.load(std::memory_order_acquire);
}

/*
 * A fork() while another thread holds a libucm lock would leave the child
 * unable to dispatch or install. Lock order: handler list, then install
 * mutex (no code path takes them the other way round).
 */
void prepare_fork()
{
    event::fork_prepare();
    mm::fork_prepare();
}

void after_fork_in_parent()
{
    mm::fork_parent();
    event::fork_parent();
}

void after_fork_in_child()
{
    mm::fork_child();
    event::fork_child();
}

/* The environment is read once, as UCX's configuration is when it is
 * loaded; ucm_set_global_opts() can still change the options later. */
__attribute__((constructor)) void init_library()
{
    ucm_global_opts.mmap_hook_mode = sys::env_hook_mode(ucm_global_opts.mmap_hook_mode);
    pthread_atfork(prepare_fork, after_fork_in_parent, after_fork_in_child);
}

} // namespace


void ucm_set_global_opts(const ucm_global_config_t *ucm_opts)
{
    if (ucm_opts != nullptr) {
        ucm_global_opts = *ucm_opts;
    }
}

ucs_status_t ucm_set_event_handler(int events, int priority, ucm_event_callback_t cb, void *arg)
{
    if ((cb == nullptr) || (events & ~(event::all_events | event::flag_bits)) ||
        ((events & event::all_events) == 0)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (!sys::events_enabled()) {
        ucm_debug("memory events are disabled");
        return UCS_ERR_UNSUPPORTED;
    }
    if (event::in_dispatch()) {
        return UCS_ERR_BUSY;
    }

    const int flags = events & event::flag_bits;
    events &= event::all_events;

    if (!(flags & UCM_EVENT_FLAG_NO_INSTALL)) {
        const int to_install = events & ~external();
        if (to_install & event::mem_type_events) {
            /* No device-memory hooks here; a provider must declare these
             * events external and report them with ucm_event_dispatch(). */
            ucm_debug("memory type events have no hooks in libucm");
            return UCS_ERR_UNSUPPORTED;
        }
        ucs_status_t status = mm::install(to_install);
        if (status != UCS_OK) {
            return status;
        }
    }

    /* UCM_EVENT_FLAG_EXISTING_ALLOC only concerns memory type events,
     * which libucm never generates itself: nothing to report. */
    return event::add_handler(events, priority, cb, arg);
}

void ucm_unset_event_handler(int events, ucm_event_callback_t cb, void *arg)
{
    events &= event::all_events;
    if ((cb == nullptr) || (events == 0)) {
        return;
    }
    event::remove_handler(events, cb, arg);
}

void ucm_set_external_event(int events)
{
    external_events.fetch_or(events & event::all_events, std::memory_order_acq_rel);
}

void ucm_unset_external_event(int events)
{
    external_events.fetch_and(~(events & event::all_events), std::memory_order_acq_rel);
}

ucs_status_t ucm_test_external_events(int events)
{
    events &= event::all_events;
    return ((events & ~external()) == 0) ? UCS_OK : UCS_ERR_UNSUPPORTED;
}

ucs_status_t ucm_test_events(int events)
{
    events &= event::all_events;
    const int internal = events & ~external();
    if (internal == 0) {
        return UCS_OK;
    }
    if ((internal & event::mem_type_events) || !sys::events_enabled() || event::in_dispatch()) {
        return UCS_ERR_UNSUPPORTED;
    }
    if (mm::install(internal) != UCS_OK) {
        return UCS_ERR_UNSUPPORTED;
    }
    return mm::self_test(internal);
}

void ucm_vm_mmap(void *addr, size_t length)
{
    event::dispatch_scope scope;
    if (scope.active()) {
        event::dispatch_vm_mapped(addr, length);
    }
}

void ucm_vm_munmap(void *addr, size_t length)
{
    event::dispatch_scope scope;
    if (scope.active()) {
        event::dispatch_vm_unmapped(addr, length);
    }
}

void ucm_event_dispatch(ucm_event_type_t event_type, ucm_event_t *event)
{
    if (event == nullptr) {
        return;
    }
    event::dispatch_scope scope;
    if (scope.active()) {
        event::dispatch(event_type, event);
    }
}

void *ucm_orig_mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset)
{
    return mm::orig::mmap(addr, length, prot, flags, fd, offset);
}

int ucm_orig_munmap(void *addr, size_t length)
{
    return mm::orig::munmap(addr, length);
}

void *ucm_orig_mremap(void *old_address, size_t old_size, size_t new_size, int flags)
{
    /* The 4-argument API cannot carry MREMAP_FIXED's target address. */
    if (flags & MREMAP_FIXED) {
        errno = EINVAL;
        return MAP_FAILED;
    }
    return mm::orig::mremap(old_address, old_size, new_size, flags, nullptr);
}

void *ucm_orig_shmat(int shmid, const void *shmaddr, int shmflg)
{
    return mm::orig::shmat(shmid, shmaddr, shmflg);
}

int ucm_orig_shmdt(const void *shmaddr)
{
    return mm::orig::shmdt(shmaddr);
}

void *ucm_orig_sbrk(intptr_t increment)
{
    return mm::orig::sbrk(increment);
}

int ucm_orig_brk(void *addr)
{
    return mm::orig::brk(addr);
}

int ucm_orig_madvise(void *addr, size_t length, int advice)
{
    return mm::orig::madvise(addr, length, advice);
}

ucm_mmap_hook_mode_t ucm_get_installed_mmap_hook_mode(void)
{
    return mm::installed_mode();
}

void *ucm_mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset)
{
    return mm::mmap_with_events(addr, length, prot, flags, fd, offset);
}

int ucm_munmap(void *addr, size_t length)
{
    return mm::munmap_with_events(addr, length);
}

void *ucm_mremap(void *old_address, size_t old_size, size_t new_size, int flags)
{
    /* The 4-argument API cannot carry MREMAP_FIXED's target address. */
    if (flags & MREMAP_FIXED) {
        errno = EINVAL;
        return MAP_FAILED;
    }
    return mm::mremap_with_events(old_address, old_size, new_size, flags, nullptr);
}

void *ucm_shmat(int shmid, const void *shmaddr, int shmflg)
{
    return mm::shmat_with_events(shmid, shmaddr, shmflg);
}

int ucm_shmdt(const void *shmaddr)
{
    return mm::shmdt_with_events(shmaddr);
}

void *ucm_sbrk(intptr_t increment)
{
    return mm::sbrk_with_events(increment);
}

int ucm_brk(void *addr)
{
    return mm::brk_with_events(addr);
}

int ucm_madvise(void *addr, size_t length, int advice)
{
    return mm::madvise_with_events(addr, length, advice);
}

void *ucm_dlopen(const char *filename, int flag)
{
    return reloc::dlopen_for(filename, flag, __builtin_return_address(0));
}
