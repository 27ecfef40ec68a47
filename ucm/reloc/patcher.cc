#include "patcher.h"

#include "elf_object.h"

#include <ucm/util/log.h>
#include <ucm/util/sys.h>

#include <cerrno>
#include <cstring>
#include <sys/mman.h>

namespace ucm::reloc {

namespace {

/* Any address inside libucm: identifies the object never to patch. */
const char self_marker = 0;

bool is_self(const elf_object &object)
{
    return object.contains(&self_marker);
}

bool write_slot(const elf_object &object, void **slot, void *value)
{
    const auto address = reinterpret_cast<uintptr_t>(slot);
    const int prot     = object.page_protection(address);
    if (prot < 0) {
        ucm_debug("slot %p is outside %s", static_cast<void *>(slot), object.name());
        return false;
    }

    if (prot & PROT_WRITE) {
        __atomic_store_n(slot, value, __ATOMIC_RELEASE);
        return true;
    }

    /* RELRO (or otherwise read-only) page: open it for the write only. */
    const size_t page = sys::page_size();
    void *page_start  = reinterpret_cast<void *>(sys::align_down(address, page));
    if (mprotect(page_start, page, prot | PROT_WRITE) != 0) {
        ucm_diag("cannot make %p in %s writable: %s", page_start, object.name(), strerror(errno));
        return false;
    }
    __atomic_store_n(slot, value, __ATOMIC_RELEASE);
    if (mprotect(page_start, page, prot) != 0) {
        ucm_diag("cannot restore protection of %p in %s: %s", page_start, object.name(),
                 strerror(errno));
    }
    return true;
}

struct patch_context {
    const symbol_patch *patches;
    size_t count;
    patch_result result;
};

int patch_object(dl_phdr_info *info, size_t, void *arg)
{
    auto *ctx = static_cast<patch_context *>(arg);
    elf_object object;
    if (!object.load(info) || is_self(object)) {
        return 0;
    }

    object.for_each_import_slot([&](const char *name, void **slot) {
        for (size_t i = 0; i < ctx->count; ++i) {
            const symbol_patch &patch = ctx->patches[i];
            if (strcmp(name, patch.symbol) != 0) {
                continue;
            }
            if (__atomic_load_n(slot, __ATOMIC_ACQUIRE) == patch.hook) {
                break;
            }
            if (write_slot(object, slot, patch.hook)) {
                ucm_trace("%s: %s slot %p -> hook", object.name(), name, static_cast<void *>(slot));
                ++ctx->result.written;
            } else {
                ++ctx->result.failed;
            }
            break;
        }
    });
    return 0;
}

struct census_context {
    const char *symbol;
    const void *expected;
    slot_census census;
};

int count_object(dl_phdr_info *info, size_t, void *arg)
{
    auto *ctx = static_cast<census_context *>(arg);
    elf_object object;
    if (!object.load(info) || is_self(object)) {
        return 0;
    }

    object.for_each_import_slot([&](const char *name, void **slot) {
        if (strcmp(name, ctx->symbol) != 0) {
            return;
        }
        ++ctx->census.total;
        if (__atomic_load_n(slot, __ATOMIC_ACQUIRE) != ctx->expected) {
            ucm_debug("%s: %s slot %p does not hold the hook", object.name(), name,
                      static_cast<void *>(slot));
            ++ctx->census.mismatched;
        }
    });
    return 0;
}

} // namespace

patch_result patch_loaded_objects(const symbol_patch *patches, size_t count)
{
    patch_context ctx{patches, count, {0, 0}};
    dl_iterate_phdr(patch_object, &ctx);
    return ctx.result;
}

slot_census count_slots(const char *symbol, const void *expected)
{
    census_context ctx{symbol, expected, {0, 0}};
    dl_iterate_phdr(count_object, &ctx);
    return ctx.census;
}

} // namespace ucm::reloc
