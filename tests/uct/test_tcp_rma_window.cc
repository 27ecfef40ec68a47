/*
 * tcp RMA ordering between two processes: a fence holds later operations
 * until earlier gets are answered.
 */
#include <catch2/catch.hpp>

#include "two_process.h"
#include "uct_test_util.h"

#include <uct/tcp/tcp_iface.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <poll.h>
#include <sys/prctl.h>
#include <unistd.h>

namespace {

using clock_type = std::chrono::steady_clock;

/* An aborted parent must not leave the child spinning. */
void die_with_parent()
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() == 1) {
        _exit(1);
    }
}

constexpr size_t R_SIZE = 2 << 20;    /* read-only pattern */
constexpr size_t W_SIZE = 256 << 10;  /* written by puts, read back by gets */

inline uint8_t r_pattern(size_t i)
{
    return uint8_t(i * 7 + (i >> 11));
}

/* Memory one process offers to its peer, with the keys to reach it. */
class exposed_regions {
public:
    explicit exposed_regions(uct::md &md) : md_(md), r_(R_SIZE), w_(W_SIZE, 0)
    {
        for (size_t i = 0; i < R_SIZE; ++i) {
            r_[i] = r_pattern(i);
        }
    }
    ~exposed_regions()
    {
        for (uct::mem_h h : memh_) {
            if (h != uct::MEM_HANDLE_NULL) {
                md_.mem_dereg(h);
            }
        }
    }

    /* Registers and packs [addresses of R, W, C][keys]; false on failure. */
    bool pack(std::vector<uint8_t> *blob)
    {
        void *base[3]   = {r_.data(), w_.data(), counters_};
        size_t len[3]   = {R_SIZE, W_SIZE, sizeof(counters_)};
        size_t key_size = md_.attr().rkey_packed_size;
        blob->assign(3 * sizeof(uint64_t) + 3 * key_size, 0);
        for (int i = 0; i < 3; ++i) {
            if (md_.mem_reg(base[i], len[i], 0, &memh_[i]) != UCS_OK) {
                return false;
            }
            uint64_t addr = reinterpret_cast<uintptr_t>(base[i]);
            std::memcpy(blob->data() + i * sizeof(uint64_t), &addr, sizeof(addr));
            if (md_.mkey_pack(memh_[i], blob->data() + 3 * sizeof(uint64_t) +
                                        i * key_size) != UCS_OK) {
                return false;
            }
        }
        return true;
    }

private:
    uct::md                 &md_;
    std::vector<uint8_t>    r_, w_;
    alignas(8) uint64_t     counters_[2] = {0, 0};   /* 64-bit, then 32-bit */
    uct::mem_h              memh_[3] = {uct::MEM_HANDLE_NULL, uct::MEM_HANDLE_NULL,
                                        uct::MEM_HANDLE_NULL};
};

/* The peer's regions, as its blob describes them. */
struct remote_regions {
    uct::component   *component = nullptr;
    uint64_t         addr[3] = {};
    uct::rkey_bundle key[3] = {};
    int              unpacked = 0;

    bool unpack(uct::component &comp, size_t key_size, const std::vector<uint8_t> &blob)
    {
        component = &comp;
        if (blob.size() != 3 * sizeof(uint64_t) + 3 * key_size) {
            return false;
        }
        for (int i = 0; i < 3; ++i) {
            std::memcpy(&addr[i], blob.data() + i * sizeof(uint64_t), sizeof(uint64_t));
            if (comp.rkey_unpack(blob.data() + 3 * sizeof(uint64_t) + i * key_size,
                                 key_size, &key[i]) != UCS_OK) {
                return false;
            }
            ++unpacked;
        }
        return true;
    }
    ~remote_regions()
    {
        for (int i = 0; i < unpacked; ++i) {
            component->rkey_release(key[i]);
        }
    }

    uint64_t r() const { return addr[0]; }
    uint64_t w() const { return addr[1]; }
    uint64_t c() const { return addr[2]; }
    uct::rkey_t kr() const { return key[0].rkey; }
    uct::rkey_t kw() const { return key[1].rkey; }
    uct::rkey_t kc() const { return key[2].rkey; }
};

