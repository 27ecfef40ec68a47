/*
 * Remote keys: the packed format (read back here with a decoder written
 * from the layout in ucp_rkey.h, not with the library's parser), unpacking
 * in the same and in another process, bounds, rkey_ptr, skipped entries,
 * malformed and randomly mutated keys.
 */
#include "mem_test_util.h"

#include <ucp/core/ucp_rkey.h>

#include "two_process.h"

#include <catch2/catch.hpp>

#include <bit>
#include <cstring>
#include <random>

using namespace mem_test;
using ucp_test::context_holder;
using ucp_test::env_guard;
using ucp_test::log_capture;

namespace {

/* The packed key, decoded from its documented layout. */
struct wire_entry {
    std::string component;
    std::string md;
    std::vector<uint8_t> key;
};

struct wire_key {
    uint32_t magic;
    uint8_t version;
    uint8_t flags;
    uint16_t num_entries;
    uint32_t total_length;
    uint8_t mem_type;
    uint8_t access;
    uint16_t reserved;
    uint64_t address;
    uint64_t length;
    uint64_t secret;
    std::vector<wire_entry> entries;
};

constexpr size_t entries_offset = 40; /* the fixed header's size */

template <typename T>
T read_at(const std::vector<uint8_t> &bytes, size_t offset)
{
    T value;
    REQUIRE(offset + sizeof(T) <= bytes.size());
    std::memcpy(&value, bytes.data() + offset, sizeof(T));
    return value;
}

template <typename T>
void write_at(std::vector<uint8_t> &bytes, size_t offset, T value)
{
    std::memcpy(bytes.data() + offset, &value, sizeof(T));
}

wire_key decode(const std::vector<uint8_t> &bytes)
{
    wire_key k;
    k.magic        = read_at<uint32_t>(bytes, 0);
    k.version      = read_at<uint8_t>(bytes, 4);
    k.flags        = read_at<uint8_t>(bytes, 5);
    k.num_entries  = read_at<uint16_t>(bytes, 6);
    k.total_length = read_at<uint32_t>(bytes, 8);
    k.mem_type     = read_at<uint8_t>(bytes, 12);
    k.access       = read_at<uint8_t>(bytes, 13);
    k.reserved     = read_at<uint16_t>(bytes, 14);
    k.address      = read_at<uint64_t>(bytes, 16);
    k.length       = read_at<uint64_t>(bytes, 24);
    k.secret       = read_at<uint64_t>(bytes, 32);
    size_t offset  = entries_offset;
    auto name      = [&]() {
        const size_t n = read_at<uint8_t>(bytes, offset);
        REQUIRE(offset + 1 + n <= bytes.size());
        REQUIRE(n >= 2);
        REQUIRE(bytes[offset + n] == 0);
        std::string text(reinterpret_cast<const char *>(bytes.data()) + offset + 1, n - 1);
        offset += 1 + n;
        return text;
    };
    for (unsigned i = 0; i < k.num_entries; ++i) {
        wire_entry e;
        e.component           = name();
        e.md                  = name();
        const auto key_length = read_at<uint16_t>(bytes, offset);
        offset += 2;
        REQUIRE(offset + key_length <= bytes.size());
        e.key.assign(bytes.begin() + long(offset), bytes.begin() + long(offset + key_length));
        offset += key_length;
        k.entries.push_back(e);
    }
    CHECK(offset == k.total_length);
    return k;
}

/* Encodes k; num_entries and total_length come from the content when
 * `fix_counts`, else as they are in k. */
std::vector<uint8_t> encode(const wire_key &k, bool fix_counts = true)
{
    std::vector<uint8_t> bytes(entries_offset);
    for (const wire_entry &e : k.entries) {
        for (const std::string &name : {e.component, e.md}) {
            bytes.push_back(uint8_t(name.size() + 1));
            bytes.insert(bytes.end(), name.begin(), name.end());
            bytes.push_back(0);
        }
        const auto key_length = uint16_t(e.key.size());
        bytes.resize(bytes.size() + 2);
        write_at(bytes, bytes.size() - 2, key_length);
        bytes.insert(bytes.end(), e.key.begin(), e.key.end());
    }
    write_at(bytes, 0, k.magic);
    write_at(bytes, 4, k.version);
    write_at(bytes, 5, k.flags);
    write_at(bytes, 6, fix_counts ? uint16_t(k.entries.size()) : k.num_entries);
    write_at(bytes, 8, fix_counts ? uint32_t(bytes.size()) : k.total_length);
    write_at(bytes, 12, k.mem_type);
    write_at(bytes, 13, k.access);
    write_at(bytes, 14, k.reserved);
    write_at(bytes, 16, k.address);
    write_at(bytes, 24, k.length);
    write_at(bytes, 32, k.secret);
    return bytes;
}

std::vector<uint8_t> pack(ucp_context_h context, ucp_mem_h memh)
{
    void *buffer = nullptr;
    size_t size  = 0;
    REQUIRE(ucp_rkey_pack(context, memh, &buffer, &size) == UCS_OK);
    std::vector<uint8_t> bytes(static_cast<uint8_t *>(buffer),
                               static_cast<uint8_t *>(buffer) + size);
    ucp_rkey_buffer_release(buffer);
    return bytes;
}

/* Unpacks with the length-aware call; the rkey (if any) is destroyed. */
ucs_status_t try_unpack(ucp_context_h context, const std::vector<uint8_t> &bytes, size_t length)
{
    ucp_rkey_h rkey     = nullptr;
    ucs_status_t status = ucp::rkey_unpack(*context, bytes.data(), length, &rkey);
    if (status == UCS_OK) {
        ucp_rkey_destroy(rkey);
    } else if (rkey != nullptr) {
        return UCS_ERR_NO_MESSAGE; /* an output on failure is a bug too */
    }
    return status;
}

ucs_status_t try_unpack(ucp_context_h context, const std::vector<uint8_t> &bytes)
{
    return try_unpack(context, bytes, bytes.size());
}

/* An rkey owned by the test. */
struct rkey_holder {
    rkey_holder(ucp_context_h context, const std::vector<uint8_t> &bytes)
    {
        status = ucp::rkey_unpack(*context, bytes.data(), &rkey);
    }
    ~rkey_holder() { ucp_rkey_destroy(rkey); }
    rkey_holder(const rkey_holder &)            = delete;
    rkey_holder &operator=(const rkey_holder &) = delete;

