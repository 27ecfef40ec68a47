/*
 * tcp active messages between two processes over "lo": every size class
 * with the data checked, ordering, a producer faster than its consumer
 * (pending queue), flush, and many eps connecting at once.
 */
#include <catch2/catch.hpp>

#include "two_process.h"
#include "uct_test_util.h"

#include <cstring>

#include <sys/prctl.h>
#include <unistd.h>
#include <memory>
#include <set>
#include <vector>

namespace {

using test::counted_comp;
using test::die_with_parent;

constexpr uct::am_id_t AM_ID = 7;

/* Byte i of message `seq`; shifted or mixed-up data does not match. */
inline uint8_t pattern(uint64_t seq, size_t i)
{
    return uint8_t((i * 7) + (seq * 131) + (i >> 8) * 13 + (i >> 16));
}

void fill(uint8_t *p, size_t length, uint64_t seq)
{
    for (size_t i = 0; i < length; ++i) {
        p[i] = pattern(seq, i);
    }
}

bool matches(const uint8_t *p, size_t length, uint64_t seq)
{
    for (size_t i = 0; i < length; ++i) {
        if (p[i] != pattern(seq, i)) {
            return false;
        }
    }
    return true;
}

/* Flushes `ep` and waits for the completion, progressing `e`. */
bool flush_and_wait(test::uct_entity &e, uct::ep *ep)
{
    counted_comp comp;
    ucs_status_t st = UCS_ERR_NO_RESOURCE;
    if (!test::poll_until([&] { return st != UCS_ERR_NO_RESOURCE; },
                          [&] {
        e.progress();
        st = ep->flush(0, &comp);
        })) {
        return false;
    }
    if (st == UCS_OK) {
        return true;
    }
    return (st == UCS_INPROGRESS) &&
           test::poll_until([&] { return comp.fired == 1; }, [&] { e.progress(); }) &&
           (comp.last == UCS_OK);
}

/* Retries an operation while it reports no resources. */
template <typename Op>
auto retry(test::uct_entity &e, Op &&op)
{
    auto st       = op();
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while ((st == UCS_ERR_NO_RESOURCE) && (std::chrono::steady_clock::now() < deadline)) {
        e.progress();
        st = op();
    }
    return st;
}

/* ---- sizes ---- */

enum class send_kind { SHORT, BCOPY, ZCOPY };

struct planned_msg {
    send_kind kind;
    size_t length; /* what the handler receives */
};

std::vector<planned_msg> size_plan(const uct::iface_attr &attr)
{
    const size_t max_short = attr.am.max_short;
    const size_t max_bcopy = attr.am.max_bcopy;
    std::vector<planned_msg> plan;
    /* am_short carries an 8-byte header: lengths 8 .. max_short. */
    for (size_t len : {size_t(8), size_t(9), max_short}) {
        plan.push_back({send_kind::SHORT, len});
    }
    for (size_t len : {size_t(0), size_t(1), max_short, max_short + 1, max_bcopy}) {
        plan.push_back({send_kind::BCOPY, len});
    }
    for (size_t len : {size_t(0), size_t(1), max_short, max_short + 1, max_bcopy, max_bcopy + 1,
                       size_t(16) << 20}) {
        plan.push_back({send_kind::ZCOPY, len});
    }
    return plan;
}

struct size_receiver {
    std::vector<planned_msg> plan;
    size_t next = 0;
    int bad     = 0;
};

ucs_status_t check_sized_am(void *arg, void *data, size_t length, unsigned)
{
    auto *r = static_cast<size_receiver *>(arg);
    if ((r->next >= r->plan.size()) || (length != r->plan[r->next].length) ||
        !matches(static_cast<uint8_t *>(data), length, r->next)) {
        ++r->bad;
    }
    ++r->next;
    return UCS_OK;
}

struct bcopy_arg {
    const uint8_t *data;
    size_t length;
};

size_t pack_bytes(void *dest, void *arg)
{
    auto *a = static_cast<bcopy_arg *>(arg);
    if (a->length > 0) {
        std::memcpy(dest, a->data, a->length);
    }
    return a->length;
}

/* Child side of the two-process tests: open tcp on lo, publish addresses. */
#define CHILD_OPEN(_e) \
    die_with_parent(); \
    test::uct_entity _e("tcp", "lo"); \
    TEST_CHILD_CHECK(_e.ok()); \
    TEST_CHILD_CHECK(test::send_blob(fd, _e.addresses().serialize()))

bool recv_peer(int fd, test::uct_addresses *peer)
{
    std::vector<uint8_t> blob;
    return test::recv_blob(fd, &blob) && test::uct_addresses::deserialize(blob, peer);
}

} // namespace

