/*
 * self transport, memory side: resources and addresses, remote keys with
 * bounds, put/get short/bcopy/zcopy with data checked, and every atomic
 * operation at 32 and 64 bits against plain arithmetic.
 */
#include <catch2/catch.hpp>

#include "uct_test_util.h"

#include <uct/sm/self/self_iface.h>
#include <uct/sm/self/self_rkey.h>

#include <cstring>
#include <random>
#include <unistd.h>

namespace {

/* A registered region and its unpacked key. */
struct keyed_region {
    test::uct_entity &entity;
    std::vector<uint8_t> memory; /* guard + region + guard */
    size_t guard;
    uct::mem_h memh = nullptr;
    uct::rkey_bundle rkey;

    keyed_region(test::uct_entity &e, size_t length, size_t guard_bytes = 64) :
        entity(e), memory(length + 2 * guard_bytes, 0xee), guard(guard_bytes)
    {
        REQUIRE(entity.md().mem_reg(region(), length, 0, &memh) == UCS_OK);
        std::vector<uint8_t> packed(entity.md().attr().rkey_packed_size);
        REQUIRE(entity.md().mkey_pack(memh, packed.data()) == UCS_OK);
        REQUIRE(entity.component().rkey_unpack(packed.data(), packed.size(), &rkey) == UCS_OK);
    }

    ~keyed_region()
    {
        entity.component().rkey_release(rkey);
        entity.md().mem_dereg(memh);
    }

    uint8_t *region() { return memory.data() + guard; }
    size_t length() const { return memory.size() - 2 * guard; }
    uint64_t addr(size_t offset = 0) { return reinterpret_cast<uintptr_t>(region()) + offset; }

    bool guards_intact() const
    {
        for (size_t i = 0; i < guard; ++i) {
            if ((memory[i] != 0xee) || (memory[memory.size() - 1 - i] != 0xee)) {
                return false;
            }
        }
        return true;
    }
};

std::vector<uint8_t> pattern(size_t length, unsigned seed)
{
    std::vector<uint8_t> v(length);
    for (size_t i = 0; i < length; ++i) {
        v[i] = uint8_t(i * 37 + seed * 11 + (i >> 9));
    }
    return v;
}

struct pack_args {
    const uint8_t *data;
    size_t length;
};

size_t pack_bytes(void *dest, void *arg)
{
    auto *a = static_cast<pack_args *>(arg);
    std::memcpy(dest, a->data, a->length);
    return a->length;
}

void unpack_bytes(void *arg, const void *data, size_t length)
{
    auto *out   = static_cast<std::vector<uint8_t> *>(arg);
    auto *bytes = static_cast<const uint8_t *>(data);
    out->assign(bytes, bytes + length);
}

struct self_setup {
    test::uct_entity entity{"self"};
    uct::ep *ep = nullptr;

    self_setup()
    {
        REQUIRE(entity.ok());
        ep = entity.connect(entity.addresses());
        REQUIRE(ep != nullptr);
    }
};

} // namespace

