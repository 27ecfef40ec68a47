/*
 * tcp zero-copy RMA of large sizes: put_zcopy and get_zcopy of several MiB
 * between two processes, many in flight and split over uneven iovs, with
 * the kernel's socket buffers at their defaults and very small (partial
 * writes resumed from progress), with and without SO_RCVLOWAT; and a payload read straight into its
 * destination stops there when the destination goes away mid-frame (a
 * region deregistered during a put, an ep destroyed during a get).
 */
#include <catch2/catch.hpp>

#include "tcp_test_util.h"
#include "two_process.h"
#include "uct_test_util.h"

#include <uct/tcp/tcp_iface.h>
#include <ucs/debug/log.h>

#include <poll.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

using test::counted_comp;
using test::die_with_parent;

constexpr size_t REGION = 16 << 20;

inline uint8_t target_byte(size_t i)
{
    return uint8_t((i * 7) ^ (i >> 11) ^ (i >> 19));
}

inline uint8_t initiator_byte(size_t i, unsigned round)
{
    return uint8_t((i * 13) + (i >> 10) + round * 77);
}

enum command : uint8_t { CMD_CHECK = 'K', CMD_QUIT = 'Q' };

struct check_request {
    uint32_t round;
    uint64_t offset; /* bytes [offset, offset + length) hold initiator_byte(round) */
    uint64_t length;
};

int zcopy_target(int fd)
{
    die_with_parent();
    test::uct_entity e("tcp", "lo");
    TEST_CHILD_CHECK(e.ok());
    std::vector<uint8_t> region(REGION);
    for (size_t i = 0; i < REGION; ++i) {
        region[i] = target_byte(i);
    }
    uct::mem_h memh;
    TEST_CHILD_CHECK(e.md().mem_reg(region.data(), REGION, 0, &memh) == UCS_OK);
    std::vector<uint8_t> blob(sizeof(uint64_t) + e.md().attr().rkey_packed_size);
    uint64_t address = reinterpret_cast<uintptr_t>(region.data());
    std::memcpy(blob.data(), &address, sizeof(address));
    TEST_CHILD_CHECK(e.md().mkey_pack(memh, blob.data() + sizeof(address)) == UCS_OK);
    TEST_CHILD_CHECK(test::send_blob(fd, e.addresses().serialize()));
    TEST_CHILD_CHECK(test::send_blob(fd, blob));

    for (;;) {
        e.progress();
        pollfd pfd{fd, POLLIN, 0};
        if (::poll(&pfd, 1, 0) != 1) {
            continue;
        }
        uint8_t cmd;
        TEST_CHILD_CHECK(test::recv_value(fd, &cmd));
        if (cmd == CMD_QUIT) {
            break;
        }
        TEST_CHILD_CHECK(cmd == CMD_CHECK);
        check_request req;
        TEST_CHILD_CHECK(test::recv_value(fd, &req));
        uint64_t bad = 0;
        for (size_t i = 0; i < REGION; ++i) {
            bool in_range  = (i >= req.offset) && (i < req.offset + req.length);
            uint8_t expect = in_range ? initiator_byte(i, req.round) : target_byte(i);
            bad += (region[i] != expect);
        }
        /* The next round starts from the target's own pattern again. */
        for (size_t i = req.offset; i < req.offset + req.length; ++i) {
            region[i] = target_byte(i);
        }
        TEST_CHILD_CHECK(test::send_value(fd, bad));
    }
    TEST_CHILD_CHECK(e.md().mem_dereg(memh) == UCS_OK);
    return 0;
}

/* Splits [0, length) of `base` into `n` uneven iovs (odd sizes, never empty
 * when length >= n). */
std::vector<uct::iov> uneven_iovs(uint8_t *base, size_t length, size_t n)
{
    std::vector<uct::iov> out;
    size_t offset = 0;
    for (size_t i = 0; i < n; ++i) {
        size_t piece = (i + 1 == n) ?
                           length - offset :
                           std::min(length - offset - (n - i - 1), length / (n + i) + 4097 * i + 3);
        out.push_back({base + offset, piece, uct::MEM_HANDLE_NULL});
        offset += piece;
    }
    return out;
}

/* Sets UCX_TCP_* variables for this test and its child, restored after. */
class scoped_env {
public:
    void set(const char *name, const char *value)
    {
        const char *old = std::getenv(name);
        saved_.push_back({name, old != nullptr, (old != nullptr) ? old : ""});
        ::setenv(name, value, 1);
    }

    ~scoped_env()
    {
        for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
            if (it->had) {
                ::setenv(it->name.c_str(), it->value.c_str(), 1);
            } else {
                ::unsetenv(it->name.c_str());
            }
        }
    }

