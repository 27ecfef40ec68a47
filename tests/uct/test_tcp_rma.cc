/*
 * tcp RMA and atomics, emulated over messages, between two processes: data
 * lands where it should, fetches return the right values, and the target
 * refuses anything outside what it registered (bad bounds, forged or
 * garbage keys, deregistered regions) without touching its memory.
 */
#include <catch2/catch.hpp>

#include "two_process.h"
#include "uct_test_util.h"

#include <uct/tcp/tcp_md.h>
#include <uct/tcp/tcp_wire.h>
#include <ucs/debug/log.h>

#include <poll.h>

#include <cstring>
#include <fstream>
#include <string>

#include <sys/prctl.h>
#include <unistd.h>
#include <vector>

namespace {

using test::counted_comp;
using test::die_with_parent;

constexpr size_t GUARD       = 4096;
constexpr size_t A_SIZE      = 65536;
constexpr size_t B_SIZE      = 4 << 20;
constexpr uint8_t GUARD_BYTE = 0xee;

enum command : uint8_t { CMD_DEREG_B = 'D', CMD_SEND_A = 'C', CMD_QUIT = 'Q' };

inline uint8_t b_pattern(size_t i)
{
    return uint8_t(i * 13 + (i >> 9));
}

struct unpack_target {
    uint8_t *dest;
    size_t length;
    int calls = 0;
};

void unpack_into(void *arg, const void *data, size_t length)
{
    auto *t = static_cast<unpack_target *>(arg);
    ++t->calls;
    std::memcpy(t->dest, data, std::min(length, t->length));
}

struct bytes_arg {
    const uint8_t *data;
    size_t length;
};

size_t pack_bytes(void *dest, void *arg)
{
    auto *a = static_cast<bytes_arg *>(arg);
    std::memcpy(dest, a->data, a->length);
    return a->length;
}

int rma_target(int fd)
{
    die_with_parent();
    /* Refused requests are logged as errors: keep them in a file to count. */
    std::string log_path = "/tmp/ucx-ng-tcp-rma-" + std::to_string(getpid()) + ".log";
    TEST_CHILD_CHECK(ucs::log_set_file(log_path.c_str()) == UCS_OK);
    test::uct_entity e("tcp", "lo");
    TEST_CHILD_CHECK(e.ok());

    std::vector<uint8_t> a(GUARD + A_SIZE + GUARD, GUARD_BYTE);
    std::memset(a.data() + GUARD, 0, A_SIZE);
    std::vector<uint8_t> b(B_SIZE);
    for (size_t i = 0; i < B_SIZE; ++i) {
        b[i] = b_pattern(i);
    }
    uct::mem_h memh_a, memh_b;
    TEST_CHILD_CHECK(e.md().mem_reg(a.data() + GUARD, A_SIZE, 0, &memh_a) == UCS_OK);
    TEST_CHILD_CHECK(e.md().mem_reg(b.data(), B_SIZE, 0, &memh_b) == UCS_OK);

    size_t key_size = e.md().attr().rkey_packed_size;
    std::vector<uint8_t> keys(2 * key_size);
    TEST_CHILD_CHECK(e.md().mkey_pack(memh_a, keys.data()) == UCS_OK);
    TEST_CHILD_CHECK(e.md().mkey_pack(memh_b, keys.data() + key_size) == UCS_OK);
    TEST_CHILD_CHECK(test::send_blob(fd, e.addresses().serialize()));
    TEST_CHILD_CHECK(test::send_blob(fd, keys));

    for (;;) {
        e.progress();
        pollfd pfd{fd, POLLIN, 0};
        if (::poll(&pfd, 1, 0) != 1) {
            continue;
        }
        uint8_t cmd = 0;
        TEST_CHILD_CHECK(test::recv_value(fd, &cmd));
        if (cmd == CMD_DEREG_B) {
            TEST_CHILD_CHECK(e.md().mem_dereg(memh_b) == UCS_OK);
            TEST_CHILD_CHECK(test::send_value(fd, cmd));
        } else if (cmd == CMD_SEND_A) {
            TEST_CHILD_CHECK(test::send_blob(fd, a.data() + GUARD, A_SIZE));
        } else {
            break;
        }
    }

    bool guards_intact = true;
    for (size_t i = 0; i < GUARD; ++i) {
        guards_intact &= (a[i] == GUARD_BYTE) && (a[GUARD + A_SIZE + i] == GUARD_BYTE);
    }
    TEST_CHILD_CHECK(test::send_value(fd, guards_intact));
    ucs::log_set_file("stdout");
    uint64_t refusals = 0;
    std::ifstream in(log_path);
    for (std::string line; std::getline(in, line);) {
        refusals += line.find("tcp: refused") != std::string::npos;
    }
    ::unlink(log_path.c_str());
    TEST_CHILD_CHECK(test::send_value(fd, refusals));
    TEST_CHILD_CHECK(e.md().mem_dereg(memh_a) == UCS_OK);
    return 0;
}

class rma_initiator {
public:
    explicit rma_initiator(test::uct_entity &e) : e_(e) {}