    ucp_rkey_h rkey = nullptr;
    ucs_status_t status;
};

/* Entries consistent with md_map, in md order, find() agreeing. */
bool consistent(const ucp_rkey &rkey)
{
    if (rkey.entries.size() != size_t(std::popcount(rkey.md_map))) {
        return false;
    }
    for (size_t i = 0; i < rkey.entries.size(); ++i) {
        const ucp::rkey_entry &entry = rkey.entries[i];
        if (((i > 0) && (rkey.entries[i - 1].md_index >= entry.md_index)) ||
            (rkey.find(entry.md_index) != &entry)) {
            return false;
        }
    }
    return true;
}

} // namespace

TEST_CASE("a packed key has the documented layout and unpacks in one context", "[ucp_rkey]")
{
    context_holder ctx(rma_params());
    REQUIRE(ctx.status == UCS_OK);
    mapped m(ctx.context, map_params(nullptr, 20000, UCP_MEM_MAP_ALLOCATE));
    REQUIRE(m.status == UCS_OK);

    const std::vector<uint8_t> bytes = pack(ctx.context, m.memh);
    size_t total                     = 0;
    REQUIRE(ucp::rkey_peek(bytes.data(), bytes.size(), &total) == UCS_OK);
    CHECK(total == bytes.size());
    CHECK(ucp::rkey_packed_size(*ctx.context, *m.memh) == bytes.size());

    const wire_key k = decode(bytes);
    CHECK(k.magic == 0x4b504355);
    CHECK(k.version == 2);
    CHECK(k.flags == 0);
    CHECK(k.secret == m.memh->secret);
    CHECK(k.secret != 0);
    CHECK(k.reserved == 0);
    CHECK(k.address == m.raddr());
    CHECK(k.length == m.length());
    CHECK(k.mem_type == UCS_MEMORY_TYPE_HOST);
    CHECK(k.access == ucp::rkey_access::ALL);
    /* One entry per md holding a handle, in md order, named like the md. */
    std::vector<unsigned> mds;
    for (unsigned i = 0; i < ctx.context->mds.size(); ++i) {
        if (m.memh->uct_memh(i) != nullptr) {
            mds.push_back(i);
        }
    }
    REQUIRE(k.entries.size() == mds.size());
    for (size_t e = 0; e < mds.size(); ++e) {
        const ucp::md_entry &md = ctx.context->mds[mds[e]];
        CHECK(k.entries[e].md == md.name);
        CHECK(k.entries[e].component == md.component->name());
        CHECK(k.entries[e].key.size() == md.md->attr().rkey_packed_size);
    }
    CHECK(encode(k) == bytes); /* nothing in the key but what is documented */

    rkey_holder r(ctx.context, bytes);
    REQUIRE(r.status == UCS_OK);
    CHECK(r.rkey->address == m.raddr());
    CHECK(r.rkey->length == m.length());
    CHECK(r.rkey->mem_type == UCS_MEMORY_TYPE_HOST);
    CHECK(r.rkey->allows(ucp::rkey_access::ALL));
    CHECK(r.rkey->md_map == m.memh->md_map);
    CHECK(consistent(*r.rkey));
    for (unsigned i = 0; i < ctx.context->mds.size(); ++i) {
        const ucp::rkey_entry *entry = r.rkey->find(i);
        REQUIRE((entry != nullptr) == (m.memh->uct_memh(i) != nullptr));
        if (entry != nullptr) {
            CHECK(entry->md_index == i);
            CHECK(entry->component == ctx.context->mds[i].component);
        }
    }
    CHECK(r.rkey->find(unsigned(ctx.context->mds.size())) == nullptr);
    CHECK(r.rkey->find(ucp::max_mds) == nullptr);
    CHECK(r.rkey->find(~0u) == nullptr);

    /* Bounds. */
    const uint64_t start = m.raddr(), end = start + m.length();
    CHECK(r.rkey->covers(start, m.length()));
    CHECK(r.rkey->covers(start, 0));
    CHECK(r.rkey->covers(end - 8, 8));
    CHECK(r.rkey->covers(end, 0));
    CHECK_FALSE(r.rkey->covers(end - 7, 8));
    CHECK_FALSE(r.rkey->covers(end, 1));
    CHECK_FALSE(r.rkey->covers(start - 1, 1));
    CHECK_FALSE(r.rkey->covers(start, m.length() + 1));
    CHECK_FALSE(r.rkey->covers(start + 8, SIZE_MAX));
    CHECK_FALSE(r.rkey->covers(UINT64_MAX, 2));
}

