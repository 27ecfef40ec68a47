/*
 * libucm public API: notifications about changes to the process address
 * space (munmap, mremap, madvise, shmdt, brk/sbrk, ...), used by memory
 * registration caches to drop stale registrations.
 *
 * Every type, value and signature below is ABI-compatible with UCX 1.13's
 * ucm/api/ucm.h: runtimes built against UCX (Open MPI's common ucx layer)
 * call these functions through this ABI.
 */
#ifndef UCM_API_UCM_H_
#define UCM_API_UCM_H_

#include <ucs/sys/compiler_def.h>

BEGIN_C_DECLS

#include <ucs/config/types.h>
#include <ucs/memory/memory_type.h>
#include <ucs/type/status.h>

#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>


/*
 * Event kinds, usable as a bit mask. The "native" kinds name one system call
 * each; the "VM" kinds summarise any change that maps or unmaps memory,
 * whichever call caused it. Bits 24 and up are flags for
 * ucm_set_event_handler(), not events.
 */
typedef enum ucm_event_type {
    UCM_EVENT_NONE = 0,

    UCM_EVENT_MMAP    = UCS_BIT(0),
    UCM_EVENT_MUNMAP  = UCS_BIT(1),
    UCM_EVENT_MREMAP  = UCS_BIT(2),
    UCM_EVENT_SHMAT   = UCS_BIT(3),
    UCM_EVENT_SHMDT   = UCS_BIT(4),
    UCM_EVENT_SBRK    = UCS_BIT(5),
    UCM_EVENT_MADVISE = UCS_BIT(6),
    UCM_EVENT_BRK     = UCS_BIT(7),

    UCM_EVENT_VM_MAPPED   = UCS_BIT(16), /* after memory appeared */
    UCM_EVENT_VM_UNMAPPED = UCS_BIT(17), /* before memory goes away */

    UCM_EVENT_MEM_TYPE_ALLOC = UCS_BIT(20), /* device memory allocated */
    UCM_EVENT_MEM_TYPE_FREE  = UCS_BIT(21), /* device memory released */

    /* Register the handler only; do not install any hook for it. */
    UCM_EVENT_FLAG_NO_INSTALL = UCS_BIT(24),
    /* Report allocations made before the handler was set (device memory
     * only; libucm has no device-memory hooks, so this is accepted and does
     * nothing). */
    UCM_EVENT_FLAG_EXISTING_ALLOC = UCS_BIT(25)
} ucm_event_type_t;


/* How mmap-family hooks are installed. BISTRO (the default on x86-64)
 * overwrites the entries of libc's functions, so calls made inside libc
 * (malloc's munmap, sbrk and madvise) are seen too; RELOC patches the
 * relocation slots of loaded objects, which sees only calls between
 * objects; NONE disables the hooks. UCX_MEM_MMAP_HOOK_MODE overrides the
 * field. BISTRO falls back to RELOC where it cannot patch. */
typedef enum ucm_mmap_hook_mode {
    UCM_MMAP_HOOK_NONE,
    UCM_MMAP_HOOK_RELOC,
    UCM_MMAP_HOOK_BISTRO,
    UCM_MMAP_HOOK_LAST
} ucm_mmap_hook_mode_t;


/* How libucm keeps itself loaded once hooks point into it. */
typedef enum ucm_module_unload_prevent_mode {
    UCM_UNLOAD_PREVENT_MODE_LAZY, /* pin with RTLD_LAZY | RTLD_NODELETE */
    UCM_UNLOAD_PREVENT_MODE_NOW,  /* pin with RTLD_NOW | RTLD_NODELETE */
    UCM_UNLOAD_PREVENT_MODE_NONE, /* do not pin (unsafe after hooking) */
    UCM_UNLOAD_PREVENT_MODE_LAST
} ucm_module_unload_prevent_mode_t;


/*
 * What a handler receives. Only the member that matches the event kind is
 * valid. "result" starts out as the call's failure value (MAP_FAILED, -1 or
 * (void*)-1) and holds the real result once the original function has run.
 */
