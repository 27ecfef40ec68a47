/*
 * Datatypes: packer/unpacker round trips over every class pair with random
 * fragmentation, to_iov, truncation, bad datatypes, generic call counts.
 */
#include "ucp_test_util.h"

#include <ucp/dt/dt.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

using namespace ucp_test;
using ucp::dt::dt_class;
using ucp::dt::packer;
using ucp::dt::unpacker;

namespace {

using bytes = std::vector<uint8_t>;

bytes random_bytes(std::mt19937_64 &rng, size_t length)
{
    bytes data(length);
    for (auto &b : data) {
        b = static_cast<uint8_t>(rng());
    }
    return data;
}

size_t uniform(std::mt19937_64 &rng, size_t lo, size_t hi)
{
    return std::uniform_int_distribution<size_t>(lo, hi)(rng);
}

/*
 * A generic datatype whose packed stream is its buffer reversed, so a
 * plain memcpy implementation would produce wrong data. Counts calls.
 */
struct generic_calls {
    int start_pack             = 0;
    int start_unpack           = 0;
    int packed_size            = 0;
    int pack                   = 0;
    int unpack                 = 0;
    int finish                 = 0;
    int live_states            = 0;
    ucs_status_t unpack_status = UCS_OK; /* what unpack returns */
};

struct reversed_state {
    generic_calls *calls;
    uint8_t *buffer;
    size_t count;
};

void *reversed_start(generic_calls *calls, const void *buffer, size_t count)
{
    ++calls->live_states;
    return new reversed_state{calls, static_cast<uint8_t *>(const_cast<void *>(buffer)), count};
}

const ucp_generic_dt_ops_t reversed_ops = {
    [](void *context, const void *buffer, size_t count) -> void * {
        auto *calls = static_cast<generic_calls *>(context);
        ++calls->start_pack;
        return reversed_start(calls, buffer, count);
    },
    [](void *context, void *buffer, size_t count) -> void * {
        auto *calls = static_cast<generic_calls *>(context);
        ++calls->start_unpack;
        return reversed_start(calls, buffer, count);
    },
    [](void *state) -> size_t {
        auto *s = static_cast<reversed_state *>(state);
        ++s->calls->packed_size;
        return s->count;
    },
    [](void *state, size_t offset, void *dest, size_t max_length) -> size_t {
        auto *s = static_cast<reversed_state *>(state);
        ++s->calls->pack;
        size_t n = std::min(max_length, s->count - offset);
        for (size_t i = 0; i < n; ++i) {
            static_cast<uint8_t *>(dest)[i] = s->buffer[s->count - 1 - (offset + i)];
        }
        return n;
    },
    [](void *state, size_t offset, const void *src, size_t length) -> ucs_status_t {
        auto *s = static_cast<reversed_state *>(state);
        ++s->calls->unpack;
        if (offset + length > s->count) {
            return UCS_ERR_INVALID_PARAM; /* the unpacker must clip */
        }
        for (size_t i = 0; i < length; ++i) {
            s->buffer[s->count - 1 - (offset + i)] = static_cast<const uint8_t *>(src)[i];
        }
        return s->calls->unpack_status;
    },
    [](void *state) {
    auto *s = static_cast<reversed_state *>(state);
    ++s->calls->finish;
    --s->calls->live_states;
    delete s;
    }};

/* Owns a generic datatype handle. */
class generic_type {
public:
    explicit generic_type(const ucp_generic_dt_ops_t &ops = reversed_ops)
    {
        REQUIRE(ucp_dt_create_generic(&ops, &calls, &handle) == UCS_OK);
        CHECK((handle & UCP_DATATYPE_CLASS_MASK) == UCP_DATATYPE_GENERIC);
    }
    ~generic_type() { ucp_dt_destroy(handle); }
    generic_type(const generic_type &)            = delete;
    generic_type &operator=(const generic_type &) = delete;

    generic_calls calls;
    ucp_datatype_t handle = 0;
};

/*
 * A buffer of one class whose packed stream has a given length: what the
 * user passes as (buffer, count, datatype), plus the storage behind it.
 */
struct user_buffer {
    dt_class cls;
    ucp_datatype_t datatype = 0;
    void *buffer            = nullptr;
    size_t count            = 0;
    bytes contig;              /* contig and generic storage */
    std::vector<bytes> pieces; /* iov storage */
    std::vector<ucp_dt_iov_t> iov;

