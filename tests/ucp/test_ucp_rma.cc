/*
 * Put and get between two processes over each transport, on memory UCP
 * allocated (shared segments: direct access) and on the application's
 * registered memory (cma, tcp, or emulation over active messages), and in
 * one process over loopback: every size, every API form, verified by the
 * target after flush; bounds, bad arguments, flush and fence semantics.
 */
#include "rma_test_util.h"

#include <ucp/api/ucp_ext.h>
#include <ucp/core/ucp_rkey.h>
#include <ucp/rma/region_registry.h>
#include "ucp_test_util.h"

#include <catch2/catch.hpp>

#include <algorithm>

#include <cstring>
#include <string>

using namespace rma_test;
using ucp_test::check_pattern;
using ucp_test::fill_pattern;

namespace {

const size_t sizes[] = {0,    1,    7,    8,     9,     63,     64,
                        65,   255,  256,  1000,  4095,  4096,   4097,
                        8191, 8192, 8193, 16384, 65539, 262144, (1u << 20) + 5};

constexpr size_t big_region = 2u << 20;

enum class api { nbx, nbi, nb, blocking, count };
enum class flush_kind { ep_nbx, worker_nbx, ep_blocking, worker_blocking, ep_nb, worker_nb, count };

void legacy_cb(void *, ucs_status_t)
{
}

ucs_status_t put(session &s, api how, const void *buffer, size_t length, uint64_t raddr)
{
    const ucp_request_param_t param{};
    switch (how) {
    case api::nbx:
        return s.wait(ucp_put_nbx(s.p.ep, buffer, length, raddr, s.rkey, &param));
    case api::nbi: {
        ucs_status_t status = ucp_put_nbi(s.p.ep, buffer, length, raddr, s.rkey);
        return (status == UCS_INPROGRESS) ? UCS_OK : status;
    }
    case api::nb:
        return s.wait(ucp_put_nb(s.p.ep, buffer, length, raddr, s.rkey, legacy_cb));
    default:
        return ucp_put(s.p.ep, buffer, length, raddr, s.rkey);
    }
}

ucs_status_t flush(session &s, flush_kind how)
{
    const ucp_request_param_t param{};
    switch (how) {
    case flush_kind::ep_nbx:
        return s.wait(ucp_ep_flush_nbx(s.p.ep, &param));
    case flush_kind::worker_nbx:
        return s.wait(ucp_worker_flush_nbx(s.p.worker, &param));
    case flush_kind::ep_blocking:
        return ucp_ep_flush(s.p.ep);
    case flush_kind::worker_blocking:
        return ucp_worker_flush(s.p.worker);
    case flush_kind::ep_nb:
        return s.wait(ucp_ep_flush_nb(s.p.ep, 0, legacy_cb));
    default:
        return s.wait(ucp_worker_flush_nb(s.p.worker, 0, legacy_cb));
    }
}

ucs_status_t get(session &s, api how, void *buffer, size_t length, uint64_t raddr)
{
    const ucp_request_param_t param{};
    switch (how) {
    case api::nbx:
        return s.wait(ucp_get_nbx(s.p.ep, buffer, length, raddr, s.rkey, &param));
    case api::nbi: {
        ucs_status_t status = ucp_get_nbi(s.p.ep, buffer, length, raddr, s.rkey);
        if ((status != UCS_OK) && (status != UCS_INPROGRESS)) {
            return status;
        }
        return flush(s, flush_kind::worker_nbx); /* the data is here after it */
    }
    case api::nb:
        return s.wait(ucp_get_nb(s.p.ep, buffer, length, raddr, s.rkey, legacy_cb));
    default:
        return ucp_get(s.p.ep, buffer, length, raddr, s.rkey);
    }
}

/* Puts then gets each size, with a guard word after the target range. */
void put_get_every_size(session &s)
{
    constexpr uint64_t guard = 0x5a5a5a5a5a5a5a5aull;
    std::vector<uint8_t> local;
    unsigned i = 0;
    for (size_t size : sizes) {
        const uint64_t offset = (i * 13) % 64 + 1; /* odd and even, unaligned */
        const api put_api     = api(i % unsigned(api::count));
        const api get_api     = api((i + 1) % unsigned(api::count));
        const auto flush_how  = flush_kind(i % unsigned(flush_kind::count));
        INFO("size " << size << " offset " << offset << " put api " << int(put_api) << " flush "
                     << int(flush_how) << " get api " << int(get_api));
        REQUIRE(offset + size + 8 <= s.length);

        s.write(offset + size, 8, guard);
        local.assign(size + 8, 0);
        fill_pattern(local.data(), size, size + 1);
        REQUIRE(put(s, put_api, local.data(), size, s.base + offset) == UCS_OK);
        REQUIRE(flush(s, flush_how) == UCS_OK);
        CHECK(s.check(offset, size, size + 1));
        CHECK(s.read(offset + size, 8) == guard);

        s.fill(offset, size, size + 1000);
        std::fill(local.begin(), local.end(), 0xee);
        REQUIRE(get(s, get_api, local.data(), size, s.base + offset) == UCS_OK);
        CHECK(check_pattern(local.data(), size, size + 1000));
        CHECK(local[size] == 0xee); /* nothing written past the buffer */
        ++i;
    }
}

ucs_status_t status_of(session &s, ucs_status_ptr_t ptr)
{
    return s.wait(ptr);
}

} // namespace

