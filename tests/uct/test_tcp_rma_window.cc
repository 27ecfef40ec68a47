/*
 * tcp fetches (gets, fetching atomics, flushes) beyond the per-ep window
 * UCX_TCP_RMA_OUTSTANDING, between two processes: once the window is full
 * the operations return NO_RESOURCE, and everything posted afterwards, by
 * retrying from progress or from the pending queue, completes with the
 * right data, within a deadline. Puts and flushes are interleaved with the
 * fetches, and both directions may run at once (each process is initiator
 * and target on the same connection). A fence holds later operations until
 * earlier gets are answered.
 */
#include <catch2/catch.hpp>

#include "scoped_env.h"
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

using test::die_with_parent;

using clock_type = std::chrono::steady_clock;
using test::scoped_env;

constexpr size_t R_SIZE = 2 << 20;   /* read-only pattern */
constexpr size_t W_SIZE = 256 << 10; /* written by puts, read back by gets */

inline uint8_t r_pattern(size_t i)
{
    return uint8_t(i * 7 + (i >> 11));
}

inline uint8_t put_pattern(uint64_t op, size_t i)
{
    return uint8_t(op * 31 + i * 5 + 1);
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
            if (md_.mkey_pack(memh_[i], blob->data() + 3 * sizeof(uint64_t) + i * key_size) !=
                UCS_OK) {
                return false;
            }
        }
        return true;
    }

private:
    uct::md &md_;
    std::vector<uint8_t> r_, w_;
    alignas(8) uint64_t counters_[2] = {0, 0}; /* 64-bit, then 32-bit */
    uct::mem_h memh_[3] = {uct::MEM_HANDLE_NULL, uct::MEM_HANDLE_NULL, uct::MEM_HANDLE_NULL};
};

/* The peer's regions, as its blob describes them. */
struct remote_regions {
    uct::component *component = nullptr;
    uint64_t addr[3]          = {};
    uct::rkey_bundle key[3]   = {};
    int unpacked              = 0;

