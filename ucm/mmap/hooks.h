/*
 * The memory calls with event delivery, and the hook functions whose
 * addresses are written into other objects' relocation slots.
 *
 * "Original" calls go through originals.h: libc's functions, or raw system
 * calls once libc's own entries are patched.
 */
#ifndef UCM_MMAP_HOOKS_H_
#define UCM_MMAP_HOOKS_H_

#include <ucm/api/ucm.h>

namespace ucm::mm {

/* Perform the native call described by the event if its result is still
 * the failure value (i.e. no earlier handler did it). */
void call_original(ucm_event_type_t type, ucm_event_t *event);

/* The calls with events; they back both the hooks and the ucm_* API. */
void *mmap_with_events(void *addr, size_t length, int prot, int flags, int fd, off_t offset);
int munmap_with_events(void *addr, size_t length);
void *mremap_with_events(void *old_address, size_t old_size, size_t new_size, int flags,
                         void *new_address);
void *shmat_with_events(int shmid, const void *shmaddr, int shmflg);
int shmdt_with_events(const void *shmaddr);
void *sbrk_with_events(intptr_t increment);
int brk_with_events(void *addr);
int madvise_with_events(void *addr, size_t length, int advice);

/* Hook entry points: a plain call when nobody listens, else the above. */
void *hook_mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset);
int hook_munmap(void *addr, size_t length);
void *hook_mremap(void *old_address, size_t old_size, size_t new_size, int flags, ...);
void *hook_shmat(int shmid, const void *shmaddr, int shmflg);
int hook_shmdt(const void *shmaddr);
void *hook_sbrk(intptr_t increment);
int hook_brk(void *addr);
int hook_madvise(void *addr, size_t length, int advice);

/* Whether madvise() with this advice drops the pages' contents. */
bool advice_releases_memory(int advice);

} // namespace ucm::mm

#endif