TEST_CASE("the region registry's lookup cache never answers for a changed registry", "[ucp_rma]")
{
    ucp::region_registry regions;
    ucp::region_registry::lookup_cache cache;
    const uintptr_t a = 0x10000, b = 0x40000;
    regions.add(a, 4096, 11);
    regions.add(a, 4096, 22); /* the same range mapped twice */
    regions.add(b, 256, 33);

    ucp::region_counter counter;
    CHECK(regions.contains(cache, a + 8, 8, 11, &counter));
    CHECK(counter.cntr == nullptr);
    CHECK(cache.generation != 0); /* filled */
    /* Hits and misses of the cached instance: range, secret, other regions. */
    CHECK(regions.contains(cache, a, 4096, 11));
    CHECK_FALSE(regions.contains(cache, a + 4090, 8, 11));
    CHECK(regions.contains(cache, a + 100, 8, 22));
    CHECK(regions.contains(cache, a + 100, 8, 11));
    CHECK_FALSE(regions.contains(cache, a + 100, 8, 33));
    CHECK(regions.contains(cache, b + 8, 8, 33));
    CHECK_FALSE(regions.contains(cache, b + 8, 8, 11));

    /* A counter bound after the lookup: the next one reports it. */
    REQUIRE(regions.contains(cache, b, 8, 33));
    auto *fake = reinterpret_cast<ucp_cntr *>(uintptr_t(0x1234));
    REQUIRE(regions.bind(b, 256, 33, {fake, UCP_MEM_CNTR_REMOTE_WRITE}));
    REQUIRE(regions.contains(cache, b, 8, 33, &counter));
    CHECK(counter.cntr == fake);
    CHECK(counter.events == UCP_MEM_CNTR_REMOTE_WRITE);

    /* Unmapped after the lookup: the cached instance answers no more. */
    REQUIRE(regions.contains(cache, b, 8, 33));
    REQUIRE(regions.remove(b, 256, 33));
    CHECK_FALSE(regions.contains(cache, b, 8, 33));
    REQUIRE(regions.contains(cache, a, 8, 22));
    REQUIRE(regions.remove(a, 4096, 22));
    CHECK_FALSE(regions.contains(cache, a, 8, 22));
    CHECK(regions.contains(cache, a, 8, 11)); /* the other instance stays */
    /* Mapped again with another secret: the old one opens nothing. */
    regions.add(b, 256, 44);
    CHECK_FALSE(regions.contains(cache, b, 8, 33));
    CHECK(regions.contains(cache, b, 8, 44));
}

TEST_CASE("put and get of every size, checked by the target after flush", "[ucp_rma]")
{
    for (const config &cfg : two_process_configs()) {
        INFO("UCX_TLS=" << cfg.tls << ", " << memory_name(cfg.kind) << " memory");
        session s;
        REQUIRE(s.start(cfg, big_region) == UCS_OK);
        put_get_every_size(s);
        CHECK(s.finish() == 0);
    }
}