    bool unpack(uct::component &comp, size_t key_size, const std::vector<uint8_t> &blob)
    {
        component = &comp;
        if (blob.size() != 3 * sizeof(uint64_t) + 3 * key_size) {
            return false;
        }
        for (int i = 0; i < 3; ++i) {
            std::memcpy(&addr[i], blob.data() + i * sizeof(uint64_t), sizeof(uint64_t));
            if (comp.rkey_unpack(blob.data() + 3 * sizeof(uint64_t) + i * key_size, key_size,
                                 &key[i]) != UCS_OK) {
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

struct workload_params {
    unsigned ops        = 1200;   /* operations posted in all */
    unsigned app_window = 24;     /* slots the test keeps: more than the transport allows */
    bool use_pending    = false;  /* NO_RESOURCE: pending_add instead of retrying */
    size_t big_get      = 200000; /* largest get_zcopy */
    bool big_only       = false;  /* every op a get_zcopy of big_get bytes */
    std::chrono::seconds budget{60};
};

enum class op_kind : uint8_t {
    GET_ZCOPY,
    GET_BCOPY,
    FETCH64,
    PUT,
    GET_BACK,
    FETCH32,
    FLUSH,
    GET_SMALL,
    COUNT
};

/*
 * Posts params.ops operations in a fixed sequence against a peer's regions
 * and verifies each when it completes. The data a put wrote is read back by
 * the next operation, and a fence before each put keeps it from overwriting
 * what earlier gets read; the fetching atomics count, so each must return
 * the number of its predecessors.
 */
class fetch_workload {
public:
    fetch_workload(test::uct_entity &e, uct::ep *ep, const remote_regions &peer,
                   const workload_params &params) :
        e_(e),
        ep_(ep), peer_(peer), params_(params), slots_(params.app_window)
    {
        const uct::iface_attr &attr = e.attr();
        max_bcopy_                  = std::min<size_t>(attr.get.max_bcopy, 8192);
        big_get_                    = std::min<size_t>(params.big_get, attr.get.max_zcopy);
        for (unsigned i = 0; i < slots_.size(); ++i) {
            slot &s = slots_[i];
            s.owner = this;
            s.index = i;
            s.func  = on_complete;
            s.buffer.resize(std::max(big_get_, max_bcopy_));
            free_.push_back(i);
        }
        pend_.owner    = this;
        pend_.req.func = on_pending;
    }

    /* Empty on success, otherwise what went wrong. */
    std::string run()
    {
        deadline_ = clock_type::now() + params_.budget;
        for (op_ = 0; (op_ < params_.ops) && error_.empty(); ++op_) {
            if (!wait_for([&] { return !free_.empty(); }, "a free slot")) {
                break;
            }
            unsigned index = free_.back();
            free_.pop_back();
            post_with_retry(slots_[index]);
        }
        wait_for([&] { return free_.size() == slots_.size(); }, "the last completions");
        if (error_.empty()) {
            check_final_state();
        }
        return error_;
    }

    unsigned no_resource() const { return no_resource_; }
    unsigned pending_dispatched() const { return pend_.dispatched; }
    unsigned max_fetches_in_flight() const { return max_in_flight_; }

private:
    struct slot : uct::completion {
        fetch_workload *owner;
        unsigned index;
        op_kind kind;
        uint64_t op;
        uint64_t offset;
        size_t length;
        uint64_t expect; /* fetching atomics: the old value */
        uint64_t result;
        uint32_t result32;
        bool fetch; /* counts against the transport's window */
        std::vector<uint8_t> buffer;
    };

    struct pending_post {
        uct::pending_req req; /* first: the callback gets its address */
        fetch_workload *owner;
        slot *s             = nullptr;
        bool queued         = false;
        unsigned dispatched = 0;
    };

    template <typename Done>
    bool wait_for(Done done, const char *what)
    {
        while (!done()) {
            if (!error_.empty()) {
                return false;
            }
            if (clock_type::now() > deadline_) {
                fail(std::string("timed out waiting for ") + what);
                return false;
            }
            e_.progress();
        }
        return true;
    }

    void fail(const std::string &what)
    {
        if (error_.empty()) {
            error_ = "op " + std::to_string(op_) + ": " + what;
        }
    }

    void post_with_retry(slot &s)
    {
        prepare(s);
        for (;;) {
            ucs_status_t st = post(s);
            if (st != UCS_ERR_NO_RESOURCE) {
                posted(s, st);
                return;
            }
            ++no_resource_;
            if (!params_.use_pending) {
                if (clock_type::now() > deadline_) {
                    fail("no room before the deadline");
                    return;
                }
                e_.progress();
                continue;
            }
            pend_.s      = &s;
            pend_.queued = true;
            st           = ep_->pending_add(&pend_.req, 0);
            if (st == UCS_ERR_BUSY) {
                pend_.queued = false; /* room came back: post again */
                continue;
            }
            if (st != UCS_OK) {
                fail(std::string("pending_add: ") + ucs_status_string(st));
                return;
            }
            /* The callback posts the operation once the window has room. */
            wait_for([&] { return !pend_.queued; }, "the pending request");
            return;
        }
    }

    static ucs_status_t on_pending(uct::pending_req *req)
    {
        auto *p = reinterpret_cast<pending_post *>(req);
        ++p->dispatched;
        ucs_status_t st = p->owner->post(*p->s);
        if (st == UCS_ERR_NO_RESOURCE) {
            return st; /* stays queued */
        }
        p->queued = false;
        p->owner->posted(*p->s, st);
        return UCS_OK;
    }

    /* Chooses what operation `op_` is; the sequence is the same in every run. */
    void prepare(slot &s)
    {
        static const size_t zsizes[] = {1, 777, 8192, 8193, 65536, 0 /* big */};
        static const size_t bsizes[] = {1, 100, 4096, 0 /* max bcopy */};
        s.op                         = op_;
        s.kind   = params_.big_only ? op_kind::GET_ZCOPY : op_kind(op_ % unsigned(op_kind::COUNT));
        s.count  = 1;
        s.status = UCS_OK;
        s.fetch  = true;
        switch (s.kind) {
        case op_kind::GET_ZCOPY:
            s.length = params_.big_only ? 0 : zsizes[(op_ / 8) % 6];
            s.length = (s.length == 0) ? big_get_ : s.length;
            s.offset = (op_ * 4099) % (R_SIZE - s.length);
            break;
        case op_kind::GET_BCOPY:
            s.length = bsizes[(op_ / 8) % 4];
            s.length = (s.length == 0) ? max_bcopy_ : s.length;
            s.offset = (op_ * 1237) % (R_SIZE - s.length);
            break;
        case op_kind::GET_SMALL:
            s.length = 64;
            s.offset = (op_ * 61) % (R_SIZE - s.length);
            break;
        case op_kind::FETCH64:
            s.expect = fetched64_++;
            break;
        case op_kind::FETCH32:
            s.expect = fetched32_++;
            break;
        case op_kind::PUT:
            /* Alternately a bcopy and a zcopy put; the next op reads it back
             * (the stream keeps a put before a get). The fence keeps it after
             * the gets before it, which may read the same bytes. */
            ep_->fence(0);
            s.fetch  = false;
            s.length = ((op_ / 8) % 2 == 0) ? std::min<size_t>(3000, max_bcopy_) : 20000;
            s.offset = (op_ * 1031) % (W_SIZE - s.length);
            for (size_t i = 0; i < s.length; ++i) {
                s.buffer[i] = put_pattern(op_, i);
            }
            last_put_ = {op_, s.offset, s.length};
            break;
        case op_kind::GET_BACK:
            s.offset = last_put_.offset;
            s.length = last_put_.length;
            break;
        default: /* FLUSH */
            s.fetch = false;
            break;
        }
    }

    static size_t pack_slot(void *dest, void *arg)
    {
        auto *s = static_cast<slot *>(arg);
        std::memcpy(dest, s->buffer.data(), s->length);
        return s->length;
    }

    static void unpack_slot(void *arg, const void *data, size_t length)
    {
        auto *s = static_cast<slot *>(arg);
        if (length != s->length) {
            s->owner->fail("get_bcopy unpacked " + std::to_string(length) + " bytes");
            return;
        }
        std::memcpy(s->buffer.data(), data, length);
    }

    ucs_status_t post(slot &s)
    {
        switch (s.kind) {
        case op_kind::GET_ZCOPY:
        case op_kind::GET_BACK: {
            const bool back = s.kind == op_kind::GET_BACK;
            /* Two iovs where there is room for a split. */
            size_t first    = (s.length > 1) ? s.length / 3 : s.length;
            uct::iov iov[2] = {{s.buffer.data(), first, uct::MEM_HANDLE_NULL},
                               {s.buffer.data() + first, s.length - first, uct::MEM_HANDLE_NULL}};
            size_t iovcnt   = (s.length > 1) ? 2 : 1;
            return ep_->get_zcopy(iov, iovcnt, (back ? peer_.w() : peer_.r()) + s.offset,
                                  back ? peer_.kw() : peer_.kr(), &s);
        }
        case op_kind::GET_BCOPY:
        case op_kind::GET_SMALL:
            return ep_->get_bcopy(unpack_slot, &s, s.length, peer_.r() + s.offset, peer_.kr(), &s);
        case op_kind::FETCH64:
            return ep_->atomic_fetch(uct::atomic_op::ADD, 8, 1, 0, &s.result, peer_.c(), peer_.kc(),
                                     &s);
        case op_kind::FETCH32:
            /* Alternately an add and a compare-and-swap that succeeds. */
            s.result32 = ~uint32_t(0);
            if ((s.op / 8) % 2 == 0) {
                return ep_->atomic_fetch(uct::atomic_op::ADD, 4, 1, 0, &s.result32, peer_.c() + 8,
                                         peer_.kc(), &s);
            }
            return ep_->atomic_fetch(uct::atomic_op::CSWAP, 4, s.expect + 1, s.expect, &s.result32,
                                     peer_.c() + 8, peer_.kc(), &s);
        case op_kind::PUT:
            if (s.length <= max_bcopy_ && (s.op / 8) % 2 == 0) {
                ssize_t n = ep_->put_bcopy(pack_slot, &s, peer_.w() + s.offset, peer_.kw());
                return (n < 0)                 ? ucs_status_t(n) :
                       (size_t(n) == s.length) ? UCS_OK :
                                                 UCS_ERR_IO_ERROR;
            } else {
                uct::iov iov{s.buffer.data(), s.length, uct::MEM_HANDLE_NULL};
                return ep_->put_zcopy(&iov, 1, peer_.w() + s.offset, peer_.kw(), &s);
            }
        default:
            return ep_->flush(0, &s);
        }
    }

    /* The post was accepted (or failed): account for it. */
    void posted(slot &s, ucs_status_t st)
    {
        if (st == UCS_INPROGRESS) {
            if (s.fetch) {
                max_in_flight_ = std::max(max_in_flight_, ++in_flight_);
            }
            return;
        }
        if (st != UCS_OK) {
            fail(std::string("post: ") + ucs_status_string(st));
        } else if (s.fetch) {
            fail("a fetch completed at once"); /* tcp always waits for a reply */
        }
        free_.push_back(s.index);
    }

    static void on_complete(uct::completion *comp)
    {
        auto *s = static_cast<slot *>(comp);
        s->owner->verify(*s);
    }

    void verify(slot &s)
    {
        in_flight_ -= s.fetch ? 1 : 0;
        free_.push_back(s.index);
        const std::string at = " (op " + std::to_string(s.op) + ")";
        if (s.status != UCS_OK) {
            fail(std::string("completed with ") + ucs_status_string(s.status) + at);
            return;
        }
        size_t bad = 0;
        switch (s.kind) {
        case op_kind::GET_ZCOPY:
        case op_kind::GET_BCOPY:
        case op_kind::GET_SMALL:
            for (size_t i = 0; i < s.length; ++i) {
                bad += s.buffer[i] != r_pattern(s.offset + i);
            }
            break;
        case op_kind::GET_BACK:
            for (size_t i = 0; i < s.length; ++i) {
                bad += s.buffer[i] != put_pattern(s.op - 1, i);
            }
            break;
        case op_kind::FETCH64:
            bad = s.result != s.expect;
            break;
        case op_kind::FETCH32:
            bad = s.result32 != uint32_t(s.expect);
            break;
        default:
            break;
        }
        if (bad != 0) {
            fail(std::to_string(bad) + " wrong bytes or values" + at);
        }
    }

    /* Both counters hold the number of fetching atomics that went out. */
    void check_final_state()
    {
        uint64_t counters[2] = {~uint64_t(0), ~uint64_t(0)};
        bool got             = false;
        struct local {
            static void unpack(void *arg, const void *data, size_t length)
            {
                std::memcpy(arg, data, std::min(length, sizeof(uint64_t) * 2));
            }
        };
        struct done_comp : uct::completion {
            bool *flag;
        } comp;
        comp.func   = [](uct::completion *c) { *static_cast<done_comp *>(c)->flag = true; };
        comp.count  = 1;
        comp.status = UCS_OK;
        comp.flag   = &got;
        ucs_status_t st;
        do {
            st = ep_->get_bcopy(local::unpack, counters, 16, peer_.c(), peer_.kc(), &comp);
            if (st == UCS_ERR_NO_RESOURCE) {
                e_.progress();
            }
        } while ((st == UCS_ERR_NO_RESOURCE) && (clock_type::now() < deadline_));
        if (st != UCS_INPROGRESS) {
            fail(std::string("final get: ") + ucs_status_string(st));
            return;
        }
        if (!wait_for([&] { return got; }, "the final get")) {
            return;
        }
        if (comp.status != UCS_OK) {
            fail(std::string("final get: ") + ucs_status_string(comp.status));
        } else if ((counters[0] != fetched64_) || (uint32_t(counters[1]) != uint32_t(fetched32_))) {
            fail("counters " + std::to_string(counters[0]) + "/" +
                 std::to_string(uint32_t(counters[1])) + ", expected " +
                 std::to_string(fetched64_) + "/" + std::to_string(fetched32_));
        }
    }

    struct put_record {
        uint64_t op = 0, offset = 0;
        size_t length = 0;
    };

    test::uct_entity &e_;
    uct::ep *ep_;
    const remote_regions &peer_;
    const workload_params params_;
    size_t max_bcopy_ = 0, big_get_ = 0;
    std::vector<slot> slots_;
    std::vector<unsigned> free_;
    pending_post pend_;
    put_record last_put_;
    uint64_t op_        = 0;
    uint64_t fetched64_ = 0, fetched32_ = 0;
    unsigned in_flight_ = 0, max_in_flight_ = 0;
    unsigned no_resource_ = 0;
    clock_type::time_point deadline_;
    std::string error_;
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
            bool ok      = test::recv_value(fd, &byte);
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
    exposed_regions *mine = nullptr;
    remote_regions peer;
    uct::ep *ep = nullptr;

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
        std::vector<uint8_t> my_keys, peer_keys, my_addr = e.addresses().serialize(), peer_blob;
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
        auto *iface = dynamic_cast<uct::tcp::tcp_iface *>(&e.iface());
        return (iface != nullptr) ? iface->num_connections() : SIZE_MAX;
    }

    /* One flush round trip: the peer has accepted the connection. */
    bool round_trip()
    {
        uint8_t byte = 0;
        bool fired   = false;
        struct flag_comp : uct::completion {
            bool *flag;
        } comp;
        comp.func   = [](uct::completion *c) { *static_cast<flag_comp *>(c)->flag = true; };
        comp.count  = 1;
        comp.status = UCS_OK;
        comp.flag   = &fired;
        auto unpack = [](void *arg, const void *data, size_t) { std::memcpy(arg, data, 1); };
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

/* The parent's half of a one-directional run. */
void run_one_way(const workload_params &params, unsigned window,
                 const char *target_window = nullptr)
{
    test::child_process child([target_window](int fd) { return serving_child(fd, target_window); });
    rma_side side;
    std::string err = side.setup(child.fd(), false);
    REQUIRE(err.empty());

    fetch_workload w(side.e, side.ep, side.peer, params);
    CHECK(w.run() == "");
    CHECK(w.no_resource() > 0);                 /* the window was really full */
    CHECK(w.max_fetches_in_flight() <= window); /* and never exceeded */
    CHECK(w.max_fetches_in_flight() >= 1);
    if (params.use_pending) {
        CHECK(w.pending_dispatched() > 0);
    }
    REQUIRE(test::send_value(child.fd(), uint8_t(1)));
    uint8_t ack = 0;
    CHECK(test::recv_value(child.fd(), &ack));
    CHECK(child.wait() == 0);
}

} // namespace

TEST_CASE("tcp fetches beyond UCX_TCP_RMA_OUTSTANDING complete (retry on NO_RESOURCE)", "[tcp]")
{
    const char *window = GENERATE("1", "4");
    scoped_env env("UCX_TCP_RMA_OUTSTANDING", window);
    workload_params params;
    run_one_way(params, unsigned(std::atoi(window)));
}

TEST_CASE("tcp fetches beyond UCX_TCP_RMA_OUTSTANDING complete (pending queue)", "[tcp]")
{
    const char *window = GENERATE("1", "4");
    scoped_env env("UCX_TCP_RMA_OUTSTANDING", window);
    workload_params params;
    params.use_pending = true;
    run_one_way(params, unsigned(std::atoi(window)));
}

TEST_CASE("tcp fetches beyond the target's smaller window wait, then complete", "[tcp]")
{
    /* The target keeps reply room for its own window only: requests beyond
     * it wait in its receive buffer until replies have gone out. */
    scoped_env env("UCX_TCP_RMA_OUTSTANDING", "32");
    workload_params params;
    params.ops        = 600;
    params.app_window = 40;
    params.big_get    = 1 << 20;
    const bool big    = GENERATE(false, true);
    params.big_only   = big;
    CAPTURE(big);
    run_one_way(params, 32, "2");
}

TEST_CASE("tcp fetches in both directions at once do not stall", "[tcp]")
{
    /* Each side is the other's target on the same connections: a side that
     * stops reading while its replies wait for the peer to read would stall
     * both once the replies outgrow the socket buffers. */
    const bool big = GENERATE(false, true);
    scoped_env env("UCX_TCP_RMA_OUTSTANDING", big ? "64" : "4");
    workload_params params;
    if (big) {
        params.ops        = 400;
        params.app_window = 72;
        params.big_get    = 1 << 20;
        params.big_only   = true;
    } else {
        params.ops         = 800;
        params.use_pending = true;
    }
    CAPTURE(big);

    test::child_process child([params](int fd) {
        die_with_parent();
        rma_side side;
        std::string err = side.setup(fd, true, false);
        if (!err.empty()) {
            std::fprintf(stderr, "child: %s\n", err.c_str());
            return 1;
        }
        /* Once the parent's connection is in, the ep attaches to it. */
        TEST_CHILD_CHECK(serve_until_peer_done(side.e, fd, std::chrono::seconds(30)));
        TEST_CHILD_CHECK(side.connect().empty());
        TEST_CHILD_CHECK(side.connections() == 1);
        TEST_CHILD_CHECK(test::send_value(fd, uint8_t(1)));

        fetch_workload w(side.e, side.ep, side.peer, params);
        err = w.run();
        if (!err.empty()) {
            std::fprintf(stderr, "child: %s\n", err.c_str());
        }
        /* Done: tell the parent, and keep serving it until it is done too. */
        TEST_CHILD_CHECK(test::send_value(fd, uint8_t(err.empty() ? 1 : 0)));
        TEST_CHILD_CHECK(serve_until_peer_done(side.e, fd, std::chrono::seconds(120)));
        return err.empty() ? 0 : 2;
    });

    rma_side side;
    std::string err = side.setup(child.fd(), false);
    REQUIRE(err.empty());
    REQUIRE(side.round_trip());
    REQUIRE(test::send_value(child.fd(), uint8_t(1)));
    uint8_t attached = 0;
    REQUIRE(serve_until_peer_done(side.e, child.fd(), std::chrono::seconds(30), &attached));
    REQUIRE(attached == 1);
    CHECK(side.connections() == 1); /* both directions share one connection */

    fetch_workload w(side.e, side.ep, side.peer, params);
    CHECK(w.run() == "");
    CHECK(w.no_resource() > 0);
    /* The child may still need this side's service to finish. */
    uint8_t child_ok = 0;
    CHECK(serve_until_peer_done(side.e, child.fd(), std::chrono::seconds(120), &child_ok));
    CHECK(child_ok == 1);
    REQUIRE(test::send_value(child.fd(), uint8_t(1)));
    CHECK(child.wait() == 0);
}

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
        c.func   = [](uct::completion *self) { ++static_cast<flag_comp *>(self)->fired; };
        c.count  = 1;
        c.status = UCS_OK;
    };
    struct put_later {
        uct::pending_req req; /* first: the callback gets its address */
        uct::ep *ep;
        uint64_t addr;
        uct::rkey_t rkey;
        int ran             = 0;
        ucs_status_t status = UCS_ERR_NO_MESSAGE;
    } later;
    later.ep       = ep;
    later.addr     = side.peer.w();
    later.rkey     = side.peer.kw();
    later.req.func = [](uct::pending_req *self) {
        auto *p    = reinterpret_cast<put_later *>(self);
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
        CHECK(ep->put_short(&v, sizeof(v), side.peer.w(), side.peer.kw()) == UCS_ERR_NO_RESOURCE);
        CHECK(ep->atomic_post(uct::atomic_op::ADD, 8, 1, side.peer.c(), side.peer.kc()) ==
              UCS_ERR_NO_RESOURCE);
        later.ran    = 0;
        later.status = UCS_ERR_NO_MESSAGE;
        REQUIRE(ep->pending_add(&later.req, 0) == UCS_OK);

        /* ...and goes out once it arrived. */
        REQUIRE(test::poll_until([&] { return got.fired > 0; }, [&] { side.e.progress(); }));
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
