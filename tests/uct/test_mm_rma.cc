/*
 * Memory the posix/sysv md allocates is reachable by a peer through its
 * packed key: rkey_ptr, put and get are copies into the mapped region, and
 * every access outside the region is refused.
 */
#include <catch2/catch.hpp>

#include "test_mm_util.h"

#include "two_process.h"

#include <algorithm>
#include <cstring>

namespace {

constexpr size_t REGION = 3 * 4096 + 100; /* rounded up to pages by mem_alloc */

uint8_t owner_byte(size_t i)
{
    return uint8_t(i * 13 + 5);
}

struct region_info {
    uint64_t address;
    uint64_t length;
};

size_t pack_bytes(void *dest, void *arg)
{
    auto *v = static_cast<std::vector<uint8_t> *>(arg);
    std::memcpy(dest, v->data(), v->size());
    return v->size();
}

void unpack_bytes(void *arg, const void *data, size_t length)
{
    auto *v = static_cast<std::vector<uint8_t> *>(arg);
    v->assign(static_cast<const uint8_t *>(data), static_cast<const uint8_t *>(data) + length);
}

void rma(const char *tl)
{
    test::child_process child([tl](int fd) {
        test::mm_entity e(tl);
        TEST_CHILD_CHECK(e.ok());
        TEST_CHILD_CHECK(e.md().attr().flags & uct::md_flag::ALLOC);
        TEST_CHILD_CHECK(e.md().attr().flags & uct::md_flag::RKEY_PTR);
        size_t length   = REGION;
        void *address   = nullptr;
        uct::mem_h memh = nullptr;
        TEST_CHILD_CHECK(e.md().mem_alloc(&length, &address, 0, &memh) == UCS_OK);
        TEST_CHILD_CHECK(length >= REGION);
        auto *bytes = static_cast<uint8_t *>(address);
        for (size_t i = 0; i < length; ++i) {
            bytes[i] = owner_byte(i);
        }
        std::vector<uint8_t> rkey(e.md().attr().rkey_packed_size);
        TEST_CHILD_CHECK(e.md().mkey_pack(memh, rkey.data()) == UCS_OK);
        region_info info{reinterpret_cast<uintptr_t>(address), length};
        TEST_CHILD_CHECK(test::send_blob(fd, e.addresses().serialize()));
        TEST_CHILD_CHECK(test::send_blob(fd, rkey));
        TEST_CHILD_CHECK(test::send_value(fd, info));

        /* The parent wrote 0xa0+i at [100, 108), 0xb0+i at [length-16, length),
         * 0xc0+i at [2000, 2300) and 0xd0+i at [4096, 4196). */
        TEST_CHILD_CHECK(test::sync_peer(fd));
        for (size_t i = 0; i < 8; ++i) {
            TEST_CHILD_CHECK(bytes[100 + i] == uint8_t(0xa0 + i));
        }
        for (size_t i = 0; i < 16; ++i) {
            TEST_CHILD_CHECK(bytes[length - 16 + i] == uint8_t(0xb0 + i));
        }
        for (size_t i = 0; i < 300; ++i) {
            TEST_CHILD_CHECK(bytes[2000 + i] == uint8_t(0xc0 + i));
        }
        for (size_t i = 0; i < 100; ++i) {
            TEST_CHILD_CHECK(bytes[4096 + i] == uint8_t(0xd0 + i));
        }
        TEST_CHILD_CHECK(bytes[99] == owner_byte(99));
        TEST_CHILD_CHECK(bytes[108] == owner_byte(108));
        TEST_CHILD_CHECK(test::sync_peer(fd));
        TEST_CHILD_CHECK(e.md().mem_free(memh) == UCS_OK);
        return 0;
    });

    test::mm_entity e(tl);
    REQUIRE(e.ok());
    std::vector<uint8_t> blob, rkey_bytes;
    test::uct_addresses peer;
    region_info info;
    REQUIRE(test::recv_blob(child.fd(), &blob));
    REQUIRE(test::uct_addresses::deserialize(blob, &peer));
    REQUIRE(test::recv_blob(child.fd(), &rkey_bytes));
    REQUIRE(test::recv_value(child.fd(), &info));
    uct::ep *ep = e.connect(peer);
    REQUIRE(ep != nullptr);

    /* Malformed keys first. */
    uct::rkey_bundle rkey;
    CHECK(e.component().rkey_unpack(rkey_bytes.data(), rkey_bytes.size() - 1, &rkey) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(e.component().rkey_unpack(nullptr, rkey_bytes.size(), &rkey) == UCS_ERR_INVALID_PARAM);
    for (size_t byte : {size_t(0), size_t(4), size_t(6)}) { /* magic, version, backend */
        auto bad = rkey_bytes;
        bad[byte] ^= 0x40;
        CHECK(e.component().rkey_unpack(bad.data(), bad.size(), &rkey) == UCS_ERR_INVALID_PARAM);
    }
    {
        auto bad = rkey_bytes;
        bad[16] ^= 0x01; /* node id */
        CHECK(e.component().rkey_unpack(bad.data(), bad.size(), &rkey) == UCS_ERR_UNREACHABLE);
        bad = rkey_bytes;
        bad[24] ^= 0x10; /* segment id */
        CHECK(e.component().rkey_unpack(bad.data(), bad.size(), &rkey) != UCS_OK);
        bad = rkey_bytes;
        bad[36] ^= 0x10; /* segment size beyond the real segment */
        CHECK(e.component().rkey_unpack(bad.data(), bad.size(), &rkey) != UCS_OK);
    }

    REQUIRE(e.component().rkey_unpack(rkey_bytes.data(), rkey_bytes.size(), &rkey) == UCS_OK);
    const uint64_t base = info.address, length = info.length;

    /* rkey_ptr: the owner's bytes, directly; out of range refused. */
    void *local = nullptr;
    REQUIRE(e.component().rkey_ptr(rkey, base + 7, &local) == UCS_OK);
    CHECK(*static_cast<uint8_t *>(local) == owner_byte(7));
    CHECK(e.component().rkey_ptr(rkey, base + length, &local) == UCS_ERR_INVALID_ADDR);
    CHECK(e.component().rkey_ptr(rkey, base - 1, &local) == UCS_ERR_INVALID_ADDR);

    /* get_bcopy reads the owner's pattern. */
    std::vector<uint8_t> got;
    CHECK(ep->get_bcopy(unpack_bytes, &got, 1000, base + 3000, rkey.rkey, nullptr) == UCS_OK);
    REQUIRE(got.size() == 1000);
    bool same = true;
    for (size_t i = 0; i < got.size(); ++i) {
        same = same && (got[i] == owner_byte(3000 + i));
    }
    CHECK(same);

    /* Writes, one of each kind, including the region's last bytes. */
    uint8_t a[8], b[16];
    for (size_t i = 0; i < 8; ++i)
        a[i] = uint8_t(0xa0 + i);
    for (size_t i = 0; i < 16; ++i)
        b[i] = uint8_t(0xb0 + i);
    CHECK(ep->put_short(a, sizeof(a), base + 100, rkey.rkey) == UCS_OK);
    std::vector<uint8_t> c(300), d(100);
    for (size_t i = 0; i < c.size(); ++i)
        c[i] = uint8_t(0xc0 + i);
    for (size_t i = 0; i < d.size(); ++i)
        d[i] = uint8_t(0xd0 + i);
    CHECK(ep->put_bcopy(pack_bytes, &c, base + 2000, rkey.rkey) == ssize_t(c.size()));
    /* Near the end a full max_bcopy does not fit: the bounce path. */
    std::vector<uint8_t> tail(b, b + 16);
    CHECK(ep->put_bcopy(pack_bytes, &tail, base + length - 16, rkey.rkey) == 16);
    uct::iov iov[2] = {{d.data(), 60, nullptr}, {d.data() + 60, 40, nullptr}};
    CHECK(ep->put_zcopy(iov, 2, base + 4096, rkey.rkey, nullptr) == UCS_OK);
    std::vector<uint8_t> back(100);
    uct::iov back_iov[1] = {{back.data(), back.size(), nullptr}};
    CHECK(ep->get_zcopy(back_iov, 1, base + 4096, rkey.rkey, nullptr) == UCS_OK);
    CHECK(back == d);

    /* Anything crossing the region's edges is refused and writes nothing. */
    CHECK(ep->put_short(b, sizeof(b), base + length - 15, rkey.rkey) == UCS_ERR_INVALID_ADDR);
    CHECK(ep->put_short(b, sizeof(b), base - 1, rkey.rkey) == UCS_ERR_INVALID_ADDR);
    CHECK(ep->put_short(b, 1, UINT64_MAX, rkey.rkey) == UCS_ERR_INVALID_ADDR);
    std::vector<uint8_t> too_long(17, 0xee);
    CHECK(ep->put_bcopy(pack_bytes, &too_long, base + length - 16, rkey.rkey) ==
          UCS_ERR_INVALID_ADDR);
    CHECK(ep->get_bcopy(unpack_bytes, &got, 2, base + length - 1, rkey.rkey, nullptr) ==
          UCS_ERR_INVALID_ADDR);
    uct::iov huge[2] = {{d.data(), SIZE_MAX, nullptr}, {d.data(), 2, nullptr}};
    CHECK(ep->put_zcopy(huge, 2, base, rkey.rkey, nullptr) == UCS_ERR_INVALID_ADDR);
    CHECK(ep->put_short(a, sizeof(a), base, 0) == UCS_ERR_INVALID_ADDR);

    /* More iov entries than the attributes allow are refused, untouched. */
    const size_t max_iov = e.attr().put.max_iov;
    REQUIRE(e.attr().get.max_iov == max_iov);
    std::vector<uct::iov> many(max_iov + 1, uct::iov{d.data(), 1, nullptr});
    CHECK(ep->put_zcopy(many.data(), many.size(), base + 4096, rkey.rkey, nullptr) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(ep->get_zcopy(many.data(), many.size(), base + 4096, rkey.rkey, nullptr) ==
          UCS_ERR_INVALID_PARAM);
    std::vector<uint8_t> spread(max_iov);
    for (size_t i = 0; i < max_iov; ++i) {
        many[i] = uct::iov{&spread[i], 1, nullptr};
    }
    CHECK(ep->get_zcopy(many.data(), max_iov, base + 4096, rkey.rkey, nullptr) == UCS_OK);
    CHECK(std::equal(spread.begin(), spread.end(), d.begin()));

    REQUIRE(test::sync_peer(child.fd()));
    e.component().rkey_release(rkey);
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(child.wait() == 0);
}

MM_TEST_CASE("put, get and rkey_ptr reach the peer's allocation, bounds-checked", rma)

} // namespace