private:
    struct entry {
        std::string name;
        bool had;
        std::string value;
    };
    std::vector<entry> saved_;
};

} // namespace

TEST_CASE("tcp put_zcopy and get_zcopy of several MiB land intact with many in flight", "[tcp]")
{
    /* Socket buffers the kernel sizes or 16 KiB ones (partial writes all
     * along); reads in place as data comes, or waiting for SO_RCVLOWAT. */
    const int variant = GENERATE(0, 1, 2, 3);
    scoped_env env;
    switch (variant) {
    case 1:
        env.set("UCX_TCP_SNDBUF", "16k");
        env.set("UCX_TCP_RCVBUF", "16k");
        break;
    case 2:
        env.set("UCX_TCP_RX_LOWAT", "0");
        break;
    case 3:
        env.set("UCX_TCP_RX_LOWAT", "1g"); /* never more than half of what is left */
        break;
    default:
        break;
    }
    INFO("variant " << variant);

    test::child_process child(zcopy_target);
    test::uct_entity e("tcp", "lo");
    REQUIRE(e.ok());
    std::vector<uint8_t> peer_blob, target_blob;
    REQUIRE(test::recv_blob(child.fd(), &peer_blob));
    REQUIRE(test::recv_blob(child.fd(), &target_blob));
    test::uct_addresses peer;
    REQUIRE(test::uct_addresses::deserialize(peer_blob, &peer));
    uint64_t remote;
    std::memcpy(&remote, target_blob.data(), sizeof(remote));
    uct::rkey_bundle rkey;
    REQUIRE(e.component().rkey_unpack(target_blob.data() + sizeof(remote),
                                      target_blob.size() - sizeof(remote), &rkey) == UCS_OK);
    uct::ep *ep = e.connect(peer);
    REQUIRE(ep != nullptr);
    const auto &attr = e.attr();
    REQUIRE(attr.get.max_zcopy >= REGION / 4);
    REQUIRE(attr.put.max_zcopy >= REGION / 4);
    REQUIRE(attr.get.max_iov >= 4);
    REQUIRE(attr.put.max_iov >= 3);

    auto pump = [&] { e.progress(); };
    /* Posts, retrying while the transport is out of room. */
    auto post = [&](auto &&op) {
        ucs_status_t st;
        while ((st = op()) == UCS_ERR_NO_RESOURCE) {
            pump();
        }
        return st;
    };
    auto flush = [&] {
        counted_comp fc;
        ucs_status_t st = post([&] { return ep->flush(0, &fc); });
        if (st == UCS_INPROGRESS) {
            REQUIRE(test::poll_until([&] { return fc.fired > 0; }, pump));
            st = fc.last;
        }
        return st;
    };
    auto target_check = [&](uint32_t round, uint64_t offset, uint64_t length) {
        REQUIRE(test::send_value(child.fd(), uint8_t(CMD_CHECK)));
        REQUIRE(test::send_value(child.fd(), check_request{round, offset, length}));
        uint64_t bad = ~0ull;
        REQUIRE(test::recv_value(child.fd(), &bad));
        return bad;
    };

    /* The whole region in four gets of 4 MiB, each into four uneven iovs,
     * all in flight at once. */
    std::vector<uint8_t> local(REGION, 0);
    {
        constexpr size_t chunk = REGION / 4;
        counted_comp comps[4];
        for (size_t k = 0; k < 4; ++k) {
            auto iovs       = uneven_iovs(local.data() + k * chunk, chunk, 4);
            ucs_status_t st = post([&] {
                return ep->get_zcopy(iovs.data(), iovs.size(), remote + k * chunk, rkey.rkey,
                                     &comps[k]);
            });
            REQUIRE(st == UCS_INPROGRESS);
        }
        REQUIRE(test::poll_until(
            [&] { return comps[0].fired && comps[1].fired && comps[2].fired && comps[3].fired; },
            pump));
        for (auto &c : comps) {
            CHECK(c.last == UCS_OK);
        }
        size_t bad = 0;
        for (size_t i = 0; i < REGION; ++i) {
            bad += (local[i] != target_byte(i));
        }
        CHECK(bad == 0);
    }

    /* The whole region overwritten by puts of uneven sizes in three iovs,
     * all queued before any completes. */
    {
        for (size_t i = 0; i < REGION; ++i) {
            local[i] = initiator_byte(i, 1);
        }
        const size_t bounds[] = {0, 5 << 20, (5 << 20) + 12345, 11 << 20, REGION};
        std::vector<counted_comp> comps(4);
        for (size_t k = 0; k < 4; ++k) {
            auto iovs       = uneven_iovs(local.data() + bounds[k], bounds[k + 1] - bounds[k], 3);
            ucs_status_t st = post([&] {
                return ep->put_zcopy(iovs.data(), iovs.size(), remote + bounds[k], rkey.rkey,
                                     &comps[k]);
            });
            REQUIRE(((st == UCS_OK) || (st == UCS_INPROGRESS)));
            if (st == UCS_OK) {
                comps[k].fired = 1;
            }
        }
        CHECK(flush() == UCS_OK);
        for (auto &c : comps) {
            CHECK(c.fired == 1);
            CHECK(c.last == UCS_OK);
        }
        CHECK(target_check(1, 0, REGION) == 0);
    }

    /* A get of the first half while puts write the second half. */
    {
        constexpr size_t half = REGION / 2;
        for (size_t i = 0; i < REGION; ++i) {
            local[i] = initiator_byte(i, 2);
        }
        std::vector<uint8_t> got(half, 0);
        counted_comp get_comp, put_comp[2];
        uct::iov get_iov{got.data(), half, uct::MEM_HANDLE_NULL};
        uct::iov put_iov[2] = {{local.data() + half, half / 2, uct::MEM_HANDLE_NULL},
                               {local.data() + half + half / 2, half / 2, uct::MEM_HANDLE_NULL}};
        REQUIRE(post([&] {
                    return ep->put_zcopy(&put_iov[0], 1, remote + half, rkey.rkey, &put_comp[0]);
                }) != UCS_ERR_INVALID_PARAM);
        REQUIRE(post([&] { return ep->get_zcopy(&get_iov, 1, remote, rkey.rkey, &get_comp); }) ==
                UCS_INPROGRESS);
        REQUIRE(post([&] {
                    return ep->put_zcopy(&put_iov[1], 1, remote + half + half / 2, rkey.rkey,
                                         &put_comp[1]);
                }) != UCS_ERR_INVALID_PARAM);
        CHECK(flush() == UCS_OK);
        REQUIRE(test::poll_until([&] { return get_comp.fired > 0; }, pump));
        CHECK(get_comp.last == UCS_OK);
        size_t bad = 0;
        for (size_t i = 0; i < half; ++i) {
            bad += (got[i] != target_byte(i));
        }
        CHECK(bad == 0);
        CHECK(target_check(2, half, half) == 0);
    }

    REQUIRE(test::send_value(child.fd(), uint8_t(CMD_QUIT)));
    e.component().rkey_release(rkey);
    CHECK(child.wait() == 0);
}