TEST_CASE("tcp AM short/bcopy/zcopy at every size class, data verified", "[tcp]")
{
    test::child_process child([](int fd) {
        CHILD_OPEN(e);
        size_receiver r;
        r.plan = size_plan(e.attr());
        TEST_CHILD_CHECK(e.iface().set_am_handler(AM_ID, check_sized_am, &r, 0) == UCS_OK);
        TEST_CHILD_CHECK(test::poll_until([&] { return r.next == r.plan.size(); },
                                          [&] { e.progress(); }, std::chrono::seconds(120)));
        TEST_CHILD_CHECK(r.bad == 0);
        TEST_CHILD_CHECK(test::sync_peer(fd));
        return 0;
    });

    test::uct_entity e("tcp", "lo");
    REQUIRE(e.ok());
    test::uct_addresses peer;
    REQUIRE(recv_peer(child.fd(), &peer));
    uct::ep *ep = e.connect(peer);
    REQUIRE(ep != nullptr);

    const auto plan = size_plan(e.attr());
    counted_comp zcomps[32];
    REQUIRE(plan.size() <= 32);
    std::vector<std::vector<uint8_t>> buffers(plan.size());
    int inprogress = 0;

    for (size_t seq = 0; seq < plan.size(); ++seq) {
        const planned_msg &m = plan[seq];
        auto &buf            = buffers[seq];
        buf.resize(m.length);
        fill(buf.data(), buf.size(), seq);
        ucs_status_t st;
        switch (m.kind) {
        case send_kind::SHORT: {
            uint64_t hdr;
            std::memcpy(&hdr, buf.data(), 8);
            st = retry(e, [&] {
                return ep->am_short(AM_ID, hdr, buf.data() + 8, unsigned(m.length - 8));
            });
            CHECK(st == UCS_OK);
            break;
        }
        case send_kind::BCOPY: {
            bcopy_arg arg{buf.data(), buf.size()};
            ssize_t len = retry(e, [&] { return ep->am_bcopy(AM_ID, pack_bytes, &arg, 0); });
            CHECK(len == ssize_t(m.length));
            break;
        }
        case send_kind::ZCOPY: {
            /* Header of up to max_hdr bytes, the rest split over 3 iovs. */
            size_t hdr_len = std::min(m.length, e.attr().am.max_hdr);
            size_t rest    = m.length - hdr_len;
            size_t a = rest / 3, b = rest / 3, c = rest - a - b;
            uct::iov iov[3] = {{buf.data() + hdr_len, a, nullptr},
                               {buf.data() + hdr_len + a, b, nullptr},
                               {buf.data() + hdr_len + a + b, c, nullptr}};
            st              = retry(e, [&] {
                return ep->am_zcopy(AM_ID, buf.data(), unsigned(hdr_len), iov, 3, 0, &zcomps[seq]);
            });
            CHECK(((st == UCS_OK) || (st == UCS_INPROGRESS)));
            inprogress += (st == UCS_INPROGRESS);
            break;
        }
        }
    }

    /* am_short past max_short is refused up front. */
    std::vector<uint8_t> big(e.attr().am.max_short);
    CHECK(ep->am_short(AM_ID, 0, big.data(), unsigned(e.attr().am.max_short - 7)) ==
          UCS_ERR_INVALID_PARAM);

    REQUIRE(flush_and_wait(e, ep));
    int fired = 0;
    for (auto &c : zcomps) {
        fired += c.fired;
        CHECK(c.last == UCS_OK);
    }
    CHECK(fired == inprogress);
    CHECK(inprogress > 0); /* 16 MiB does not fit the socket at once */
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(child.wait() == 0);
}

