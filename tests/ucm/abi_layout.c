/*
 * Compiled as C: the public header must be valid C, and its types must have
 * UCX 1.13's layout (offsets below are UCX's on LP64 targets).
 */
#include <ucm/api/ucm.h>

#include <stddef.h>

int ucm_test_abi_layout_checked(void);

#define EXPECT_OFFSET(_type, _field, _offset) \
    _Static_assert(offsetof(_type, _field) == (_offset), #_type "." #_field)

_Static_assert(UCM_EVENT_MMAP == 0x1, "mmap bit");
_Static_assert(UCM_EVENT_MUNMAP == 0x2, "munmap bit");
_Static_assert(UCM_EVENT_MREMAP == 0x4, "mremap bit");
_Static_assert(UCM_EVENT_SHMAT == 0x8, "shmat bit");
_Static_assert(UCM_EVENT_SHMDT == 0x10, "shmdt bit");
_Static_assert(UCM_EVENT_SBRK == 0x20, "sbrk bit");
_Static_assert(UCM_EVENT_MADVISE == 0x40, "madvise bit");
_Static_assert(UCM_EVENT_BRK == 0x80, "brk bit");
_Static_assert(UCM_EVENT_VM_MAPPED == 0x10000, "vm mapped bit");
_Static_assert(UCM_EVENT_VM_UNMAPPED == 0x20000, "vm unmapped bit");
_Static_assert(UCM_EVENT_MEM_TYPE_ALLOC == 0x100000, "mem type alloc bit");
_Static_assert(UCM_EVENT_MEM_TYPE_FREE == 0x200000, "mem type free bit");
_Static_assert(UCM_EVENT_FLAG_NO_INSTALL == 0x1000000, "no install flag");
_Static_assert(UCM_EVENT_FLAG_EXISTING_ALLOC == 0x2000000, "existing flag");
_Static_assert(sizeof(ucm_event_type_t) == 4, "event type size");
_Static_assert(UCM_MMAP_HOOK_RELOC == 1 && UCM_MMAP_HOOK_BISTRO == 2, "hook modes");
_Static_assert(UCM_UNLOAD_PREVENT_MODE_NONE == 2, "unload modes");

#if defined(__LP64__)
_Static_assert(sizeof(ucm_event_t) == 48, "event size");
EXPECT_OFFSET(ucm_event_t, mmap.address, 8);
EXPECT_OFFSET(ucm_event_t, mmap.size, 16);
EXPECT_OFFSET(ucm_event_t, mmap.prot, 24);
EXPECT_OFFSET(ucm_event_t, mmap.flags, 28);
EXPECT_OFFSET(ucm_event_t, mmap.fd, 32);
EXPECT_OFFSET(ucm_event_t, mmap.offset, 40);
EXPECT_OFFSET(ucm_event_t, munmap.result, 0);
EXPECT_OFFSET(ucm_event_t, munmap.address, 8);
EXPECT_OFFSET(ucm_event_t, munmap.size, 16);
EXPECT_OFFSET(ucm_event_t, mremap.old_size, 16);
EXPECT_OFFSET(ucm_event_t, mremap.new_size, 24);
EXPECT_OFFSET(ucm_event_t, mremap.flags, 32);
EXPECT_OFFSET(ucm_event_t, shmat.shmid, 8);
EXPECT_OFFSET(ucm_event_t, shmat.shmaddr, 16);
EXPECT_OFFSET(ucm_event_t, shmat.shmflg, 24);
EXPECT_OFFSET(ucm_event_t, shmdt.shmaddr, 8);
EXPECT_OFFSET(ucm_event_t, sbrk.increment, 8);
EXPECT_OFFSET(ucm_event_t, madvise.addr, 8);
EXPECT_OFFSET(ucm_event_t, madvise.length, 16);
EXPECT_OFFSET(ucm_event_t, madvise.advice, 24);
EXPECT_OFFSET(ucm_event_t, brk.addr, 8);
EXPECT_OFFSET(ucm_event_t, vm_mapped.size, 8);
EXPECT_OFFSET(ucm_event_t, vm_unmapped.size, 8);
EXPECT_OFFSET(ucm_event_t, mem_type.size, 8);
EXPECT_OFFSET(ucm_event_t, mem_type.mem_type, 16);

_Static_assert(sizeof(ucm_global_config_t) == 48, "config size");
EXPECT_OFFSET(ucm_global_config_t, enable_events, 4);
EXPECT_OFFSET(ucm_global_config_t, mmap_hook_mode, 8);
EXPECT_OFFSET(ucm_global_config_t, enable_malloc_hooks, 12);
EXPECT_OFFSET(ucm_global_config_t, enable_malloc_reloc, 16);
EXPECT_OFFSET(ucm_global_config_t, cuda_hook_modes, 20);
EXPECT_OFFSET(ucm_global_config_t, enable_dynamic_mmap_thresh, 24);
EXPECT_OFFSET(ucm_global_config_t, alloc_alignment, 32);
EXPECT_OFFSET(ucm_global_config_t, dlopen_process_rpath, 40);
EXPECT_OFFSET(ucm_global_config_t, module_unload_prevent_mode, 44);
#endif

int ucm_test_abi_layout_checked(void)
{
    /* The checks above are compile-time; linking this proves they ran. */
    ucm_event_callback_t callback = NULL;
    return (callback == NULL) ? 1 : 0;
}
