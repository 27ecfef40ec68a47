/*
 * The memory calls without events. Hooks and ucm_orig_* reach the system
 * through these. With relocation hooks they are libc's functions (libucm
 * never patches its own slots). Once libc's functions themselves are patched
 * (bistro), calling them would come back to the hook: from then on these
 * are raw system calls, and brk/sbrk keep libc's idea of the break current.
 */
#ifndef UCM_MMAP_ORIGINALS_H_
#define UCM_MMAP_ORIGINALS_H_

#include <cstddef>
#include <cstdint>
#include <sys/types.h>

namespace ucm::mm::orig {

/* Switch to raw system calls; before the first entry patch is written. */
void use_system_calls();

void *mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset);
int munmap(void *addr, size_t length);
/* new_address is used with MREMAP_FIXED only. */
void *mremap(void *old_address, size_t old_size, size_t new_size, int flags, void *new_address);
void *shmat(int shmid, const void *shmaddr, int shmflg);
int shmdt(const void *shmaddr);
void *sbrk(intptr_t increment);
int brk(void *addr);
int madvise(void *addr, size_t length, int advice);

/* The current program break, without events. */
void *current_brk();

} // namespace ucm::mm::orig

#endif
