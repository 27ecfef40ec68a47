/*
 * Atomics between two processes and over loopback: every operation, 32 and
 * 64 bit, fetching and not, through every API form, with the exact value
 * the target then holds; refused forms; counts under contention from both
 * processes; a window-lock loop of compare-and-swaps; posts complete at the
 * target when a flush returns.
 */
#include "rma_test_util.h"
#include "ucp_test_util.h"

#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_worker.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>

using namespace rma_test;

namespace {

/*
 * ucp_atomic_op_nbx with an opcode outside ucp_atomic_op_t, as a C caller
 * may pass one. Reading such a value from an enum object is undefined in
 * C++ (UBSan's enum check), so the value is read here only, unchecked.
 */
__attribute__((no_sanitize("enum"))) ucs_status_ptr_t
atomic_op_raw(ucp_ep_h ep, int raw_opcode, const void *buffer, uint64_t remote_addr,
              ucp_rkey_h rkey, const ucp_request_param_t *param)
{
    ucp_atomic_op_t opcode;
    std::memcpy(&opcode, &raw_opcode, sizeof(opcode));
    return ucp_atomic_op_nbx(ep, opcode, buffer, 1, remote_addr, rkey, param);
}

const ucp_atomic_op_t all_ops[] = {UCP_ATOMIC_OP_ADD, UCP_ATOMIC_OP_SWAP, UCP_ATOMIC_OP_CSWAP,
                                   UCP_ATOMIC_OP_AND, UCP_ATOMIC_OP_OR,   UCP_ATOMIC_OP_XOR};

const char *op_name(ucp_atomic_op_t op)
{
    static const char *const names[] = {"add", "swap", "cswap", "and", "or", "xor"};
    return names[op];
}

uint64_t mask_of(unsigned size)
{
    return (size == 4) ? 0xffffffffull : ~uint64_t(0);
}

/* What the word holds after `op`, computed here independently. */
uint64_t expected(ucp_atomic_op_t op, uint64_t old, uint64_t operand, uint64_t compare,
                  unsigned size)
{
    switch (op) {
    case UCP_ATOMIC_OP_ADD:
        return (old + operand) & mask_of(size);
    case UCP_ATOMIC_OP_SWAP:
        return operand;
    case UCP_ATOMIC_OP_CSWAP:
        return (old == compare) ? operand : old;
    case UCP_ATOMIC_OP_AND:
        return old & operand;
    case UCP_ATOMIC_OP_OR:
        return old | operand;
    default:
        return old ^ operand;
    }
}

uint64_t load(const void *p, unsigned size)
{
    if (size == 4) {
        uint32_t v;
        std::memcpy(&v, p, 4);
        return v;
    }
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
}

void store(void *p, unsigned size, uint64_t value)
{
    if (size == 4) {
        const auto v = uint32_t(value);
        std::memcpy(p, &v, 4);
    } else {
        std::memcpy(p, &value, 8);
    }
}

constexpr uint64_t neighbour = 0xa5a5a5a5ull;

/* One atomic through ucp_atomic_op_nbx; returns the status, *fetched the result. */
ucs_status_t op_nbx(session &s, ucp_atomic_op_t op, unsigned size, bool fetch, uint64_t operand,
                    uint64_t compare, uint64_t address, uint64_t *fetched)
{
    uint64_t buffer = 0, reply = 0;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype     = ucp_dt_make_contig(size);
    if (op == UCP_ATOMIC_OP_CSWAP) {
        store(&buffer, size, compare); /* UCX: *buffer compares ... */
        store(&reply, size, operand);  /* ... and *reply_buffer is swapped in */
    } else {
        store(&buffer, size, operand);
    }
    if (fetch) {
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        param.reply_buffer = &reply;
    }
    const ucs_status_t status = s.wait(ucp_atomic_op_nbx(s.p.ep, op, &buffer, 1, address, s.rkey,
                                                         &param));
    *fetched                  = load(&reply, size);
    return status;
}

/* Every op, size and form through ucp_atomic_op_nbx, value checked by the target. */
void every_op_nbx(session &s)
{
    const uint64_t offset = 128;
    for (unsigned size : {4u, 8u}) {
        const uint64_t initial = (size == 4) ? 0x80000006ull : 0xf0f0f0f000000006ull;
        const uint64_t operand = (size == 4) ? 0x00000003ull : 0x0f0f0f0f00000003ull;
        for (ucp_atomic_op_t op : all_ops) {
            for (bool fetch : {false, true}) {
                if ((op == UCP_ATOMIC_OP_CSWAP) && !fetch) {
                    continue;
                }
                for (bool match : {true, false}) {
                    if (!match && (op != UCP_ATOMIC_OP_CSWAP)) {
                        continue;
                    }
                    INFO(size * 8 << "-bit " << op_name(op) << (fetch ? ", fetching" : "")
                                  << ((op == UCP_ATOMIC_OP_CSWAP) ?
                                          (match ? ", equal" : ", unequal") :
                                          ""));
                    s.write(offset, size, initial);
                    if (size == 4) {
                        s.write(offset + 4, 4, neighbour);
                    }
                    const uint64_t compare = match ? initial : initial ^ 1;
                    uint64_t fetched       = 0;
                    REQUIRE(op_nbx(s, op, size, fetch, operand, compare, s.base + offset,
                                   &fetched) == UCS_OK);
                    REQUIRE(s.flush_ep() == UCS_OK);
                    if (fetch) {
                        CHECK(fetched == initial);
                    }
                    CHECK(s.read(offset, size) == expected(op, initial, operand, compare, size));
                    if (size == 4) {
                        CHECK(s.read(offset + 4, 4) == neighbour);
                    }
                }
            }
        }
    }
}

void legacy_cb(void *, ucs_status_t)
{
}

/* ucp_atomic_post, ucp_atomic_fetch_nb and the blocking compat calls. */
void every_op_legacy(session &s)
{
    const uint64_t offset = 256;
    const struct {
        ucp_atomic_post_op_t post;
        ucp_atomic_op_t op;
    } posts[] = {{UCP_ATOMIC_POST_OP_ADD, UCP_ATOMIC_OP_ADD},
                 {UCP_ATOMIC_POST_OP_AND, UCP_ATOMIC_OP_AND},
                 {UCP_ATOMIC_POST_OP_OR, UCP_ATOMIC_OP_OR},
                 {UCP_ATOMIC_POST_OP_XOR, UCP_ATOMIC_OP_XOR}};
    const struct {
        ucp_atomic_fetch_op_t fetch;
        ucp_atomic_op_t op;
    } fetches[] = {{UCP_ATOMIC_FETCH_OP_FADD, UCP_ATOMIC_OP_ADD},
                   {UCP_ATOMIC_FETCH_OP_SWAP, UCP_ATOMIC_OP_SWAP},
                   {UCP_ATOMIC_FETCH_OP_CSWAP, UCP_ATOMIC_OP_CSWAP},
                   {UCP_ATOMIC_FETCH_OP_FAND, UCP_ATOMIC_OP_AND},
                   {UCP_ATOMIC_FETCH_OP_FOR, UCP_ATOMIC_OP_OR},
                   {UCP_ATOMIC_FETCH_OP_FXOR, UCP_ATOMIC_OP_XOR}};
    for (unsigned size : {4u, 8u}) {
        const uint64_t initial = 6, operand = 3;
        for (const auto &p : posts) {
            INFO(size * 8 << "-bit ucp_atomic_post " << op_name(p.op));
            s.write(offset, size, initial);
            REQUIRE(ucp_atomic_post(s.p.ep, p.post, operand, size, s.base + offset, s.rkey) ==
                    UCS_OK);
            REQUIRE(ucp_worker_flush(s.p.worker) == UCS_OK);
            CHECK(s.read(offset, size) == expected(p.op, initial, operand, 0, size));
        }
        for (const auto &f : fetches) {
            INFO(size * 8 << "-bit ucp_atomic_fetch_nb " << op_name(f.op));
            s.write(offset, size, initial);
            /* CSWAP: value compares, *result is swapped in. */
            uint64_t result = 0;
            store(&result, size, (f.op == UCP_ATOMIC_OP_CSWAP) ? operand : 0x77);
            const uint64_t value = (f.op == UCP_ATOMIC_OP_CSWAP) ? initial : operand;
            REQUIRE(s.wait(ucp_atomic_fetch_nb(s.p.ep, f.fetch, value, &result, size,
                                               s.base + offset, s.rkey, legacy_cb)) == UCS_OK);
            CHECK(load(&result, size) == initial);
            REQUIRE(s.flush_ep() == UCS_OK);
            CHECK(s.read(offset, size) == expected(f.op, initial, operand, initial, size));
        }
    }

    const uint64_t at = s.base + offset;
    uint32_t r32      = 0;
    uint64_t r64      = 0;
    s.write(offset, 8, 10);
    CHECK(ucp_atomic_add64(s.p.ep, 5, at, s.rkey) == UCS_OK);
    CHECK(ucp_atomic_fadd64(s.p.ep, 1, at, s.rkey, &r64) == UCS_OK);
    CHECK(r64 == 15);
    CHECK(ucp_atomic_swap64(s.p.ep, 99, at, s.rkey, &r64) == UCS_OK);
    CHECK(r64 == 16);
    CHECK(ucp_atomic_cswap64(s.p.ep, 99, 7, at, s.rkey, &r64) == UCS_OK);
    CHECK(r64 == 99);
    CHECK(ucp_atomic_cswap64(s.p.ep, 99, 8, at, s.rkey, &r64) == UCS_OK);
    CHECK(r64 == 7);
    REQUIRE(s.flush_ep() == UCS_OK);
    CHECK(s.read(offset, 8) == 7);

    s.write(offset, 4, 0xfffffffe);
    s.write(offset + 4, 4, neighbour);
    CHECK(ucp_atomic_add32(s.p.ep, 1, at, s.rkey) == UCS_OK);
    CHECK(ucp_atomic_fadd32(s.p.ep, 1, at, s.rkey, &r32) == UCS_OK);
    CHECK(r32 == 0xffffffff); /* wraps within 32 bits */
    CHECK(ucp_atomic_swap32(s.p.ep, 3, at, s.rkey, &r32) == UCS_OK);
    CHECK(r32 == 0);
    CHECK(ucp_atomic_cswap32(s.p.ep, 3, 4, at, s.rkey, &r32) == UCS_OK);
    CHECK(r32 == 3);
    REQUIRE(s.flush_ep() == UCS_OK);
    CHECK(s.read(offset, 4) == 4);
    CHECK(s.read(offset + 4, 4) == neighbour);
}

} // namespace