namespace {

constexpr uint64_t ORDER_COUNT = 100000;

struct order_receiver {
    uint64_t next = 0;
    uint64_t bad  = 0;
};

ucs_status_t check_order(void *arg, void *data, size_t length, unsigned)
{
    auto *r = static_cast<order_receiver *>(arg);
    uint64_t seq;
    if (length < sizeof(seq)) {
        ++r->bad;
        return UCS_OK;
    }
    std::memcpy(&seq, data, sizeof(seq));
    if ((seq != r->next) || (length != 8 + (seq % 64))) {
        ++r->bad;
    }
    ++r->next;
    return UCS_OK;
}

struct seq_pack {
    uint64_t seq;
};

size_t pack_seq(void *dest, void *arg)
{
    auto *s = static_cast<seq_pack *>(arg);
    std::memcpy(dest, &s->seq, sizeof(s->seq));
    std::memset(static_cast<uint8_t *>(dest) + 8, 0x5a, s->seq % 64);
    return 8 + (s->seq % 64);
}

} // namespace

TEST_CASE("tcp keeps 100000 AMs of mixed kinds in order", "[tcp]")
{
    test::child_process child([](int fd) {
        CHILD_OPEN(e);
        order_receiver r;
        TEST_CHILD_CHECK(e.iface().set_am_handler(AM_ID, check_order, &r, 0) == UCS_OK);
        TEST_CHILD_CHECK(test::poll_until([&] { return r.next >= ORDER_COUNT; },
                                          [&] { e.progress(); }, std::chrono::seconds(120)));
        TEST_CHILD_CHECK(r.bad == 0);
        TEST_CHILD_CHECK(r.next == ORDER_COUNT);
        TEST_CHILD_CHECK(test::sync_peer(fd));
        return 0;
    });

    test::uct_entity e("tcp", "lo");
    REQUIRE(e.ok());
    test::uct_addresses peer;
    REQUIRE(recv_peer(child.fd(), &peer));
    uct::ep *ep = e.connect(peer);
    REQUIRE(ep != nullptr);

    uint8_t filler[64];
    std::memset(filler, 0x5a, sizeof(filler));
    struct zslot : counted_comp {
        bool in_flight = false;
        uint64_t seq   = 0;
    } slots[16];
    int failures = 0;
    for (uint64_t seq = 0; seq < ORDER_COUNT; ++seq) {
        ucs_status_t st;
        size_t extra = seq % 64;
        switch (seq % 3) {
        case 0:
            st = retry(e, [&] { return ep->am_short(AM_ID, seq, filler, unsigned(extra)); });
            break;
        case 1: {
            seq_pack arg{seq};
            ssize_t len = retry(e, [&] { return ep->am_bcopy(AM_ID, pack_seq, &arg, 0); });
            st          = (len == ssize_t(8 + extra)) ? UCS_OK : UCS_ERR_IO_ERROR;
            break;
        }
        default: {
            /* A slot's header is reused only after its last send completed. */
            zslot &z = slots[(seq / 3) % 16];
            REQUIRE(test::poll_until([&] { return !z.in_flight || (z.fired > 0); },
                                     [&] { e.progress(); }));
            z.rearm();
            z.fired = 0;
            z.seq   = seq;
            uct::iov iov{filler, extra, nullptr};
            st          = retry(e, [&] { return ep->am_zcopy(AM_ID, &z.seq, 8, &iov, 1, 0, &z); });
            z.in_flight = (st == UCS_INPROGRESS);
            if (st == UCS_INPROGRESS) {
                st = UCS_OK;
            }
            break;
        }
        }
        failures += (st != UCS_OK);
    }
    CHECK(failures == 0);
    REQUIRE(flush_and_wait(e, ep));
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(child.wait() == 0);
}

