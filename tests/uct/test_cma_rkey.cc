/*
 * cma memory domain and remote keys: registration, packing, and unpacking of
 * bytes that came from a peer (exact, truncated, oversized, corrupted and
 * random buffers).
 */
#include <catch2/catch.hpp>

#include <uct/sm/cma/cma_md.h>
#include <uct/sm/cma/cma_rkey.h>

#include <cstring>
#include <memory>
#include <random>
#include <unistd.h>
#include <vector>

namespace {

using uct::cma::packed_rkey;

std::unique_ptr<uct::md> open_cma_md(uct::component **comp_p)
{
    for (uct::component *comp : uct::components()) {
        if (std::string(comp->name()) == "cma") {
            uct::md *md = nullptr;
            if (comp->md_open("cma", &md) == UCS_OK) {
                *comp_p = comp;
                return std::unique_ptr<uct::md>(md);
            }
        }
    }
    return nullptr;
}

packed_rkey read_key(const std::vector<uint8_t> &buf)
{
    packed_rkey key;
    std::memcpy(&key, buf.data(), sizeof(key));
    return key;
}

std::vector<uint8_t> write_key(const packed_rkey &key)
{
    std::vector<uint8_t> buf(sizeof(key));
    std::memcpy(buf.data(), &key, sizeof(key));
    return buf;
}

} // namespace

TEST_CASE("cma md registers regions and packs keys with their bounds", "[cma]")
{
    uct::component *comp = nullptr;
    auto md              = open_cma_md(&comp);
    REQUIRE(md != nullptr);
    CHECK(std::string(md->name()) == "cma");
    CHECK((md->attr().flags & uct::md_flag::REG) != 0);
    CHECK((md->attr().flags & uct::md_flag::NEED_RKEY) != 0);
    REQUIRE(md->attr().rkey_packed_size == sizeof(packed_rkey));

    std::vector<char> buffer(12345);
    uct::mem_h memh = nullptr;
    REQUIRE(md->mem_reg(buffer.data(), buffer.size(), 0, &memh) == UCS_OK);

    std::vector<uint8_t> packed(md->attr().rkey_packed_size);
    REQUIRE(md->mkey_pack(memh, packed.data()) == UCS_OK);
    packed_rkey key = read_key(packed);
    CHECK(key.pid == uint32_t(getpid()));
    CHECK(key.address == reinterpret_cast<uintptr_t>(buffer.data()));
    CHECK(key.length == buffer.size());

    uct::rkey_bundle bundle;
    REQUIRE(comp->rkey_unpack(packed.data(), packed.size(), &bundle) == UCS_OK);
    auto *region = reinterpret_cast<const uct::cma::remote_region *>(bundle.rkey);
    CHECK(region->address == key.address);
    CHECK(region->length == key.length);
    CHECK(region->pid == getpid());
    CHECK(region->contains(key.address, buffer.size()));
    CHECK(region->contains(key.address + buffer.size(), 0));
    CHECK_FALSE(region->contains(key.address - 1, 1));
    CHECK_FALSE(region->contains(key.address + 1, buffer.size()));
    CHECK_FALSE(region->contains(key.address + 8, UINT64_MAX - 4));
    comp->rkey_release(bundle);

    REQUIRE(md->mem_dereg(memh) == UCS_OK);
}