typedef union ucm_event {
    struct { /* UCM_EVENT_MMAP */
        void *result;
        void *address;
        size_t size;
        int prot;
        int flags;
        int fd;
        off_t offset;
    } mmap;

    struct { /* UCM_EVENT_MUNMAP */
        int result;
        void *address;
        size_t size;
    } munmap;

    struct { /* UCM_EVENT_MREMAP */
        void *result;
        void *address;
        size_t old_size;
        size_t new_size;
        int flags;
    } mremap;

    struct { /* UCM_EVENT_SHMAT */
        void *result;
        int shmid;
        const void *shmaddr;
        int shmflg;
    } shmat;

    struct { /* UCM_EVENT_SHMDT */
        int result;
        const void *shmaddr;
    } shmdt;

    struct { /* UCM_EVENT_SBRK */
        void *result;
        intptr_t increment;
    } sbrk;

    struct { /* UCM_EVENT_MADVISE */
        int result;
        void *addr;
        size_t length;
        int advice;
    } madvise;

    struct { /* UCM_EVENT_BRK */
        int result;
        void *addr;
    } brk;

    /* UCM_EVENT_VM_MAPPED (sent after the change) and UCM_EVENT_VM_UNMAPPED
     * (sent before it): the affected range. Read-only. */
    struct {
        void *address;
        size_t size;
    } vm_mapped, vm_unmapped;

    struct { /* UCM_EVENT_MEM_TYPE_ALLOC / _FREE */
        void *address;
        size_t size;
        ucs_memory_type_t mem_type; /* UCS_MEMORY_TYPE_LAST: not known */
    } mem_type;
} ucm_event_t;


/*
 * Library-wide settings. Read by libucm at every decision, so they may be
 * changed at any time, ideally before the first handler is set.
 * libucm honours: log_level (messages it prints to stderr), enable_events,
 * mmap_hook_mode, dlopen_process_rpath and module_unload_prevent_mode.
 * The malloc, CUDA, mmap-threshold and alignment fields are kept for ABI
 * compatibility and have no effect.
 */
typedef struct ucm_global_config {
    ucs_log_level_t log_level;
    int enable_events;
    ucm_mmap_hook_mode_t mmap_hook_mode;
    int enable_malloc_hooks;
    int enable_malloc_reloc;
    int cuda_hook_modes;
    int enable_dynamic_mmap_thresh;
    size_t alloc_alignment;
    int dlopen_process_rpath;
    int module_unload_prevent_mode;
} ucm_global_config_t;

/* The settings themselves; prefer ucm_set_global_opts(). */
extern ucm_global_config_t ucm_global_opts;


/*
 * Event handler.
 *
 * Handlers run in ascending priority order. The original system call runs
 * between the handlers with negative priority and those with priority >= 0:
 * a "pre" handler (priority < 0) sees the failure value in "result" and may
 * change the call's arguments, or perform the operation itself and store a
 * valid result (then the original function is not called); a "post" handler
 * (priority >= 0) sees the real result.
 *
 * A handler must not allocate memory or wait for anything that may: it can
 * run inside the allocator of another library. Memory calls made from a
 * handler (munmap, ucm_munmap, ...) go straight to the system and raise no
 * events, and ucm_vm_munmap() or ucm_event_dispatch() called from a handler
 * deliver nothing. A handler may call ucm_unset_event_handler(), but
 * ucm_set_event_handler() fails there with UCS_ERR_BUSY.
 */
typedef void (*ucm_event_callback_t)(ucm_event_type_t event_type, ucm_event_t *event, void *arg);


/** Copies *ucm_opts into ucm_global_opts (for example to turn memory events
 *  off, as UCX_MEM_EVENTS=no does). */
void ucm_set_global_opts(const ucm_global_config_t *ucm_opts);


/**
 * Adds a handler for the events in the mask "events" (which may also carry
 * UCM_EVENT_FLAG_* bits). Hooks for events not yet hooked are installed
 * now, unless the event was declared external or UCM_EVENT_FLAG_NO_INSTALL
 * is given.
 *
 * Returns UCS_OK; UCS_ERR_INVALID_PARAM for a NULL callback or unknown bits;
 * UCS_ERR_UNSUPPORTED when memory events are disabled (UCX_MEM_EVENTS=no or
 * ucm_global_opts) or a requested event cannot be hooked; UCS_ERR_BUSY when
 * called from inside an event handler; UCS_ERR_NO_MEMORY.
 */