    void pump() { e_.progress(); }

    /* Waits for an operation's completion; returns its status. */
    ucs_status_t wait(ucs_status_t st, counted_comp &comp)
    {
        if (st != UCS_INPROGRESS) {
            return st;
        }
        if (!test::poll_until([&] { return comp.fired > 0; }, [&] { pump(); })) {
            return UCS_ERR_TIMED_OUT;
        }
        return comp.last;
    }

    ucs_status_t flush(uct::ep *ep)
    {
        counted_comp comp;
        return wait(ep->flush(0, &comp), comp);
    }

    ucs_status_t get(uct::ep *ep, void *dest, size_t length, uint64_t addr, uct::rkey_t rkey,
                     int *unpack_calls = nullptr)
    {
        counted_comp comp;
        unpack_target t{static_cast<uint8_t *>(dest), length};
        ucs_status_t st = wait(ep->get_bcopy(unpack_into, &t, length, addr, rkey, &comp), comp);
        if (unpack_calls != nullptr) {
            *unpack_calls = t.calls;
        }
        return st;
    }

    ucs_status_t fetch(uct::ep *ep, uct::atomic_op op, unsigned size, uint64_t value,
                       uint64_t compare, uint64_t *result, uint64_t addr, uct::rkey_t rkey)
    {
        counted_comp comp;
        *result = 0;
        return wait(ep->atomic_fetch(op, size, value, compare, result, addr, rkey, &comp), comp);
    }

private:
    test::uct_entity &e_;
};

} // namespace