TEST_CASE("self resources, attributes and addresses", "[self]")
{
    self_setup s;
    CHECK(std::string(s.entity.md().name()) == "self");
    CHECK(std::string(s.entity.component().name()) == "self");
    std::vector<uct::tl_resource> tls;
    REQUIRE(s.entity.md().query_tl_resources(&tls) == UCS_OK);
    REQUIRE(tls.size() == 1);
    CHECK(std::string(tls[0].tl_name) == "self");
    CHECK(std::string(tls[0].dev_name) == "memory0");
    CHECK(tls[0].type == uct::device_type::SELF);

    const uct::iface_attr &attr = s.entity.attr();
    for (uint64_t flag :
         {uct::iface_flag::AM_SHORT, uct::iface_flag::AM_BCOPY, uct::iface_flag::AM_ZCOPY,
          uct::iface_flag::PUT_SHORT, uct::iface_flag::PUT_BCOPY, uct::iface_flag::PUT_ZCOPY,
          uct::iface_flag::GET_BCOPY, uct::iface_flag::GET_ZCOPY, uct::iface_flag::ATOMIC_CPU,
          uct::iface_flag::PENDING, uct::iface_flag::CONNECT_TO_IFACE}) {
        CHECK((attr.flags & flag) != 0);
    }
    CHECK(attr.am.max_bcopy == uct::self::default_self_config().seg_size);
    CHECK(attr.device_addr_len == 0);
    CHECK((s.entity.md().attr().flags & uct::md_flag::NEED_RKEY) != 0);

    /* Only this iface of this process is reachable. */
    test::uct_addresses own = s.entity.addresses();
    auto reachable          = [&](const test::uct_addresses &a) {
        return s.entity.iface().is_reachable(a.device.data(), a.device.size(), a.iface.data(),
                                                      a.iface.size());
    };
    CHECK(reachable(own));
    test::uct_entity other("self");
    REQUIRE(other.ok());
    CHECK_FALSE(reachable(other.addresses()));
    uct::ep *ep                = nullptr;
    test::uct_addresses theirs = other.addresses();
    CHECK(s.entity.iface().ep_create_connected(theirs.device.data(), theirs.device.size(),
                                               theirs.iface.data(), theirs.iface.size(),
                                               &ep) == UCS_ERR_UNREACHABLE);
    for (size_t byte = 0; byte < own.iface.size(); ++byte) {
        test::uct_addresses changed = own;
        changed.iface[byte] ^= 0x01;
        INFO("byte " << byte);
        CHECK_FALSE(reachable(changed));
    }
    for (size_t len : {0, 8, 15, 17}) {
        test::uct_addresses changed = own;
        changed.iface.resize(len);
        CHECK_FALSE(reachable(changed));
    }
    test::uct_addresses with_device = own;
    with_device.device.assign(4, 0);
    CHECK_FALSE(reachable(with_device));
    CHECK(s.ep->check(0, nullptr) == UCS_OK);
}

TEST_CASE("self rkey_unpack refuses malformed keys", "[self]")
{
    self_setup s;
    std::vector<uint8_t> buffer(100);
    uct::mem_h memh = nullptr;
    REQUIRE(s.entity.md().mem_reg(buffer.data(), buffer.size(), 0, &memh) == UCS_OK);
    std::vector<uint8_t> valid(s.entity.md().attr().rkey_packed_size);
    REQUIRE(valid.size() == sizeof(uct::self::packed_rkey));
    REQUIRE(s.entity.md().mkey_pack(memh, valid.data()) == UCS_OK);
    REQUIRE(s.entity.md().mem_dereg(memh) == UCS_OK);
    CHECK(s.entity.md().mem_dereg(nullptr) == UCS_ERR_INVALID_PARAM);

    uct::component &comp = s.entity.component();
    uct::rkey_bundle bundle;
    auto unpack = [&](const std::vector<uint8_t> &buf) {
        ucs_status_t status = comp.rkey_unpack(buf.data(), buf.size(), &bundle);
        if (status == UCS_OK) {
            comp.rkey_release(bundle);
        }
        return status;
    };
    CHECK(unpack(valid) == UCS_OK);
    for (size_t len = 0; len < valid.size(); ++len) {
        INFO("truncated to " << len);
        CHECK(unpack(std::vector<uint8_t>(valid.begin(), valid.begin() + len)) ==
              UCS_ERR_INVALID_PARAM);
    }
    for (size_t extra = 1; extra <= 40; ++extra) {
        std::vector<uint8_t> longer = valid;
        longer.resize(valid.size() + extra, 0);
        CHECK(unpack(longer) == UCS_ERR_INVALID_PARAM);
    }
    std::mt19937_64 rng(77);
    for (int iter = 0; iter < 10000; ++iter) {
        std::vector<uint8_t> junk(rng() % 64);
        for (auto &b : junk) {
            b = uint8_t(rng());
        }
        REQUIRE(unpack(junk) == UCS_ERR_INVALID_PARAM);
    }
    /* A cma key is not a self key. */
    std::vector<uint8_t> foreign = valid;
    foreign[0] ^= 0x10;
    CHECK(unpack(foreign) == UCS_ERR_INVALID_PARAM);
}

