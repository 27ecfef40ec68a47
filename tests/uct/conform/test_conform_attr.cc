/*
 * Conformance: the iface and md attributes agree with each other and with
 * what the iface does. A capability flag comes with a non-zero limit and a
 * limit without its flag is zero; short <= bcopy <= zcopy where one message
 * kind has several paths; addresses are exactly as long as the attributes
 * say and an iface reaches its own; atomics are listed under an atomic
 * flag; an FD event flag comes with an fd; md flags come with their limits.
 */
#include "conform_pair.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>

namespace {

using namespace test::conform;
namespace flag = uct::iface_flag;

/* A family's flags and limits: each flag iff its limit is non-zero. */
void check_family(const char *family, const uct::iface_attr &a, uint64_t short_flag,
                  uint64_t bcopy_flag, uint64_t zcopy_flag, const uct::op_limits &lim)
{
    INFO(family);
    CHECK(((a.flags & short_flag) != 0) == (lim.max_short > 0));
    CHECK(((a.flags & bcopy_flag) != 0) == (lim.max_bcopy > 0));
    CHECK(((a.flags & zcopy_flag) != 0) == (lim.max_zcopy > 0));
    if (a.flags & zcopy_flag) {
        CHECK(lim.max_iov >= 1);
        CHECK(lim.min_zcopy <= lim.max_zcopy);
        CHECK(std::has_single_bit(lim.opt_zcopy_align));
    }
    if ((a.flags & bcopy_flag) && (a.flags & zcopy_flag)) {
        CHECK(lim.max_bcopy <= lim.max_zcopy);
    }
}

/* `write` fills exactly `length` bytes of its buffer: run over two
 * different fills, the bytes agree (all written) and the tail is intact. */
void check_writes_exactly(const char *what, size_t length,
                          const std::function<ucs_status_t(void *)> &write)
{
    INFO(what << " of " << length << " bytes");
    constexpr size_t TAIL = 64;
    std::vector<uint8_t> first(length + TAIL, 0xa5), second(length + TAIL, 0x5a);
    REQUIRE(write(first.data()) == UCS_OK);
    REQUIRE(write(second.data()) == UCS_OK);
    CHECK(std::memcmp(first.data(), second.data(), length) == 0);
    CHECK(std::all_of(first.begin() + long(length), first.end(),
                      [](uint8_t b) { return b == 0xa5; }));
    CHECK(std::all_of(second.begin() + long(length), second.end(),
                      [](uint8_t b) { return b == 0x5a; }));
}

void iface_attributes(const transport_spec &spec)
{
    CONFORM_OPEN(p, spec);
    const uct::iface_attr &a = p.attr();

    check_family("am", a, flag::AM_SHORT, flag::AM_BCOPY, flag::AM_ZCOPY, a.am);
    check_family("put", a, flag::PUT_SHORT, flag::PUT_BCOPY, flag::PUT_ZCOPY, a.put);
    check_family("get", a, flag::GET_SHORT, flag::GET_BCOPY, flag::GET_ZCOPY, a.get);

    /* Active messages: am.max_short includes the 8-byte header (UCX's
     * "total max. size"); a short message fits in a bcopy one. */
    const uint64_t any_am = flag::AM_SHORT | flag::AM_BCOPY | flag::AM_ZCOPY;
    if (a.flags & flag::AM_SHORT) {
        CHECK(a.am.max_short >= sizeof(uint64_t));
    }
    if ((a.flags & flag::AM_SHORT) && (a.flags & flag::AM_BCOPY)) {
        CHECK(a.am.max_short <= a.am.max_bcopy);
    }
    if (a.flags & any_am) {
        CHECK((a.flags & (flag::CB_SYNC | flag::CB_ASYNC)) != 0);
    }

    /* Atomics: only defined operations; posted swaps do not exist. */
    const uint64_t all_ops = uct::atomic_op_bit(uct::atomic_op::LAST) - 1;
    const uint64_t swaps   = uct::atomic_op_bit(uct::atomic_op::SWAP) |
                           uct::atomic_op_bit(uct::atomic_op::CSWAP);
    const uint64_t listed = a.atomic32_post | a.atomic32_fetch | a.atomic64_post | a.atomic64_fetch;
    const uint64_t atomic_fl = a.flags & (flag::ATOMIC_CPU | flag::ATOMIC_DEVICE);
    CHECK((listed & ~all_ops) == 0);
    CHECK(((a.atomic32_post | a.atomic64_post) & swaps) == 0);
    CHECK((listed != 0) == (atomic_fl != 0));
    CHECK(atomic_fl != (flag::ATOMIC_CPU | flag::ATOMIC_DEVICE));

    /* Connection model and addresses. */
    CHECK((a.flags & (flag::CONNECT_TO_IFACE | flag::CONNECT_TO_EP)) != 0);
    if (a.flags & flag::CONNECT_TO_IFACE) {
        CHECK(a.iface_addr_len > 0);
    }
    CHECK(((a.flags & flag::CONNECT_TO_EP) != 0) == (a.ep_addr_len > 0));
    CHECK(a.max_num_eps >= 1);
    check_writes_exactly("get_device_address", a.device_addr_len,
                         [&](void *buf) { return p.iface().get_device_address(buf); });
    check_writes_exactly("get_address", a.iface_addr_len,
                         [&](void *buf) { return p.iface().get_address(buf); });
    test::uct_addresses own = p.local().addresses();
    CHECK(p.iface().is_reachable(own.device.data(), own.device.size(), own.iface.data(),
                                 own.iface.size()));
    const test::uct_addresses &peer = p.peer().addresses();
    CHECK(p.iface().is_reachable(peer.device.data(), peer.device.size(), peer.iface.data(),
                                 peer.iface.size()));
    /* Lengths are what arrived from a peer: one byte short is refused. */
    if (a.iface_addr_len > 0) {
        CHECK_FALSE(p.iface().is_reachable(own.device.data(), own.device.size(), own.iface.data(),
                                           own.iface.size() - 1));
    }
    if (a.device_addr_len > 0) {
        CHECK_FALSE(p.iface().is_reachable(own.device.data(), own.device.size() - 1,
                                           own.iface.data(), own.iface.size()));
    }

    /* Events: an FD flag comes with an fd, no FD flag with none. */
    int fd                 = -1;
    ucs_status_t fd_status = p.iface().event_fd_get(&fd);
    if (a.event_flags & uct::event_flag::FD) {
        CHECK(fd_status == UCS_OK);
        CHECK(fd >= 0);
    } else {
        CHECK(fd_status != UCS_OK);
    }

    /* Performance model an upper layer divides by. */
    CHECK(a.perf.bandwidth_Bps > 0);
    CHECK(a.perf.latency_s >= 0);
    CHECK(a.perf.send_overhead_s >= 0);
    CHECK(a.perf.recv_overhead_s >= 0);

    CHECK(&p.iface().owner_md() == &p.md());
}

void md_attributes(const transport_spec &spec)
{
    CONFORM_OPEN(p, spec);
    const uct::md_attr &m    = p.md().attr();
    const uct::iface_attr &a = p.attr();
    namespace mdf            = uct::md_flag;

    CHECK(((m.flags & mdf::REG) != 0) == (m.max_reg > 0));
    CHECK(((m.flags & mdf::ALLOC) != 0) == (m.max_alloc > 0));
    if (m.flags & mdf::REG) {
        CHECK((m.reg_mem_types & (1ull << UCS_MEMORY_TYPE_HOST)) != 0);
    }
    if (m.flags & mdf::NEED_RKEY) {
        CHECK(m.rkey_packed_size > 0);
    }
    /* Remote access needs memory a peer can expose. */
    const uint64_t rma = flag::PUT_SHORT | flag::PUT_BCOPY | flag::PUT_ZCOPY | flag::GET_SHORT |
                         flag::GET_BCOPY | flag::GET_ZCOPY | flag::ATOMIC_CPU | flag::ATOMIC_DEVICE;
    if (a.flags & rma) {
        CHECK((m.flags & (mdf::REG | mdf::ALLOC)) != 0);
    }
    CHECK(std::string(p.md().name()).size() > 0);
    CHECK(&p.md().owner() == &p.component());
}

} // namespace

CONFORM_TEST_CASE("iface attributes are consistent", iface_attributes)
CONFORM_TEST_CASE("md attributes are consistent", md_attributes)
