/*
 * Events raised by the hooked system calls made from this test binary.
 */
#include "event_recorder.h"

#include <catch2/catch.hpp>

#include <cerrno>
#include <cstring>
#include <sys/mman.h>
#include <sys/shm.h>
#include <unistd.h>

using ucm_test::event_recorder;
using ucm_test::page_size;
using ucm_test::scratch_mapping;

TEST_CASE("munmap from the program reports the exact range", "[ucm]")
{
    const size_t page = page_size();
    event_recorder recorder;
    REQUIRE(recorder.attach(UCM_EVENT_MUNMAP | UCM_EVENT_VM_UNMAPPED) == UCS_OK);

    scratch_mapping mapping(3 * page);
    char *middle = mapping.get() + page;
    REQUIRE(munmap(middle, page) == 0);

    CHECK(recorder.count_munmap(middle, page) == 1);
    CHECK(recorder.count_unmapped(middle, page) == 1);
    CHECK_FALSE(ucm_test::is_mapped(middle, page));
    CHECK(ucm_test::is_mapped(mapping.get(), page));

    /* A post handler (priority 0) sees the real result. */
    CHECK(recorder.count(UCM_EVENT_MUNMAP, [&](const ucm_event_t &e) {
        return (e.munmap.address == middle) && (e.munmap.result == 0);
    }) == 1);

    /* The caller still gets the system's errno after the handlers ran. */
    errno = 0;
    CHECK(munmap(mapping.get() + 1, page) == -1);
    CHECK(errno == EINVAL);
}

TEST_CASE("mremap reports the old and the new range", "[ucm]")
{
    const size_t page = page_size();
    event_recorder recorder;
    REQUIRE(recorder.attach(UCM_EVENT_MREMAP | UCM_EVENT_VM_MAPPED | UCM_EVENT_VM_UNMAPPED) ==
            UCS_OK);

    scratch_mapping mapping(2 * page);
    char *old_address = mapping.get();
    void *moved       = mremap(old_address, 2 * page, 8 * page, MREMAP_MAYMOVE);
    REQUIRE(moved != MAP_FAILED);
    mapping.forget();

    CHECK(recorder.count(UCM_EVENT_MREMAP, [&](const ucm_event_t &e) {
        return (e.mremap.address == old_address) && (e.mremap.old_size == 2 * page) &&
               (e.mremap.new_size == 8 * page) && (e.mremap.flags == MREMAP_MAYMOVE) &&
               (e.mremap.result == moved);
    }) == 1);
    CHECK(recorder.count_unmapped(old_address, 2 * page) == 1);
    CHECK(recorder.count_mapped(moved, 8 * page) == 1);

    ucm_orig_munmap(moved, 8 * page);
}

TEST_CASE("madvise reports released pages only for releasing advice", "[ucm]")
{
    const size_t page = page_size();
    event_recorder recorder;
    REQUIRE(recorder.attach(UCM_EVENT_MADVISE | UCM_EVENT_VM_UNMAPPED) == UCS_OK);

    scratch_mapping mapping(4 * page);
    char *range = mapping.get() + page;
    REQUIRE(madvise(range, 2 * page, MADV_DONTNEED) == 0);

    CHECK(recorder.count(UCM_EVENT_MADVISE, [&](const ucm_event_t &e) {
        return (e.madvise.addr == range) && (e.madvise.length == 2 * page) &&
               (e.madvise.advice == MADV_DONTNEED) && (e.madvise.result == 0);
    }) == 1);
    CHECK(recorder.count_unmapped(range, 2 * page) == 1);

    recorder.clear();
    REQUIRE(madvise(range, page, MADV_WILLNEED) == 0);
    CHECK(recorder.count(UCM_EVENT_MADVISE) == 1);
    CHECK(recorder.count(UCM_EVENT_VM_UNMAPPED) == 0);
}

TEST_CASE("mmap reports new mappings and what MAP_FIXED replaces", "[ucm]")
{
    const size_t page = page_size();
    event_recorder recorder;
    REQUIRE(recorder.attach(UCM_EVENT_MMAP | UCM_EVENT_VM_MAPPED | UCM_EVENT_VM_UNMAPPED) ==
            UCS_OK);

    void *address = mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                         0);
    REQUIRE(address != MAP_FAILED);
    CHECK(recorder.count(UCM_EVENT_MMAP, [&](const ucm_event_t &e) {
        return (e.mmap.result == address) && (e.mmap.size == 2 * page) && (e.mmap.fd == -1);
    }) == 1);
    CHECK(recorder.count_mapped(address, 2 * page) == 1);
    CHECK(recorder.count(UCM_EVENT_VM_UNMAPPED) == 0);

    recorder.clear();
    void *fixed = mmap(address, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    REQUIRE(fixed == address);
    CHECK(recorder.count_unmapped(address, page) == 1);
    CHECK(recorder.count_mapped(address, page) == 1);

    ucm_orig_munmap(address, 2 * page);
}

