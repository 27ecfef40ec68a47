/*
 * ucs/type/wire_reader.h: the reader every parser of peer bytes uses, and
 * the range and size checks that must not wrap.
 */
#include <ucs/type/wire_reader.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

TEST_CASE("range_inside refuses ranges that leave the region or wrap", "[wire]")
{
    CHECK(ucs::range_inside(0, 0, 0));
    CHECK(ucs::range_inside(0, 10, 10));
    CHECK(ucs::range_inside(10, 0, 10));
    CHECK_FALSE(ucs::range_inside(11, 0, 10));
    CHECK_FALSE(ucs::range_inside(5, 6, 10));
    CHECK_FALSE(ucs::range_inside(1, UINT64_MAX, 10)); /* offset + length wraps */
    CHECK_FALSE(ucs::range_inside(UINT64_MAX, 2, UINT64_MAX));

    CHECK(ucs::range_inside(0x1000, 16, 0x1000, 16));
    CHECK_FALSE(ucs::range_inside(0xfff, 1, 0x1000, 16)); /* before the base */
    CHECK_FALSE(ucs::range_inside(0x1008, 9, 0x1000, 16));
    CHECK_FALSE(ucs::range_inside(UINT64_MAX - 1, 4, 0x1000, UINT64_MAX - 0x1000));
}

TEST_CASE("alloc_size refuses payloads over the limit and sums that wrap", "[wire]")
{
    size_t size = 0;
    CHECK(ucs::alloc_size(64, 100, 1000, &size));
    CHECK(size == 164);
    CHECK_FALSE(ucs::alloc_size(64, 1001, 1000, &size));
    CHECK_FALSE(ucs::alloc_size(64, UINT64_MAX - 8, UINT64_MAX, &size));
    CHECK_FALSE(ucs::alloc_size(SIZE_MAX, 1, UINT64_MAX, &size));
    uint32_t sum = 0;
    CHECK(ucs::checked_add<uint32_t>(1, 2, &sum));
    CHECK(sum == 3);
    CHECK_FALSE(ucs::checked_add<uint32_t>(UINT32_MAX, 1, &sum));
}

TEST_CASE("wire_reader never reads past its end", "[wire]")
{
    const std::vector<uint8_t> bytes = {1, 0, 0, 0, 2, 0, 'a', 'b', 0, 3, 0, 7, 8, 9};
    ucs::wire_reader r(bytes.data(), bytes.size());
    uint32_t word = 0;
    REQUIRE(r.get(&word));
    CHECK(word == 1);
    uint16_t half = 0;
    REQUIRE(r.get(&half));
    CHECK(half == 2);
    ucs::wire_reader copy = r;
    std::string_view text;
    CHECK_FALSE(copy.string(0, 1, &text)); /* "ab" is longer than 1 */
    /* 'a' is a length byte of 97: more than what is left */
    CHECK_FALSE(ucs::wire_reader(bytes.data() + 6, 3).string(0, 200, &text));
    const uint8_t named[] = {3, 'a', 'b', 0};
    ucs::wire_reader n(named, sizeof(named));
    REQUIRE(n.string(1, 10, &text));
    CHECK(text == "ab");
    CHECK(n.at_end());
    const uint8_t early_nul[] = {3, 'a', 0, 0};
    CHECK_FALSE(ucs::wire_reader(early_nul, sizeof(early_nul)).string(1, 10, &text));

    REQUIRE(r.skip(3));
    const uint8_t *blob = nullptr;
    size_t blob_length  = 0;
    REQUIRE(r.blob16(&blob, &blob_length));
    CHECK(blob_length == 3);
    CHECK(blob[0] == 7);
    CHECK(r.at_end());
    CHECK_FALSE(r.get(&word));
    CHECK_FALSE(r.skip(1));
    const uint8_t *unused;
    CHECK(r.bytes(0, &unused));
    CHECK_FALSE(r.bytes(1, &unused));

    const uint8_t long_blob[] = {200, 0, 1, 2};
    ucs::wire_reader b(long_blob, sizeof(long_blob));
    CHECK_FALSE(b.blob16(&blob, &blob_length));
    CHECK(b.left() == 2); /* the prefix was read */
}