TEST_CASE("self put and get: short, bcopy and zcopy within the key", "[self]")
{
    self_setup s;
    keyed_region r(s.entity, 64 * 1024);
    const uct::rkey_t key = r.rkey.rkey;

    SECTION("put_short and get_bcopy") {
        for (size_t length : {size_t(0), size_t(1), size_t(4096), r.length()}) {
            INFO("length " << length);
            auto data = pattern(length, 1);
            REQUIRE(s.ep->put_short(data.data(), unsigned(length), r.addr(), key) == UCS_OK);
            CHECK(std::equal(data.begin(), data.end(), r.region()));
            std::vector<uint8_t> got;
            REQUIRE(s.ep->get_bcopy(unpack_bytes, &got, length, r.addr(), key, nullptr) == UCS_OK);
            CHECK(got == data);
        }
        auto data = pattern(16, 2);
        CHECK(s.ep->put_short(data.data(), 16, r.addr(r.length() - 8), key) ==
              UCS_ERR_OUT_OF_RANGE);
        CHECK(s.ep->put_short(data.data(), 1, r.addr() - 1, key) == UCS_ERR_OUT_OF_RANGE);
        std::vector<uint8_t> got;
        CHECK(s.ep->get_bcopy(unpack_bytes, &got, r.length() + 1, r.addr(), key, nullptr) ==
              UCS_ERR_OUT_OF_RANGE);
        CHECK(got.empty());
    }

    SECTION("put_bcopy in place and near the end of the region") {
        const size_t max = s.entity.attr().put.max_bcopy;
        for (size_t offset : {size_t(0), r.length() - max, r.length() - 100}) {
            size_t length = std::min(max, r.length() - offset);
            auto data     = pattern(length, unsigned(offset));
            pack_args args{data.data(), length};
            INFO("offset " << offset);
            REQUIRE(s.ep->put_bcopy(pack_bytes, &args, r.addr(offset), key) == ssize_t(length));
            CHECK(std::equal(data.begin(), data.end(), r.region() + offset));
        }
        /* A pack that ends past the region is refused and writes nothing there. */
        std::vector<uint8_t> before(r.region(), r.region() + r.length());
        auto data = pattern(101, 3);
        pack_args args{data.data(), data.size()};
        CHECK(s.ep->put_bcopy(pack_bytes, &args, r.addr(r.length() - 100), key) ==
              UCS_ERR_OUT_OF_RANGE);
        CHECK(std::equal(before.begin(), before.end(), r.region()));
        CHECK(r.guards_intact());
    }

    SECTION("zcopy with several iovs") {
        auto data                  = pattern(30000, 4);
        std::vector<uct::iov> iovs = {{data.data(), 1, nullptr},
                                      {data.data() + 1, 0, nullptr},
                                      {data.data() + 1, 9999, nullptr},
                                      {data.data() + 10000, 20000, nullptr}};
        REQUIRE(s.ep->put_zcopy(iovs.data(), iovs.size(), r.addr(5), key, nullptr) == UCS_OK);
        CHECK(std::equal(data.begin(), data.end(), r.region() + 5));

        std::vector<uint8_t> back(30000, 0);
        std::vector<uct::iov> out = {{back.data(), 20000, nullptr},
                                     {back.data() + 20000, 10000, nullptr}};
        REQUIRE(s.ep->get_zcopy(out.data(), out.size(), r.addr(5), key, nullptr) == UCS_OK);
        CHECK(back == data);

        std::vector<uct::iov> big = {{data.data(), 30000, nullptr},
                                     {data.data(), 30000, nullptr},
                                     {data.data(), 30000, nullptr}};
        CHECK(s.ep->put_zcopy(big.data(), big.size(), r.addr(), key, nullptr) ==
              UCS_ERR_OUT_OF_RANGE);
        CHECK(s.ep->get_zcopy(big.data(), 1, UINT64_MAX - 100, key, nullptr) ==
              UCS_ERR_OUT_OF_RANGE);
        CHECK(r.guards_intact());
    }

    SECTION("keys of another process or another transport are refused") {
        uct::self::remote_region forged{uct::self::REMOTE_REGION_MAGIC, r.addr(), r.length(),
                                        getpid() + 1};
        auto data = pattern(8, 5);
        CHECK(s.ep->put_short(data.data(), 8, r.addr(), reinterpret_cast<uct::rkey_t>(&forged)) ==
              UCS_ERR_INVALID_PARAM);
        forged.pid   = getpid();
        forged.magic = 0x1234;
        CHECK(s.ep->put_short(data.data(), 8, r.addr(), reinterpret_cast<uct::rkey_t>(&forged)) ==
              UCS_ERR_INVALID_PARAM);
        CHECK(r.guards_intact());
    }

    SECTION("without a key any address of the process is accepted") {
        auto data = pattern(100, 6);
        REQUIRE(s.ep->put_short(data.data(), 100, r.addr(7), 0) == UCS_OK);
        CHECK(std::equal(data.begin(), data.end(), r.region() + 7));
    }
}