TEST_CASE("rkey_ptr reaches allocated memory directly, within the bounds", "[ucp_rkey]")
{
    context_holder ctx(rma_params());
    REQUIRE(ctx.status == UCS_OK);
    if (!has_rkey_ptr_alloc(ctx.context)) {
        WARN("no shared-memory md in this context");
        return;
    }

    auto round_trip = [&](mapped &m) {
        for (size_t i = 0; i < m.length(); ++i) {
            m.address()[i] = char(i * 7);
        }
        rkey_holder r(ctx.context, pack(ctx.context, m.memh));
        REQUIRE(r.status == UCS_OK);

        void *ptr = nullptr;
        REQUIRE(ucp_rkey_ptr(r.rkey, m.raddr() + 100, &ptr) == UCS_OK);
        auto *local = static_cast<char *>(ptr);
        CHECK(std::memcmp(local, m.address() + 100, m.length() - 100) == 0);
        local[0] = 'Q'; /* the same memory */
        CHECK(m.address()[100] == 'Q');

        REQUIRE(ucp_rkey_ptr(r.rkey, m.raddr() + m.length() - 1, &ptr) == UCS_OK);
        CHECK(*static_cast<char *>(ptr) == m.address()[m.length() - 1]);
        ptr = &ptr;
        CHECK(ucp_rkey_ptr(r.rkey, m.raddr() + m.length(), &ptr) == UCS_ERR_INVALID_ADDR);
        CHECK(ucp_rkey_ptr(r.rkey, m.raddr() - 1, &ptr) == UCS_ERR_INVALID_ADDR);
        CHECK(ptr == &ptr); /* untouched on failure */
        CHECK(ucp_rkey_ptr(r.rkey, m.raddr(), nullptr) == UCS_ERR_INVALID_PARAM);
        CHECK(ucp_rkey_ptr(nullptr, m.raddr(), &ptr) == UCS_ERR_INVALID_PARAM);
    };

    SECTION("anywhere") {
        mapped m(ctx.context, map_params(nullptr, 3 * page_size() + 10, UCP_MEM_MAP_ALLOCATE));
        REQUIRE(m.status == UCS_OK);
        round_trip(m);
    }
    SECTION("at a fixed address") {
        void *hole = free_range(4 * page_size());
        REQUIRE(hole != nullptr);
        mapped m(ctx.context,
                 map_params(hole, 2 * page_size(), UCP_MEM_MAP_ALLOCATE | UCP_MEM_MAP_FIXED));
        REQUIRE(m.status == UCS_OK);
        CHECK(m.address() == hole);
        round_trip(m);
    }
}

