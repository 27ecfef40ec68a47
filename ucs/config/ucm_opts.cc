/*
 * The settings of libucm (the memory hooks), described here because libucm
 * sits below libucs and has no configuration table of its own: ucx_info
 * prints them and the unused-variable check knows them. libucm reads
 * UCX_MEM_EVENTS and UCX_MEM_MMAP_HOOK_MODE itself (ucm/util/sys.cc); this
 * table is never filled for use.
 */
#include <ucs/config/registry.h>

namespace ucs {

namespace {

struct ucm_options {
    int mem_events;          /* UCX_MEM_EVENTS */
    unsigned mmap_hook_mode; /* UCX_MEM_MMAP_HOOK_MODE */
};

constexpr const char *hook_mode_names[] = {"none", "reloc", "bistro"};

constexpr config::field ucm_fields[] = {
    UCS_CONFIG_FIELD(ucm_options, mem_events, "MEM_EVENTS", "y",
                     "Hook the memory functions (munmap and friends), so that\n"
                     "registration caches learn about memory given back to the system.\n"
                     "Read by libucm when it is loaded.",
                     config::type_bool),
    UCS_CONFIG_FIELD(ucm_options, mmap_hook_mode, "MEM_MMAP_HOOK_MODE", "bistro",
                     "How the memory functions are hooked:\n"
                     " none   - not at all (no memory events),\n"
                     " reloc  - the relocation slots of loaded objects: calls between\n"
                     "          objects only, not those inside libc (free() of a large block),\n"
                     " bistro - the entries of libc's own functions: every call. x86-64 only;\n"
                     "          elsewhere reloc is used.\n"
                     "Registration caches of mds whose registrations pin pages (ib) are\n"
                     "used by default only with bistro. Read by libucm when it is loaded.",
                     config::type_enum(hook_mode_names)),
};

/* UCX 1.13's other libucm settings: no malloc or CUDA hooks here. */
constexpr const char *ucm_no_effect[] = {
    "MEM_LOG_LEVEL",           "MEM_ALLOC_ALIGN",          "MEM_MALLOC_HOOKS",
    "MEM_MALLOC_RELOC",        "MEM_CUDA_HOOK_MODE",       "MEM_CUDA_RELOC",
    "MEM_DYNAMIC_MMAP_THRESH", "MEM_DLOPEN_PROCESS_RPATH", "MEM_MODULE_UNLOAD_PREVENT_MODE",
};

constinit const config::table ucm_opts_table = {"Memory hooks (libucm)", "", ucm_fields,
                                                sizeof(ucm_options),     {}, ucm_no_effect};

} // namespace

UCS_CONFIG_REGISTER_TABLE(ucm_opts_table);

} // namespace ucs
