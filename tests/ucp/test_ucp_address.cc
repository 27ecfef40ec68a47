#include <ucp/core/ucp_address.h>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

namespace {

ucp::unpacked_address sample_address()
{
    ucp::unpacked_address addr;
    addr.worker_uuid = 0x0123456789abcdefull;
    addr.node_id     = ucp::local_node_id();
    addr.worker_name = "host:1234";
    addr.entries.push_back(
        {"posix", "posix", uct::device_type::SHM, {1, 2, 3, 4, 5, 6, 7, 8}, {9, 10}});
    addr.entries.push_back({"tcp",
                            "tcp",
                            uct::device_type::NET,
                            std::vector<uint8_t>(20, 0xab),
                            {0x11, 0x22, 0x33, 0x44}});
    addr.entries.push_back({"self", "self", uct::device_type::SELF, {}, {7}});
    addr.entries.push_back(
        {"rc", "ib", uct::device_type::NET, {1, 2}, {3}, ucp::address_entry_flag::CONNECT_TO_EP});
    return addr;
}

std::vector<uint8_t> pack(const ucp::unpacked_address &addr)
{
    void *buffer  = nullptr;
    size_t length = 0;
    REQUIRE(ucp::pack_address(addr, &buffer, &length) == UCS_OK);
    std::vector<uint8_t> bytes(static_cast<uint8_t *>(buffer),
                               static_cast<uint8_t *>(buffer) + length);
    std::free(buffer);
    return bytes;
}

bool same(const ucp::unpacked_address &a, const ucp::unpacked_address &b)
{
    if ((a.worker_uuid != b.worker_uuid) || (a.node_id != b.node_id) ||
        (a.worker_name != b.worker_name) || (a.net_only != b.net_only) ||
        (a.entries.size() != b.entries.size())) {
        return false;
    }
    for (size_t i = 0; i < a.entries.size(); ++i) {
        const auto &x = a.entries[i], &y = b.entries[i];
        if ((x.tl_name != y.tl_name) || (x.md_name != y.md_name) || (x.dev_type != y.dev_type) ||
            (x.dev_addr != y.dev_addr) || (x.iface_addr != y.iface_addr) || (x.flags != y.flags)) {
            return false;
        }
    }
    return true;
}

/*
 * Unpacks exactly `bytes` (a heap copy of that size, so that a read past the
 * end is caught by ASan). When accepted, the address must be consistent:
 * packing it again gives back the bytes it was read from.
 */
bool accepted_consistently(const std::vector<uint8_t> &bytes, bool *accepted)
{
    std::unique_ptr<uint8_t[]> copy(new uint8_t[bytes.size() + 1]);
    if (!bytes.empty()) {
        std::memcpy(copy.get(), bytes.data(), bytes.size());
    }
    ucp::unpacked_address out;
    ucs_status_t status = ucp::unpack_address(copy.get(), bytes.size(), &out);
    *accepted           = (status == UCS_OK);
    if (!*accepted) {
        return status == UCS_ERR_INVALID_PARAM;
    }
    void *repacked = nullptr;
    size_t length  = 0;
    if (ucp::pack_address(out, &repacked, &length) != UCS_OK) {
        return false;
    }
    bool ok = (length <= bytes.size()) && (std::memcmp(repacked, bytes.data(), length) == 0);
    std::free(repacked);
    return ok;
}

} // namespace