/* Serves the peer until it says it is done (its byte in *value). */
bool serve_until_peer_done(test::uct_entity &e, int fd, std::chrono::seconds budget,
                           uint8_t *value = nullptr)
{
    auto deadline = clock_type::now() + budget;
    while (clock_type::now() < deadline) {
        for (int i = 0; i < 64; ++i) {
            e.progress();
        }
        pollfd pfd{fd, POLLIN, 0};
        if (::poll(&pfd, 1, 0) == 1) {
            uint8_t byte = 0;
            bool ok = test::recv_value(fd, &byte);
            if (value != nullptr) {
                *value = byte;
            }
            return ok;
        }
    }
    return false;
}

/* Per process: its regions offered, the peer's unpacked, an ep to the peer. */
struct rma_side {
    test::uct_entity e{"tcp", "lo"};
    exposed_regions  *mine = nullptr;
    remote_regions   peer;
    uct::ep          *ep = nullptr;

    ~rma_side() { delete mine; }

    test::uct_addresses peer_addr;

    /* Exchanges addresses and keys over fd, and connects unless told not
     * to; an empty string on success. */
    std::string setup(int fd, bool first, bool connect_now = true)
    {
        if (!e.ok()) {
            return "cannot open tcp: " + e.error();
        }
        mine = new exposed_regions(e.md());
        std::vector<uint8_t> my_keys, peer_keys, my_addr = e.addresses().serialize(),
                             peer_blob;
        if (!mine->pack(&my_keys)) {
            return "cannot register or pack the regions";
        }
        bool ok = first ? (test::send_blob(fd, my_addr) && test::send_blob(fd, my_keys) &&
                           test::recv_blob(fd, &peer_blob) && test::recv_blob(fd, &peer_keys)) :
                          (test::recv_blob(fd, &peer_blob) && test::recv_blob(fd, &peer_keys) &&
                           test::send_blob(fd, my_addr) && test::send_blob(fd, my_keys));
        if (!ok || !test::uct_addresses::deserialize(peer_blob, &peer_addr)) {
            return "address exchange failed";
        }
        if (!peer.unpack(e.component(), e.md().attr().rkey_packed_size, peer_keys)) {
            return "cannot unpack the peer's keys";
        }
        return connect_now ? connect() : "";
    }

    std::string connect()
    {
        ep = e.connect(peer_addr);
        return (ep != nullptr) ? "" : "cannot connect";
    }

    /* Open, not yet closed connections of the iface. */
    size_t connections()
    {
        auto *iface = dynamic_cast<uct::tcp::tcp_iface*>(&e.iface());
        return (iface != nullptr) ? iface->num_connections() : SIZE_MAX;
    }

    /* One flush round trip: the peer has accepted the connection. */
    bool round_trip()
    {
        uint8_t byte  = 0;
        bool    fired = false;
        struct flag_comp : uct::completion {
            bool *flag;
        } comp;
        comp.func   = [](uct::completion *c) { *static_cast<flag_comp*>(c)->flag = true; };
        comp.count  = 1;
        comp.status = UCS_OK;
        comp.flag   = &fired;
        auto unpack = [](void *arg, const void *data, size_t) {
            std::memcpy(arg, data, 1);
        };
        if (ep->get_bcopy(unpack, &byte, 1, peer.r(), peer.kr(), &comp) != UCS_INPROGRESS) {
            return false;
        }
        return test::poll_until([&] { return fired; }, [&] { e.progress(); }) &&
               (comp.status == UCS_OK) && (byte == r_pattern(0));
    }
};

/* A child that only serves its regions, until told the initiator is done;
 * with its own window when `window` is set. */
int serving_child(int fd, const char *window)
{
    die_with_parent();
    if (window != nullptr) {
        setenv("UCX_TCP_RMA_OUTSTANDING", window, 1);
    }
    rma_side side;
    std::string err = side.setup(fd, true);
    if (!err.empty()) {
        std::fprintf(stderr, "child: %s\n", err.c_str());
        return 1;
    }
    TEST_CHILD_CHECK(serve_until_peer_done(side.e, fd, std::chrono::seconds(120)));
    TEST_CHILD_CHECK(test::send_value(fd, uint8_t(1)));
    return 0;
}

} // namespace

