#include "entry_patch.h"

#include <ucm/util/log.h>
#include <ucm/util/sys.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/mman.h>

namespace ucm::bistro {

namespace {

#if defined(__x86_64__)

/* movabs $hook, %r11; jmp *%r11 (r11 is a scratch register of the ABI, and
 * the argument registers, %al of variadic calls included, pass untouched). */
struct __attribute__((packed)) jump {
    uint8_t movabs_rex    = 0x49;
    uint8_t movabs_opcode = 0xbb;
    uint64_t target       = 0;
    uint8_t jmp_rex       = 0x41;
    uint8_t jmp_opcode    = 0xff;
    uint8_t jmp_modrm     = 0xe3;
};

/* A two-byte jump to itself: parks threads that enter the function while
 * the rest of the patch is written. */
constexpr uint16_t self_jump = 0xfeeb;

constexpr bool have_patch = true;

#else

struct jump {
    uint64_t target = 0;
};

constexpr bool have_patch = false;

#endif

jump jump_to(const void *hook)
{
    jump code;
    code.target = reinterpret_cast<uintptr_t>(hook);
    return code;
}

/* The size of the function symbol that starts at `function`; 0 if unknown. */
size_t symbol_size(void *function)
{
    Dl_info info;
    void *entry = nullptr;
    if ((dladdr1(function, &info, &entry, RTLD_DL_SYMENT) == 0) || (entry == nullptr) ||
        (info.dli_saddr != function)) {
        return 0;
    }
    return static_cast<const ElfW(Sym) *>(entry)->st_size;
}

} // namespace

bool supported()
{
    return have_patch;
}

ucs_status_t patch(void *function, const void *hook)
{
    if (!have_patch) {
        return UCS_ERR_UNSUPPORTED;
    }
    if (jumps_to(function, hook)) {
        return UCS_OK;
    }
    const size_t length = symbol_size(function);
    if (length < sizeof(jump)) {
        ucm_diag("cannot patch %p: its code is %zu bytes, the patch %zu", function, length,
                 sizeof(jump));
        return UCS_ERR_UNSUPPORTED;
    }
    if ((reinterpret_cast<uintptr_t>(function) % sizeof(uint16_t)) != 0) {
        ucm_diag("cannot patch %p: entry not aligned", function);
        return UCS_ERR_UNSUPPORTED;
    }

    const size_t page     = sys::page_size();
    const auto address    = reinterpret_cast<uintptr_t>(function);
    const uintptr_t first = sys::align_down(address, page);
    const uintptr_t last  = sys::align_down(address + sizeof(jump) - 1, page);
    void *pages           = reinterpret_cast<void *>(first);
    const size_t span     = last - first + page;
    if (mprotect(pages, span, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) {
        ucm_diag("cannot make the code at %p writable: %s", function, strerror(errno));
        return UCS_ERR_UNSUPPORTED;
    }

#if defined(__x86_64__)
    /* Park arriving threads, write the tail, then open the entry. A thread
     * already past the entry when the patch lands is not protected (as in
     * UCX): hooks are installed when a cache is created, normally early. */
    const jump code = jump_to(hook);
    auto *entry     = static_cast<uint8_t *>(function);
    uint16_t head;
    std::memcpy(&head, &code, sizeof(head));
    __atomic_store_n(reinterpret_cast<uint16_t *>(entry), self_jump, __ATOMIC_SEQ_CST);
    std::memcpy(entry + sizeof(head), reinterpret_cast<const uint8_t *>(&code) + sizeof(head),
                sizeof(code) - sizeof(head));
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    __atomic_store_n(reinterpret_cast<uint16_t *>(entry), head, __ATOMIC_SEQ_CST);
#endif

    if (mprotect(pages, span, PROT_READ | PROT_EXEC) != 0) {
        ucm_diag("cannot restore the protection of %p: %s", function, strerror(errno));
    }
    return UCS_OK;
}

bool jumps_to(const void *function, const void *hook)
{
    if (!have_patch || (function == nullptr)) {
        return false;
    }
    const jump code = jump_to(hook);
    return std::memcmp(function, &code, sizeof(code)) == 0;
}

} // namespace ucm::bistro