namespace {

/* Two ifaces in this process with socket buffers so small that a large
 * frame takes many progress calls. */
uct::tcp::tcp_config tiny_buffers()
{
    auto cfg   = uct::tcp::default_tcp_config();
    cfg.sndbuf = 4096;
    cfg.rcvbuf = 4096;
    return cfg;
}

size_t connections(test::tuned_tcp &t)
{
    auto *iface = dynamic_cast<uct::tcp::tcp_iface *>(&t.iface());
    return (iface != nullptr) ? iface->num_connections() : SIZE_MAX;
}

struct exposed {
    std::vector<uint8_t> bytes;
    uct::mem_h memh = uct::MEM_HANDLE_NULL;
    uct::rkey_bundle rkey{};
};

/* Registers `size` bytes of `owner` (set to `fill`) and unpacks its key for
 * the other side. */
bool expose(test::tuned_tcp &owner, size_t size, uint8_t fill, exposed *out)
{
    out->bytes.assign(size, fill);
    if (owner.md().mem_reg(out->bytes.data(), size, 0, &out->memh) != UCS_OK) {
        return false;
    }
    std::vector<uint8_t> key(owner.md().attr().rkey_packed_size);
    return (owner.md().mkey_pack(out->memh, key.data()) == UCS_OK) &&
           (owner.md().owner().rkey_unpack(key.data(), key.size(), &out->rkey) == UCS_OK);
}

} // namespace