TEST_CASE("tcp fence holds later operations until earlier replies arrived", "[tcp]")
{
    test::child_process child([](int fd) { return serving_child(fd, nullptr); });
    rma_side side;
    REQUIRE(side.setup(child.fd(), false).empty());
    REQUIRE(side.round_trip());
    uct::ep *ep = side.ep;

    struct flag_comp : uct::completion {
        int fired = 0;
    };
    auto make_comp = [](flag_comp &c) {
        c.func   = [](uct::completion *self) { ++static_cast<flag_comp*>(self)->fired; };
        c.count  = 1;
        c.status = UCS_OK;
    };
    struct put_later {
        uct::pending_req req;   /* first: the callback gets its address */
        uct::ep          *ep;
        uint64_t         addr;
        uct::rkey_t      rkey;
        int              ran = 0;
        ucs_status_t     status = UCS_ERR_NO_MESSAGE;
    } later;
    later.ep       = ep;
    later.addr     = side.peer.w();
    later.rkey     = side.peer.kw();
    later.req.func = [](uct::pending_req *self) {
        auto *p   = reinterpret_cast<put_later*>(self);
        uint64_t v = 42;
        ++p->ran;
        p->status = p->ep->put_short(&v, sizeof(v), p->addr, p->rkey);
        return (p->status == UCS_ERR_NO_RESOURCE) ? p->status : UCS_OK;
    };

    for (bool iface_fence : {false, true}) {
        CAPTURE(iface_fence);
        std::vector<uint8_t> dest(1 << 20);
        uct::iov iov{dest.data(), dest.size(), uct::MEM_HANDLE_NULL};
        flag_comp got;
        make_comp(got);
        REQUIRE(ep->get_zcopy(&iov, 1, side.peer.r(), side.peer.kr(), &got) == UCS_INPROGRESS);
        REQUIRE((iface_fence ? side.e.iface().fence(0) : ep->fence(0)) == UCS_OK);

        /* Everything after the fence waits for the get's reply... */
        uint64_t v = 7;
        CHECK(ep->put_short(&v, sizeof(v), side.peer.w(), side.peer.kw()) ==
              UCS_ERR_NO_RESOURCE);
        CHECK(ep->atomic_post(uct::atomic_op::ADD, 8, 1, side.peer.c(), side.peer.kc()) ==
              UCS_ERR_NO_RESOURCE);
        later.ran    = 0;
        later.status = UCS_ERR_NO_MESSAGE;
        REQUIRE(ep->pending_add(&later.req, 0) == UCS_OK);

        /* ...and goes out once it arrived. */
        REQUIRE(test::poll_until([&] { return got.fired > 0; },
                                 [&] { side.e.progress(); }));
        CHECK(got.status == UCS_OK);
        size_t bad = 0;
        for (size_t i = 0; i < dest.size(); ++i) {
            bad += dest[i] != r_pattern(i);
        }
        CHECK(bad == 0);
        REQUIRE(test::poll_until([&] { return later.ran > 0; }, [&] { side.e.progress(); }));
        CHECK(later.status == UCS_OK);
        CHECK(ep->put_short(&v, sizeof(v), side.peer.w(), side.peer.kw()) == UCS_OK);
    }

    /* Nothing outstanding: a fence holds nothing. */
    flag_comp flushed;
    make_comp(flushed);
    ucs_status_t st = ep->flush(0, &flushed);
    REQUIRE(((st == UCS_OK) || (st == UCS_INPROGRESS)));
    REQUIRE(test::poll_until([&] { return (st == UCS_OK) || (flushed.fired > 0); },
                             [&] { side.e.progress(); }));
    CHECK(ep->fence(0) == UCS_OK);
    uint64_t v = 9;
    CHECK(ep->put_short(&v, sizeof(v), side.peer.w(), side.peer.kw()) == UCS_OK);

    REQUIRE(test::send_value(child.fd(), uint8_t(1)));
    uint8_t ack = 0;
    CHECK(test::recv_value(child.fd(), &ack));
    CHECK(child.wait() == 0);
}