TEST_CASE("every atomic, 32 and 64 bit, fetching or not, leaves the exact value", "[ucp_amo]")
{
    for (const config &cfg : two_process_configs()) {
        INFO("UCX_TLS=" << cfg.tls << ", " << memory_name(cfg.kind) << " memory");
        session s;
        REQUIRE(s.start(cfg, 4096) == UCS_OK);
        every_op_nbx(s);
        every_op_legacy(s);
        CHECK(s.finish() == 0);
    }
    for (const config &cfg : loopback_configs()) {
        INFO("loopback UCX_TLS=" << cfg.tls << ", " << memory_name(cfg.kind) << " memory");
        session s;
        REQUIRE(s.start_loopback(cfg, 4096) == UCS_OK);
        every_op_nbx(s);
        every_op_legacy(s);
    }
}

TEST_CASE("1- and 2-byte, misaligned, outside and malformed atomics are refused", "[ucp_amo]")
{
    auto run = [](session &s) {
        ucp_test::log_capture log;
        s.write(0, 8, 1234);
        s.write(s.length - 8, 8, 5678);
        uint64_t operand = 1, reply = 0;
        ucp_request_param_t param{};
        param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
        auto nbx           = [&](ucp_atomic_op_t op, uint64_t address, size_t count = 1,
                       const void *buffer = nullptr) {
            return s.wait(ucp_atomic_op_nbx(s.p.ep, op, buffer ? buffer : &operand, count, address,
                                                      s.rkey, &param));
        };
        for (size_t size : {1, 2, 3, 16}) {
            INFO("operand of " << size << " bytes");
            param.datatype = ucp_dt_make_contig(size);
            CHECK(nbx(UCP_ATOMIC_OP_ADD, s.base) == UCS_ERR_INVALID_PARAM);
            CHECK(ucp_atomic_post(s.p.ep, UCP_ATOMIC_POST_OP_ADD, 1, size, s.base, s.rkey) ==
                  UCS_ERR_INVALID_PARAM);
            CHECK(s.wait(ucp_atomic_fetch_nb(s.p.ep, UCP_ATOMIC_FETCH_OP_FADD, 1, &reply, size,
                                             s.base, s.rkey, nullptr)) == UCS_ERR_INVALID_PARAM);
        }
        param.datatype = ucp_dt_make_iov();
        CHECK(nbx(UCP_ATOMIC_OP_ADD, s.base) == UCS_ERR_INVALID_PARAM);
        param.op_attr_mask = 0; /* the datatype is required */
        CHECK(nbx(UCP_ATOMIC_OP_ADD, s.base) == UCS_ERR_INVALID_PARAM);

        param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
        param.datatype     = ucp_dt_make_contig(8);
        CHECK(nbx(UCP_ATOMIC_OP_ADD, s.base + 4) == UCS_ERR_INVALID_PARAM); /* misaligned */
        CHECK(nbx(UCP_ATOMIC_OP_ADD, s.base, 2) == UCS_ERR_INVALID_PARAM);  /* count */
        CHECK(nbx(UCP_ATOMIC_OP_ADD, s.base, 0) == UCS_ERR_INVALID_PARAM);
        CHECK(nbx(UCP_ATOMIC_OP_LAST, s.base) == UCS_ERR_INVALID_PARAM);
        CHECK(s.wait(atomic_op_raw(s.p.ep, 42, &operand, s.base, s.rkey, &param)) ==
              UCS_ERR_INVALID_PARAM);
        CHECK(nbx(UCP_ATOMIC_OP_CSWAP, s.base) == UCS_ERR_INVALID_PARAM); /* no reply */
        CHECK(nbx(UCP_ATOMIC_OP_ADD, s.base + s.length) == UCS_ERR_INVALID_ADDR);
        CHECK(nbx(UCP_ATOMIC_OP_ADD, s.base - 8) == UCS_ERR_INVALID_ADDR);
        CHECK(nbx(UCP_ATOMIC_OP_ADD, 0) == UCS_ERR_INVALID_ADDR);
        CHECK(s.wait(ucp_atomic_op_nbx(s.p.ep, UCP_ATOMIC_OP_ADD, nullptr, 1, s.base, s.rkey,
                                       &param)) == UCS_ERR_INVALID_PARAM);
        CHECK(s.wait(ucp_atomic_op_nbx(nullptr, UCP_ATOMIC_OP_ADD, &operand, 1, s.base, s.rkey,
                                       &param)) == UCS_ERR_INVALID_PARAM);
        CHECK(s.wait(ucp_atomic_op_nbx(s.p.ep, UCP_ATOMIC_OP_ADD, &operand, 1, s.base, nullptr,
                                       &param)) == UCS_ERR_INVALID_PARAM);
        CHECK(s.wait(ucp_atomic_op_nbx(s.p.ep, UCP_ATOMIC_OP_ADD, &operand, 1, s.base, s.rkey,
                                       nullptr)) == UCS_ERR_INVALID_PARAM);
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        param.reply_buffer = nullptr;
        CHECK(nbx(UCP_ATOMIC_OP_ADD, s.base) == UCS_ERR_INVALID_PARAM);
        CHECK(ucp_atomic_post(s.p.ep, UCP_ATOMIC_POST_OP_LAST, 1, 8, s.base, s.rkey) ==
              UCS_ERR_INVALID_PARAM);
        CHECK(ucp_atomic_post(s.p.ep, UCP_ATOMIC_POST_OP_ADD, 1, 8, s.base + s.length, s.rkey) ==
              UCS_ERR_INVALID_ADDR);
        CHECK(s.wait(ucp_atomic_fetch_nb(s.p.ep, UCP_ATOMIC_FETCH_OP_LAST, 1, &reply, 8, s.base,
                                         s.rkey, nullptr)) == UCS_ERR_INVALID_PARAM);
        CHECK(s.wait(ucp_atomic_fetch_nb(s.p.ep, UCP_ATOMIC_FETCH_OP_FADD, 1, nullptr, 8, s.base,
                                         s.rkey, nullptr)) == UCS_ERR_INVALID_PARAM);
        uint32_t r32;
        CHECK(ucp_atomic_fadd32(s.p.ep, 1, s.base + 2, s.rkey, &r32) == UCS_ERR_INVALID_PARAM);
        CHECK(ucp_atomic_cswap64(s.p.ep, 0, 1, s.base, s.rkey, nullptr) == UCS_ERR_INVALID_PARAM);

        REQUIRE(s.flush_ep() == UCS_OK);
        CHECK(s.read(0, 8) == 1234); /* nothing refused was applied */
        CHECK(s.read(s.length - 8, 8) == 5678);
        /* Each refusal says why. */
        const std::string text = log.text();
        for (const char *why : {"operands are 4 or 8 bytes", "datatype is required", "not aligned",
                                "count must be 1", "invalid opcode", "needs a reply buffer"}) {
            CHECK(text.find(why) != std::string::npos);
        }
    };
    for (const config &cfg : two_process_configs()) {
        INFO("UCX_TLS=" << cfg.tls << ", " << memory_name(cfg.kind) << " memory");
        session s;
        REQUIRE(s.start(cfg, 4096) == UCS_OK);
        run(s);
        CHECK(s.finish() == 0);
    }
    session s;
    REQUIRE(s.start_loopback({"self", memory::registered}, 4096) == UCS_OK);
    run(s);
}

