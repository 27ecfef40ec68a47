/*
 * Cases that need a process in which no hook was installed yet. Each one is
 * its own meson test (selected by its tag) and skipped by the main run.
 */
#include "event_recorder.h"

#include <catch2/catch.hpp>

#include <sys/mman.h>

using ucm_test::event_recorder;
using ucm_test::page_size;
using ucm_test::scratch_mapping;

namespace {

void *unmap_one_page()
{
    scratch_mapping mapping(page_size());
    void *address = mapping.get();
    REQUIRE(munmap(address, page_size()) == 0);
    mapping.forget();
    return address;
}

} // namespace

TEST_CASE("hooks are installed lazily and NO_INSTALL installs none", "[ucm][fresh][fresh_lazy]")
{
    const size_t page = page_size();
    event_recorder passive;
    REQUIRE(passive.attach(UCM_EVENT_MUNMAP | UCM_EVENT_FLAG_NO_INSTALL) == UCS_OK);

    /* Registered, but nothing is hooked yet. */
    void *address = unmap_one_page();
    CHECK(passive.count_munmap(address, page) == 0);

    /* Explicit wrappers reach it all the same. */
    passive.clear();
    scratch_mapping mapping(page);
    REQUIRE(ucm_munmap(mapping.get(), page) == 0);
    CHECK(passive.count_munmap(mapping.get(), page) == 1);
    mapping.forget();

    /* The first handler without the flag installs the hooks. */
    event_recorder active;
    REQUIRE(active.attach(UCM_EVENT_MUNMAP) == UCS_OK);
    passive.clear();
    address = unmap_one_page();
    CHECK(active.count_munmap(address, page) == 1);
    CHECK(passive.count_munmap(address, page) == 1);
}

TEST_CASE("handlers for external events install no hooks", "[ucm][fresh][fresh_external]")
{
    const size_t page = page_size();
    ucm_set_external_event(UCM_EVENT_VM_UNMAPPED);

    event_recorder recorder;
    REQUIRE(recorder.attach(UCM_EVENT_VM_UNMAPPED) == UCS_OK);
    CHECK(ucm_test_external_events(UCM_EVENT_VM_UNMAPPED) == UCS_OK);
    CHECK(ucm_test_events(UCM_EVENT_VM_UNMAPPED) == UCS_OK);

    void *address = unmap_one_page();
    CHECK(recorder.count_unmapped(address, page) == 0);

    /* The caller reports them itself. */
    recorder.clear();
    scratch_mapping mapping(page);
    ucm_vm_munmap(mapping.get(), page);
    CHECK(recorder.count_unmapped(mapping.get(), page) == 1);

    /* No longer external: the next handler installs the hooks. */
    ucm_unset_external_event(UCM_EVENT_VM_UNMAPPED);
    event_recorder hooked;
    REQUIRE(hooked.attach(UCM_EVENT_VM_UNMAPPED) == UCS_OK);
    recorder.clear();
    address = unmap_one_page();
    CHECK(hooked.count_unmapped(address, page) == 1);
    CHECK(recorder.count_unmapped(address, page) == 1);
}

/* Run with UCX_MEM_MMAP_HOOK_MODE=reloc (meson test ucm_reloc_mode). */
TEST_CASE("UCX_MEM_MMAP_HOOK_MODE=reloc patches relocations only", "[ucm][fresh][reloc_mode]")
{
    CHECK(ucm_global_opts.mmap_hook_mode == UCM_MMAP_HOOK_RELOC);
    CHECK(ucm_get_installed_mmap_hook_mode() == UCM_MMAP_HOOK_NONE);

    event_recorder recorder;
    REQUIRE(recorder.attach(UCM_EVENT_MUNMAP) == UCS_OK);
    CHECK(ucm_get_installed_mmap_hook_mode() == UCM_MMAP_HOOK_RELOC);
    void *address = unmap_one_page();
    CHECK(recorder.count_munmap(address, page_size()) == 1);
    CHECK(ucm_test_events(UCM_EVENT_MUNMAP | UCM_EVENT_VM_UNMAPPED) == UCS_OK);
}

/* Run with a bad UCX_MEM_MMAP_HOOK_MODE (meson test ucm_bad_hook_mode). */
TEST_CASE("a bad UCX_MEM_MMAP_HOOK_MODE keeps the default", "[ucm][fresh][bad_hook_mode]")
{
#if defined(__x86_64__)
    CHECK(ucm_global_opts.mmap_hook_mode == UCM_MMAP_HOOK_BISTRO);
#else
    CHECK(ucm_global_opts.mmap_hook_mode == UCM_MMAP_HOOK_RELOC);
#endif
    event_recorder recorder;
    REQUIRE(recorder.attach(UCM_EVENT_MUNMAP) == UCS_OK);
    void *address = unmap_one_page();
    CHECK(recorder.count_munmap(address, page_size()) == 1);
}