    /* The stream bytes as the buffer holds them now. */
    bytes stream() const
    {
        switch (cls) {
        case dt_class::contig:
            return contig;
        case dt_class::iov: {
            bytes all;
            for (const bytes &p : pieces) {
                all.insert(all.end(), p.begin(), p.end());
            }
            return all;
        }
        case dt_class::generic:
            return bytes(contig.rbegin(), contig.rend());
        }
        return {};
    }
};

/* Splits `length` into random iov pieces, some of length 0. */
std::vector<size_t> random_split(std::mt19937_64 &rng, size_t length)
{
    std::vector<size_t> sizes;
    size_t left = length;
    while (left > 0) {
        size_t n = (uniform(rng, 0, 4) == 0) ? 0 : uniform(rng, 1, left);
        sizes.push_back(n);
        left -= n;
    }
    if (uniform(rng, 0, 1) == 0) {
        sizes.push_back(0); /* a trailing empty entry */
    }
    return sizes;
}

/* A buffer of class `cls` holding `stream` (length a multiple of elem). */
std::unique_ptr<user_buffer> make_buffer(std::mt19937_64 &rng, dt_class cls, const bytes &stream,
                                         size_t elem, ucp_datatype_t generic_handle)
{
    auto ub = std::make_unique<user_buffer>();
    ub->cls = cls;
    switch (cls) {
    case dt_class::contig:
        ub->contig   = stream;
        ub->datatype = ucp_dt_make_contig(elem);
        ub->buffer   = ub->contig.data();
        ub->count    = stream.size() / elem;
        break;
    case dt_class::iov: {
        size_t pos = 0;
        for (size_t n : random_split(rng, stream.size())) {
            ub->pieces.emplace_back(stream.begin() + pos, stream.begin() + pos + n);
            pos += n;
        }
        for (bytes &p : ub->pieces) {
            /* data() of an empty vector may be NULL: fine for length 0 */
            ub->iov.push_back({p.data(), p.size()});
        }
        ub->datatype = ucp_dt_make_iov();
        ub->buffer   = ub->iov.data();
        ub->count    = ub->iov.size();
        break;
    }
    case dt_class::generic:
        ub->contig.assign(stream.rbegin(), stream.rend());
        ub->datatype = generic_handle;
        ub->buffer   = ub->contig.data();
        ub->count    = stream.size();
        break;
    }
    return ub;
}

const dt_class all_classes[] = {dt_class::contig, dt_class::iov, dt_class::generic};

const char *class_name(dt_class cls)
{
    switch (cls) {
    case dt_class::contig:
        return "contig";
    case dt_class::iov:
        return "iov";
    case dt_class::generic:
        return "generic";
    }
    return "?";
}

struct fragment {
    size_t offset;
    size_t length;
};

/* Random cut of [0, length) into fragments of 1..max_frag bytes. */
std::vector<fragment> random_fragments(std::mt19937_64 &rng, size_t length, size_t max_frag)
{
    std::vector<fragment> frags;
    for (size_t off = 0; off < length;) {
        size_t n = uniform(rng, 1, std::min(max_frag, length - off));
        frags.push_back({off, n});
        off += n;
    }
    return frags;
}

} // namespace

