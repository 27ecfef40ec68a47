/*
 * mm md allocation at a fixed address (mem_flag::FIXED): the segment lands
 * exactly where asked, never replaces an existing mapping, and its key
 * still maps for a peer.
 */
#include "test_mm_util.h"

#include <catch2/catch.hpp>

#include <cstring>

#include <sys/mman.h>
#include <unistd.h>

namespace {

/* An address range nothing is mapped at (reserved, then released). */
void *free_range(size_t length)
{
    void *hole = mmap(nullptr, length, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(hole != MAP_FAILED);
    REQUIRE(munmap(hole, length) == 0);
    return hole;
}

void fixed_alloc(const char *tl)
{
    test::mm_entity e(tl);
    INFO(e.error());
    REQUIRE(e.ok());
    CHECK((e.md().attr().flags & uct::md_flag::FIXED) != 0);

    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    void *hole        = free_range(4 * page);

    size_t length   = 3 * page + 1; /* rounded up to 4 pages */
    void *address   = hole;
    uct::mem_h memh = nullptr;
    REQUIRE(e.md().mem_alloc(&length, &address, uct::mem_flag::FIXED, &memh) == UCS_OK);
    CHECK(address == hole);
    CHECK(length == 4 * page);
    std::memset(address, 0x5a, length);

    /* Occupied now: a second fixed allocation there is refused, the first
     * one's contents stay. */
    size_t length2   = page;
    void *address2   = static_cast<char *>(hole) + page;
    uct::mem_h memh2 = nullptr;
    CHECK(e.md().mem_alloc(&length2, &address2, uct::mem_flag::FIXED, &memh2) ==
          UCS_ERR_ALREADY_EXISTS);
    CHECK(static_cast<unsigned char *>(address)[page] == 0x5a);

    /* The key maps to the same bytes. */
    std::vector<uint8_t> packed(e.md().attr().rkey_packed_size);
    REQUIRE(e.md().mkey_pack(memh, packed.data()) == UCS_OK);
    uct::rkey_bundle rkey;
    REQUIRE(e.component().rkey_unpack(packed.data(), packed.size(), &rkey) == UCS_OK);
    void *mapped = nullptr;
    REQUIRE(e.component().rkey_ptr(rkey, reinterpret_cast<uintptr_t>(hole) + 2 * page, &mapped) ==
            UCS_OK);
    CHECK(static_cast<unsigned char *>(mapped)[0] == 0x5a);
    static_cast<unsigned char *>(mapped)[1] = 0x17;
    CHECK(static_cast<unsigned char *>(hole)[2 * page + 1] == 0x17);
    e.component().rkey_release(rkey);
    CHECK(e.md().mem_free(memh) == UCS_OK);
}

MM_TEST_CASE("mem_alloc FIXED places the segment exactly at the address", fixed_alloc)

void fixed_never_replaces(const char *tl)
{
    test::mm_entity e(tl);
    INFO(e.error());
    REQUIRE(e.ok());
    const size_t page = size_t(sysconf(_SC_PAGESIZE));

    /* Somebody else's mapping with data in it. */
    auto *mine = static_cast<char *>(mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE,
                                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    REQUIRE(mine != MAP_FAILED);
    std::strcpy(mine + page, "still here");

    size_t length   = 3 * page; /* overlaps only partly: still refused */
    void *address   = mine + page;
    uct::mem_h memh = nullptr;
    CHECK(e.md().mem_alloc(&length, &address, uct::mem_flag::FIXED, &memh) ==
          UCS_ERR_ALREADY_EXISTS);
    CHECK(std::strcmp(mine + page, "still here") == 0);
    CHECK(munmap(mine, 2 * page) == 0);

    /* Fixed needs an address, page-aligned. */
    length  = page;
    address = nullptr;
    CHECK(e.md().mem_alloc(&length, &address, uct::mem_flag::FIXED, &memh) ==
          UCS_ERR_INVALID_PARAM);
    address = static_cast<char *>(free_range(2 * page)) + 8;
    CHECK(e.md().mem_alloc(&length, &address, uct::mem_flag::FIXED, &memh) ==
          UCS_ERR_INVALID_PARAM);
}

MM_TEST_CASE("mem_alloc FIXED never replaces an existing mapping", fixed_never_replaces)

} // namespace