TEST_CASE("address round trip", "[ucp_address]")
{
    ucp::unpacked_address addr = sample_address();
    std::vector<uint8_t> bytes = pack(addr);
    CHECK(bytes.size() == ucp::address_packed_size(addr));

    ucp::unpacked_address out;
    REQUIRE(ucp::unpack_address(bytes.data(), bytes.size(), &out) == UCS_OK);
    CHECK(same(addr, out));

    size_t total  = 0;
    uint64_t uuid = 0;
    REQUIRE(ucp::address_peek(bytes.data(), ucp::address_header_size, &total, &uuid) == UCS_OK);
    CHECK(total == bytes.size());
    CHECK(uuid == addr.worker_uuid);
    CHECK(!out.net_only);

    /* A network-only address says so (ep wireups describe us by the same kind). */
    ucp::unpacked_address net      = sample_address();
    net.net_only                   = true;
    std::vector<uint8_t> net_bytes = pack(net);
    CHECK(net_bytes[5] == ucp::address_flag::NET_ONLY);
    REQUIRE(ucp::unpack_address(net_bytes.data(), net_bytes.size(), &out) == UCS_OK);
    CHECK(out.net_only);
    CHECK(same(net, out));

    /* A longer buffer is fine: the address carries its own length. */
    std::vector<uint8_t> longer = bytes;
    longer.resize(bytes.size() + 100, 0xee);
    REQUIRE(ucp::unpack_address(longer.data(), longer.size(), &out) == UCS_OK);
    CHECK(same(addr, out));

    /* An address without entries and with an empty name is valid. */
    ucp::unpacked_address empty;
    std::vector<uint8_t> empty_bytes = pack(empty);
    REQUIRE(ucp::unpack_address(empty_bytes.data(), empty_bytes.size(), &out) == UCS_OK);
    CHECK(same(empty, out));
}

TEST_CASE("address limits", "[ucp_address]")
{
    void *buffer               = nullptr;
    size_t length              = 0;
    ucp::unpacked_address addr = sample_address();

    SECTION("name too long") {
        addr.worker_name.assign(ucp::address_max_name + 1, 'x');
    }
    SECTION("tl name too long") {
        addr.entries[0].tl_name.assign(ucp::address_max_tl_name + 1, 't');
    }
    SECTION("empty md name") {
        addr.entries[1].md_name.clear();
    }
    SECTION("embedded NUL") {
        addr.entries[1].tl_name = std::string("tc\0p", 4);
    }
    SECTION("device address too long") {
        addr.entries[0].dev_addr.resize(70000);
    }
    SECTION("too many entries") {
        addr.entries.resize(ucp::address_max_entries + 1, addr.entries[2]);
    }
    SECTION("no connection mode") {
        addr.entries[2].flags = 0;
    }
    SECTION("unknown entry flag") {
        addr.entries[2].flags = 1u << 5;
    }
    SECTION("whole address too long") {
        addr.entries.resize(4, addr.entries[0]);
        for (auto &e : addr.entries) {
            e.iface_addr.resize(20000);
        }
    }
    CHECK(ucp::address_packed_size(addr) == 0);
    CHECK(ucp::pack_address(addr, &buffer, &length) == UCS_ERR_INVALID_PARAM);
}

