/*
 * Hooks on libc's own entries (UCX_MEM_MMAP_HOOK_MODE=bistro, the default on
 * x86-64): memory that glibc's allocator gives back by itself is reported,
 * which relocation hooks cannot see.
 */
#include "event_recorder.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using ucm_test::event_recorder;

namespace {

/* Fixed mmap and trim thresholds for a test: glibc otherwise raises them
 * after the first free of a mapped block, and the block would come from
 * the heap. These cases are about glibc's malloc: the meson test does not
 * run under a sanitizer, whose allocator refuses mallopt(). */
class malloc_thresholds {
public:
    malloc_thresholds(int mmap_threshold, int trim_threshold)
    {
        REQUIRE(mallopt(M_MMAP_THRESHOLD, mmap_threshold) == 1);
        REQUIRE(mallopt(M_TRIM_THRESHOLD, trim_threshold) == 1);
    }
    ~malloc_thresholds()
    {
        mallopt(M_MMAP_THRESHOLD, 128 * 1024);
        mallopt(M_TRIM_THRESHOLD, 128 * 1024);
    }
};

/* A block's address as a number: it is compared after the block was
 * freed, which a pointer may not be. */
uintptr_t address_of(const void *block)
{
    return reinterpret_cast<uintptr_t>(block);
}

/* Whether an unmap event covers [start, start + length). */
bool unmapped_covers(const event_recorder &recorder, uintptr_t start, size_t length)
{
    return recorder.count(UCM_EVENT_VM_UNMAPPED, [&](const ucm_event_t &e) {
        const auto from = reinterpret_cast<uintptr_t>(e.vm_unmapped.address);
        return (from <= start) && (from + e.vm_unmapped.size >= start + length);
    }) != 0;
}

/* Whether an unmap event overlaps [start, start + length). */
bool unmapped_overlaps(const event_recorder &recorder, uintptr_t start, size_t length)
{
    return recorder.count(UCM_EVENT_VM_UNMAPPED, [&](const ucm_event_t &e) {
        const auto from = reinterpret_cast<uintptr_t>(e.vm_unmapped.address);
        return (from < start + length) && (start < from + e.vm_unmapped.size);
    }) != 0;
}

/* An allocation the compiler cannot drop: it may elide a malloc() whose
 * block does not escape, and its free() with it. */
void *allocate(size_t size)
{
    void *block = malloc(size);
    asm volatile("" : : "r"(block) : "memory");
    return block;
}

/* A block of `size` bytes, all `fill`, its pages touched. */
char *filled_block(size_t size, int fill)
{
    auto *block = static_cast<char *>(allocate(size));
    REQUIRE(block != nullptr);
    std::memset(block, fill, size);
    return block;
}

/* libc entry patches exist on x86-64 only; elsewhere meson leaves the
 * [bistro] cases out. */
void require_bistro()
{
    REQUIRE(ucm_get_installed_mmap_hook_mode() == UCM_MMAP_HOOK_BISTRO);
}

} // namespace

TEST_CASE("free() of a mapped block reports its unmap", "[ucm][bistro]")
{
    event_recorder recorder;
    REQUIRE(recorder.attach(UCM_EVENT_VM_UNMAPPED) == UCS_OK);
    require_bistro();
    malloc_thresholds thresholds(64 * 1024, 128 * 1024);

    const size_t size   = 1 << 20;
    char *block         = filled_block(size, 1);
    const uintptr_t was = address_of(block);
    recorder.clear();
    free(block);
    CHECK(unmapped_covers(recorder, was, size));
}

TEST_CASE("realloc() of a mapped block reports the old range", "[ucm][bistro]")
{
    event_recorder recorder;
    REQUIRE(recorder.attach(UCM_EVENT_VM_UNMAPPED | UCM_EVENT_VM_MAPPED) == UCS_OK);
    require_bistro();
    malloc_thresholds thresholds(64 * 1024, 128 * 1024);

    const size_t size   = 1 << 20;
    char *block         = filled_block(size, 2);
    const uintptr_t was = address_of(block);
    recorder.clear();
    auto *grown = static_cast<char *>(realloc(block, 8 * size)); /* glibc: mremap */
    REQUIRE(grown != nullptr);
    CHECK(unmapped_covers(recorder, was, size));
    CHECK(grown[size - 1] == 2);
    free(grown);
}

TEST_CASE("the heap's trim reports the released top", "[ucm][bistro]")
{
    event_recorder recorder;
    REQUIRE(recorder.attach(UCM_EVENT_VM_UNMAPPED) == UCS_OK);
    require_bistro();
    /* Large blocks from the heap; a small trim threshold gives the top back. */
    malloc_thresholds thresholds(64 << 20, 64 * 1024);

    const size_t size   = 8 << 20;
    char *block         = filled_block(size, 3);
    const uintptr_t was = address_of(block);
    recorder.clear();
    free(block); /* the top chunk: glibc shrinks the break, or madvises */
    malloc_trim(0);
    CHECK(unmapped_overlaps(recorder, was + size / 2, size / 4));
}

TEST_CASE("ucm_orig_* calls raise no event with libc's entries patched", "[ucm][bistro]")
{
    event_recorder recorder;
    REQUIRE(recorder.attach(UCM_EVENT_MUNMAP | UCM_EVENT_VM_UNMAPPED) == UCS_OK);
    require_bistro();

    const size_t page = ucm_test::page_size();
    void *region = ucm_orig_mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                                 -1, 0);
    REQUIRE(region != MAP_FAILED);
    recorder.clear();
    CHECK(ucm_orig_munmap(region, page) == 0);
    CHECK(recorder.size() == 0);
    CHECK_FALSE(ucm_test::is_mapped(region, page));

    /* The break is moved by raw calls, and libc's sbrk() agrees with it. */
    void *before = ucm_orig_sbrk(0);
    CHECK(before == sbrk(0));
}

TEST_CASE("fork() while another thread trims the heap does not hang", "[ucm][bistro]")
{
    event_recorder recorder;
    REQUIRE(recorder.attach(UCM_EVENT_VM_UNMAPPED) == UCS_OK);
    require_bistro();
    malloc_thresholds thresholds(64 << 20, 64 * 1024);

    /* The other thread dispatches unmaps from inside malloc's locks. */
    std::atomic<bool> stop{false};
    std::thread churn([&] {
        while (!stop.load()) {
            void *block = allocate(1 << 20);
            std::memset(block, 4, 4096);
            free(block);
        }
    });
    int forks_done = 0;
    for (int i = 0; i < 300; ++i) {
        pid_t child = fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            void *block = allocate(1 << 20); /* the child's allocator works */
            free(block);
            _exit((block != nullptr) ? 0 : 1);
        }
        int status = -1;
        REQUIRE(waitpid(child, &status, 0) == child);
        forks_done += (WIFEXITED(status) && (WEXITSTATUS(status) == 0)) ? 1 : 0;
    }
    stop.store(true);
    churn.join();
    CHECK(forks_done == 300);
}