TEST_CASE("atomic posts are all applied at the target when a flush returns", "[ucp_amo]")
{
    const unsigned count = 1000;
    for (const config &cfg : two_process_configs()) {
        INFO("UCX_TLS=" << cfg.tls << ", " << memory_name(cfg.kind) << " memory");
        session s;
        REQUIRE(s.start(cfg, 4096) == UCS_OK);
        s.write(0, 8, 0);
        s.write(8, 4, 0);
        s.write(16, 4, 0);
        for (unsigned i = 0; i < count; ++i) {
            REQUIRE(ucp_atomic_post(s.p.ep, UCP_ATOMIC_POST_OP_ADD, 1, 8, s.base, s.rkey) ==
                    UCS_OK);
            /* OpenSHMEM's form: op_nbx, no reply buffer, the request freed at once. */
            uint32_t two = 2;
            ucp_request_param_t param{};
            param.op_attr_mask   = UCP_OP_ATTR_FIELD_DATATYPE;
            param.datatype       = ucp_dt_make_contig(4);
            ucs_status_ptr_t req = ucp_atomic_op_nbx(s.p.ep, UCP_ATOMIC_OP_ADD, &two, 1, s.base + 8,
                                                     s.rkey, &param);
            REQUIRE(!UCS_PTR_IS_ERR(req));
            if (req != nullptr) {
                ucp_request_free(req);
            }
            REQUIRE(ucp_atomic_post(s.p.ep, UCP_ATOMIC_POST_OP_XOR, uint64_t(1) << (i % 32), 4,
                                    s.base + 16, s.rkey) == UCS_OK);
        }
        REQUIRE(s.wait(ucp_worker_flush_nb(s.p.worker, 0, legacy_cb)) == UCS_OK);
        CHECK(s.read(0, 8) == count);
        CHECK(s.read(8, 4) == 2 * count);
        /* 1000 = 31 * 32 + 8: bits 0..7 flipped 32 times, the others 31 times. */
        CHECK(s.read(16, 4) == 0xffffff00ull);
        CHECK(s.finish() == 0);
    }
}