TEST_CASE("classify accepts the three classes and rejects the rest", "[ucp_dt]")
{
    log_capture log(UCS_LOG_LEVEL_ERROR);
    generic_type gen;
    dt_class cls = dt_class::generic;

    CHECK(ucp::dt::classify(ucp_dt_make_contig(1), &cls) == UCS_OK);
    CHECK(cls == dt_class::contig);
    CHECK(ucp::dt::classify(ucp_dt_make_iov(), &cls) == UCS_OK);
    CHECK(cls == dt_class::iov);
    CHECK(ucp::dt::classify(gen.handle, &cls) == UCS_OK);
    CHECK(cls == dt_class::generic);

    CHECK(ucp::dt::classify(ucp_dt_make_contig(0), &cls) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp::dt::classify(UCP_DATATYPE_STRIDED, &cls) == UCS_ERR_INVALID_PARAM);
    for (ucp_datatype_t bad_class = 3; bad_class < 7; ++bad_class) {
        CHECK(ucp::dt::classify((8 << UCP_DATATYPE_SHIFT) | bad_class, &cls) ==
              UCS_ERR_INVALID_PARAM);
    }
    CHECK(ucp::dt::classify(UCP_DATATYPE_GENERIC, &cls) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp::dt::classify(ucp_dt_make_iov() | (1 << UCP_DATATYPE_SHIFT), &cls) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(log.text().find("invalid datatype") != std::string::npos);
}

TEST_CASE("start rejects bad datatypes and buffers", "[ucp_dt]")
{
    log_capture log(UCS_LOG_LEVEL_ERROR);
    packer p;
    unpacker u;
    uint8_t data[16] = {};

    for (ucp_datatype_t bad : {ucp_dt_make_contig(0), ucp_datatype_t(UCP_DATATYPE_STRIDED),
                               ucp_datatype_t(UCP_DATATYPE_GENERIC), ucp_datatype_t(5)}) {
        CAPTURE(bad);
        CHECK(p.start(bad, data, 1) == UCS_ERR_INVALID_PARAM);
        CHECK(u.start(bad, data, 1) == UCS_ERR_INVALID_PARAM);
    }

    /* count * element size overflows */
    CHECK(p.start(ucp_dt_make_contig(16), data, SIZE_MAX / 8) == UCS_ERR_INVALID_PARAM);
    CHECK(u.start(ucp_dt_make_contig(16), data, SIZE_MAX / 8) == UCS_ERR_INVALID_PARAM);
    /* NULL buffers with data to move */
    CHECK(p.start(ucp_dt_make_contig(1), nullptr, 1) == UCS_ERR_INVALID_PARAM);
    CHECK(u.start(ucp_dt_make_contig(1), nullptr, 1) == UCS_ERR_INVALID_PARAM);
    CHECK(p.start(ucp_dt_make_iov(), nullptr, 1) == UCS_ERR_INVALID_PARAM);

    ucp_dt_iov_t iov[2] = {{data, 8}, {nullptr, 4}};
    CHECK(p.start(ucp_dt_make_iov(), iov, 2) == UCS_ERR_INVALID_PARAM);
    CHECK(u.start(ucp_dt_make_iov(), iov, 2) == UCS_ERR_INVALID_PARAM);
    iov[1] = {data, SIZE_MAX - 4};
    CHECK(p.start(ucp_dt_make_iov(), iov, 2) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp::dt::iov_total_length(iov, 2) == SIZE_MAX);

    /* an absurd iov count is refused before any entry is read */
    CHECK(p.start(ucp_dt_make_iov(), iov, ucp::dt::max_iov_count + 1) == UCS_ERR_INVALID_PARAM);
    CHECK(u.start(ucp_dt_make_iov(), iov, SIZE_MAX) == UCS_ERR_INVALID_PARAM);

    /* A failed start leaves an empty, usable object behind. */
    CHECK(p.length() == 0);
    CHECK(p.pack(data, 0, sizeof(data)) == 0);
    CHECK(u.capacity() == 0);
    CHECK(u.unpack(data, 0, 1) == UCS_ERR_MESSAGE_TRUNCATED);
    p.finish();
    u.finish();

    /* A generic type without the callbacks a direction needs. */
    ucp_generic_dt_ops_t send_only = reversed_ops;
    send_only.start_unpack         = nullptr;
    generic_type gen(send_only);
    CHECK(u.start(gen.handle, data, 4) == UCS_ERR_INVALID_PARAM);
    REQUIRE(p.start(gen.handle, data, 4) == UCS_OK);
    p.finish();
    CHECK(gen.calls.start_unpack == 0);
    CHECK(gen.calls.live_states == 0);
    CHECK(log.text().find("cannot unpack") != std::string::npos);
}

TEST_CASE("generic datatype create and destroy check their arguments", "[ucp_dt]")
{
    log_capture log(UCS_LOG_LEVEL_ERROR);
    ucp_datatype_t dt = 0;
    CHECK(ucp_dt_create_generic(nullptr, nullptr, &dt) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_dt_create_generic(&reversed_ops, nullptr, nullptr) == UCS_ERR_INVALID_PARAM);
    CHECK(log.text().find("ucp_dt_create_generic") != std::string::npos);

    /* Two handles are distinct objects carrying their own context. */
    generic_type a, b;
    CHECK(a.handle != b.handle);
    CHECK(ucp::dt::generic_of(a.handle)->context == &a.calls);
    CHECK(ucp::dt::generic_of(b.handle)->context == &b.calls);

    /* contig and iov own nothing; a NULL generic or a bad class is no crash */
    std::string before = log.text();
    ucp_dt_destroy(ucp_dt_make_contig(4));
    ucp_dt_destroy(ucp_dt_make_iov());
    ucp_dt_destroy(UCP_DATATYPE_GENERIC);
    CHECK(log.text() == before);
    ucp_dt_destroy(UCP_DATATYPE_STRIDED);
    CHECK(log.text().find("ucp_dt_destroy") != std::string::npos);
}

TEST_CASE("packer and unpacker stay small and copyable", "[ucp_dt]")
{
    STATIC_REQUIRE(sizeof(packer) <= 64);
    STATIC_REQUIRE(sizeof(unpacker) <= 64);
    STATIC_REQUIRE(std::is_trivially_copyable_v<packer>);
    STATIC_REQUIRE(std::is_trivially_copyable_v<unpacker>);

    /* A copy taken mid-stream continues where the original was. */
    uint8_t a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, out[8] = {};
    ucp_dt_iov_t iov[2] = {{a, 4}, {b, 4}};
    packer p;
    REQUIRE(p.start(ucp_dt_make_iov(), iov, 2) == UCS_OK);
    CHECK(p.pack(out, 0, 3) == 3);
    packer copy = p;
    CHECK(copy.pack(out + 3, 3, 5) == 5);
    CHECK(std::equal(out, out + 8, bytes{1, 2, 3, 4, 5, 6, 7, 8}.begin()));
}

TEST_CASE("contig fast path exposes the buffer", "[ucp_dt]")
{
    uint32_t words[5] = {1, 2, 3, 4, 5};
    packer p;
    REQUIRE(p.start(ucp_dt_make_contig(4), words, 5) == UCS_OK);
    CHECK(p.is_contig());
    CHECK(p.contig_buffer() == words);
    CHECK(p.length() == 20);

    unpacker u;
    REQUIRE(u.start(ucp_dt_make_contig(2), words, 3) == UCS_OK);
    CHECK(u.is_contig());
    CHECK(u.contig_buffer() == words);
    CHECK(u.capacity() == 6);

    /* One-entry iov is not the contig path. */
    ucp_dt_iov_t iov = {words, sizeof(words)};
    REQUIRE(p.start(ucp_dt_make_iov(), &iov, 1) == UCS_OK);
    CHECK_FALSE(p.is_contig());
    CHECK(p.length() == sizeof(words));
}

TEST_CASE("round trip over all class pairs with random fragmentation", "[ucp_dt]")
{
    std::mt19937_64 rng(0x5eed0001);
    generic_type send_gen, recv_gen;

    for (dt_class send_cls : all_classes) {
        for (dt_class recv_cls : all_classes) {
            for (int round = 0; round < 60; ++round) {
                INFO("send " << class_name(send_cls) << " recv " << class_name(recv_cls)
                             << " round " << round);
                size_t elem   = std::vector<size_t>{1, 3, 8}[uniform(rng, 0, 2)];
                size_t length = elem * uniform(rng, 0, (round < 50) ? 64 : 2048);
                bytes data    = random_bytes(rng, length);

                auto src = make_buffer(rng, send_cls, data, elem, send_gen.handle);
                auto dst = make_buffer(rng, recv_cls, bytes(length, 0xee), elem, recv_gen.handle);

                packer p;
                unpacker u;
                REQUIRE(p.start(src->datatype, src->buffer, src->count) == UCS_OK);
                REQUIRE(u.start(dst->datatype, dst->buffer, dst->count) == UCS_OK);
                REQUIRE(p.length() == length);
                REQUIRE(u.capacity() == length);

                auto frags = random_fragments(rng, length, uniform(rng, 1, 300));
                /* Pack in one random order, unpack in another. */
                std::vector<bytes> packed(frags.size());
                std::vector<size_t> order(frags.size());
                std::iota(order.begin(), order.end(), 0);
                if (round % 2) {
                    std::shuffle(order.begin(), order.end(), rng);
                }
                for (size_t i : order) {
                    packed[i].resize(frags[i].length);
                    CHECK(p.pack(packed[i].data(), frags[i].offset, frags[i].length) ==
                          frags[i].length);
                }
                std::shuffle(order.begin(), order.end(), rng);
                for (size_t i : order) {
                    CHECK(u.unpack(packed[i].data(), frags[i].offset, frags[i].length) == UCS_OK);
                }
                p.finish();
                u.finish();
                CHECK(dst->stream() == data);
                /* the sender's buffer is only read */
                CHECK(src->stream() == data);
            }
        }
    }

    /* start and finish exactly once per stream, every state released */
    CHECK(send_gen.calls.start_pack == 3 * 60);
    CHECK(send_gen.calls.start_unpack == 0);
    CHECK(recv_gen.calls.start_unpack == 3 * 60);
    CHECK(recv_gen.calls.start_pack == 0);
    CHECK(send_gen.calls.finish == 3 * 60);
    CHECK(recv_gen.calls.finish == 3 * 60);
    CHECK(send_gen.calls.live_states == 0);
    CHECK(recv_gen.calls.live_states == 0);
}

TEST_CASE("pack clips at the end and at max_length", "[ucp_dt]")
{
    std::mt19937_64 rng(0x5eed0002);
    generic_type gen;
    bytes data = random_bytes(rng, 100);

    for (dt_class cls : all_classes) {
        INFO(class_name(cls));
        auto src = make_buffer(rng, cls, data, 1, gen.handle);
        packer p;
        REQUIRE(p.start(src->datatype, src->buffer, src->count) == UCS_OK);
        bytes out(200, 0);
        CHECK(p.pack(out.data(), 90, 50) == 10);
        CHECK(std::equal(out.begin(), out.begin() + 10, data.begin() + 90));
        CHECK(out[10] == 0);
        CHECK(p.pack(out.data(), 100, 50) == 0);
        CHECK(p.pack(out.data(), 1000, 50) == 0);
        CHECK(p.pack(out.data(), 5, 0) == 0);
        CHECK(p.pack(out.data(), 0, SIZE_MAX) == 100);
        CHECK(bytes(out.begin(), out.begin() + 100) == data);
        p.finish();
        p.finish(); /* idempotent */
        /* after finish a generic state is gone: pack must not reach it */
        if (cls == dt_class::generic) {
            int packs = gen.calls.pack;
            CHECK(p.pack(out.data(), 0, 10) == 0);
            CHECK(gen.calls.pack == packs);
        }
    }
    CHECK(gen.calls.finish == 1);
    CHECK(gen.calls.start_pack == 1);
}

TEST_CASE("to_iov covers the stream within the limits", "[ucp_dt]")
{
    std::mt19937_64 rng(0x5eed0003);
    for (int round = 0; round < 400; ++round) {
        INFO("round " << round);
        dt_class cls  = (round % 4 == 0) ? dt_class::contig : dt_class::iov;
        size_t length = uniform(rng, 0, 500);
        bytes data    = random_bytes(rng, length);
        auto src      = make_buffer(rng, cls, data, 1, 0);
        packer p;
        REQUIRE(p.start(src->datatype, src->buffer, src->count) == UCS_OK);

        for (int call = 0; call < 8; ++call) {
            size_t offset  = uniform(rng, 0, length + 2);
            size_t max_iov = uniform(rng, 0, 5);
            size_t max_len = uniform(rng, 0, 300);
            uct::iov out[5];
            size_t covered = 12345;
            size_t n       = p.to_iov(out, max_iov, offset, max_len, &covered);
            CAPTURE(offset, max_iov, max_len, n, covered);

            REQUIRE(n <= max_iov);
            CHECK(covered <= max_len);
            bytes got;
            for (size_t i = 0; i < n; ++i) {
                CHECK(out[i].length > 0);
                CHECK(out[i].memh == uct::MEM_HANDLE_NULL);
                auto *b = static_cast<const uint8_t *>(out[i].buffer);
                got.insert(got.end(), b, b + out[i].length);
            }
            CHECK(got.size() == covered);
            size_t remaining = (offset < length) ? (length - offset) : 0;
            if (n < max_iov) {
                /* not stopped by the entry limit: all it could cover */
                CHECK(covered == std::min(max_len, remaining));
            }
            if (covered > 0) {
                CHECK(std::equal(got.begin(), got.end(), data.begin() + offset));
            }
            if (cls == dt_class::contig) {
                CHECK(n <= 1);
            }
        }

        /* Sequential zcopy-style use: the whole stream, two entries a time. */
        bytes all;
        for (size_t off = 0, covered = 0; off < length; off += covered) {
            uct::iov out[2];
            size_t n = p.to_iov(out, 2, off, 64, &covered);
            REQUIRE(covered > 0);
            REQUIRE(n > 0);
            for (size_t i = 0; i < n; ++i) {
                auto *b = static_cast<const uint8_t *>(out[i].buffer);
                all.insert(all.end(), b, b + out[i].length);
            }
        }
        CHECK(all == data);
    }

    /* generic streams cannot be described by memory ranges */
    generic_type gen;
    uint8_t buf[8] = {};
    packer p;
    REQUIRE(p.start(gen.handle, buf, 8) == UCS_OK);
    uct::iov out[2];
    size_t covered = 1;
    CHECK(p.to_iov(out, 2, 0, 8, &covered) == 0);
    CHECK(covered == 0);
    p.finish();
}

TEST_CASE("unpack drops what does not fit and reports truncation", "[ucp_dt]")
{
    std::mt19937_64 rng(0x5eed0004);
    generic_type gen;

    for (dt_class cls : all_classes) {
        for (int round = 0; round < 40; ++round) {
            INFO(class_name(cls) << " round " << round);
            size_t capacity = uniform(rng, 0, 200);
            size_t length   = capacity + uniform(rng, 1, 200);
            bytes data      = random_bytes(rng, length);
            auto dst        = make_buffer(rng, cls, bytes(capacity, 0xee), 1, gen.handle);
            unpacker u;
            REQUIRE(u.start(dst->datatype, dst->buffer, dst->count) == UCS_OK);
            REQUIRE(u.capacity() == capacity);

            bool truncated = false;
            auto frags     = random_fragments(rng, length, uniform(rng, 1, 80));
            std::shuffle(frags.begin(), frags.end(), rng);
            for (const fragment &f : frags) {
                ucs_status_t status = u.unpack(data.data() + f.offset, f.offset, f.length);
                bool beyond         = f.offset + f.length > capacity;
                CHECK(status == (beyond ? UCS_ERR_MESSAGE_TRUNCATED : UCS_OK));
                truncated |= beyond;
            }
            CHECK(truncated);
            u.finish();
            /* the part that fits is written, nothing past it */
            CHECK(dst->stream() == bytes(data.begin(), data.begin() + capacity));
            if (cls == dt_class::contig) {
                CHECK(dst->contig.size() == capacity);
            }
        }
    }
    CHECK(gen.calls.start_unpack == 40);
    CHECK(gen.calls.finish == 40);
}

TEST_CASE("contig receive into a larger buffer leaves the rest alone", "[ucp_dt]")
{
    bytes buffer(32, 0xaa);
    unpacker u;
    REQUIRE(u.start(ucp_dt_make_contig(4), buffer.data(), 8) == UCS_OK);
    const uint8_t msg[6] = {1, 2, 3, 4, 5, 6};
    CHECK(u.unpack(msg, 0, 6) == UCS_OK);
    CHECK(std::equal(msg, msg + 6, buffer.begin()));
    CHECK(std::all_of(buffer.begin() + 6, buffer.end(), [](uint8_t b) { return b == 0xaa; }));
    /* an offset past the end writes nothing */
    CHECK(u.unpack(msg, 40, 2) == UCS_ERR_MESSAGE_TRUNCATED);
    CHECK(u.unpack(msg, SIZE_MAX, 2) == UCS_ERR_MESSAGE_TRUNCATED);
    CHECK(u.unpack(msg, 40, 0) == UCS_OK);
}

TEST_CASE("generic unpack errors are passed through", "[ucp_dt]")
{
    generic_type gen;
    gen.calls.unpack_status = UCS_ERR_IO_ERROR;
    uint8_t buf[8]          = {};
    const uint8_t msg[16]   = {};
    unpacker u;
    REQUIRE(u.start(gen.handle, buf, sizeof(buf)) == UCS_OK);
    CHECK(u.unpack(msg, 0, 4) == UCS_ERR_IO_ERROR);
    /* an error from unpack wins over truncation */
    CHECK(u.unpack(msg, 4, 12) == UCS_ERR_IO_ERROR);
    gen.calls.unpack_status = UCS_OK;
    CHECK(u.unpack(msg, 4, 12) == UCS_ERR_MESSAGE_TRUNCATED);
    /* the fitting part only reached ops.unpack (it fails on overrun) */
    CHECK(gen.calls.unpack == 3);
    u.finish();
    u.finish();
    CHECK(gen.calls.finish == 1);
    CHECK(u.unpack(msg, 0, 4) == UCS_ERR_INVALID_PARAM);
    CHECK(gen.calls.unpack == 3);
}

TEST_CASE("zero-length messages and empty iov entries", "[ucp_dt]")
{
    generic_type gen;
    uint8_t buf[4]          = {9, 9, 9, 9};
    ucp_dt_iov_t empties[3] = {{buf, 0}, {nullptr, 0}, {buf + 1, 0}};

    struct case_t {
        ucp_datatype_t dt;
        void *buffer;
        size_t count;
    } cases[] = {{ucp_dt_make_contig(8), buf, 0},
                 {ucp_dt_make_contig(1), nullptr, 0},
                 {ucp_dt_make_iov(), nullptr, 0},
                 {ucp_dt_make_iov(), empties, 3},
                 {gen.handle, buf, 0}};

    for (const case_t &c : cases) {
        CAPTURE(c.dt, c.count);
        packer p;
        unpacker u;
        REQUIRE(p.start(c.dt, c.buffer, c.count) == UCS_OK);
        REQUIRE(u.start(c.dt, c.buffer, c.count) == UCS_OK);
        CHECK(p.length() == 0);
        CHECK(u.capacity() == 0);
        uint8_t out[4] = {7, 7, 7, 7};
        CHECK(p.pack(out, 0, sizeof(out)) == 0);
        CHECK(out[0] == 7);
        uct::iov iov[2];
        size_t covered = 1;
        CHECK(p.to_iov(iov, 2, 0, 100, &covered) == 0);
        CHECK(covered == 0);
        CHECK(u.unpack(out, 0, 0) == UCS_OK);
        CHECK(u.unpack(out, 0, 1) == UCS_ERR_MESSAGE_TRUNCATED);
        p.finish();
        u.finish();
    }
    CHECK(std::all_of(buf, buf + 4, [](uint8_t b) { return b == 9; }));
    CHECK(gen.calls.start_pack == 1);
    CHECK(gen.calls.start_unpack == 1);
    CHECK(gen.calls.finish == 2);
    CHECK(gen.calls.pack == 0); /* nothing to pack: ops not bothered */
    CHECK(gen.calls.unpack == 0);
}

TEST_CASE("iov entries of length 0 between data entries", "[ucp_dt]")
{
    uint8_t a[3] = {1, 2, 3}, b[2] = {4, 5}, c[1] = {6};
    ucp_dt_iov_t iov[] = {{a, 0}, {a, 3}, {b, 0}, {nullptr, 0}, {b, 2}, {c, 0}, {c, 1}, {a, 0}};
    CHECK(ucp::dt::iov_total_length(iov, 8) == 6);

    packer p;
    REQUIRE(p.start(ucp_dt_make_iov(), iov, 8) == UCS_OK);
    CHECK(p.length() == 6);
    /* byte by byte, backwards (every call rewinds), then forwards */
    uint8_t out[6] = {};
    for (size_t i = 6; i-- > 0;) {
        CHECK(p.pack(out + i, i, 1) == 1);
    }
    CHECK(bytes(out, out + 6) == bytes{1, 2, 3, 4, 5, 6});
    for (size_t i = 0; i < 6; ++i) {
        uct::iov e[1]  = {};
        size_t covered = 0;
        REQUIRE(p.to_iov(e, 1, i, 6, &covered) == 1);
        CHECK(*static_cast<const uint8_t *>(e[0].buffer) == i + 1);
        CHECK(covered == ((i < 3) ? 3 - i : (i < 5) ? 5 - i : 1));
    }

    uint8_t x[3] = {}, y[3] = {};
    ucp_dt_iov_t riov[] = {{x, 0}, {x, 3}, {nullptr, 0}, {y, 3}, {y, 0}};
    unpacker u;
    REQUIRE(u.start(ucp_dt_make_iov(), riov, 5) == UCS_OK);
    CHECK(u.capacity() == 6);
    CHECK(u.unpack(out + 3, 3, 3) == UCS_OK);
    CHECK(u.unpack(out, 0, 3) == UCS_OK);
    CHECK(bytes(x, x + 3) == bytes{1, 2, 3});
    CHECK(bytes(y, y + 3) == bytes{4, 5, 6});
}