TEST_CASE("tcp put into a region deregistered mid-frame stops writing there", "[tcp]")
{
    test::tuned_tcp initiator("lo", tiny_buffers()), target("lo", tiny_buffers());
    REQUIRE(initiator.ok());
    REQUIRE(target.ok());
    constexpr size_t size = 1 << 20;
    exposed region, spare;
    REQUIRE(expose(target, size, 0, &region));
    REQUIRE(expose(target, 64, 0, &spare));
    uct::ep *ep = initiator.connect(target.addresses());
    REQUIRE(ep != nullptr);

    std::vector<uint8_t> src(size, 0xab);
    counted_comp put_comp;
    uct::iov v{src.data(), size, uct::MEM_HANDLE_NULL};
    auto remote = reinterpret_cast<uintptr_t>(region.bytes.data());
    REQUIRE(ep->put_zcopy(&v, 1, remote, region.rkey.rkey, &put_comp) == UCS_INPROGRESS);

    /* Until the target is inside the frame: its first bytes are in place. */
    REQUIRE(test::poll_until([&] { return region.bytes[0] == 0xab; },
                             [&] {
        initiator.progress();
        target.progress();
    }));
    REQUIRE(region.bytes[size - 1] == 0); /* the rest has not arrived yet */
    REQUIRE(target.md().mem_dereg(region.memh) == UCS_OK);
    std::vector<uint8_t> at_dereg = region.bytes;

    test::captured_log log; /* the refusal is logged as an error */
    counted_comp flush_comp;
    auto pump = [&] {
        initiator.progress();
        target.progress();
    };
    REQUIRE(test::poll_until([&] { return put_comp.fired > 0; }, pump));
    ucs_status_t st;
    REQUIRE(test::poll_until(
        [&] {
        st = ep->flush(0, &flush_comp);
        return st != UCS_ERR_NO_RESOURCE;
        },
        pump));
    if (st == UCS_INPROGRESS) {
        REQUIRE(test::poll_until([&] { return flush_comp.fired > 0; }, pump));
        st = flush_comp.last;
    }
    CHECK(log.text().find("refused put") != std::string::npos);
    CHECK(st == UCS_ERR_INVALID_ADDR);
    CHECK(put_comp.last == UCS_OK);
    CHECK(region.bytes == at_dereg); /* nothing written after the deregistration */

    /* The connection goes on: the next put lands. */
    uint64_t word = 0x1122334455667788ull;
    REQUIRE(ep->put_short(&word, sizeof(word), reinterpret_cast<uintptr_t>(spare.bytes.data()),
                          spare.rkey.rkey) == UCS_OK);
    counted_comp flush2;
    REQUIRE(test::poll_until(
        [&] {
        st = ep->flush(0, &flush2);
        return st != UCS_ERR_NO_RESOURCE;
        },
        pump));
    if (st == UCS_INPROGRESS) {
        REQUIRE(test::poll_until([&] { return flush2.fired > 0; }, pump));
        st = flush2.last;
    }
    CHECK(st == UCS_OK);
    uint64_t landed;
    std::memcpy(&landed, spare.bytes.data(), sizeof(landed));
    CHECK(landed == word);

    target.md().owner().rkey_release(region.rkey);
    target.md().owner().rkey_release(spare.rkey);
    CHECK(target.md().mem_dereg(spare.memh) == UCS_OK);
}

TEST_CASE("tcp get_zcopy reply stops writing when its ep is destroyed mid-frame", "[tcp]")
{
    test::tuned_tcp initiator("lo", tiny_buffers()), target("lo", tiny_buffers());
    REQUIRE(initiator.ok());
    REQUIRE(target.ok());
    constexpr size_t size = 1 << 20;
    exposed region;
    REQUIRE(expose(target, size, 0x5a, &region));
    uct::ep *ep = nullptr;
    {
        auto a = target.addresses();
        REQUIRE(initiator.iface().ep_create_connected(a.device.data(), a.device.size(),
                                                      a.iface.data(), a.iface.size(),
                                                      &ep) == UCS_OK);
    }
    std::unique_ptr<uct::ep> owned(ep);

    std::vector<uint8_t> local(size, 0);
    counted_comp get_comp;
    uct::iov v{local.data(), size, uct::MEM_HANDLE_NULL};
    REQUIRE(ep->get_zcopy(&v, 1, reinterpret_cast<uintptr_t>(region.bytes.data()), region.rkey.rkey,
                          &get_comp) == UCS_INPROGRESS);
    auto pump = [&] {
        initiator.progress();
        target.progress();
    };
    REQUIRE(test::poll_until([&] { return local[0] == 0x5a; }, pump));
    REQUIRE(local[size - 1] == 0);
    owned.reset();
    std::vector<uint8_t> at_destroy = local;

    /* Both ends close (the target has no ep of its own); whatever was still
     * in flight is read and dropped. */
    REQUIRE(test::poll_until(
        [&] { return (connections(initiator) == 0) && (connections(target) == 0); }, pump));
    CHECK(local == at_destroy);
    CHECK(get_comp.fired == 0); /* a destroyed ep completes nothing */

    target.md().owner().rkey_release(region.rkey);
    CHECK(target.md().mem_dereg(region.memh) == UCS_OK);
}