namespace {

// clang-format off
enum : uint32_t {
    race = uint32_t(command_type::custom),   /* size, offset, length = count */
    lock_loop                                /* offset = lock, value2 = counter,
                                                length = iterations, value = id */
};
// clang-format on

ucs_status_t fetch_add(peer &p, ucp_ep_h ep, ucp_rkey_h rkey, unsigned size, uint64_t address,
                       uint64_t *old)
{
    uint64_t one = 1, reply = 0;
    ucp_request_param_t param{};
    param.op_attr_mask  = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    param.datatype      = ucp_dt_make_contig(size);
    param.reply_buffer  = &reply;
    ucs_status_t status = p.wait(ucp_atomic_op_nbx(ep, UCP_ATOMIC_OP_ADD, &one, 1, address, rkey,
                                                   &param));
    *old                = load(&reply, size);
    return status;
}

ucs_status_t cswap64(peer &p, ucp_ep_h ep, ucp_rkey_h rkey, uint64_t address, uint64_t compare,
                     uint64_t swap, uint64_t *old)
{
    ucp_request_param_t param{};
    param.op_attr_mask  = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
    param.datatype      = ucp_dt_make_contig(8);
    param.reply_buffer  = &swap;
    ucs_status_t status = p.wait(ucp_atomic_op_nbx(ep, UCP_ATOMIC_OP_CSWAP, &compare, 1, address,
                                                   rkey, &param));
    *old                = swap;
    return status;
}

/*
 * An MPI window lock: acquire with compare-and-swap 0 -> id, read-modify-
 * write a plain counter with get and put (flushed), release with
 * compare-and-swap id -> 0. Returns the compare-and-swaps issued, 0 on error.
 */
uint64_t lock_loop_run(peer &p, ucp_ep_h ep, ucp_rkey_h rkey, uint64_t lock, uint64_t counter,
                       uint64_t iterations, uint64_t id)
{
    uint64_t cswaps = 0;
    const ucp_request_param_t param{};
    for (uint64_t i = 0; i < iterations; ++i) {
        uint64_t old = 1;
        while (old != 0) {
            if (cswap64(p, ep, rkey, lock, 0, id, &old) != UCS_OK) {
                return 0;
            }
            ++cswaps;
        }
        uint64_t value = 0;
        if ((p.wait(ucp_get_nbx(ep, &value, 8, counter, rkey, &param)) != UCS_OK)) {
            return 0;
        }
        ++value;
        if ((p.wait(ucp_put_nbx(ep, &value, 8, counter, rkey, &param)) != UCS_OK) ||
            (p.wait(ucp_ep_flush_nbx(ep, &param)) != UCS_OK)) {
            return 0;
        }
        if ((cswap64(p, ep, rkey, lock, id, 0, &old) != UCS_OK) || (old != id)) {
            return 0; /* someone else held the lock meanwhile */
        }
        ++cswaps;
    }
    return cswaps;
}

/* A target that also operates on its own region, through an ep to itself. */
int racing_child(int fd, const char *tls, memory kind, size_t length)
{
    peer p;
    TEST_CHILD_CHECK(p.init(tls, features) == UCS_OK);
    TEST_CHILD_CHECK(p.connect_over(fd));
    region r;
    TEST_CHILD_CHECK(r.map(p.context, kind, length) == UCS_OK);
    TEST_CHILD_CHECK(test::send_blob(fd, r.key()));
    TEST_CHILD_CHECK(test::send_value(fd, r.address()));

    ucp_ep_params_t params{};
    std::vector<uint8_t> own = p.address();
    params.field_mask        = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    params.address           = reinterpret_cast<const ucp_address_t *>(own.data());
    ucp_ep_h self_ep         = nullptr;
    TEST_CHILD_CHECK(ucp_ep_create(p.worker, &params, &self_ep) == UCS_OK);
    ucp_rkey_h self_key = nullptr;
    TEST_CHILD_CHECK(ucp_ep_rkey_unpack(self_ep, r.key().data(), &self_key) == UCS_OK);

    const int result = serve(p, r, fd, [&](const command &c) -> int {
        if (uint32_t(c.type) == race) {
            std::vector<uint64_t> fetched;
            for (uint64_t i = 0; i < c.length; ++i) {
                uint64_t old = 0;
                TEST_CHILD_CHECK(fetch_add(p, self_ep, self_key, c.size, r.address() + c.offset,
                                           &old) == UCS_OK);
                fetched.push_back(old);
            }
            TEST_CHILD_CHECK(test::send_blob(fd, fetched.data(),
                                             fetched.size() * sizeof(uint64_t)));
            return 0;
        }
        if (uint32_t(c.type) == lock_loop) {
            const uint64_t cswaps = lock_loop_run(p, self_ep, self_key, r.address() + c.offset,
                                                  r.address() + c.value2, c.length, c.value);
            TEST_CHILD_CHECK(test::send_value(fd, cswaps));
            return 0;
        }
        return __LINE__;
    });
    ucp_rkey_destroy(self_key);
    ucp_request_param_t close{};
    close.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    close.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    p.wait(ucp_ep_close_nbx(self_ep, &close));
    return result;
}

ucs_status_t start_racing(session &s, const config &cfg, size_t length)
{
    const char *tls   = cfg.tls;
    const memory kind = cfg.kind;
    return s.start_with(cfg, length, [=](int fd) { return racing_child(fd, tls, kind, length); });
}

} // namespace