TEST_CASE("put and get of every size to this process (loopback)", "[ucp_rma]")
{
    for (const config &cfg : loopback_configs()) {
        INFO("UCX_TLS=" << cfg.tls << ", " << memory_name(cfg.kind) << " memory");
        session s;
        REQUIRE(s.start_loopback(cfg, big_region) == UCS_OK);
        put_get_every_size(s);
    }
}

TEST_CASE("RMA outside the key's region is refused and changes nothing", "[ucp_rma]")
{
    const size_t length = 64 * 1024;
    auto run            = [&](session &s) {
        s.fill(0, length, 77);
        std::vector<uint8_t> buffer(length + 64, 0xcd);
        const ucp_request_param_t param{};
        const struct {
            uint64_t address;
            size_t length;
        } outside[] = {
            {s.base - 1, 1},          {s.base - 1, 2},
            {s.base + length - 1, 2}, {s.base + length, 1},
            {s.base + length, 8},     {s.base, length + 1},
            {s.base + 8, SIZE_MAX},   {s.base + 8, SIZE_MAX - 7},
            {~uint64_t(0) - 3, 8},    {0, 8},
        };
        for (const auto &o : outside) {
            INFO("address base" << std::showpos << int64_t(o.address - s.base) << std::noshowpos
                                           << " length " << o.length);
            CHECK(status_of(s, ucp_put_nbx(s.p.ep, buffer.data(), o.length, o.address, s.rkey,
                                                      &param)) == UCS_ERR_INVALID_ADDR);
            CHECK(status_of(s, ucp_get_nbx(s.p.ep, buffer.data(), o.length, o.address, s.rkey,
                                                      &param)) == UCS_ERR_INVALID_ADDR);
            CHECK(ucp_put_nbi(s.p.ep, buffer.data(), o.length, o.address, s.rkey) ==
                             UCS_ERR_INVALID_ADDR);
            CHECK(ucp_get_nbi(s.p.ep, buffer.data(), o.length, o.address, s.rkey) ==
                             UCS_ERR_INVALID_ADDR);
            CHECK(ucp_put(s.p.ep, buffer.data(), o.length, o.address, s.rkey) ==
                             UCS_ERR_INVALID_ADDR);
        }
        /* Nothing was read into the local buffer either. */
        CHECK(std::all_of(buffer.begin(), buffer.end(), [](uint8_t b) { return b == 0xcd; }));
        /* The edges themselves are inside. */
        CHECK(put(s, api::nbx, buffer.data(), 1, s.base + length - 1) == UCS_OK);
        CHECK(put(s, api::nbx, buffer.data(), 1, s.base) == UCS_OK);
        REQUIRE(flush(s, flush_kind::worker_nbx) == UCS_OK);
        CHECK(s.read(length - 8, 8) >> 56 == 0xcd);
        CHECK(s.read(0, 8) % 256 == 0xcd);
        s.fill(0, 1, 77);
        ucp_test::fill_pattern(buffer.data(), length, 77);
        CHECK(put(s, api::nbx, buffer.data() + length - 1, 1, s.base + length - 1) == UCS_OK);
        REQUIRE(flush(s, flush_kind::ep_nbx) == UCS_OK);
        CHECK(s.check(0, length, 77)); /* all of it as before */
    };
    for (const config &cfg : two_process_configs()) {
        INFO("UCX_TLS=" << cfg.tls << ", " << memory_name(cfg.kind) << " memory");
        session s;
        REQUIRE(s.start(cfg, length) == UCS_OK);
        run(s);
        CHECK(s.finish() == 0);
    }
    for (const config &cfg : loopback_configs()) {
        INFO("loopback UCX_TLS=" << cfg.tls << ", " << memory_name(cfg.kind) << " memory");
        session s;
        REQUIRE(s.start_loopback(cfg, length) == UCS_OK);
        run(s);
    }
}