TEST_CASE("rkey_ptr of registered application memory is unreachable", "[ucp_rkey]")
{
    context_holder ctx(rma_params());
    REQUIRE(ctx.status == UCS_OK);
    std::vector<char> buffer(5000);
    mapped m(ctx.context, map_params(buffer.data(), buffer.size()));
    REQUIRE(m.status == UCS_OK);
    rkey_holder r(ctx.context, pack(ctx.context, m.memh));
    REQUIRE(r.status == UCS_OK);
    CHECK(r.rkey->entries.size() == size_t(std::popcount(registering_mds(ctx.context))));
    void *ptr = nullptr;
    CHECK(ucp_rkey_ptr(r.rkey, m.raddr() + 10, &ptr) == UCS_ERR_UNREACHABLE);
    CHECK(ucp_rkey_ptr(r.rkey, m.raddr() + buffer.size(), &ptr) == UCS_ERR_INVALID_ADDR);

    /* With UCX_TLS=self there is no shared-memory md even for allocated memory. */
    env_guard env;
    env.set("UCX_TLS", "self");
    context_holder self_ctx(rma_params());
    REQUIRE(self_ctx.status == UCS_OK);
    mapped a(self_ctx.context, map_params(nullptr, 4096, UCP_MEM_MAP_ALLOCATE));
    REQUIRE(a.status == UCS_OK);
    rkey_holder ra(self_ctx.context, pack(self_ctx.context, a.memh));
    REQUIRE(ra.status == UCS_OK);
    CHECK(ucp_rkey_ptr(ra.rkey, a.raddr(), &ptr) == UCS_ERR_UNREACHABLE);
}

TEST_CASE("the key carries the remote access the owner allowed", "[ucp_rkey]")
{
    context_holder ctx(rma_params());
    REQUIRE(ctx.status == UCS_OK);
    std::vector<char> buffer(100);
    const std::pair<unsigned, uint8_t> cases[] = {
        {UCP_MEM_MAP_PROT_LOCAL_READ | UCP_MEM_MAP_PROT_LOCAL_WRITE | UCP_MEM_MAP_PROT_REMOTE_READ,
         ucp::rkey_access::READ},
        {UCP_MEM_MAP_PROT_LOCAL_READ | UCP_MEM_MAP_PROT_LOCAL_WRITE | UCP_MEM_MAP_PROT_REMOTE_WRITE,
         ucp::rkey_access::WRITE},
        {UCP_MEM_MAP_PROT_LOCAL_READ | UCP_MEM_MAP_PROT_LOCAL_WRITE, 0},
    };
    for (const auto &[prot, access] : cases) {
        ucp_mem_map_params_t params = map_params(buffer.data(), buffer.size());
        params.field_mask |= UCP_MEM_MAP_PARAM_FIELD_PROT;
        params.prot = prot;
        mapped m(ctx.context, params);
        REQUIRE(m.status == UCS_OK);
        rkey_holder r(ctx.context, pack(ctx.context, m.memh));
        REQUIRE(r.status == UCS_OK);
        CHECK(r.rkey->remote_access == access);
        CHECK(r.rkey->allows(ucp::rkey_access::READ) == bool(access & ucp::rkey_access::READ));
        CHECK(r.rkey->allows(ucp::rkey_access::WRITE) == bool(access & ucp::rkey_access::WRITE));
    }
}

TEST_CASE("entries for mds the unpacking context lacks are skipped", "[ucp_rkey]")
{
    context_holder ctx(rma_params());
    REQUIRE(ctx.status == UCS_OK);
    std::vector<char> buffer(4096);
    mapped m(ctx.context, map_params(buffer.data(), buffer.size()));
    REQUIRE(m.status == UCS_OK);
    const std::vector<uint8_t> bytes = pack(ctx.context, m.memh);
    const wire_key k                 = decode(bytes);
    REQUIRE_FALSE(k.entries.empty());

    SECTION("a context with fewer transports") {
        env_guard env;
        env.set("UCX_TLS", "self");
        context_holder self_ctx(rma_params());
        REQUIRE(self_ctx.status == UCS_OK);
        REQUIRE(self_ctx.context->mds.size() == 1);
        rkey_holder r(self_ctx.context, bytes);
        REQUIRE(r.status == UCS_OK);
        REQUIRE(r.rkey->entries.size() == 1);
        CHECK(r.rkey->find(0) != nullptr);
        CHECK(r.rkey->covers(m.raddr(), buffer.size()));
    }
    SECTION("names nobody has, or a component paired with another's md") {
        wire_key x      = k;
        x.entries[0].md = "no_such_md";
        x.entries.push_back(k.entries[0]);
        x.entries.back().component = "no_such_component";
        rkey_holder r(ctx.context, encode(x));
        REQUIRE(r.status == UCS_OK);
        CHECK(r.rkey->entries.size() == k.entries.size() - 1);
        CHECK(consistent(*r.rkey));
        const int first = md_index_of(ctx.context, k.entries[0].md);
        CHECK(r.rkey->find(unsigned(first)) == nullptr);
    }
    SECTION("no entries at all") {
        wire_key x = k;
        x.entries.clear();
        rkey_holder r(ctx.context, encode(x));
        REQUIRE(r.status == UCS_OK);
        CHECK(r.rkey->entries.empty());
        void *ptr = nullptr;
        CHECK(ucp_rkey_ptr(r.rkey, m.raddr(), &ptr) == UCS_ERR_UNREACHABLE);
    }
}

