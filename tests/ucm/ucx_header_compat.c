/*
 * Built against the installed UCX 1.13 headers (not ours), linked with our
 * libucm: a program compiled the way Open MPI was must get correct events.
 * Exits 0 on success, otherwise with the number of the failed check.
 */
#define _GNU_SOURCE /* mremap */
#include <ucm/api/ucm.h>

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct seen {
    void *unmapped;
    size_t unmapped_size;
    void *munmap_address;
    size_t munmap_size;
    int munmap_result;
    void *mremap_old;
    size_t mremap_new_size;
    void *mremap_result;
};

static void on_event(ucm_event_type_t type, ucm_event_t *event, void *arg)
{
    struct seen *seen = arg;
    switch (type) {
    case UCM_EVENT_VM_UNMAPPED:
        seen->unmapped      = event->vm_unmapped.address;
        seen->unmapped_size = event->vm_unmapped.size;
        break;
    case UCM_EVENT_MUNMAP:
        seen->munmap_address = event->munmap.address;
        seen->munmap_size    = event->munmap.size;
        seen->munmap_result  = event->munmap.result;
        break;
    case UCM_EVENT_MREMAP:
        seen->mremap_old      = event->mremap.address;
        seen->mremap_new_size = event->mremap.new_size;
        seen->mremap_result   = event->mremap.result;
        break;
    default:
        break;
    }
}

#define CHECK(_n, _cond) \
    do { \
        if (!(_cond)) { \
            fprintf(stderr, "check %d failed: %s\n", _n, #_cond); \
            return _n; \
        } \
    } while (0)

int main(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    struct seen seen;
    memset(&seen, 0, sizeof(seen));

    CHECK(1, ucm_global_opts.enable_events == 1);
#if defined(__x86_64__)
    CHECK(2, ucm_global_opts.mmap_hook_mode == UCM_MMAP_HOOK_BISTRO); /* UCX's default too */
#else
    CHECK(2, ucm_global_opts.mmap_hook_mode == UCM_MMAP_HOOK_RELOC);
#endif
    CHECK(3, ucm_set_event_handler(UCM_EVENT_VM_UNMAPPED | UCM_EVENT_MUNMAP | UCM_EVENT_MREMAP, 1,
                                   on_event, &seen) == UCS_OK);

    char *p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(4, p != MAP_FAILED);
    CHECK(5, munmap(p + page, page) == 0);
    CHECK(6, seen.unmapped == p + page && seen.unmapped_size == page);
    CHECK(7,
          seen.munmap_address == p + page && seen.munmap_size == page && seen.munmap_result == 0);

    void *moved = mremap(p, page, 3 * page, MREMAP_MAYMOVE);
    CHECK(8, moved != MAP_FAILED);
    CHECK(9,
          seen.mremap_old == p && seen.mremap_new_size == 3 * page && seen.mremap_result == moved);

    /* What Open MPI's common ucx layer calls. */
    ucm_set_external_event(UCM_EVENT_VM_UNMAPPED);
    CHECK(10, ucm_test_external_events(UCM_EVENT_VM_UNMAPPED) == UCS_OK);
    ucm_vm_munmap(moved, 3 * page);
    CHECK(11, seen.unmapped == moved && seen.unmapped_size == 3 * page);
    CHECK(12, ucm_test_events(UCM_EVENT_VM_UNMAPPED) == UCS_OK);
    ucm_unset_external_event(UCM_EVENT_VM_UNMAPPED);
    CHECK(13, ucm_test_events(UCM_EVENT_VM_UNMAPPED) == UCS_OK);

    ucm_unset_event_handler(UCM_EVENT_VM_UNMAPPED | UCM_EVENT_MUNMAP | UCM_EVENT_MREMAP, on_event,
                            &seen);
    seen.unmapped = NULL;
    CHECK(14, munmap(moved, 3 * page) == 0);
    CHECK(15, seen.unmapped == NULL); /* handler removed */
    return 0;
}