TEST_CASE("fetch-and-add from both processes at once: every value fetched once", "[ucp_amo]")
{
    const uint64_t count = 1000;
    for (const config &cfg : two_process_configs()) {
        INFO("UCX_TLS=" << cfg.tls << ", " << memory_name(cfg.kind) << " memory");
        session s;
        REQUIRE(start_racing(s, cfg, 4096) == UCS_OK);
        for (unsigned size : {4u, 8u}) {
            INFO(size * 8 << "-bit counter");
            const uint64_t offset = 64 * size;
            s.write(offset, size, 0);
            REQUIRE(s.tell({command_type(race), size, offset, count, 0, 0}));
            std::vector<uint64_t> all;
            for (uint64_t i = 0; i < count; ++i) {
                uint64_t old = 0;
                REQUIRE(fetch_add(s.p, s.p.ep, s.rkey, size, s.base + offset, &old) == UCS_OK);
                all.push_back(old);
            }
            std::vector<uint8_t> blob;
            REQUIRE(recv_blob_progress(s.p, s.child->fd(), &blob));
            REQUIRE(blob.size() == count * sizeof(uint64_t));
            const auto *theirs = reinterpret_cast<const uint64_t *>(blob.data());
            all.insert(all.end(), theirs, theirs + count);
            std::sort(all.begin(), all.end());
            bool each_once = true;
            for (uint64_t i = 0; i < all.size(); ++i) {
                each_once = each_once && (all[i] == i);
            }
            CHECK(each_once);
            CHECK(s.read(offset, size) == 2 * count);
        }
        CHECK(s.finish() == 0);
    }
}