ucs_status_t ucm_set_event_handler(int events, int priority, ucm_event_callback_t cb, void *arg);

/**
 * Stops delivering "events" to the handler(s) registered with (cb, arg).
 * A handler left with no events is removed. Installed hooks stay installed.
 */
void ucm_unset_event_handler(int events, ucm_event_callback_t cb, void *arg);


/**
 * Declares events as delivered by the caller: setting a handler for them no
 * longer installs hooks, and the caller reports them itself (for example
 * with ucm_vm_munmap()). Takes effect for handlers set afterwards.
 */
void ucm_set_external_event(int events);

/** Undoes ucm_set_external_event() for the events in the mask. */
void ucm_unset_external_event(int events);

/**
 * Checks that the events are really delivered: hooks are installed if needed
 * and exercised on a scratch mapping. Events declared external count as
 * delivered. Returns UCS_OK or UCS_ERR_UNSUPPORTED.
 */
ucs_status_t ucm_test_events(int events);

/** UCS_OK when every event in the mask was declared external, otherwise
 *  UCS_ERR_UNSUPPORTED. */
ucs_status_t ucm_test_external_events(int events);


/** The system function itself (mmap, munmap, mremap, shmat, shmdt, sbrk,
 *  brk, madvise): the same arguments and result, and no event is raised. */
/**@{*/
void *ucm_orig_mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset);
int ucm_orig_munmap(void *addr, size_t length);
void *ucm_orig_mremap(void *old_address, size_t old_size, size_t new_size, int flags);
void *ucm_orig_shmat(int shmid, const void *shmaddr, int shmflg);
int ucm_orig_shmdt(const void *shmaddr);
void *ucm_orig_sbrk(intptr_t increment);
int ucm_orig_brk(void *addr);
int ucm_orig_madvise(void *addr, size_t length, int advice);
/**@}*/


/** How the hooks in place were installed: BISTRO, RELOC, or NONE while no
 *  hook is installed. Only BISTRO sees memory that libc's allocator gives
 *  back by itself (not in UCX 1.13). */
ucm_mmap_hook_mode_t ucm_get_installed_mmap_hook_mode(void);


/** The system function (mmap, munmap, mremap, shmat, shmdt, sbrk, brk,
 *  madvise) with event delivery, exactly as the hooks do it: the same
 *  arguments and result. ucm_mremap() rejects MREMAP_FIXED (EINVAL): its
 *  four arguments cannot carry the target address (the mremap hook itself
 *  handles it). */
/**@{*/
void *ucm_mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset);
int ucm_munmap(void *addr, size_t length);
void *ucm_mremap(void *old_address, size_t old_size, size_t new_size, int flags);
void *ucm_shmat(int shmid, const void *shmaddr, int shmflg);
int ucm_shmdt(const void *shmaddr);
void *ucm_sbrk(intptr_t increment);
int ucm_brk(void *addr);
int ucm_madvise(void *addr, size_t length, int advice);
/**@}*/

/** dlopen() that also hooks the newly loaded objects. */
void *ucm_dlopen(const char *filename, int flag);


/** Delivers UCM_EVENT_VM_MAPPED (ucm_vm_mmap) or UCM_EVENT_VM_UNMAPPED
 *  (ucm_vm_munmap) for a range without touching it (for memory mapped or
 *  released by other means). */
/**@{*/
void ucm_vm_mmap(void *addr, size_t length);
void ucm_vm_munmap(void *addr, size_t length);
/**@}*/


/**
 * libucm extension (also exported by UCX's libucm): delivers an event to the
 * registered handlers. Meant for external hook providers, for example a
 * device-memory module reporting UCM_EVENT_MEM_TYPE_ALLOC it declared
 * external. Native events dispatched this way also run the original call.
 */
void ucm_event_dispatch(ucm_event_type_t event_type, ucm_event_t *event);

END_C_DECLS

#endif