TEST_CASE("cma md refuses bad registration arguments", "[cma]")
{
    uct::component *comp = nullptr;
    auto md              = open_cma_md(&comp);
    REQUIRE(md != nullptr);
    uct::mem_h memh = nullptr;
    CHECK(md->mem_reg(nullptr, 100, 0, &memh) == UCS_ERR_INVALID_PARAM);
    CHECK(md->mem_reg(reinterpret_cast<void *>(~uintptr_t(0) - 10), 100, 0, &memh) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(md->mem_dereg(nullptr) == UCS_ERR_INVALID_PARAM);
    uint8_t packed[sizeof(packed_rkey)];
    CHECK(md->mkey_pack(nullptr, packed) == UCS_ERR_INVALID_PARAM);
    uct::md *other = nullptr;
    CHECK(comp->md_open("not-cma", &other) == UCS_ERR_NO_DEVICE);
}

TEST_CASE("cma rkey_unpack accepts exactly a well-formed key", "[cma]")
{
    uct::component *comp = nullptr;
    auto md              = open_cma_md(&comp);
    REQUIRE(md != nullptr);

    std::vector<char> buffer(4096);
    uct::mem_h memh = nullptr;
    REQUIRE(md->mem_reg(buffer.data(), buffer.size(), 0, &memh) == UCS_OK);
    std::vector<uint8_t> valid(md->attr().rkey_packed_size);
    REQUIRE(md->mkey_pack(memh, valid.data()) == UCS_OK);
    REQUIRE(md->mem_dereg(memh) == UCS_OK);

    uct::rkey_bundle bundle;
    auto unpack = [&](const std::vector<uint8_t> &buf, size_t len) {
        ucs_status_t status = comp->rkey_unpack(buf.data(), len, &bundle);
        if (status == UCS_OK) {
            comp->rkey_release(bundle);
        }
        return status;
    };

    REQUIRE(unpack(valid, valid.size()) == UCS_OK);
    CHECK(comp->rkey_unpack(nullptr, valid.size(), &bundle) == UCS_ERR_INVALID_PARAM);

    SECTION("every truncation is refused") {
        for (size_t len = 0; len < valid.size(); ++len) {
            std::vector<uint8_t> truncated(valid.begin(), valid.begin() + len);
            INFO("length " << len);
            CHECK(unpack(truncated, len) == UCS_ERR_INVALID_PARAM);
        }
    }

    SECTION("oversized buffers are refused") {
        for (size_t extra = 1; extra <= 64; ++extra) {
            std::vector<uint8_t> longer = valid;
            longer.resize(valid.size() + extra, 0);
            INFO("extra " << extra);
            CHECK(unpack(longer, longer.size()) == UCS_ERR_INVALID_PARAM);
        }
    }

    SECTION("corrupted fields are refused") {
        packed_rkey base = read_key(valid);
        std::vector<packed_rkey> bad(7, base);
        bad[0].magic ^= 1;
        bad[1].version   = uct::cma::PACKED_RKEY_VERSION + 1;
        bad[2].reserved  = 1;
        bad[3].reserved2 = 0x80000000u;
        bad[4].pid       = 0;
        bad[5].pid       = 0x80000000u;
        bad[6].address   = UINT64_MAX - 10; /* address + length wraps */
        for (size_t i = 0; i < bad.size(); ++i) {
            INFO("corruption " << i);
            CHECK(unpack(write_key(bad[i]), sizeof(packed_rkey)) == UCS_ERR_INVALID_PARAM);
        }
        /* Changing only the region or pid keeps the key well-formed. */
        packed_rkey other = base;
        other.length      = 1;
        other.pid         = 1;
        CHECK(unpack(write_key(other), sizeof(packed_rkey)) == UCS_OK);
    }

    SECTION("random bytes are refused") {
        std::mt19937_64 rng(20240611);
        std::vector<uint8_t> junk;
        for (int iter = 0; iter < 20000; ++iter) {
            size_t len = rng() % 80;
            junk.resize(len);
            for (auto &byte : junk) {
                byte = uint8_t(rng());
            }
            INFO("iteration " << iter << " length " << len);
            REQUIRE(unpack(junk, len) == UCS_ERR_INVALID_PARAM);
        }
        /* A valid header with random remaining bytes: refused unless every
         * reserved field happens to be zero and nothing overflows. */
        for (int iter = 0; iter < 20000; ++iter) {
            std::vector<uint8_t> key = valid;
            for (size_t i = 8; i < key.size(); ++i) {
                key[i] = uint8_t(rng());
            }
            packed_rkey k = read_key(key);
            uint64_t end;
            bool well_formed = (k.reserved == 0) && (k.reserved2 == 0) && (k.pid != 0) &&
                               (k.pid <= uint32_t(INT32_MAX)) &&
                               !__builtin_add_overflow(k.address, k.length, &end);
            INFO("iteration " << iter);
            REQUIRE((unpack(key, key.size()) == UCS_OK) == well_formed);
        }
    }
}