TEST_CASE("a window lock taken by compare-and-swap from both processes excludes", "[ucp_amo]")
{
    const uint64_t iterations = 300;
    for (const config &cfg : two_process_configs()) {
        INFO("UCX_TLS=" << cfg.tls << ", " << memory_name(cfg.kind) << " memory");
        session s;
        REQUIRE(start_racing(s, cfg, 4096) == UCS_OK);
        s.write(0, 8, 0);   /* the lock */
        s.write(512, 8, 0); /* the counter it protects */
        REQUIRE(s.tell({command_type(lock_loop), 8, 0, iterations, 2, 512}));
        const uint64_t ours   = lock_loop_run(s.p, s.p.ep, s.rkey, s.base, s.base + 512, iterations,
                                              1);
        const uint64_t theirs = s.answer();
        CHECK(ours >= 2 * iterations);
        CHECK(theirs >= 2 * iterations);
        CHECK(theirs != ~uint64_t(0));
        CHECK(s.read(512, 8) == 2 * iterations);
        CHECK(s.read(0, 8) == 0);
        CHECK(s.finish() == 0);
    }
}

TEST_CASE("a lost target fails what waits for it; flush and fence return", "[ucp_amo]")
{
    ucp_test::env_guard env;
    env.set("UCX_KEEPALIVE_INTERVAL", "50ms");
    for (const config &cfg :
         {config{"sysv", memory::registered}, config{"posix,cma", memory::registered},
          config{"tcp", memory::registered}}) {
        INFO("UCX_TLS=" << cfg.tls << ", " << memory_name(cfg.kind) << " memory");
        session s;
        s.err_mode = UCP_ERR_HANDLING_MODE_PEER;
        REQUIRE(s.start(cfg, 4096) == UCS_OK);
        s.write(0, 8, 7);
        REQUIRE(s.ask({command_type::hold, 0, 0, 0, 0, 0}) == 0); /* never answers */

        uint64_t one = 1, old = 0;
        ucp_request_param_t param{};
        param.op_attr_mask     = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        param.datatype         = ucp_dt_make_contig(8);
        param.reply_buffer     = &old;
        ucs_status_ptr_t fetch = ucp_atomic_op_nbx(s.p.ep, UCP_ATOMIC_OP_ADD, &one, 1, s.base,
                                                   s.rkey, &param);
        REQUIRE(!UCS_PTR_IS_ERR(fetch));
        REQUIRE(fetch != nullptr); /* the target holds: no answer yet */
        REQUIRE(ucp_atomic_post(s.p.ep, UCP_ATOMIC_POST_OP_ADD, 1, 8, s.base, s.rkey) == UCS_OK);
        const ucp_request_param_t plain{};
        ucs_status_ptr_t flush = ucp_worker_flush_nbx(s.p.worker, &plain);
        REQUIRE(!UCS_PTR_IS_ERR(flush));
        REQUIRE(flush != nullptr);

        ucp_test::log_capture log;
        s.kill_target();
        REQUIRE(test::poll_until(
            [&] {
            return (ucp_request_check_status(fetch) != UCS_INPROGRESS) &&
                   (ucp_request_check_status(flush) != UCS_INPROGRESS);
            },
            [&] { ucp_worker_progress(s.p.worker); }));
        CHECK(ucp_request_check_status(fetch) != UCS_OK);
        ucp_request_free(fetch);
        ucp_request_free(flush);
        CHECK(s.errors == 1);
        /* Nothing is left for a fence to wait for. */
        CHECK(s.p.worker->rma.emulated_outstanding == 0);
        CHECK(s.p.ep->rma_outstanding == 0);
        CHECK(ucp_worker_fence(s.p.worker) == UCS_OK);
        /* Operations on the failed ep fail at once. */
        CHECK(UCS_PTR_IS_ERR(ucp_atomic_op_nbx(s.p.ep, UCP_ATOMIC_OP_ADD, &one, 1, s.base, s.rkey,
                                               &param)));
        CHECK(ucp_put_nbi(s.p.ep, &one, 8, s.base, s.rkey) != UCS_OK);
        s.finish();
        if (std::string(cfg.tls) != "tcp") {
            /* The posted atomic had no request of the user's: it is reported. */
            CHECK(log.text().find("atomic to") != std::string::npos);
        }
    }
}

