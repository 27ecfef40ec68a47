/*
 * A read-only view of one loaded ELF object, built from the program headers
 * that dl_iterate_phdr() reports: its dynamic symbol and string tables, its
 * relocation tables and the memory protection of its pages.
 */
#ifndef UCM_RELOC_ELF_OBJECT_H_
#define UCM_RELOC_ELF_OBJECT_H_

#include <cstddef>
#include <cstdint>
#include <elf.h>
#include <link.h>

#if __ELF_NATIVE_CLASS == 64
#define UCM_ELF_R_SYM(_info)  ELF64_R_SYM(_info)
#define UCM_ELF_R_TYPE(_info) ELF64_R_TYPE(_info)
#else
#define UCM_ELF_R_SYM(_info)  ELF32_R_SYM(_info)
#define UCM_ELF_R_TYPE(_info) ELF32_R_TYPE(_info)
#endif

namespace ucm::reloc {

class elf_object {
public:
    /* False when the object has no dynamic section to work with. */
    bool load(const dl_phdr_info *info);

    const char *name() const { return m_name; }

    /* Whether addr lies inside one of the object's loadable segments. */
    bool contains(const void *addr) const;

    /* The protection (PROT_*) the loader gave the page holding addr, RELRO
     * included; -1 if addr is not in the object. */
    int page_protection(uintptr_t addr) const;

    /* A string from the dynamic string table; nullptr when out of range. */
    const char *string_at(size_t offset) const;

    const char *runpath() const { return string_at_or_null(m_runpath); }
    const char *rpath() const { return string_at_or_null(m_rpath); }

    /*
     * Call fn(symbol_name, slot) for every relocation slot that holds the
     * address of a function imported by name (PLT and GOT entries). Slots
     * may be reported twice when tables overlap.
     */
    template <typename Fn>
    void for_each_import_slot(Fn &&fn) const
    {
        if (m_jmprel_is_rela) {
            walk<ElfW(Rela)>(m_jmprel, m_jmprel_size, sizeof(ElfW(Rela)), fn);
        } else {
            walk<ElfW(Rel)>(m_jmprel, m_jmprel_size, sizeof(ElfW(Rel)), fn);
        }
        walk<ElfW(Rela)>(m_rela, m_rela_size, m_rela_entry, fn);
        walk<ElfW(Rel)>(m_rel, m_rel_size, m_rel_entry, fn);
    }

private:
    static bool is_import_slot_type(unsigned long type);

    uintptr_t to_address(ElfW(Addr) value) const;

    const char *string_at_or_null(long offset) const
    {
        return (offset < 0) ? nullptr : string_at(static_cast<size_t>(offset));
    }

    template <typename Reloc, typename Fn>
    void walk(uintptr_t table, size_t size, size_t entry_size, Fn &fn) const
    {
        if ((table == 0) || (m_symtab == nullptr) || (entry_size < sizeof(Reloc))) {
            return;
        }
        for (size_t offset = 0; offset + entry_size <= size; offset += entry_size) {
            auto *reloc = reinterpret_cast<const Reloc *>(table + offset);
            if (!is_import_slot_type(UCM_ELF_R_TYPE(reloc->r_info))) {
                continue;
            }
            size_t symbol = UCM_ELF_R_SYM(reloc->r_info);
            if (symbol == 0) {
                continue;
            }
            const char *name = string_at(m_symtab[symbol].st_name);
            if ((name == nullptr) || (name[0] == '\0')) {
                continue;
            }
            fn(name, reinterpret_cast<void **>(m_base + reloc->r_offset));
        }
    }

    ElfW(Addr) m_base        = 0;
    const char *m_name       = "";
    const ElfW(Phdr) *m_phdr = nullptr;
    size_t m_phnum           = 0;

    const ElfW(Sym) *m_symtab = nullptr;
    const char *m_strtab      = nullptr;
    size_t m_strsz            = 0;
    long m_runpath            = -1;
    long m_rpath              = -1;

    uintptr_t m_jmprel    = 0;
    size_t m_jmprel_size  = 0;
    bool m_jmprel_is_rela = true;
    uintptr_t m_rela      = 0;
    size_t m_rela_size    = 0;
    size_t m_rela_entry   = sizeof(ElfW(Rela));
    uintptr_t m_rel       = 0;
    size_t m_rel_size     = 0;
    size_t m_rel_entry    = sizeof(ElfW(Rel));
};

/* Whether this architecture's slot relocation types are known. */
bool import_slots_supported();

} // namespace ucm::reloc

#endif