namespace {

constexpr size_t SLOW_MSG_SIZE    = 1024;
constexpr uint64_t AFTER_BLOCKING = 20000;

struct slow_receiver {
    uint64_t next = 0;
    uint64_t bad  = 0;
};

ucs_status_t check_slow(void *arg, void *data, size_t length, unsigned)
{
    auto *r = static_cast<slow_receiver *>(arg);
    if ((length != SLOW_MSG_SIZE) ||
        !matches(static_cast<uint8_t *>(data) + 8, length - 8, r->next)) {
        ++r->bad;
    } else {
        uint64_t seq;
        std::memcpy(&seq, data, 8);
        r->bad += (seq != r->next);
    }
    ++r->next;
    return UCS_OK;
}

struct producer {
    uct::pending_req req; /* first: the callback gets its address */
    uct::ep *ep         = nullptr;
    uint64_t next       = 0;
    uint64_t total      = 0;
    uint64_t dispatched = 0;
    bool queued         = false;
    uint8_t msg[SLOW_MSG_SIZE];

    static size_t pack(void *dest, void *arg)
    {
        auto *p = static_cast<producer *>(arg);
        std::memcpy(p->msg, &p->next, 8);
        fill(p->msg + 8, SLOW_MSG_SIZE - 8, p->next);
        std::memcpy(dest, p->msg, SLOW_MSG_SIZE);
        return SLOW_MSG_SIZE;
    }

    /* Sends until out of room; UCS_OK when everything went. */
    ucs_status_t push()
    {
        while (next < total) {
            ssize_t len = ep->am_bcopy(AM_ID, pack, this, 0);
            if (len == UCS_ERR_NO_RESOURCE) {
                return UCS_ERR_NO_RESOURCE;
            }
            if (len != ssize_t(SLOW_MSG_SIZE)) {
                return UCS_ERR_IO_ERROR;
            }
            ++next;
        }
        return UCS_OK;
    }

    static ucs_status_t on_pending(uct::pending_req *self)
    {
        auto *p = reinterpret_cast<producer *>(self);
        ++p->dispatched;
        ucs_status_t st = p->push();
        if (st == UCS_OK) {
            p->queued = false;
        }
        return st;
    }
};

} // namespace