TEST_CASE("UCX_ATOMIC_MODE: device refuses atomics no transport applies as a device, cpu "
          "and guess use CPU atomics here",
          "[ucp_amo]")
{
    for (const char *mode : {"cpu", "guess", "device"}) {
        INFO("UCX_ATOMIC_MODE=" << mode);
        ucp_test::env_guard env;
        env.set("UCX_ATOMIC_MODE", mode);
        ucp_test::log_capture errors;
        for (const config &cfg : loopback_configs()) {
            INFO("UCX_TLS=" << cfg.tls << ", " << memory_name(cfg.kind) << " memory");
            session s;
            REQUIRE(s.start_loopback(cfg, 4096) == UCS_OK);
            const std::string info = ucp_test::print_to_string([&](FILE *f) {
                ucp_worker_print_info(s.p.worker, f);
            });
            const bool device      = (std::string(mode) == "device");
            CHECK(info.find(device ? "atomic mode: device" : "atomic mode: cpu") !=
                  std::string::npos);
            s.write(0, 8, 5);
            uint64_t one = 1, old = 0;
            ucp_request_param_t param{};
            param.op_attr_mask        = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
            param.datatype            = ucp_dt_make_contig(8);
            param.reply_buffer        = &old;
            const ucs_status_t status = s.p.wait(ucp_atomic_op_nbx(s.p.ep, UCP_ATOMIC_OP_ADD, &one,
                                                                   1, s.base, s.rkey, &param));
            if (device) {
                CHECK(status == UCS_ERR_UNSUPPORTED);
                CHECK(s.read(0, 8) == 5);
            } else {
                CHECK(status == UCS_OK);
                CHECK(old == 5);
                CHECK(s.read(0, 8) == 6);
            }
            /* Puts do not depend on the atomic mode. */
            uint64_t value = 42;
            ucp_request_param_t put{};
            CHECK(s.p.wait(ucp_put_nbx(s.p.ep, &value, sizeof(value), s.base + 8, s.rkey, &put)) ==
                  UCS_OK);
            CHECK(s.p.wait(ucp_worker_flush_nbx(s.p.worker, &put)) == UCS_OK);
            CHECK(s.read(8, 8) == 42);
        }
        if (std::string(mode) == "device") {
            CHECK(errors.text().find("UCX_ATOMIC_MODE=device") != std::string::npos);
        }
    }

    ucp_test::env_guard env;
    env.set("UCX_ATOMIC_MODE", "sometimes");
    ucp_config_t *config = nullptr;
    CHECK(ucp_config_read(nullptr, nullptr, &config) != UCS_OK);
    if (config != nullptr) {
        ucp_config_release(config);
    }
}
