#include "elf_object.h"

#include <ucm/util/sys.h>

#include <elf.h>
#include <sys/mman.h>

namespace ucm::reloc {

namespace {

/* Relocation types of PLT slots and of GOT entries holding a function's
 * address: the two ways an object calls an imported function. */
#if defined(__x86_64__)
constexpr unsigned long jump_slot_type = R_X86_64_JUMP_SLOT;
constexpr unsigned long glob_dat_type  = R_X86_64_GLOB_DAT;
#elif defined(__aarch64__)
constexpr unsigned long jump_slot_type = R_AARCH64_JUMP_SLOT;
constexpr unsigned long glob_dat_type  = R_AARCH64_GLOB_DAT;
#elif defined(__powerpc64__) && defined(_CALL_ELF) && (_CALL_ELF == 2)
constexpr unsigned long jump_slot_type = R_PPC64_JMP_SLOT;
constexpr unsigned long glob_dat_type  = R_PPC64_GLOB_DAT;
#else
/* Other targets (including 32-bit ones, whose mmap/mmap64 split the hooks
 * do not model) get no hooks: installing reports UCS_ERR_UNSUPPORTED. */
#define UCM_NO_IMPORT_SLOTS 1
#endif

int segment_protection(ElfW(Word) flags)
{
    int prot = PROT_NONE;
    if (flags & PF_R)
        prot |= PROT_READ;
    if (flags & PF_W)
        prot |= PROT_WRITE;
    if (flags & PF_X)
        prot |= PROT_EXEC;
    return prot;
}

} // namespace

bool import_slots_supported()
{
#ifdef UCM_NO_IMPORT_SLOTS
    return false;
#else
    return true;
#endif
}

bool elf_object::is_import_slot_type(unsigned long type)
{
#ifdef UCM_NO_IMPORT_SLOTS
    (void)type;
    return false;
#else
    return (type == jump_slot_type) || (type == glob_dat_type);
#endif
}

/*
 * glibc rewrites most d_ptr entries to run-time addresses, but leaves them
 * as offsets when the dynamic section is read-only (vDSO, some targets).
 * Offsets are below the load base, run-time addresses are not.
 */
uintptr_t elf_object::to_address(ElfW(Addr) value) const
{
    return (value < m_base) ? (m_base + value) : value;
}

bool elf_object::load(const dl_phdr_info *info)
{
    m_base  = info->dlpi_addr;
    m_name  = (info->dlpi_name != nullptr) ? info->dlpi_name : "";
    m_phdr  = info->dlpi_phdr;
    m_phnum = info->dlpi_phnum;

    const ElfW(Dyn) *dynamic = nullptr;
    for (size_t i = 0; i < m_phnum; ++i) {
        if (m_phdr[i].p_type == PT_DYNAMIC) {
            dynamic = reinterpret_cast<const ElfW(Dyn) *>(m_base + m_phdr[i].p_vaddr);
        }
    }
    if (dynamic == nullptr) {
        return false;
    }

    for (const ElfW(Dyn) *entry = dynamic; entry->d_tag != DT_NULL; ++entry) {
        // clang-format off
        switch (entry->d_tag) {
        case DT_SYMTAB:
            m_symtab = reinterpret_cast<const ElfW(Sym)*>(
                    to_address(entry->d_un.d_ptr));
            break;
        case DT_STRTAB:
            m_strtab = reinterpret_cast<const char*>(
                    to_address(entry->d_un.d_ptr));
            break;
        case DT_STRSZ:    m_strsz = entry->d_un.d_val;       break;
        case DT_RUNPATH:  m_runpath = entry->d_un.d_val;     break;
        case DT_RPATH:    m_rpath = entry->d_un.d_val;       break;
        case DT_JMPREL:   m_jmprel = to_address(entry->d_un.d_ptr); break;
        case DT_PLTRELSZ: m_jmprel_size = entry->d_un.d_val; break;
        case DT_PLTREL:   m_jmprel_is_rela = (entry->d_un.d_val == DT_RELA);
                          break;
        case DT_RELA:     m_rela = to_address(entry->d_un.d_ptr); break;
        case DT_RELASZ:   m_rela_size = entry->d_un.d_val;   break;
        case DT_RELAENT:  m_rela_entry = entry->d_un.d_val;  break;
        case DT_REL:      m_rel = to_address(entry->d_un.d_ptr); break;
        case DT_RELSZ:    m_rel_size = entry->d_un.d_val;    break;
        case DT_RELENT:   m_rel_entry = entry->d_un.d_val;   break;
        default:
            break;
        }
        // clang-format on
    }
    return (m_symtab != nullptr) && (m_strtab != nullptr);
}

bool elf_object::contains(const void *addr) const
{
    auto value = reinterpret_cast<uintptr_t>(addr);
    for (size_t i = 0; i < m_phnum; ++i) {
        const ElfW(Phdr) &ph = m_phdr[i];
        uintptr_t start      = m_base + ph.p_vaddr;
        if ((ph.p_type == PT_LOAD) && (value >= start) && (value < start + ph.p_memsz)) {
            return true;
        }
    }
    return false;
}

int elf_object::page_protection(uintptr_t addr) const
{
    int prot = -1;
    for (size_t i = 0; i < m_phnum; ++i) {
        const ElfW(Phdr) &ph = m_phdr[i];
        uintptr_t start      = m_base + ph.p_vaddr;
        if ((ph.p_type == PT_LOAD) && (addr >= start) && (addr < start + ph.p_memsz)) {
            prot = segment_protection(ph.p_flags);
        }
    }
    if (prot < 0) {
        return prot;
    }

    /* The loader makes RELRO read-only in whole pages, rounding both ends
     * down; a partial last page stays writable. */
    const size_t page = sys::page_size();
    for (size_t i = 0; i < m_phnum; ++i) {
        const ElfW(Phdr) &ph = m_phdr[i];
        if (ph.p_type != PT_GNU_RELRO) {
            continue;
        }
        uintptr_t start = sys::align_down(m_base + ph.p_vaddr, page);
        uintptr_t end   = sys::align_down(m_base + ph.p_vaddr + ph.p_memsz, page);
        if ((addr >= start) && (addr < end)) {
            prot &= ~PROT_WRITE;
        }
    }
    return prot;
}

const char *elf_object::string_at(size_t offset) const
{
    if ((m_strtab == nullptr) || ((m_strsz != 0) && (offset >= m_strsz))) {
        return nullptr;
    }
    return m_strtab + offset;
}

} // namespace ucm::reloc