TEST_CASE("tcp put/get/atomics through the emulation, with bounds enforced", "[tcp]")
{
    test::child_process child(rma_target);

    test::uct_entity e("tcp", "lo");
    REQUIRE(e.ok());
    std::vector<uint8_t> blob, keys;
    test::uct_addresses peer;
    REQUIRE(test::recv_blob(child.fd(), &blob));
    REQUIRE(test::uct_addresses::deserialize(blob, &peer));
    REQUIRE(test::recv_blob(child.fd(), &keys));
    size_t key_size = e.md().attr().rkey_packed_size;
    REQUIRE(keys.size() == 2 * key_size);

    uct::rkey_bundle ka, kb;
    REQUIRE(e.component().rkey_unpack(keys.data(), key_size, &ka) == UCS_OK);
    REQUIRE(e.component().rkey_unpack(keys.data() + key_size, key_size, &kb) == UCS_OK);
    const uint64_t a = uct::tcp::rkey_from(ka.rkey)->address;
    const uint64_t b = uct::tcp::rkey_from(kb.rkey)->address;

    uct::ep *ep = e.connect(peer);
    REQUIRE(ep != nullptr);
    rma_initiator rma(e);
    std::vector<uint8_t> image(A_SIZE, 0); /* what region A should hold */
    uint64_t expected_refusals = 0;        /* requests the target must refuse */

    SECTION("put and get of every kind") {
        /* put_short */
        uint8_t small[16];
        for (int i = 0; i < 16; ++i) {
            small[i] = uint8_t(0xa0 + i);
        }
        REQUIRE(ep->put_short(small, 16, a, ka.rkey) == UCS_OK);
        std::memcpy(image.data(), small, 16);

        /* put_bcopy */
        std::vector<uint8_t> mid(1000);
        for (size_t i = 0; i < mid.size(); ++i) {
            mid[i] = uint8_t(i * 3 + 1);
        }
        bytes_arg arg{mid.data(), mid.size()};
        REQUIRE(ep->put_bcopy(pack_bytes, &arg, a + 100, ka.rkey) == ssize_t(mid.size()));
        std::memcpy(image.data() + 100, mid.data(), mid.size());

        /* put_zcopy over 3 iovs, 20000 bytes */
        std::vector<uint8_t> big(20000);
        for (size_t i = 0; i < big.size(); ++i) {
            big[i] = uint8_t(i * 11 + 5);
        }
        uct::iov iov[3] = {{big.data(), 7000, nullptr},
                           {big.data() + 7000, 1, nullptr},
                           {big.data() + 7001, 12999, nullptr}};
        counted_comp pcomp;
        ucs_status_t st = ep->put_zcopy(iov, 3, a + 4096, ka.rkey, &pcomp);
        REQUIRE(((st == UCS_OK) || (st == UCS_INPROGRESS)));
        std::memcpy(image.data() + 4096, big.data(), big.size());
        REQUIRE(rma.flush(ep) == UCS_OK);
        CHECK(rma.wait(st, pcomp) == UCS_OK);

        /* get_bcopy, several outstanding at once */
        uint8_t got_small[16] = {};
        std::vector<uint8_t> got_mid(1000);
        counted_comp c1, c2;
        unpack_target t1{got_small, 16}, t2{got_mid.data(), got_mid.size()};
        REQUIRE(ep->get_bcopy(unpack_into, &t1, 16, a, ka.rkey, &c1) == UCS_INPROGRESS);
        REQUIRE(ep->get_bcopy(unpack_into, &t2, 1000, a + 100, ka.rkey, &c2) == UCS_INPROGRESS);
        REQUIRE(test::poll_until([&] { return c1.fired && c2.fired; }, [&] { rma.pump(); }));
        CHECK(c1.last == UCS_OK);
        CHECK(c2.last == UCS_OK);
        CHECK(std::memcmp(got_small, small, 16) == 0);
        CHECK(got_mid == mid);

        /* get_zcopy into 2 iovs, and 4 MiB from region B */
        std::vector<uint8_t> got_big(big.size());
        uct::iov giov[2] = {{got_big.data(), 5000, nullptr},
                            {got_big.data() + 5000, 15000, nullptr}};
        counted_comp gcomp;
        CHECK(rma.wait(ep->get_zcopy(giov, 2, a + 4096, ka.rkey, &gcomp), gcomp) == UCS_OK);
        CHECK(got_big == big);

        std::vector<uint8_t> got_b(B_SIZE);
        uct::iov biov{got_b.data(), got_b.size(), nullptr};
        counted_comp bcomp;
        CHECK(rma.wait(ep->get_zcopy(&biov, 1, b, kb.rkey, &bcomp), bcomp) == UCS_OK);
        size_t mismatches = 0;
        for (size_t i = 0; i < B_SIZE; ++i) {
            mismatches += (got_b[i] != b_pattern(i));
        }
        CHECK(mismatches == 0);
    }

    SECTION("atomics, 64 and 32 bit, post and fetch") {
        const uint64_t a64 = a + 32768, a32 = a + 32776;
        uint64_t m64 = 0x1000;
        uint32_t m32 = 0xfff0;
        REQUIRE(ep->put_short(&m64, 8, a64, ka.rkey) == UCS_OK);
        REQUIRE(ep->put_short(&m32, 4, a32, ka.rkey) == UCS_OK);
        using uct::atomic_op;

        CHECK(ep->atomic_post(atomic_op::ADD, 8, 5, a64, ka.rkey) == UCS_OK);
        m64 += 5;
        CHECK(ep->atomic_post(atomic_op::XOR, 8, 0xff, a64, ka.rkey) == UCS_OK);
        m64 ^= 0xff;
        CHECK(ep->atomic_post(atomic_op::ADD, 4, 0x100000001ull, a32, ka.rkey) == UCS_OK);
        m32 += 1; /* 32-bit: the value is truncated */
        CHECK(ep->atomic_post(atomic_op::OR, 4, 0x0f000000, a32, ka.rkey) == UCS_OK);
        m32 |= 0x0f000000;

        struct step {
            atomic_op op;
            uint64_t value, compare;
        };
        const step steps[] = {
            {atomic_op::ADD, 3, 0},
            {atomic_op::AND, 0xff0f, 0},
            {atomic_op::OR, 0x30000, 0},
            {atomic_op::XOR, 0x5555, 0},
            {atomic_op::SWAP, 0x77, 0},
            {atomic_op::CSWAP, 0x99, 0x77},    /* swaps */
            {atomic_op::CSWAP, 0x11, 0x12345}, /* does not */
        };
        for (const auto &s : steps) {
            uint64_t old = 0;
            REQUIRE(rma.fetch(ep, s.op, 8, s.value, s.compare, &old, a64, ka.rkey) == UCS_OK);
            CHECK(old == m64);
            uint64_t old32 = 0;
            REQUIRE(rma.fetch(ep, s.op, 4, s.value, s.compare, &old32, a32, ka.rkey) == UCS_OK);
            CHECK(old32 == m32);
            switch (s.op) {
            case atomic_op::ADD:
                m64 += s.value;
                m32 += uint32_t(s.value);
                break;
            case atomic_op::AND:
                m64 &= s.value;
                m32 &= uint32_t(s.value);
                break;
            case atomic_op::OR:
                m64 |= s.value;
                m32 |= uint32_t(s.value);
                break;
            case atomic_op::XOR:
                m64 ^= s.value;
                m32 ^= uint32_t(s.value);
                break;
            case atomic_op::SWAP:
                m64 = s.value;
                m32 = uint32_t(s.value);
                break;
            default:
                if (m64 == s.compare) {
                    m64 = s.value;
                }
                if (m32 == uint32_t(s.compare)) {
                    m32 = uint32_t(s.value);
                }
            }
        }
        uint64_t final64 = 0;
        uint32_t final32 = 0;
        REQUIRE(rma.get(ep, &final64, 8, a64, ka.rkey) == UCS_OK);
        REQUIRE(rma.get(ep, &final32, 4, a32, ka.rkey) == UCS_OK);
        CHECK(final64 == m64);
        CHECK(final32 == m32);
        std::memcpy(image.data() + 32768, &m64, 8);
        std::memcpy(image.data() + 32776, &m32, 4);

        /* Arguments the emulation refuses locally. */
        uint64_t r;
        counted_comp c;
        CHECK(ep->atomic_post(atomic_op::SWAP, 8, 1, a64, ka.rkey) == UCS_ERR_INVALID_PARAM);
        CHECK(ep->atomic_post(atomic_op::ADD, 8, 1, a64 + 4, ka.rkey) == UCS_ERR_INVALID_PARAM);
        CHECK(ep->atomic_post(atomic_op::ADD, 2, 1, a64, ka.rkey) == UCS_ERR_INVALID_PARAM);
        CHECK(ep->atomic_fetch(atomic_op::LAST, 8, 1, 0, &r, a64, ka.rkey, &c) ==
              UCS_ERR_INVALID_PARAM);
        CHECK(ep->atomic_fetch(atomic_op::ADD, 8, 1, 0, &r, a + A_SIZE, ka.rkey, &c) ==
              UCS_ERR_INVALID_ADDR);
        CHECK(c.fired == 0);
    }

    SECTION("out-of-range, forged and garbage keys are refused") {
        uint64_t word   = 0x0123456789abcdefull;
        uint8_t buf[16] = {};
        counted_comp c;
        /* Caught locally against the key's bounds: nothing is sent. */
        CHECK(ep->put_short(buf, 16, a + A_SIZE - 8, ka.rkey) == UCS_ERR_INVALID_ADDR);
        CHECK(ep->put_short(buf, 1, a - 1, ka.rkey) == UCS_ERR_INVALID_ADDR);
        unpack_target t{buf, 8};
        CHECK(ep->get_bcopy(unpack_into, &t, 8, a + A_SIZE, ka.rkey, &c) == UCS_ERR_INVALID_ADDR);
        uct::iov v{buf, 16, nullptr};
        CHECK(ep->get_zcopy(&v, 1, a + A_SIZE - 15, ka.rkey, &c) == UCS_ERR_INVALID_ADDR);
        CHECK(ep->put_zcopy(&v, 1, UINT64_MAX - 7, ka.rkey, &c) == UCS_ERR_INVALID_ADDR);
        CHECK(ep->put_short(buf, 8, a, 0) == UCS_ERR_INVALID_PARAM);
        CHECK(c.fired == 0);

        /* Garbage bytes never become a key. */
        std::vector<uint8_t> garbage(key_size);
        for (size_t i = 0; i < garbage.size(); ++i) {
            garbage[i] = uint8_t(0x5c ^ (i * 29));
        }
        uct::rkey_bundle junk;
        CHECK(e.component().rkey_unpack(garbage.data(), garbage.size(), &junk) ==
              UCS_ERR_INVALID_PARAM);
        CHECK(e.component().rkey_unpack(keys.data(), key_size - 1, &junk) == UCS_ERR_INVALID_PARAM);

        /* A forged key claiming more than was registered: the target's own
         * record refuses, and its guard bytes stay intact. */
        uct::tcp::packed_rkey forged;
        std::memcpy(&forged, keys.data(), sizeof(forged));
        forged.length += GUARD;
        uct::rkey_bundle kf;
        REQUIRE(e.component().rkey_unpack(&forged, sizeof(forged), &kf) == UCS_OK);
        CHECK(ep->put_short(&word, 8, a + A_SIZE, kf.rkey) == UCS_OK);
        CHECK(rma.flush(ep) == UCS_ERR_INVALID_ADDR);
        CHECK(ep->atomic_post(uct::atomic_op::ADD, 8, 1, a + A_SIZE + 8, kf.rkey) == UCS_OK);
        CHECK(rma.flush(ep) == UCS_ERR_INVALID_ADDR);
        int calls = -1;
        CHECK(rma.get(ep, buf, 8, a + A_SIZE, kf.rkey, &calls) == UCS_ERR_INVALID_ADDR);
        CHECK(calls == 0);
        uint64_t old = 0;
        CHECK(rma.fetch(ep, uct::atomic_op::SWAP, 8, 7, 0, &old, a + A_SIZE + 16, kf.rkey) ==
              UCS_ERR_INVALID_ADDR);
        /* Straddling the end of the real region. */
        CHECK(rma.get(ep, buf, 16, a + A_SIZE - 8, kf.rkey) == UCS_ERR_INVALID_ADDR);

        /* A key naming a region id that was never registered. */
        forged.length -= GUARD;
        forged.region_id += 977;
        uct::rkey_bundle kid;
        REQUIRE(e.component().rkey_unpack(&forged, sizeof(forged), &kid) == UCS_OK);
        CHECK(rma.get(ep, buf, 8, a, kid.rkey) == UCS_ERR_INVALID_ADDR);

        expected_refusals = 6;

        /* The connection carries on after refusals. */
        CHECK(ep->put_short(&word, 8, a + 64, ka.rkey) == UCS_OK);
        std::memcpy(image.data() + 64, &word, 8);
        CHECK(rma.flush(ep) == UCS_OK);
        uint64_t back = 0;
        CHECK(rma.get(ep, &back, 8, a + 64, ka.rkey) == UCS_OK);
        CHECK(back == word);

        /* Deregistered memory is no longer reachable. */
        REQUIRE(rma.get(ep, buf, 16, b, kb.rkey) == UCS_OK);
        REQUIRE(test::send_value(child.fd(), uint8_t(CMD_DEREG_B)));
        uint8_t ack = 0;
        REQUIRE(test::recv_value(child.fd(), &ack));
        CHECK(ack == CMD_DEREG_B);
        CHECK(rma.get(ep, buf, 16, b, kb.rkey) == UCS_ERR_INVALID_ADDR);
        ++expected_refusals;

        e.component().rkey_release(kf);
        e.component().rkey_release(kid);
    }

    /* The target's memory holds exactly what the valid operations wrote. */
    REQUIRE(rma.flush(ep) == UCS_OK);
    REQUIRE(test::send_value(child.fd(), uint8_t(CMD_SEND_A)));
    std::vector<uint8_t> remote;
    REQUIRE(test::recv_blob(child.fd(), &remote));
    CHECK(remote == image);
    REQUIRE(test::send_value(child.fd(), uint8_t(CMD_QUIT)));
    bool guards_intact = false;
    REQUIRE(test::recv_value(child.fd(), &guards_intact));
    CHECK(guards_intact);
    uint64_t refusals = UINT64_MAX;
    REQUIRE(test::recv_value(child.fd(), &refusals));
    CHECK(refusals == expected_refusals); /* the target logged each one */
    CHECK(child.wait() == 0);

    e.component().rkey_release(ka);
    e.component().rkey_release(kb);
}
