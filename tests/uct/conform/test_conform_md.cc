/*
 * Conformance: memory registration and remote keys. The md exposes memory
 * (registers it, or allocates it when it cannot register) and gives it
 * back; mkey_pack writes exactly rkey_packed_size bytes; the component
 * unpacks a key of that length (ours, and the peer's) and refuses every
 * shorter length and a blank key with UCS_ERR_INVALID_PARAM; two unpacks
 * of one key are independent; rkey_ptr, where the md offers it, maps the
 * peer's bytes and refuses addresses outside the region.
 */
#include "conform_ops.h"
#include "conform_pair.h"

#include <cstring>

namespace {

using namespace test::conform;
using test::counted_comp;
namespace mdf = uct::md_flag;

void registration_and_keys(const transport_spec &spec)
{
    CONFORM_OPEN(p, spec);
    const uct::md_attr &m = p.md().attr();
    if (!(m.flags & (mdf::REG | mdf::ALLOC))) {
        WARN(p.name() << ": skipped: the md attributes lack REG and ALLOC");
        return;
    }

    /* Exposed here: usable memory of at least the length asked for. */
    constexpr size_t LENGTH = 3 * 4096 + 100;
    {
        exposed_memory mem;
        REQUIRE(mem.open(p.md(), LENGTH));
        CHECK(mem.length() >= LENGTH);
        std::memset(mem.data(), 0x3c, mem.length());
        if (!(m.flags & mdf::NEED_RKEY)) {
            WARN(p.name() << ": remote keys not checked: the md attributes lack NEED_RKEY");
            return;
        }

        /* Packed: exactly rkey_packed_size bytes, all of them written. */
        const size_t size = m.rkey_packed_size;
        std::vector<uint8_t> a(size + 64, 0xa5), b(size + 64, 0x5a);
        REQUIRE(p.md().mkey_pack(mem.memh(), a.data()) == UCS_OK);
        REQUIRE(p.md().mkey_pack(mem.memh(), b.data()) == UCS_OK);
        CHECK(std::equal(a.begin(), a.begin() + long(size), b.begin()));
        CHECK(std::all_of(a.begin() + long(size), a.end(), [](uint8_t x) { return x == 0xa5; }));
        CHECK(std::all_of(b.begin() + long(size), b.end(), [](uint8_t x) { return x == 0x5a; }));

        /* Unpacked from exactly that length; nothing shorter, nothing blank. */
        std::vector<uint8_t> key(a.begin(), a.begin() + long(size));
        unpacked_key whole(p.component());
        CHECK(whole.unpack(key) == UCS_OK);
        for (size_t len = 0; len < size; ++len) {
            INFO("a key cut to " << len << " of " << size << " bytes");
            uct::rkey_bundle bundle;
            CHECK(p.component().rkey_unpack(key.data(), len, &bundle) == UCS_ERR_INVALID_PARAM);
        }
        for (uint8_t fill : {uint8_t(0), uint8_t(0xff)}) {
            INFO("a key of " << size << " bytes of 0x" << std::hex << unsigned(fill));
            std::vector<uint8_t> blank(size, fill);
            uct::rkey_bundle bundle;
            CHECK(p.component().rkey_unpack(blank.data(), size, &bundle) == UCS_ERR_INVALID_PARAM);
        }
    }

    /* The peer's key: two unpacks, one released, the other still works. */
    const uint64_t seed = 21;
    auto r              = p.expose(LENGTH, seed);
    unpacked_key second(p.component());
    REQUIRE(second.unpack(r.desc.packed_key) == UCS_OK);
    r.key->release();
    const auto puts             = put_kinds(p.attr());
    std::vector<uint8_t> expect = pattern(r.desc.length, seed);
    if (!puts.empty()) {
        auto bytes = pattern(16, 99);
        counted_comp comp;
        ucs_status_t status = p.retry([&] {
            return put(p.ep(), puts.front(), bytes.data(), bytes.size(), r.desc.address + 40,
                       second.rkey(), &comp);
        });
        CHECK(p.complete(status, comp) == UCS_OK);
        REQUIRE(p.flush_ep() == UCS_OK);
        std::copy(bytes.begin(), bytes.end(), expect.begin() + 40);
        std::vector<uint8_t> now;
        REQUIRE(p.peer().read(r.desc.address, r.desc.length, &now));
        CHECK(differ(now, expect) == "");
    }

    /* rkey_ptr: the peer's bytes, mapped here, only inside the region. */
    void *local = nullptr;
    if (m.flags & mdf::RKEY_PTR) {
        REQUIRE(p.component().rkey_ptr(second.bundle(), r.desc.address + 100, &local) == UCS_OK);
        CHECK(std::memcmp(local, expect.data() + 100, r.desc.length - 100) == 0);
        CHECK(p.component().rkey_ptr(second.bundle(), r.desc.address + r.desc.length, &local) !=
              UCS_OK);
        CHECK(p.component().rkey_ptr(second.bundle(), r.desc.address - 1, &local) != UCS_OK);
    } else {
        CHECK(p.component().rkey_ptr(second.bundle(), r.desc.address, &local) != UCS_OK);
    }
}

} // namespace

CONFORM_TEST_CASE("memory registration and remote keys", registration_and_keys)
