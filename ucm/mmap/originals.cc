#include "originals.h"

#include <atomic>
#include <cerrno>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <unistd.h>

/* glibc's cached program break, read by its own sbrk(); weak where the C
 * library has none. */
extern "C" __attribute__((weak)) void *__curbrk;

namespace ucm::mm::orig {

namespace {

std::atomic<bool> raw_calls{false};

bool raw()
{
    return raw_calls.load(std::memory_order_relaxed);
}

void *const failed_ptr = reinterpret_cast<void *>(-1);

/* syscall() returns -1 with errno set on failure, as the wrappers do. */
void *as_pointer(long result)
{
    return reinterpret_cast<void *>(result);
}

void *raw_brk(void *addr)
{
    void *result = as_pointer(syscall(SYS_brk, addr));
    if (&__curbrk != nullptr) {
        __curbrk = result;
    }
    return result;
}

} // namespace

void use_system_calls()
{
    raw_calls.store(true, std::memory_order_seq_cst);
}

void *mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset)
{
    if (!raw()) {
        return ::mmap(addr, length, prot, flags, fd, offset);
    }
    return as_pointer(syscall(SYS_mmap, addr, length, prot, flags, fd, offset));
}

int munmap(void *addr, size_t length)
{
    if (!raw()) {
        return ::munmap(addr, length);
    }
    return static_cast<int>(syscall(SYS_munmap, addr, length));
}

void *mremap(void *old_address, size_t old_size, size_t new_size, int flags, void *new_address)
{
    if (!raw()) {
        if (flags & MREMAP_FIXED) {
            return ::mremap(old_address, old_size, new_size, flags, new_address);
        }
        return ::mremap(old_address, old_size, new_size, flags);
    }
    return as_pointer(syscall(SYS_mremap, old_address, old_size, new_size, flags, new_address));
}

void *shmat(int shmid, const void *shmaddr, int shmflg)
{
    if (!raw()) {
        return ::shmat(shmid, shmaddr, shmflg);
    }
    return as_pointer(syscall(SYS_shmat, shmid, shmaddr, shmflg));
}

int shmdt(const void *shmaddr)
{
    if (!raw()) {
        return ::shmdt(shmaddr);
    }
    return static_cast<int>(syscall(SYS_shmdt, shmaddr));
}

int brk(void *addr)
{
    if (!raw()) {
        return ::brk(addr);
    }
    /* The kernel answers with the break it kept: below the request means
     * it refused. */
    if (raw_brk(addr) < addr) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

void *current_brk()
{
    if (!raw()) {
        return ::sbrk(0);
    }
    return raw_brk(nullptr);
}

void *sbrk(intptr_t increment)
{
    if (!raw()) {
        return ::sbrk(increment);
    }
    void *old_end = ((&__curbrk != nullptr) && (__curbrk != nullptr)) ? __curbrk : raw_brk(nullptr);
    if (increment == 0) {
        return old_end;
    }
    const auto old_value = reinterpret_cast<uintptr_t>(old_end);
    /* |increment| without overflow, INTPTR_MIN included. */
    const uintptr_t delta = (increment > 0) ? uintptr_t(increment) :
                                              uintptr_t(0) - uintptr_t(increment);
    uintptr_t new_value;
    if ((increment > 0) ? __builtin_add_overflow(old_value, delta, &new_value) :
                          __builtin_sub_overflow(old_value, delta, &new_value)) {
        errno = ENOMEM;
        return failed_ptr;
    }
    if (brk(reinterpret_cast<void *>(new_value)) != 0) {
        return failed_ptr;
    }
    return old_end;
}

int madvise(void *addr, size_t length, int advice)
{
    if (!raw()) {
        return ::madvise(addr, length, advice);
    }
    return static_cast<int>(syscall(SYS_madvise, addr, length, advice));
}

} // namespace ucm::mm::orig
