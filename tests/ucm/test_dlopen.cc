/*
 * Objects loaded with dlopen() after the hooks were installed get hooked
 * too. The helper libraries' paths come from the build (see meson.build).
 */
#include "event_recorder.h"

#include <catch2/catch.hpp>

#include <dlfcn.h>
#include <string>

using ucm_test::event_recorder;
using ucm_test::page_size;
using ucm_test::scratch_mapping;

namespace {

using helper_munmap_t = int (*)(void *, size_t);

/* Load the helper, unmap one page through it, return whether the handler
 * saw that munmap. */
void check_helper_is_hooked(const char *name_or_path, void *(*open)(const char *, int))
{
    const size_t page = page_size();
    event_recorder recorder;
    REQUIRE(recorder.attach(UCM_EVENT_MUNMAP | UCM_EVENT_VM_UNMAPPED) == UCS_OK);

    void *handle = open(name_or_path, RTLD_NOW | RTLD_LOCAL);
    INFO("dlopen(" << name_or_path << "): " << ((handle == nullptr) ? dlerror() : "ok"));
    REQUIRE(handle != nullptr);

    auto helper = reinterpret_cast<helper_munmap_t>(dlsym(handle, "ucm_test_helper_munmap"));
    REQUIRE(helper != nullptr);

    scratch_mapping mapping(page);
    REQUIRE(helper(mapping.get(), page) == 0);
    CHECK(recorder.count_munmap(mapping.get(), page) == 1);
    CHECK(recorder.count_unmapped(mapping.get(), page) == 1);
    CHECK_FALSE(ucm_test::is_mapped(mapping.get(), page));
    mapping.forget();

    CHECK(dlclose(handle) == 0);
}

void *plain_dlopen(const char *name, int flags)
{
    return dlopen(name, flags);
}

} // namespace

TEST_CASE("a library loaded later with lazy PLT binding is hooked", "[ucm]")
{
    check_helper_is_hooked(UCM_TEST_HELPER_LAZY, plain_dlopen);
}

TEST_CASE("a library loaded later with -fno-plt and full RELRO is hooked", "[ucm]")
{
    /* Its munmap slot is a GOT entry on a read-only (RELRO) page. */
    check_helper_is_hooked(UCM_TEST_HELPER_NOW, plain_dlopen);
}

TEST_CASE("dlopen of a bare name still searches the caller's RUNPATH", "[ucm]")
{
    /* The helper's directory is only in this program's RUNPATH: found only
     * if the dlopen hook searches on behalf of its real caller. */
    check_helper_is_hooked(UCM_TEST_HELPER_RPATH_NAME, plain_dlopen);
}

TEST_CASE("ucm_dlopen loads and hooks a library", "[ucm]")
{
    check_helper_is_hooked(UCM_TEST_HELPER_UCM_DLOPEN, ucm_dlopen);
}