TEST_CASE("tcp producer faster than its consumer loses nothing (pending queue)", "[tcp]")
{
    test::child_process child([](int fd) {
        CHILD_OPEN(e);
        slow_receiver r;
        TEST_CHILD_CHECK(e.iface().set_am_handler(AM_ID, check_slow, &r, 0) == UCS_OK);
        /* Accept the connection, then stall until the sender is blocked. */
        uint64_t total = 0;
        TEST_CHILD_CHECK(test::poll_until([&] { return r.next > 0; }, [&] { e.progress(); }));
        TEST_CHILD_CHECK(test::recv_value(fd, &total));
        TEST_CHILD_CHECK(test::poll_until([&] { return r.next >= total; }, [&] { e.progress(); },
                                          std::chrono::seconds(120)));
        TEST_CHILD_CHECK(r.next == total);
        TEST_CHILD_CHECK(r.bad == 0);
        TEST_CHILD_CHECK(test::sync_peer(fd));
        return 0;
    });

    test::uct_entity e("tcp", "lo");
    REQUIRE(e.ok());
    test::uct_addresses peer;
    REQUIRE(recv_peer(child.fd(), &peer));

    auto p = std::make_unique<producer>();
    p->ep  = e.connect(peer);
    REQUIRE(p->ep != nullptr);
    p->req.func = producer::on_pending;

    /* One message, delivered, so the child has accepted the connection. */
    p->total = 1;
    REQUIRE(p->push() == UCS_OK);
    REQUIRE(flush_and_wait(e, p->ep));

    /* Fill everything while the child does not read. */
    p->total        = UINT64_MAX;
    ucs_status_t st = UCS_OK;
    while ((st == UCS_OK) && (p->next < (uint64_t(1) << 20))) {
        st = p->ep->am_bcopy(AM_ID, producer::pack, p.get(), 0) == ssize_t(SLOW_MSG_SIZE) ?
                 UCS_OK :
                 UCS_ERR_NO_RESOURCE;
        p->next += (st == UCS_OK);
        if (st == UCS_OK) {
            e.progress();
        }
    }
    REQUIRE(st == UCS_ERR_NO_RESOURCE); /* the consumer really fell behind */
    p->total = p->next + AFTER_BLOCKING;
    REQUIRE(p->ep->pending_add(&p->req, 0) == UCS_OK);
    p->queued = true;
    /* While a request waits, new sends queue behind it. */
    CHECK(p->ep->am_short(AM_ID, 0, nullptr, 0) == UCS_ERR_NO_RESOURCE);
    CHECK(p->ep->flush(0, nullptr) == UCS_ERR_NO_RESOURCE);

    REQUIRE(test::send_value(child.fd(), p->total));
    REQUIRE(test::poll_until([&] { return !p->queued; }, [&] { e.progress(); },
                             std::chrono::seconds(120)));
    CHECK(p->next == p->total);
    CHECK(p->dispatched >= 1);
    REQUIRE(flush_and_wait(e, p->ep));
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(child.wait() == 0);
}

namespace {

constexpr unsigned MANY_EPS = 50;

struct many_receiver {
    std::set<uint64_t> seen;
    int bad = 0;
};

ucs_status_t record_sender(void *arg, void *data, size_t length, unsigned)
{
    auto *r = static_cast<many_receiver *>(arg);
    uint64_t index;
    std::memcpy(&index, data, sizeof(index));
    if ((length != 8) || (index >= MANY_EPS) || !r->seen.insert(index).second) {
        ++r->bad;
    }
    return UCS_OK;
}

} // namespace

TEST_CASE("tcp accepts 50 eps connecting at once", "[tcp]")
{
    test::child_process child([](int fd) {
        CHILD_OPEN(e);
        many_receiver r;
        TEST_CHILD_CHECK(e.iface().set_am_handler(AM_ID, record_sender, &r, 0) == UCS_OK);
        TEST_CHILD_CHECK(test::poll_until([&] { return r.seen.size() == MANY_EPS; },
                                          [&] { e.progress(); }));
        TEST_CHILD_CHECK(r.bad == 0);
        TEST_CHILD_CHECK(test::sync_peer(fd));
        return 0;
    });

    test::uct_entity e("tcp", "lo");
    REQUIRE(e.ok());
    test::uct_addresses peer;
    REQUIRE(recv_peer(child.fd(), &peer));

    /* All connects are in flight together: none waits for the peer. */
    std::vector<uct::ep *> eps;
    for (unsigned i = 0; i < MANY_EPS; ++i) {
        uct::ep *ep = e.connect(peer);
        REQUIRE(ep != nullptr);
        eps.push_back(ep);
    }
    for (unsigned i = 0; i < MANY_EPS; ++i) {
        CHECK(eps[i]->am_short(AM_ID, i, nullptr, 0) == UCS_OK);
    }
    counted_comp comp;
    ucs_status_t st = e.iface().flush(0, &comp);
    REQUIRE(((st == UCS_OK) || (st == UCS_INPROGRESS)));
    REQUIRE(test::poll_until([&] { return (st == UCS_OK) || (comp.fired == 1); },
                             [&] { e.progress(); }));
    CHECK(comp.last == UCS_OK);
    for (uct::ep *ep : eps) {
        CHECK(ep->flush(0, nullptr) == UCS_OK);
    }
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(child.wait() == 0);
}