namespace {

template <typename T>
T apply(uct::atomic_op op, T old, T value, T compare)
{
    switch (op) {
    case uct::atomic_op::ADD:
        return T(old + value);
    case uct::atomic_op::AND:
        return T(old & value);
    case uct::atomic_op::OR:
        return T(old | value);
    case uct::atomic_op::XOR:
        return T(old ^ value);
    case uct::atomic_op::SWAP:
        return value;
    case uct::atomic_op::CSWAP:
        return (old == compare) ? value : old;
    default:
        return old;
    }
}

template <typename T>
void check_atomics(uct::ep *ep, keyed_region &r)
{
    const uct::atomic_op ops[] = {uct::atomic_op::ADD, uct::atomic_op::AND,  uct::atomic_op::OR,
                                  uct::atomic_op::XOR, uct::atomic_op::SWAP, uct::atomic_op::CSWAP};
    std::mt19937_64 rng(sizeof(T));
    const uint64_t target = r.addr(64); /* aligned for both sizes */
    T *cell               = reinterpret_cast<T *>(target);
    T *neighbour          = cell + 1;

    for (auto op : ops) {
        for (int iter = 0; iter < 50; ++iter) {
            T old = T(rng()), value = T(rng());
            /* Half of the cswaps must match to exercise the swap. */
            T compare  = (iter % 2) ? old : T(rng());
            *neighbour = T(0x5a5a5a5a5a5a5a5aull);
            INFO("op " << int(op) << " size " << sizeof(T) << " iter " << iter);

            bool postable = (op != uct::atomic_op::SWAP) && (op != uct::atomic_op::CSWAP);
            if (postable) {
                *cell = old;
                REQUIRE(ep->atomic_post(op, sizeof(T), value, target, r.rkey.rkey) == UCS_OK);
                CHECK(*cell == apply<T>(op, old, value, compare));
            } else {
                CHECK(ep->atomic_post(op, sizeof(T), value, target, r.rkey.rkey) ==
                      UCS_ERR_UNSUPPORTED);
            }

            *cell    = old;
            T result = T(~old);
            REQUIRE(ep->atomic_fetch(op, sizeof(T), value, compare, &result, target, r.rkey.rkey,
                                     nullptr) == UCS_OK);
            CHECK(result == old);
            CHECK(*cell == apply<T>(op, old, value, compare));
            CHECK(*neighbour == T(0x5a5a5a5a5a5a5a5aull));
        }
    }

    T result;
    CHECK(ep->atomic_post(uct::atomic_op::ADD, sizeof(T), 1, target + 1, r.rkey.rkey) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(ep->atomic_fetch(uct::atomic_op::ADD, sizeof(T), 1, 0, &result, r.addr() - 2 * sizeof(T),
                           r.rkey.rkey, nullptr) == UCS_ERR_OUT_OF_RANGE);
    CHECK(ep->atomic_post(uct::atomic_op::ADD, sizeof(T), 1, r.addr(r.length()), r.rkey.rkey) ==
          UCS_ERR_OUT_OF_RANGE);
    CHECK(ep->atomic_fetch(uct::atomic_op::ADD, sizeof(T), 1, 0, nullptr, target, r.rkey.rkey,
                           nullptr) == UCS_ERR_INVALID_PARAM);
}

} // namespace

TEST_CASE("self atomics: every op, 32 and 64 bit, post and fetch", "[self]")
{
    self_setup s;
    keyed_region r(s.entity, 256);
    const uint64_t all = (1u << 6) - 1;
    CHECK(s.entity.attr().atomic32_fetch == all);
    CHECK(s.entity.attr().atomic64_fetch == all);
    CHECK(s.entity.attr().atomic32_post == 0xf);
    CHECK(s.entity.attr().atomic64_post == 0xf);

    check_atomics<uint32_t>(s.ep, r);
    check_atomics<uint64_t>(s.ep, r);

    uint64_t result;
    CHECK(s.ep->atomic_post(uct::atomic_op::ADD, 2, 1, r.addr(), r.rkey.rkey) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(s.ep->atomic_fetch(uct::atomic_op::LAST, 8, 1, 0, &result, r.addr(), r.rkey.rkey,
                             nullptr) == UCS_ERR_UNSUPPORTED);
    CHECK(r.guards_intact());
}