TEST_CASE("malformed keys are refused with INVALID_PARAM", "[ucp_rkey]")
{
    context_holder ctx(rma_params());
    REQUIRE(ctx.status == UCS_OK);
    mapped m(ctx.context, map_params(nullptr, 8192, UCP_MEM_MAP_ALLOCATE));
    REQUIRE(m.status == UCS_OK);
    const std::vector<uint8_t> bytes = pack(ctx.context, m.memh);
    const wire_key k                 = decode(bytes);
    REQUIRE(try_unpack(ctx.context, bytes) == UCS_OK);

    /* Every truncation. */
    for (size_t length = 0; length < bytes.size(); ++length) {
        CAPTURE(length);
        CHECK(try_unpack(ctx.context, bytes, length) == UCS_ERR_INVALID_PARAM);
    }

    auto refused = [&](auto &&edit, bool fix_counts = true) {
        wire_key x = k;
        edit(x);
        const std::vector<uint8_t> bad = encode(x, fix_counts);
        CHECK(try_unpack(ctx.context, bad) == UCS_ERR_INVALID_PARAM);
        /* The pointer-only form too, with room behind it for what it reads. */
        std::vector<uint8_t> padded(bad);
        padded.resize(ucp::rkey_max_length + 64);
        ucp_rkey_h rkey = nullptr;
        CHECK(ucp::rkey_unpack(*ctx.context, padded.data(), &rkey) == UCS_ERR_INVALID_PARAM);
        CHECK(rkey == nullptr);
    };
    refused([](wire_key &x) { x.magic ^= 0x100; });
    refused([](wire_key &x) { x.version = 3; });
    refused([](wire_key &x) { x.version = 1; }); /* the format before secrets */
    refused([](wire_key &x) { x.version = 0; });
    refused([](wire_key &x) { x.flags = 2; }); /* a flag this version does not know */
    refused([](wire_key &x) { x.flags = 0x80; });
    refused([](wire_key &x) { x.reserved = 4; });
    refused([](wire_key &x) { x.mem_type = UCS_MEMORY_TYPE_LAST; });
    refused([](wire_key &x) { x.mem_type = 0xff; });
    refused([](wire_key &x) { x.access = 4; });
    refused([](wire_key &x) {
        x.address = UINT64_MAX - 10;
        x.length  = 11;
    });
    refused([](wire_key &x) { x.length = UINT64_MAX; });
    /* Counts and lengths that disagree with the content. */
    refused(
        [](wire_key &x) {
        x.num_entries  = uint16_t(x.entries.size() + 1);
        x.total_length = 0;
        },
        false);
    auto with_counts = [&](auto &&edit) {
        return [edit, &k](wire_key &x) {
            x              = k;
            x.num_entries  = uint16_t(k.entries.size());
            x.total_length = uint32_t(encode(k).size());
            edit(x);
        };
    };
    refused(with_counts([](wire_key &x) { x.num_entries += 1; }), false);
    refused(with_counts([](wire_key &x) { x.num_entries -= 1; }), false);
    refused(with_counts([](wire_key &x) { x.num_entries = 65; }), false);
    refused(with_counts([](wire_key &x) { x.total_length -= 1; }), false);
    refused(with_counts([](wire_key &x) { x.total_length += 1; }), false);
    refused(with_counts([](wire_key &x) { x.total_length = 31; }), false);
    refused(with_counts([](wire_key &x) { x.total_length = 0; }), false);
    refused(with_counts([](wire_key &x) { x.total_length = 64 * 1024 + 1; }), false);
    refused(with_counts([](wire_key &x) { x.total_length = UINT32_MAX; }), false);
    /* Entries. */
    refused([](wire_key &x) { x.entries[0].md = ""; });
    refused([](wire_key &x) { x.entries[0].component = ""; });
    refused([](wire_key &x) { x.entries[0].md = std::string(32, 'm'); });
    refused([](wire_key &x) { x.entries[0].md = std::string("po\0six", 6); });
    refused([](wire_key &x) { x.entries[0].key.clear(); });
    refused([](wire_key &x) { x.entries.push_back(x.entries[0]); });
    /* A key an md recognises as corrupt. */
    refused([](wire_key &x) {
        for (auto &entry : x.entries) {
            entry.key[0] ^= 0xff; /* the magic of every uct key here */
        }
    });
    refused([](wire_key &x) { x.entries[0].key.pop_back(); });
    refused([](wire_key &x) { x.entries[0].key.push_back(0); });

    /* Bytes that are not even a header. */
    std::vector<uint8_t> garbage(ucp::rkey_max_length, 0xa5);
    CHECK(try_unpack(ctx.context, garbage) == UCS_ERR_INVALID_PARAM);
    ucp_rkey_h rkey = nullptr;
    CHECK(ucp::rkey_unpack(*ctx.context, garbage.data(), &rkey) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp::rkey_unpack(*ctx.context, nullptr, &rkey) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp::rkey_unpack(*ctx.context, nullptr, 100, &rkey) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp::rkey_unpack(*ctx.context, bytes.data(), bytes.size(), nullptr) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(rkey == nullptr);
}

TEST_CASE("randomly mutated keys unpack or are refused, never crash", "[ucp_rkey]")
{
    context_holder ctx(rma_params());
    REQUIRE(ctx.status == UCS_OK);
    mapped m(ctx.context, map_params(nullptr, 3 * page_size(), UCP_MEM_MAP_ALLOCATE));
    REQUIRE(m.status == UCS_OK);
    const std::vector<uint8_t> bytes = pack(ctx.context, m.memh);

    std::mt19937_64 rng(Catch::rngSeed() ^ 0x5eed);
    auto pick       = [&](size_t n) { return size_t(rng() % n); };
    size_t accepted = 0, refused = 0, other = 0;
    for (int iteration = 0; iteration < 5000; ++iteration) {
        std::vector<uint8_t> x = bytes;
        const int edits        = 1 + int(pick(4));
        for (int e = 0; e < edits; ++e) {
            switch (pick(6)) {
            case 0: /* flip bits anywhere */
                x[pick(x.size())] ^= uint8_t(1u << pick(8));
                break;
            case 1: /* a random byte, mostly in the header and the lengths */
                x[pick(std::min<size_t>(x.size(), 48))] = uint8_t(rng());
                break;
            case 2: /* truncate */
                x.resize(pick(x.size() + 1));
                break;
            case 3: /* append garbage */
                for (size_t n = pick(16); n > 0; --n) {
                    x.push_back(uint8_t(rng()));
                }
                break;
            case 4: /* cut a piece out of the middle */
                if (x.size() > entries_offset + 8) {
                    const size_t at = entries_offset + pick(x.size() - entries_offset - 8);
                    x.erase(x.begin() + long(at), x.begin() + long(at + 1 + pick(8)));
                }
                break;
            default: /* small integers where lengths live */
                if (x.size() > entries_offset + 2) {
                    x[entries_offset + pick(x.size() - entries_offset)] = uint8_t(pick(40));
                }
                break;
            }
            if (x.empty()) {
                break;
            }
        }

        /* Length-aware unpack, and the pointer-only one on a padded copy. */
        ucs_status_t status = try_unpack(ctx.context, x);
        std::vector<uint8_t> padded(x);
        padded.resize(ucp::rkey_max_length + 64, uint8_t(rng()));
        ucp_rkey_h rkey             = nullptr;
        ucs_status_t pointer_status = ucp::rkey_unpack(*ctx.context, padded.data(), &rkey);
        if (pointer_status == UCS_OK) {
            if (!consistent(*rkey)) {
                ++other;
            }
            /* Whatever it says, rkey_ptr stays inside its own bounds. */
            void *ptr = nullptr;
            if ((ucp_rkey_ptr(rkey, rkey->address + rkey->length, &ptr) == UCS_OK) &&
                (rkey->length != UINT64_MAX)) {
                ++other;
            }
            ucp_rkey_destroy(rkey);
        }

        if (status == UCS_OK) {
            ++accepted;
        } else if (status == UCS_ERR_INVALID_PARAM) {
            ++refused;
        } else {
            ++other;
            UNSCOPED_INFO("iteration " << iteration << ": " << ucs_status_string(status));
        }
        if ((pointer_status != UCS_OK) && (pointer_status != UCS_ERR_INVALID_PARAM)) {
            ++other;
        }
    }
    CHECK(other == 0);
    CHECK(accepted > 0);
    CHECK(refused > 0);
    CHECK(accepted + refused == 5000);
}

TEST_CASE("the internal pack exposes part of a handle on chosen mds", "[ucp_rkey]")
{
    context_holder ctx(rma_params());
    REQUIRE(ctx.status == UCS_OK);
    std::vector<char> buffer(10000);
    mapped m(ctx.context, map_params(buffer.data(), buffer.size()));
    REQUIRE(m.status == UCS_OK);
    REQUIRE(m.memh->md_map != 0);

    const uint64_t one = m.memh->md_map & (~m.memh->md_map + 1); /* lowest md */
    const size_t size  = ucp::rkey_packed_size(*ctx.context, *m.memh, one);
    std::vector<uint8_t> bytes(size);
    size_t packed = 0;
    REQUIRE(ucp::rkey_pack(*ctx.context, *m.memh, one, m.raddr() + 100, 50, bytes.data(),
                           bytes.size(), &packed) == UCS_OK);
    CHECK(packed == size);
    rkey_holder r(ctx.context, bytes);
    REQUIRE(r.status == UCS_OK);
    CHECK(r.rkey->address == m.raddr() + 100);
    CHECK(r.rkey->length == 50);
    CHECK(r.rkey->md_map == one);
    CHECK(r.rkey->covers(m.raddr() + 100, 50));
    CHECK_FALSE(r.rkey->covers(m.raddr() + 99, 2));
    CHECK_FALSE(r.rkey->covers(m.raddr() + 149, 2));

    CHECK(ucp::rkey_pack(*ctx.context, *m.memh, one, m.raddr() + 9990, 11, bytes.data(),
                         bytes.size(), &packed) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp::rkey_pack(*ctx.context, *m.memh, one, m.raddr() - 1, 1, bytes.data(), bytes.size(),
                         &packed) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp::rkey_pack(*ctx.context, *m.memh, one, m.raddr(), 1, bytes.data(), bytes.size() - 1,
                         &packed) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp::rkey_pack(*ctx.context, *m.memh, one, m.raddr(), 1, nullptr, bytes.size(),
                         &packed) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp::rkey_peek(bytes.data(), ucp::rkey_header_size - 1, &packed) ==
          UCS_ERR_INVALID_PARAM);
}

TEST_CASE("the key of an empty handle covers nothing", "[ucp_rkey]")
{
    context_holder ctx(rma_params());
    REQUIRE(ctx.status == UCS_OK);
    char byte = 0;
    mapped m(ctx.context, map_params(&byte, 0));
    REQUIRE(m.status == UCS_OK);
    rkey_holder r(ctx.context, pack(ctx.context, m.memh));
    REQUIRE(r.status == UCS_OK);
    CHECK(r.rkey->entries.empty());
    CHECK_FALSE(r.rkey->covers(m.raddr(), 1));
    void *ptr = nullptr;
    CHECK(ucp_rkey_ptr(r.rkey, m.raddr(), &ptr) == UCS_ERR_INVALID_ADDR);
}

TEST_CASE("rkey_pack refuses bad arguments", "[ucp_rkey]")
{
    context_holder ctx(rma_params());
    REQUIRE(ctx.status == UCS_OK);
    context_holder other(rma_params());
    REQUIRE(other.status == UCS_OK);
    std::vector<char> buffer(64);
    mapped m(ctx.context, map_params(buffer.data(), buffer.size()));
    REQUIRE(m.status == UCS_OK);

    log_capture log(UCS_LOG_LEVEL_ERROR);
    void *key   = nullptr;
    size_t size = 0;
    CHECK(ucp_rkey_pack(nullptr, m.memh, &key, &size) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_rkey_pack(ctx.context, nullptr, &key, &size) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_rkey_pack(ctx.context, m.memh, nullptr, &size) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_rkey_pack(ctx.context, m.memh, &key, nullptr) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_rkey_pack(other.context, m.memh, &key, &size) == UCS_ERR_INVALID_PARAM);
    CHECK(key == nullptr);
    CHECK(log.text().find("ucp_rkey_pack") != std::string::npos);
    ucp_rkey_buffer_release(nullptr); /* must not crash */
    ucp_rkey_destroy(nullptr);
}

TEST_CASE("destroying a handle that is not a live rkey is reported and ignored", "[ucp_rkey]")
{
    /* Open MPI 4.1.4's OpenSHMEM does this at finalize over tcp: the handle
     * comes from memory it freed, a stale key or bytes of garbage. */
    context_holder ctx(rma_params());
    REQUIRE(ctx.status == UCS_OK);
    mapped m(ctx.context, map_params(nullptr, 4096, UCP_MEM_MAP_ALLOCATE));
    REQUIRE(m.status == UCS_OK);
    const std::vector<uint8_t> bytes = pack(ctx.context, m.memh);
    ucp_rkey_h first = nullptr, second = nullptr;
    REQUIRE(ucp::rkey_unpack(*ctx.context, bytes.data(), &first) == UCS_OK);
    REQUIRE(ucp::rkey_unpack(*ctx.context, bytes.data(), &second) == UCS_OK);

    log_capture log(UCS_LOG_LEVEL_WARN);
    ucp_rkey_destroy(first);
    CHECK(log.text().empty());
    ucp_rkey_destroy(first); /* twice */
    CHECK(log.text().find("not a live remote key") != std::string::npos);
    auto *garbage = reinterpret_cast<ucp_rkey_h>(uintptr_t(0x4d4d4d4d4d4d4d4dull));
    ucp_rkey_destroy(garbage); /* never dereferenced */
    CHECK(log.text().find("0x4d4d4d4d4d4d4d4d") != std::string::npos);

    /* The other key still works and goes away normally. */
    void *direct        = nullptr;
    const uint64_t word = 0x0123456789abcdefull;
    std::memcpy(reinterpret_cast<void *>(m.raddr()), &word, sizeof(word));
    REQUIRE(ucp_rkey_ptr(second, m.raddr(), &direct) == UCS_OK);
    CHECK(std::memcmp(direct, &word, sizeof(word)) == 0);
    const size_t warnings = log.text().size();
    ucp_rkey_destroy(second);
    CHECK(log.text().size() == warnings);
}

TEST_CASE("two processes: a peer reads and writes allocated memory through rkey_ptr", "[ucp_rkey]")
{
    context_holder ctx(rma_params());
    REQUIRE(ctx.status == UCS_OK);
    if (!has_rkey_ptr_alloc(ctx.context)) {
        WARN("no shared-memory md in this context");
        return;
    }
    const size_t length = 5 * page_size();
    mapped m(ctx.context, map_params(nullptr, length, UCP_MEM_MAP_ALLOCATE));
    REQUIRE(m.status == UCS_OK);
    for (size_t i = 0; i < length; ++i) {
        m.address()[i] = char(i % 251);
    }

    test::child_process child([](int fd) {
        ucp_params_t params = rma_params();
        ucp_context_h context;
        TEST_CHILD_CHECK(ucp_init(&params, nullptr, &context) == UCS_OK);
        std::vector<uint8_t> key;
        TEST_CHILD_CHECK(test::recv_blob(fd, &key));
        ucp_rkey_h rkey = nullptr;
        TEST_CHILD_CHECK(ucp::rkey_unpack(*context, key.data(), &rkey) == UCS_OK);

        void *ptr = nullptr;
        TEST_CHILD_CHECK(ucp_rkey_ptr(rkey, rkey->address, &ptr) == UCS_OK);
        auto *remote = static_cast<char *>(ptr);
        for (size_t i = 0; i < rkey->length; ++i) {
            TEST_CHILD_CHECK(remote[i] == char(i % 251));
        }
        std::strcpy(remote + 1000, "written by the child");
        TEST_CHILD_CHECK(ucp_rkey_ptr(rkey, rkey->address + rkey->length, &ptr) ==
                         UCS_ERR_INVALID_ADDR);
        TEST_CHILD_CHECK(test::sync_peer(fd));
        ucp_rkey_destroy(rkey);
        ucp_cleanup(context);
        return 0;
    });
    REQUIRE(test::send_blob(child.fd(), pack(ctx.context, m.memh)));
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(std::strcmp(m.address() + 1000, "written by the child") == 0);
    CHECK(child.wait() == 0);
}

TEST_CASE("two processes: registered application memory is not directly reachable", "[ucp_rkey]")
{
    context_holder ctx(rma_params());
    REQUIRE(ctx.status == UCS_OK);
    std::vector<char> buffer(8000, 'b');
    mapped m(ctx.context, map_params(buffer.data(), buffer.size()));
    REQUIRE(m.status == UCS_OK);
    const uint64_t expected_entries = uint64_t(std::popcount(m.memh->md_map));

    test::child_process child([expected_entries](int fd) {
        ucp_params_t params = rma_params();
        ucp_context_h context;
        TEST_CHILD_CHECK(ucp_init(&params, nullptr, &context) == UCS_OK);
        std::vector<uint8_t> key;
        TEST_CHILD_CHECK(test::recv_blob(fd, &key));
        ucp_rkey_h rkey = nullptr;
        TEST_CHILD_CHECK(ucp::rkey_unpack(*context, key.data(), key.size(), &rkey) == UCS_OK);
        /* Every md's key is usable here (same transports), none maps it. */
        TEST_CHILD_CHECK(rkey->entries.size() == expected_entries);
        void *ptr = nullptr;
        TEST_CHILD_CHECK(ucp_rkey_ptr(rkey, rkey->address + 1, &ptr) == UCS_ERR_UNREACHABLE);
        TEST_CHILD_CHECK(rkey->covers(rkey->address, 8000));
        TEST_CHILD_CHECK(!rkey->covers(rkey->address, 8001));
        ucp_rkey_destroy(rkey);
        ucp_cleanup(context);
        return 0;
    });
    REQUIRE(test::send_blob(child.fd(), pack(ctx.context, m.memh)));
    CHECK(child.wait() == 0);
}
