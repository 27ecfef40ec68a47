#include "install.h"

#include "hooks.h"
#include "originals.h"

#include <ucm/bistro/entry_patch.h>
#include <ucm/event/handlers.h>
#include <ucm/reloc/dlopen_hook.h>
#include <ucm/reloc/elf_object.h>
#include <ucm/reloc/patcher.h>
#include <ucm/util/log.h>
#include <ucm/util/sys.h>

#include <atomic>
#include <dlfcn.h>
#include <gnu/lib-names.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/shm.h>

namespace ucm::mm {

namespace {

constexpr int vm_mapped   = UCM_EVENT_VM_MAPPED;
constexpr int vm_unmapped = UCM_EVENT_VM_UNMAPPED;

struct hook_entry {
    const char *symbol;
    void *hook;
    int events;       /* events this hook delivers; 0: infrastructure */
    bool enabled;     /* written under install_lock */
    void *patched_fn; /* libc's function, once its entry jumps to the hook */
};

template <typename Fn>
void *as_pointer(Fn *fn)
{
    return reinterpret_cast<void *>(fn);
}

hook_entry hook_table[] = {
    {"mmap", as_pointer(hook_mmap), UCM_EVENT_MMAP | vm_mapped | vm_unmapped, false, nullptr},
    {"mmap64", as_pointer(hook_mmap), UCM_EVENT_MMAP | vm_mapped | vm_unmapped, false, nullptr},
    {"munmap", as_pointer(hook_munmap), UCM_EVENT_MUNMAP | vm_unmapped, false, nullptr},
    {"mremap", as_pointer(hook_mremap), UCM_EVENT_MREMAP | vm_mapped | vm_unmapped, false, nullptr},
    {"shmat", as_pointer(hook_shmat), UCM_EVENT_SHMAT | vm_mapped | vm_unmapped, false, nullptr},
    {"shmdt", as_pointer(hook_shmdt), UCM_EVENT_SHMDT | vm_unmapped, false, nullptr},
    {"sbrk", as_pointer(hook_sbrk), UCM_EVENT_SBRK | vm_mapped | vm_unmapped, false, nullptr},
    {"brk", as_pointer(hook_brk), UCM_EVENT_BRK | vm_mapped | vm_unmapped, false, nullptr},
    {"madvise", as_pointer(hook_madvise), UCM_EVENT_MADVISE | vm_unmapped, false, nullptr},
    /* Keeps objects loaded later hooked as well. */
    {"dlopen", as_pointer(reloc::hook_dlopen), 0, false, nullptr},
};
constexpr size_t hook_count = sizeof(hook_table) / sizeof(hook_table[0]);

pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;
std::atomic<int> installed{0};
std::atomic<bool> any_enabled{false};
bool pinned = false;
/* How the hooks are installed: chosen by the first install, kept after. */
std::atomic<ucm_mmap_hook_mode_t> active_mode{UCM_MMAP_HOOK_NONE};
bool relocations_patched = false; /* under install_lock */

bool is_memory_call(const hook_entry &entry)
{
    return entry.events != 0;
}

/* Under install_lock. */
reloc::patch_result patch_enabled_slots()
{
    reloc::symbol_patch patches[hook_count];
    size_t count = 0;
    for (const hook_entry &entry : hook_table) {
        if (entry.enabled) {
            patches[count++] = {entry.symbol, entry.hook};
        }
    }
    return reloc::patch_loaded_objects(patches, count);
}

/* Once hooks point into libucm, unloading it would leave those slots
 * dangling: mark it RTLD_NODELETE. Under install_lock. */
void pin_library()
{
    if (pinned || (ucm_global_opts.module_unload_prevent_mode == UCM_UNLOAD_PREVENT_MODE_NONE)) {
        return;
    }
    Dl_info info;
    if ((dladdr(&installed, &info) == 0) || (info.dli_fname == nullptr)) {
        ucm_diag("cannot find libucm's path to pin it");
        return;
    }
    int mode = (ucm_global_opts.module_unload_prevent_mode == UCM_UNLOAD_PREVENT_MODE_NOW) ?
                   RTLD_NOW :
                   RTLD_LAZY;
    if (dlopen(info.dli_fname, mode | RTLD_NOLOAD | RTLD_NODELETE) == nullptr) {
        ucm_diag("cannot pin %s: %s", info.dli_fname, dlerror());
        return;
    }
    pinned = true;
}

/* Under install_lock: patch the entries of libc's own functions for the
 * enabled memory calls; failed counts those left unpatched. */
reloc::patch_result patch_libc_entries()
{
    reloc::patch_result result{};
    void *libc = dlopen(LIBC_SO, RTLD_LAZY | RTLD_NOLOAD);
    if (libc == nullptr) {
        ucm_diag("cannot find %s to patch: %s", LIBC_SO, dlerror());
        result.failed = 1;
        return result;
    }
    /* From here the hooks' own calls must not enter libc's functions. */
    orig::use_system_calls();
    for (hook_entry &entry : hook_table) {
        if (!entry.enabled || !is_memory_call(entry) || (entry.patched_fn != nullptr)) {
            continue;
        }
        void *function = dlsym(libc, entry.symbol);
        if ((function != nullptr) && (bistro::patch(function, entry.hook) == UCS_OK)) {
            entry.patched_fn = function;
            ++result.written;
        } else {
            ucm_diag("cannot patch %s's %s", LIBC_SO, entry.symbol);
            ++result.failed;
        }
    }
    dlclose(libc);
    return result;
}

/* Under install_lock, at the first install: bistro where asked for and
 * possible, relocations otherwise. */
ucm_mmap_hook_mode_t choose_mode(ucm_mmap_hook_mode_t requested)
{
    if ((requested == UCM_MMAP_HOOK_BISTRO) && !bistro::supported()) {
        ucm_diag("no binary instrumentation on this CPU: hooking relocations");
        requested = UCM_MMAP_HOOK_RELOC;
    }
    if ((requested == UCM_MMAP_HOOK_RELOC) && !reloc::import_slots_supported()) {
        ucm_debug("relocation patching is not supported on this CPU");
        return UCM_MMAP_HOOK_NONE;
    }
    return requested;
}

/* Under install_lock: install the enabled hooks by the active mode. A
 * failed entry patch falls back to relocations, which still see the calls
 * programs make (not those inside libc): the mode then says RELOC. */
reloc::patch_result patch_hooks()
{
    if (active_mode.load(std::memory_order_relaxed) == UCM_MMAP_HOOK_BISTRO) {
        reloc::patch_result result = patch_libc_entries();
        if (result.failed == 0) {
            return result;
        }
        ucm_warn("could not patch %u libc function(s): hooking relocations instead, so "
                 "unmaps made inside libc (free of a large block) are missed",
                 result.failed);
        active_mode.store(UCM_MMAP_HOOK_RELOC, std::memory_order_release);
    }
    relocations_patched = true;
    return patch_enabled_slots();
}

} // namespace

ucs_status_t install(int events)
{
    events &= event::native_events | event::vm_events;
    if (events == 0) {
        return UCS_OK;
    }
    const ucm_mmap_hook_mode_t requested = ucm_global_opts.mmap_hook_mode;
    if (requested == UCM_MMAP_HOOK_NONE) {
        ucm_debug("mmap hooks are disabled (UCX_MEM_MMAP_HOOK_MODE or ucm_global_opts)");
        return UCS_ERR_UNSUPPORTED;
    }
    if ((installed_events() & events) == events) {
        return UCS_OK; /* later objects are covered by the dlopen hook */
    }

    pthread_mutex_lock(&install_lock);
    if (active_mode.load(std::memory_order_relaxed) == UCM_MMAP_HOOK_NONE) {
        active_mode.store(choose_mode(requested), std::memory_order_release);
    }
    if (active_mode.load(std::memory_order_relaxed) == UCM_MMAP_HOOK_NONE) {
        pthread_mutex_unlock(&install_lock);
        return UCS_ERR_UNSUPPORTED;
    }
    for (hook_entry &entry : hook_table) {
        if ((entry.events & events) || (entry.events == 0)) {
            entry.enabled = true;
        }
    }
    any_enabled.store(true, std::memory_order_release);
    pin_library();

    reloc::patch_result result = patch_hooks();
    ucs_status_t status        = UCS_OK;
    if (result.failed != 0) {
        ucm_warn("could not patch %u relocation slot(s): memory events may "
                 "be missed",
                 result.failed);
        status = UCS_ERR_UNSUPPORTED;
    } else {
        installed.fetch_or(events, std::memory_order_acq_rel);
    }
    ucm_debug("installed %s hooks for events 0x%x: %u patched",
              (active_mode.load() == UCM_MMAP_HOOK_BISTRO) ? "bistro" : "reloc", events,
              result.written);
    pthread_mutex_unlock(&install_lock);
    return status;
}

int installed_events()
{
    return installed.load(std::memory_order_acquire);
}

ucm_mmap_hook_mode_t installed_mode()
{
    return (installed_events() != 0) ? active_mode.load(std::memory_order_acquire) :
                                       UCM_MMAP_HOOK_NONE;
}

void refresh_hooks()
{
    if (!any_enabled.load(std::memory_order_acquire)) {
        return;
    }
    pthread_mutex_lock(&install_lock);
    if (!relocations_patched) {
        pthread_mutex_unlock(&install_lock);
        return; /* libc's own entries are patched: nothing per object */
    }
    reloc::patch_result result = patch_enabled_slots();
    pthread_mutex_unlock(&install_lock);
    if (result.failed != 0) {
        ucm_warn("could not patch %u relocation slot(s) of a newly loaded "
                 "object",
                 result.failed);
    }
}

namespace {

/* Records what the self-test's own thread receives (events from other
 * threads are ignored). Indexed by event bit. */
struct probe {
    pthread_t thread;
    void *address[32];
    size_t size[32];
    unsigned count[32];