TEST_CASE("malformed addresses are refused", "[ucp_address]")
{
    std::vector<uint8_t> good = pack(sample_address());
    ucp::unpacked_address out;
    out.worker_name = "untouched";

    CHECK(ucp::unpack_address(nullptr, 100, &out) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp::unpack_address(good.data(), good.size(), nullptr) == UCS_ERR_INVALID_PARAM);

    auto refused = [&](std::vector<uint8_t> bytes) {
        return ucp::unpack_address(bytes.data(), bytes.size(), &out) == UCS_ERR_INVALID_PARAM;
    };
    auto patched = [&](size_t offset, uint8_t value) {
        std::vector<uint8_t> b = good;
        b[offset]              = value;
        return b;
    };

    CHECK(refused(patched(0, 'X')));                      /* magic */
    CHECK(refused(patched(4, ucp::address_version + 1))); /* version */
    CHECK(refused(patched(4, ucp::address_version - 1))); /* the previous format */
    CHECK(refused(patched(5, 2)));                        /* header flags no version defines */
    CHECK(refused(patched(5, 0x81)));
    CHECK(refused(patched(6, 5)));         /* one entry more than present */
    CHECK(refused(patched(6, 3)));         /* one entry less: stray bytes */
    CHECK(refused(patched(12, 1)));        /* reserved */
    CHECK(refused(patched(32, 0)));        /* name length 0 (no NUL) */
    CHECK(refused(patched(33, 0)));        /* NUL inside the name */
    CHECK(refused(patched(32 + 10, 'x'))); /* name not terminated */
    /* The first entry's flags byte: none, or one no version defines. */
    const size_t flags_at = 33 + sizeof("host:1234") + 1 + sizeof("posix") + 1 + sizeof("posix") +
                            1;
    REQUIRE(good[flags_at] == ucp::address_entry_flag::CONNECT_TO_IFACE);
    CHECK(refused(patched(flags_at, 0)));
    CHECK(refused(patched(flags_at, 4)));
    CHECK(refused(patched(flags_at, 0x80)));

    std::vector<uint8_t> bigger = good; /* total_length beyond the buffer */
    uint32_t total              = static_cast<uint32_t>(good.size() + 1);
    std::memcpy(bigger.data() + 8, &total, sizeof(total));
    bigger.push_back(0);
    CHECK(refused(std::vector<uint8_t>(bigger.begin(), bigger.end() - 1)));
    CHECK(refused(bigger)); /* one stray byte at the end */

    total                     = ucp::address_max_length + 1; /* beyond the sane maximum */
    std::vector<uint8_t> huge = good;
    std::memcpy(huge.data() + 8, &total, sizeof(total));
    huge.resize(total);
    CHECK(refused(huge));

    for (size_t len = 0; len < good.size(); ++len) {
        INFO("truncated to " << len);
        CHECK(refused(std::vector<uint8_t>(good.begin(), good.begin() + len)));
    }
    CHECK(out.worker_name == "untouched");
}

TEST_CASE("address unpacker fuzz", "[ucp_address]")
{
    const std::vector<uint8_t> good = pack(sample_address());
    std::mt19937_64 rng(Catch::rngSeed() ? Catch::rngSeed() : 12345);
    auto below = [&](size_t n) { return static_cast<size_t>(rng() % n); };

    constexpr unsigned iterations = 100000;
    unsigned accepted_count = 0, inconsistent = 0;
    for (unsigned i = 0; i < iterations; ++i) {
        std::vector<uint8_t> bytes = good;
        switch (i % 5) {
        case 0: /* bit flips */
            for (size_t n = 1 + below(3); n > 0; --n) {
                bytes[below(bytes.size())] ^= static_cast<uint8_t>(1u << below(8));
            }
            break;
        case 1: /* truncation */
            bytes.resize(below(bytes.size()));
            break;
        case 2: { /* a random value in a random (length) position */
            size_t pos   = below(bytes.size());
            size_t width = std::min<size_t>(1u << below(3), bytes.size() - pos);
            for (size_t k = 0; k < width; ++k) {
                bytes[pos + k] = static_cast<uint8_t>(rng());
            }
            break;
        }
        case 3: /* random bytes after a valid header, random total length */
            for (size_t k = ucp::address_header_size; k < bytes.size(); ++k) {
                bytes[k] = static_cast<uint8_t>(rng());
            }
            bytes.resize(ucp::address_header_size + below(200));
            break;
        default: { /* lengths changed consistently with the buffer size */
            size_t extra = below(16);
            bytes.resize(bytes.size() + extra, static_cast<uint8_t>(rng()));
            uint32_t total = static_cast<uint32_t>(bytes.size() - below(extra + 1));
            std::memcpy(bytes.data() + 8, &total, sizeof(total));
            bytes[32 + below(bytes.size() - 32)] = static_cast<uint8_t>(below(40));
            break;
        }
        }
        bool accepted;
        if (!accepted_consistently(bytes, &accepted)) {
            ++inconsistent;
        }
        accepted_count += accepted ? 1 : 0;
    }
    INFO(accepted_count << " of " << iterations << " mutations were accepted");
    CHECK(inconsistent == 0);
    /* Flips inside address bytes stay valid, most others must not. */
    CHECK(accepted_count > 0);
    CHECK(accepted_count < iterations / 2);
}