TEST_CASE("shmat and shmdt report the segment's range", "[ucm]")
{
    const size_t size = 3 * page_size();
    int shmid         = shmget(IPC_PRIVATE, size, IPC_CREAT | 0600);
    if (shmid < 0) {
        WARN("System V shared memory unavailable: " << strerror(errno));
        return;
    }
    event_recorder recorder;
    REQUIRE(recorder.attach(UCM_EVENT_SHMAT | UCM_EVENT_SHMDT | UCM_EVENT_VM_MAPPED |
                            UCM_EVENT_VM_UNMAPPED) == UCS_OK);

    void *attached = shmat(shmid, nullptr, 0);
    shmctl(shmid, IPC_RMID, nullptr);
    REQUIRE(attached != reinterpret_cast<void *>(-1));
    CHECK(recorder.count(UCM_EVENT_SHMAT, [&](const ucm_event_t &e) {
        return (e.shmat.result == attached) && (e.shmat.shmid == shmid);
    }) == 1);
    CHECK(recorder.count_mapped(attached, size) == 1);

    REQUIRE(shmdt(attached) == 0);
    CHECK(recorder.count(UCM_EVENT_SHMDT, [&](const ucm_event_t &e) {
        return (e.shmdt.shmaddr == attached) && (e.shmdt.result == 0);
    }) == 1);
    CHECK(recorder.count_unmapped(attached, size) == 1);
}

TEST_CASE("sbrk and brk report growing and shrinking the heap", "[ucm]")
{
    const intptr_t page = static_cast<intptr_t>(page_size());
    event_recorder recorder;
    REQUIRE(recorder.attach(UCM_EVENT_SBRK | UCM_EVENT_BRK | UCM_EVENT_VM_MAPPED |
                            UCM_EVENT_VM_UNMAPPED) == UCS_OK);

    /* Nothing in between allocates, so malloc never sees the moves. */
    char *start = static_cast<char *>(sbrk(page));
    REQUIRE(start != reinterpret_cast<void *>(-1));
    CHECK(recorder.count(UCM_EVENT_SBRK, [&](const ucm_event_t &e) {
        return (e.sbrk.increment == page) && (e.sbrk.result == start);
    }) == 1);
    CHECK(recorder.count_mapped(start, page) == 1);

    REQUIRE(sbrk(-page) == start + page);
    CHECK(recorder.count_unmapped(start, page) == 1);

    recorder.clear();
    REQUIRE(brk(start + page) == 0);
    CHECK(recorder.count(UCM_EVENT_BRK, [&](const ucm_event_t &e) {
        return (e.brk.addr == start + page) && (e.brk.result == 0);
    }) == 1);
    CHECK(recorder.count_mapped(start, page) == 1);
    REQUIRE(brk(start) == 0);
    CHECK(recorder.count_unmapped(start, page) == 1);
}

TEST_CASE("explicit ucm_* wrappers raise the same events", "[ucm]")
{
    const size_t page = page_size();
    event_recorder recorder;
    REQUIRE(recorder.attach(UCM_EVENT_MUNMAP | UCM_EVENT_MADVISE | UCM_EVENT_VM_UNMAPPED |
                            UCM_EVENT_VM_MAPPED) == UCS_OK);

    void *address = ucm_mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                             0);
    REQUIRE(address != MAP_FAILED);
    CHECK(recorder.count_mapped(address, page) == 1);
    CHECK(ucm_madvise(address, page, MADV_DONTNEED) == 0);
    CHECK(recorder.count(UCM_EVENT_MADVISE) == 1);
    CHECK(ucm_munmap(address, page) == 0);
    CHECK(recorder.count_munmap(address, page) == 1);
    CHECK_FALSE(ucm_test::is_mapped(address, page));

    /* The ucm_orig_* functions raise nothing. */
    recorder.clear();
    scratch_mapping mapping(page);
    CHECK(ucm_orig_madvise(mapping.get(), page, MADV_DONTNEED) == 0);
    CHECK(recorder.size() == 0);
}

namespace {

struct order_log {
    int calls[8];
    int results[8];
    std::atomic<int> count{0};
    void *address = nullptr;
};

template <int Id>
void ordered_handler(ucm_event_type_t, ucm_event_t *event, void *arg)
{
    auto *log = static_cast<order_log *>(arg);
    if (event->munmap.address != log->address) {
        return;
    }
    int index = log->count.fetch_add(1);
    if (index < 8) {
        log->calls[index]   = Id;
        log->results[index] = event->munmap.result;
    }
}

} // namespace