    void reset()
    {
        for (unsigned bit = 0; bit < 32; ++bit) {
            address[bit] = nullptr;
            size[bit]    = 0;
            count[bit]   = 0;
        }
    }

    bool saw(int type, const void *expected_address, size_t expected_size) const
    {
        unsigned bit = __builtin_ctz(static_cast<unsigned>(type));
        return (count[bit] != 0) && (address[bit] == expected_address) &&
               (size[bit] == expected_size);
    }
};

void probe_handler(ucm_event_type_t type, ucm_event_t *event, void *arg)
{
    auto *p = static_cast<probe *>(arg);
    if (!pthread_equal(p->thread, pthread_self())) {
        return;
    }

    void *address = nullptr;
    size_t size   = 0;
    switch (type) {
    case UCM_EVENT_MMAP:
        address = event->mmap.result;
        size    = event->mmap.size;
        break;
    case UCM_EVENT_MUNMAP:
        address = event->munmap.address;
        size    = event->munmap.size;
        break;
    case UCM_EVENT_MREMAP:
        address = event->mremap.address;
        size    = event->mremap.new_size;
        break;
    case UCM_EVENT_MADVISE:
        address = event->madvise.addr;
        size    = event->madvise.length;
        break;
    case UCM_EVENT_SHMAT:
        address = event->shmat.result;
        break;
    case UCM_EVENT_SHMDT:
        address = const_cast<void *>(event->shmdt.shmaddr);
        break;
    case UCM_EVENT_VM_MAPPED:
        address = event->vm_mapped.address;
        size    = event->vm_mapped.size;
        break;
    case UCM_EVENT_VM_UNMAPPED:
        address = event->vm_unmapped.address;
        size    = event->vm_unmapped.size;
        break;
    default:
        return;
    }
    unsigned bit    = __builtin_ctz(static_cast<unsigned>(type));
    p->address[bit] = address;
    p->size[bit]    = size;
    ++p->count[bit];
}

bool expect(const probe &p, int events, int type, const void *address, size_t size,
            const char *what)
{
    if (!(events & type) || p.saw(type, address, size)) {
        return true;
    }
    ucm_diag("self-test: %s did not deliver event 0x%x for %p", what, type, address);
    return false;
}

bool slots_intact(int events)
{
    for (const hook_entry &entry : hook_table) {
        if (!entry.enabled || !(entry.events & events)) {
            continue;
        }
        if ((entry.patched_fn != nullptr) && !bistro::jumps_to(entry.patched_fn, entry.hook)) {
            ucm_diag("self-test: libc's %s no longer jumps to the hook", entry.symbol);
            return false;
        }
        if (!relocations_patched) {
            continue;
        }
        reloc::slot_census census = reloc::count_slots(entry.symbol, entry.hook);
        if (census.mismatched != 0) {
            ucm_diag("self-test: %u of %u %s slot(s) bypass the hook", census.mismatched,
                     census.total, entry.symbol);
            return false;
        }
    }
    return true;
}

/* The entry points the self-test calls: the hooks themselves where slots
 * are patched, libc's functions where their entries are. */
struct memory_calls {
    void *(*mmap)(void *, size_t, int, int, int, off_t);
    void *(*mremap)(void *, size_t, size_t, int, ...);
    int (*madvise)(void *, size_t, int);
    int (*munmap)(void *, size_t);
    void *(*shmat)(int, const void *, int);
    int (*shmdt)(const void *);
};

memory_calls calls_to_test()
{
    if (active_mode.load(std::memory_order_acquire) == UCM_MMAP_HOOK_BISTRO) {
        return {::mmap, ::mremap, ::madvise, ::munmap, ::shmat, ::shmdt};
    }
    return {hook_mmap, hook_mremap, hook_madvise, hook_munmap, hook_shmat, hook_shmdt};
}

bool exercise_hooks(probe &p, int events)
{
    const memory_calls call = calls_to_test();
    const size_t page       = sys::page_size();
    const int prot          = PROT_READ | PROT_WRITE;
    const int flags         = MAP_PRIVATE | MAP_ANONYMOUS;
    bool ok                 = true;

    p.reset();
    void *region = call.mmap(nullptr, page, prot, flags, -1, 0);
    if (region == MAP_FAILED) {
        ucm_diag("self-test: mmap failed");
        return false;
    }
    ok &= expect(p, events, UCM_EVENT_MMAP, region, page, "mmap");
    ok &= expect(p, events, UCM_EVENT_VM_MAPPED, region, page, "mmap");

    p.reset();
    void *moved = call.mremap(region, page, 2 * page, MREMAP_MAYMOVE);
    if (moved == MAP_FAILED) {
        orig::munmap(region, page);
        ucm_diag("self-test: mremap failed");
        return false;
    }
    ok &= expect(p, events, UCM_EVENT_MREMAP, region, 2 * page, "mremap");
    ok &= expect(p, events, UCM_EVENT_VM_UNMAPPED, region, page, "mremap");

    p.reset();
    call.madvise(moved, page, MADV_DONTNEED);
    ok &= expect(p, events, UCM_EVENT_MADVISE, moved, page, "madvise");

    p.reset();
    call.munmap(moved, 2 * page);
    ok &= expect(p, events, UCM_EVENT_MUNMAP, moved, 2 * page, "munmap");
    ok &= expect(p, events, UCM_EVENT_VM_UNMAPPED, moved, 2 * page, "munmap");

    if (events & (UCM_EVENT_SHMAT | UCM_EVENT_SHMDT)) {
        /* Where System V IPC is unavailable the slot check stands alone. */
        int shmid = shmget(IPC_PRIVATE, page, IPC_CREAT | 0600);
        if (shmid >= 0) {
            p.reset();
            void *attached = call.shmat(shmid, nullptr, 0);
            shmctl(shmid, IPC_RMID, nullptr);
            if (attached == reinterpret_cast<void *>(-1)) {
                ucm_diag("self-test: shmat failed");
                return false;
            }
            ok &= expect(p, events, UCM_EVENT_SHMAT, attached, 0, "shmat");
            p.reset();
            call.shmdt(attached);
            ok &= expect(p, events, UCM_EVENT_SHMDT, attached, 0, "shmdt");
        }
    }
    /* brk/sbrk are checked through their slots only: moving the break
     * under a running malloc is not safe. */
    return ok;
}

} // namespace

ucs_status_t self_test(int events)
{
    events &= event::native_events | event::vm_events;
    if (events == 0) {
        return UCS_OK;
    }
    if (event::in_dispatch()) {
        ucm_diag("self-test cannot run inside an event handler");
        return UCS_ERR_UNSUPPORTED;
    }
    if ((installed_events() & events) != events) {
        return UCS_ERR_UNSUPPORTED;
    }

    /* Objects loaded without our dlopen hook (by libc itself, for example)
     * are patched now, then every slot must hold its hook. */
    refresh_hooks();
    pthread_mutex_lock(&install_lock);
    bool ok = slots_intact(events);
    pthread_mutex_unlock(&install_lock);
    if (!ok) {
        return UCS_ERR_UNSUPPORTED;
    }

    probe p;
    p.thread = pthread_self();
    if (event::add_handler(events, 0, probe_handler, &p) != UCS_OK) {
        return UCS_ERR_UNSUPPORTED;
    }
    ok = exercise_hooks(p, events);
    event::remove_handler(events, probe_handler, &p);
    return ok ? UCS_OK : UCS_ERR_UNSUPPORTED;
}

void fork_prepare()
{
    pthread_mutex_lock(&install_lock);
}

void fork_parent()
{
    pthread_mutex_unlock(&install_lock);
}

void fork_child()
{
    install_lock = PTHREAD_MUTEX_INITIALIZER;
}

} // namespace ucm::mm
