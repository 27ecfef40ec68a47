/*
 * A library the tests load with dlopen() after the hooks are installed: its
 * own munmap() import must be hooked too. Built several times with
 * different linker settings (lazy PLT, -fno-plt with full RELRO).
 */
#include <stddef.h>
#include <sys/mman.h>

int ucm_test_helper_munmap(void *address, size_t length);

int ucm_test_helper_munmap(void *address, size_t length)
{
    return munmap(address, length);
}