TEST_CASE("handlers run by priority around the original call", "[ucm]")
{
    const size_t page = page_size();
    order_log log;
    /* Registered out of order on purpose. */
    REQUIRE(ucm_set_event_handler(UCM_EVENT_MUNMAP, 10, ordered_handler<4>, &log) == UCS_OK);
    REQUIRE(ucm_set_event_handler(UCM_EVENT_MUNMAP, -10, ordered_handler<1>, &log) == UCS_OK);
    REQUIRE(ucm_set_event_handler(UCM_EVENT_MUNMAP, 0, ordered_handler<3>, &log) == UCS_OK);
    REQUIRE(ucm_set_event_handler(UCM_EVENT_MUNMAP, -1, ordered_handler<2>, &log) == UCS_OK);

    scratch_mapping mapping(page);
    log.address = mapping.get();
    REQUIRE(munmap(mapping.get(), page) == 0);
    mapping.forget();

    ucm_unset_event_handler(UCM_EVENT_MUNMAP, ordered_handler<1>, &log);
    ucm_unset_event_handler(UCM_EVENT_MUNMAP, ordered_handler<2>, &log);
    ucm_unset_event_handler(UCM_EVENT_MUNMAP, ordered_handler<3>, &log);
    ucm_unset_event_handler(UCM_EVENT_MUNMAP, ordered_handler<4>, &log);

    REQUIRE(log.count.load() == 4);
    CHECK(log.calls[0] == 1);
    CHECK(log.calls[1] == 2);
    CHECK(log.calls[2] == 3);
    CHECK(log.calls[3] == 4);
    /* Negative priorities run before the real munmap, the others after. */
    CHECK(log.results[0] == -1);
    CHECK(log.results[1] == -1);
    CHECK(log.results[2] == 0);
    CHECK(log.results[3] == 0);
}

namespace {

void shrink_to_one_page(ucm_event_type_t, ucm_event_t *event, void *arg)
{
    if (event->munmap.address == *static_cast<void **>(arg)) {
        event->munmap.size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    }
}

} // namespace

TEST_CASE("a pre handler may change the arguments of the call", "[ucm]")
{
    const size_t page = page_size();
    scratch_mapping mapping(2 * page);
    void *target = mapping.get();
    REQUIRE(ucm_set_event_handler(UCM_EVENT_MUNMAP, -1, shrink_to_one_page, &target) == UCS_OK);
    REQUIRE(munmap(mapping.get(), 2 * page) == 0);
    ucm_unset_event_handler(UCM_EVENT_MUNMAP, shrink_to_one_page, &target);

    CHECK_FALSE(ucm_test::is_mapped(mapping.get(), page));
    REQUIRE(ucm_test::is_mapped(mapping.get() + page, page));
    mapping.get()[page] = 42; /* second page survived */
    ucm_orig_munmap(mapping.get() + page, page);
    mapping.forget();
}

TEST_CASE("unsetting a handler stops delivery", "[ucm]")
{
    const size_t page = page_size();
    event_recorder recorder;
    REQUIRE(recorder.attach(UCM_EVENT_MUNMAP | UCM_EVENT_VM_UNMAPPED) == UCS_OK);

    auto unmap_one_page = [&]() -> void * {
        scratch_mapping mapping(page);
        void *unmapped = mapping.get();
        REQUIRE(munmap(unmapped, page) == 0);
        mapping.forget();
        return unmapped;
    };

    void *address = unmap_one_page();
    CHECK(recorder.count_munmap(address, page) == 1);
    CHECK(recorder.count_unmapped(address, page) == 1);

    /* Same callback with another argument: a different handler. */
    recorder.clear();
    int other_arg = 0;
    ucm_unset_event_handler(UCM_EVENT_MUNMAP | UCM_EVENT_VM_UNMAPPED,
                            event_recorder::callback_function(), &other_arg);
    address = unmap_one_page();
    CHECK(recorder.count_munmap(address, page) == 1);

    /* Removing one event keeps the other. */
    recorder.clear();
    recorder.detach_events(UCM_EVENT_MUNMAP);
    address = unmap_one_page();
    CHECK(recorder.count(UCM_EVENT_MUNMAP) == 0);
    CHECK(recorder.count_unmapped(address, page) == 1);

    recorder.clear();
    recorder.detach();
    unmap_one_page();
    CHECK(recorder.size() == 0);
}

TEST_CASE("ucm_vm_munmap reports without unmapping", "[ucm]")
{
    const size_t page = page_size();
    event_recorder recorder;
    REQUIRE(recorder.attach(UCM_EVENT_VM_UNMAPPED | UCM_EVENT_VM_MAPPED | UCM_EVENT_MUNMAP) ==
            UCS_OK);

    scratch_mapping mapping(2 * page);
    ucm_vm_munmap(mapping.get(), 2 * page);
    CHECK(recorder.count_unmapped(mapping.get(), 2 * page) == 1);
    CHECK(recorder.count(UCM_EVENT_MUNMAP) == 0);

    REQUIRE(ucm_test::is_mapped(mapping.get(), 2 * page));
    memset(mapping.get(), 0x5a, 2 * page); /* still writable */
    CHECK(mapping.get()[2 * page - 1] == 0x5a);

    ucm_vm_mmap(mapping.get(), page);
    CHECK(recorder.count_mapped(mapping.get(), page) == 1);
}