TEST_CASE("bad RMA arguments are refused without a crash", "[ucp_rma]")
{
    session s;
    REQUIRE(s.start_loopback({"self", memory::registered}, 4096) == UCS_OK);
    ucp_test::log_capture log;
    uint8_t buffer[64] = {};
    const uint64_t at  = s.base + 8;
    ucp_request_param_t param{};
    CHECK(status_of(s, ucp_put_nbx(nullptr, buffer, 8, at, s.rkey, &param)) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(status_of(s, ucp_put_nbx(s.p.ep, buffer, 8, at, nullptr, &param)) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(status_of(s, ucp_put_nbx(s.p.ep, buffer, 8, at, s.rkey, nullptr)) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(status_of(s, ucp_put_nbx(s.p.ep, nullptr, 8, at, s.rkey, &param)) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(status_of(s, ucp_get_nbx(nullptr, buffer, 8, at, s.rkey, &param)) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(status_of(s, ucp_get_nbx(s.p.ep, nullptr, 8, at, s.rkey, &param)) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(status_of(s, ucp_get_nbx(s.p.ep, buffer, 8, at, nullptr, &param)) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(ucp_put_nbi(nullptr, buffer, 8, at, s.rkey) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_get_nbi(s.p.ep, buffer, 8, at, nullptr) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_put(nullptr, buffer, 8, at, s.rkey) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_get(s.p.ep, nullptr, 8, at, s.rkey) == UCS_ERR_INVALID_PARAM);
    CHECK(status_of(s, ucp_put_nb(s.p.ep, buffer, 8, at, nullptr, legacy_cb)) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(ucp_worker_fence(nullptr) == UCS_ERR_INVALID_PARAM);

    /* Only contiguous data; element counts that overflow. */
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype     = ucp_dt_make_iov();
    CHECK(status_of(s, ucp_put_nbx(s.p.ep, buffer, 1, at, s.rkey, &param)) == UCS_ERR_UNSUPPORTED);
    param.datatype = ucp_dt_make_contig(0);
    CHECK(status_of(s, ucp_get_nbx(s.p.ep, buffer, 1, at, s.rkey, &param)) ==
          UCS_ERR_INVALID_PARAM);
    param.datatype = ucp_dt_make_contig(8);
    CHECK(status_of(s, ucp_put_nbx(s.p.ep, buffer, SIZE_MAX / 4, at, s.rkey, &param)) ==
          UCS_ERR_INVALID_PARAM);
    /* A contiguous element size counts: 3 elements of 8 bytes. */
    ucp_test::fill_pattern(buffer, 24, 5);
    CHECK(status_of(s, ucp_put_nbx(s.p.ep, buffer, 3, at, s.rkey, &param)) == UCS_OK);
    CHECK(check_pattern(s.local->data() + 8, 24, 5));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    param.memory_type  = UCS_MEMORY_TYPE_CUDA; /* not reachable with CPU copies */
    CHECK(status_of(s, ucp_put_nbx(s.p.ep, buffer, 8, at, s.rkey, &param)) == UCS_ERR_UNSUPPORTED);
    param.memory_type = UCS_MEMORY_TYPE_HOST;
    CHECK(status_of(s, ucp_get_nbx(s.p.ep, buffer, 8, at, s.rkey, &param)) == UCS_OK);
    param.op_attr_mask = UCP_OP_ATTR_FIELD_REQUEST;
    param.request      = nullptr;
    CHECK(status_of(s, ucp_put_nbx(s.p.ep, buffer, 8, at, s.rkey, &param)) ==
          UCS_ERR_INVALID_PARAM);

    /* The key of another region does not reach this one. */
    region other;
    REQUIRE(other.map(s.p.context, memory::registered, 4096) == UCS_OK);
    ucp_rkey_h other_key = nullptr;
    REQUIRE(ucp_ep_rkey_unpack(s.p.ep, other.key().data(), &other_key) == UCS_OK);
    const ucp_request_param_t plain{};
    CHECK(status_of(s, ucp_put_nbx(s.p.ep, buffer, 8, at, other_key, &plain)) ==
          UCS_ERR_INVALID_ADDR);
    CHECK(status_of(s, ucp_put_nbx(s.p.ep, buffer, 8, other.address(), other_key, &plain)) ==
          UCS_OK);
    ucp_rkey_destroy(other_key);

    /* Garbage instead of a packed key. */
    std::vector<uint8_t> garbage(64, 0x42);
    ucp_rkey_h bad = nullptr;
    CHECK(ucp_ep_rkey_unpack(s.p.ep, garbage.data(), &bad) != UCS_OK);
    CHECK(bad == nullptr);
    CHECK(log.text().find("only contiguous datatypes") != std::string::npos);
}

TEST_CASE("flush completes only once the target has executed the operations", "[ucp_rma]")
{
    const size_t length = 256 * 1024;
    for (const config &cfg : two_process_configs()) {
        INFO("UCX_TLS=" << cfg.tls << ", " << memory_name(cfg.kind) << " memory");
        session s;
        REQUIRE(s.start(cfg, length) == UCS_OK);
        s.write(0, 8, 100);
        std::vector<uint8_t> data(64 * 1024);
        fill_pattern(data.data(), data.size(), 31);

        /* Operations the target's CPU must execute: tcp, and atomics on
         * registered memory; shared segments and cma need no help. */
        const bool needs_target = (std::string(cfg.tls) == "tcp") ||
                                  (cfg.kind == memory::registered);
        REQUIRE(s.ask({command_type::hold, 0, 0, 0, 0, 0}) == 0);
        const ucs_status_t put_status = ucp_put_nbi(s.p.ep, data.data(), data.size(), s.base + 4096,
                                                    s.rkey);
        REQUIRE(((put_status == UCS_OK) || (put_status == UCS_INPROGRESS)));
        REQUIRE(ucp_atomic_post(s.p.ep, UCP_ATOMIC_POST_OP_ADD, 5, 8, s.base, s.rkey) == UCS_OK);
        const ucp_request_param_t param{};
        ucs_status_ptr_t flush_req = ucp_worker_flush_nbx(s.p.worker, &param);
        REQUIRE(!UCS_PTR_IS_ERR(flush_req));
        if (needs_target) {
            REQUIRE(flush_req != nullptr);
            for (int i = 0; i < 5000; ++i) {
                ucp_worker_progress(s.p.worker);
            }
            CHECK(ucp_request_check_status(flush_req) == UCS_INPROGRESS);
        } else {
            /* Done by us alone: the target is not even progressing. */
            CHECK(test::poll_until(
                [&] {
                return (flush_req == nullptr) ||
                       (ucp_request_check_status(flush_req) != UCS_INPROGRESS);
                },
                [&] { ucp_worker_progress(s.p.worker); }, std::chrono::seconds(10)));
        }
        REQUIRE(s.ask({command_type::ping, 0, 0, 0, 0, 0}) == 0); /* target resumes */
        CHECK(s.wait(flush_req) == UCS_OK);
        CHECK(s.read(0, 8) == 105);
        CHECK(s.check(4096, data.size(), 31));
        CHECK(s.finish() == 0);
    }
}

TEST_CASE("many non-blocking puts and gets in flight, then one flush", "[ucp_rma]")
{
    const size_t chunk = 4096, count = 512, length = chunk * count;
    for (const config &cfg : two_process_configs()) {
        INFO("UCX_TLS=" << cfg.tls << ", " << memory_name(cfg.kind) << " memory");
        session s;
        REQUIRE(s.start(cfg, length) == UCS_OK);
        std::vector<uint8_t> data(length);
        for (size_t i = 0; i < count; ++i) {
            fill_pattern(data.data() + i * chunk, chunk, i + 3);
            const ucs_status_t status = ucp_put_nbi(s.p.ep, data.data() + i * chunk, chunk,
                                                    s.base + i * chunk, s.rkey);
            REQUIRE(((status == UCS_OK) || (status == UCS_INPROGRESS)));
        }
        REQUIRE(flush(s, flush_kind::ep_nb) == UCS_OK);
        for (size_t i = 0; i < count; i += 37) {
            CHECK(s.check(i * chunk, chunk, i + 3));
        }
        std::vector<uint8_t> back(length, 0);
        for (size_t i = 0; i < count; ++i) {
            const ucs_status_t status = ucp_get_nbi(s.p.ep, back.data() + i * chunk, chunk,
                                                    s.base + i * chunk, s.rkey);
            REQUIRE(((status == UCS_OK) || (status == UCS_INPROGRESS)));
        }
        REQUIRE(flush(s, flush_kind::worker_nb) == UCS_OK);
        CHECK(back == data);
        CHECK(s.finish() == 0);
    }
}

TEST_CASE("fence: what follows it is never seen before what precedes it", "[ucp_rma]")
{
    const uint64_t rounds = 300;
    for (const config &cfg : two_process_configs()) {
        INFO("UCX_TLS=" << cfg.tls << ", " << memory_name(cfg.kind) << " memory");
        session s;
        REQUIRE(s.start(cfg, 4096) == UCS_OK);
        s.write(0, 8, 0);  /* counter, updated by atomics */
        s.write(64, 8, 0); /* flag, written by puts */
        REQUIRE(s.tell({command_type::watch, 8, 0, rounds, 0, 64}));
        std::vector<uint64_t> flags(rounds + 1);
        for (uint64_t i = 1; i <= rounds; ++i) {
            REQUIRE(ucp_atomic_post(s.p.ep, UCP_ATOMIC_POST_OP_ADD, 1, 8, s.base, s.rkey) ==
                    UCS_OK);
            REQUIRE(ucp_worker_fence(s.p.worker) == UCS_OK);
            flags[i]                  = i;
            const ucs_status_t status = ucp_put_nbi(s.p.ep, &flags[i], 8, s.base + 64, s.rkey);
            REQUIRE(((status == UCS_OK) || (status == UCS_INPROGRESS)));
        }
        CHECK(s.answer() == 0); /* times the flag ran ahead of the counter */
        REQUIRE(flush(s, flush_kind::worker_blocking) == UCS_OK);
        CHECK(s.read(0, 8) == rounds);
        CHECK(s.finish() == 0);
    }
}

namespace {

struct callback_record {
    int calls           = 0;
    ucs_status_t status = UCS_ERR_NO_MESSAGE;
    void *user_data     = nullptr;
};

void record_cb(void *, ucs_status_t status, void *user_data)
{
    auto *record = static_cast<callback_record *>(user_data);
    ++record->calls;
    record->status = status;
}

} // namespace

TEST_CASE("nbx: NULL when done at once, otherwise a request completed by its callback", "[ucp_rma]")
{
    for (const config &cfg : two_process_configs()) {
        INFO("UCX_TLS=" << cfg.tls << ", " << memory_name(cfg.kind) << " memory");
        session s;
        REQUIRE(s.start(cfg, 4096) == UCS_OK);
        /* Shared segments are written by this process itself. */
        const bool direct = (cfg.kind == memory::allocated) && (std::string(cfg.tls) != "tcp");
        uint64_t value    = 0x1122334455667788ull;
        callback_record record;
        ucp_request_param_t param{};
        param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
        param.cb.send      = record_cb;
        param.user_data    = &record;

        ucs_status_ptr_t req = ucp_put_nbx(s.p.ep, &value, 8, s.base, s.rkey, &param);
        REQUIRE(!UCS_PTR_IS_ERR(req));
        if (direct) {
            CHECK(req == nullptr);
            CHECK(record.calls == 0); /* no callback for an immediate completion */
        }
        CHECK(s.wait(req) == UCS_OK);
        CHECK(record.calls == ((req == nullptr) ? 0 : 1));
        REQUIRE(s.flush_ep() == UCS_OK);
        CHECK(s.read(0, 8) == value);

        /* NO_IMM_CMPL: always a request, and the callback runs once. */
        record = {};
        param.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
        uint64_t back = 0;
        req           = ucp_get_nbx(s.p.ep, &back, 8, s.base, s.rkey, &param);
        REQUIRE(!UCS_PTR_IS_ERR(req));
        REQUIRE(req != nullptr);
        CHECK(s.wait(req) == UCS_OK);
        CHECK(record.calls == 1);
        CHECK(record.status == UCS_OK);
        CHECK(back == value);

        /* FORCE_IMM_CMPL: done now, or refused with nothing done. */
        value              = 42;
        param.op_attr_mask = UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL;
        req                = ucp_put_nbx(s.p.ep, &value, 8, s.base + 8, s.rkey, &param);
        if (direct) {
            CHECK(req == nullptr);
        } else {
            CHECK(((req == nullptr) || (UCS_PTR_STATUS(req) == UCS_ERR_NO_RESOURCE)));
        }
        REQUIRE(s.flush_ep() == UCS_OK);
        CHECK(s.read(8, 8) == ((req == nullptr) ? 42 : 0));
        if (std::string(cfg.tls) == "sysv") {
            /* Emulated: never complete within the call. */
            CHECK(UCS_PTR_STATUS(req) == UCS_ERR_NO_RESOURCE);
        }
        /* _nbi: UCS_OK when done, UCS_INPROGRESS while the target has to act. */
        const ucs_status_t nbi = ucp_put_nbi(s.p.ep, &value, 8, s.base + 16, s.rkey);
        if (direct) {
            CHECK(nbi == UCS_OK);
        } else {
            CHECK(((nbi == UCS_OK) || (nbi == UCS_INPROGRESS)));
        }
        REQUIRE(s.flush_ep() == UCS_OK);
        CHECK(s.read(16, 8) == 42);
        CHECK(s.finish() == 0);
    }
}

TEST_CASE("UCX's key of no memory domain unpacks but opens nothing", "[ucp_rma]")
{
    /* Open MPI 4.1's dynamic windows unpack these bytes (see ucp_rkey.h).
     * They must not be a master key to every region the target mapped. */
    const uint8_t ucx_empty_key[64] = {};
    auto run                        = [&](session &s) {
        ucp_rkey_h empty = nullptr;
        REQUIRE(ucp_ep_rkey_unpack(s.p.ep, ucx_empty_key, &empty) == UCS_OK);
        void *ptr = nullptr;
        CHECK(ucp_rkey_ptr(empty, s.base, &ptr) == UCS_ERR_UNREACHABLE);

        /* Inside the target's mapped region and anywhere else: the target
         * refuses, nothing is written or read. */
        ucp_test::log_capture quiet; /* the refusals are logged as errors */
        s.write(0, 8, 40);
        std::vector<uint8_t> data(10000);
        fill_pattern(data.data(), data.size(), 99);
        std::vector<uint8_t> back(data.size(), 0);
        const ucp_request_param_t param{};
        uint64_t two = 2, old = 7;
        ucp_request_param_t amo{};
        amo.op_attr_mask       = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        amo.datatype           = ucp_dt_make_contig(8);
        amo.reply_buffer       = &old;
        const uint64_t outside = s.base + s.length;
        for (const uint64_t where : {s.base, s.base + 104, outside}) {
            CAPTURE(where - s.base);
            CHECK(s.wait(ucp_put_nbx(s.p.ep, data.data(), data.size(), where, empty, &param)) ==
                                         UCS_ERR_INVALID_ADDR);
            CHECK(s.wait(ucp_get_nbx(s.p.ep, back.data(), back.size(), where, empty, &param)) ==
                                         UCS_ERR_INVALID_ADDR);
            CHECK(s.wait(ucp_atomic_op_nbx(s.p.ep, UCP_ATOMIC_OP_ADD, &two, 1, where, empty,
                                                                  &amo)) == UCS_ERR_INVALID_ADDR);
        }
        REQUIRE(flush(s, flush_kind::ep_nbx) == UCS_OK);
        CHECK(s.read(0, 8) == 40);
        CHECK_FALSE(s.check(104, data.size(), 99));
        CHECK(std::all_of(back.begin(), back.end(), [](uint8_t b) { return b == 0; }));
        CHECK(old == 7);
        ucp_rkey_destroy(empty);

        /* The region's own key still works. */
        CHECK(s.wait(ucp_put_nbx(s.p.ep, data.data(), data.size(), s.base + 100, s.rkey, &param)) ==
                                     UCS_OK);
        REQUIRE(flush(s, flush_kind::ep_nbx) == UCS_OK);
        CHECK(s.check(100, data.size(), 99));
    };
    for (const config &cfg :
         {config{"posix,cma", memory::registered}, config{"tcp", memory::allocated}}) {
        INFO("UCX_TLS=" << cfg.tls << ", " << memory_name(cfg.kind) << " memory");
        session s;
        REQUIRE(s.start(cfg, 64 * 1024) == UCS_OK);
        run(s);
        CHECK(s.finish() == 0);
    }
    session s;
    REQUIRE(s.start_loopback({"self", memory::allocated}, 64 * 1024) == UCS_OK);
    run(s);
}

TEST_CASE("a key with the region's bounds but not its secret opens nothing emulated", "[ucp_rma]")
{
    /* posix without cma: registered memory is reached only by emulation. */
    session s;
    REQUIRE(s.start({"posix", memory::registered}, 64 * 1024) == UCS_OK);
    s.write(0, 8, 40);
    std::vector<uint8_t> forged_bytes = s.packed_key;
    REQUIRE(forged_bytes.size() >= ucp::rkey_header_size);
    forged_bytes[32] ^= 1; /* the secret (ucp_rkey.h) */
    ucp_rkey_h forged = nullptr;
    REQUIRE(ucp_ep_rkey_unpack(s.p.ep, forged_bytes.data(), &forged) == UCS_OK);

    uint64_t value = 5, old = 9;
    const ucp_request_param_t param{};
    ucp_request_param_t amo{};
    amo.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    amo.datatype     = ucp_dt_make_contig(8);
    amo.reply_buffer = &old;
    CHECK(s.wait(ucp_put_nbx(s.p.ep, &value, 8, s.base, forged, &param)) == UCS_ERR_INVALID_ADDR);
    CHECK(s.wait(ucp_get_nbx(s.p.ep, &value, 8, s.base, forged, &param)) == UCS_ERR_INVALID_ADDR);
    CHECK(s.wait(ucp_atomic_op_nbx(s.p.ep, UCP_ATOMIC_OP_ADD, &value, 1, s.base, forged, &amo)) ==
          UCS_ERR_INVALID_ADDR);
    CHECK(value == 5);
    CHECK(old == 9);
    REQUIRE(flush(s, flush_kind::ep_nbx) == UCS_OK);
    CHECK(s.read(0, 8) == 40);
    ucp_rkey_destroy(forged);

    /* The genuine key: the same operations are served. */
    CHECK(s.wait(ucp_atomic_op_nbx(s.p.ep, UCP_ATOMIC_OP_ADD, &value, 1, s.base, s.rkey, &amo)) ==
          UCS_OK);
    CHECK(old == 40);
    CHECK(s.finish() == 0);
}

TEST_CASE("closing an ep in flush mode completes its RMA at the target first", "[ucp_rma]")
{
    for (const config &cfg : two_process_configs()) {
        INFO("UCX_TLS=" << cfg.tls << ", " << memory_name(cfg.kind) << " memory");
        session s;
        REQUIRE(s.start(cfg, 128 * 1024) == UCS_OK);
        s.write(0, 8, 0);
        std::vector<uint8_t> data(100000);
        fill_pattern(data.data(), data.size(), 8);
        const ucs_status_t put_status = ucp_put_nbi(s.p.ep, data.data(), data.size(), s.base + 64,
                                                    s.rkey);
        REQUIRE(((put_status == UCS_OK) || (put_status == UCS_INPROGRESS)));
        for (int i = 0; i < 100; ++i) {
            REQUIRE(ucp_atomic_post(s.p.ep, UCP_ATOMIC_POST_OP_ADD, 3, 8, s.base, s.rkey) ==
                    UCS_OK);
        }
        ucp_request_param_t param{};
        param.op_attr_mask     = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags            = 0; /* flush, not force */
        ucs_status_ptr_t close = ucp_ep_close_nbx(s.p.ep, &param);
        s.p.ep                 = nullptr;
        CHECK(s.wait(close) == UCS_OK);
        CHECK(s.read(0, 8) == 300);
        CHECK(s.check(64, data.size(), 8));
        CHECK(s.finish() == 0);
    }
}
