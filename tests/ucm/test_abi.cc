#include <ucm/api/ucm.h>

#include <catch2/catch.hpp>

extern "C" int ucm_test_abi_layout_checked(void);

TEST_CASE("the public header compiles as C with UCX's layout", "[ucm]")
{
    CHECK(ucm_test_abi_layout_checked() == 1);

    /* Defaults that UCX-built callers rely on. */
    CHECK(ucm_global_opts.enable_events == 1);
#if defined(__x86_64__)
    CHECK(ucm_global_opts.mmap_hook_mode == UCM_MMAP_HOOK_BISTRO);
#else
    CHECK(ucm_global_opts.mmap_hook_mode == UCM_MMAP_HOOK_RELOC);
#endif
}
