/*
 * self transport, active messages: boundary sizes with data checked, kept
 * descriptors and their release, rx headroom, handlers that send from
 * inside a handler (no recursion, order kept, back-pressure through the
 * pending queue), and flush.
 */
#include <catch2/catch.hpp>

#include "two_process.h"
#include "uct_test_util.h"

#include <uct/sm/self/self_iface.h>

#include <ucs/debug/log.h>

#include <cstring>
#include <fstream>
#include <unistd.h>
#include <numeric>
#include <set>

namespace {

constexpr uct::am_id_t AM_ID = 3;

uint8_t pattern_byte(unsigned seed, size_t i)
{
    return uint8_t((i * 131 + seed * 7 + (i >> 8)) ^ (seed >> 3));
}

std::vector<uint8_t> pattern(size_t length, unsigned seed)
{
    std::vector<uint8_t> v(length);
    for (size_t i = 0; i < length; ++i) {
        v[i] = pattern_byte(seed, i);
    }
    return v;
}

/* Records every message a handler gets; may keep DESC buffers. */
struct recorder {
    struct message {
        std::vector<uint8_t> bytes;
        unsigned flags;
        void *data;
    };
    std::vector<message> messages;
    bool keep = false;
    std::vector<void *> kept;

    static ucs_status_t handler(void *arg, void *data, size_t length, unsigned flags)
    {
        auto *self  = static_cast<recorder *>(arg);
        auto *bytes = static_cast<uint8_t *>(data);
        self->messages.push_back({std::vector<uint8_t>(bytes, bytes + length), flags, data});
        if (self->keep && (flags & uct::am_cb_flag::DESC)) {
            self->kept.push_back(data);
            return UCS_INPROGRESS;
        }
        return UCS_OK;
    }
};

struct pack_args {
    const std::vector<uint8_t> *data;
    size_t claim; /* length reported, normally data->size() */
};

size_t pack_vector(void *dest, void *arg)
{
    auto *a = static_cast<pack_args *>(arg);
    if (!a->data->empty()) { /* an empty vector's data() may be null */
        std::memcpy(dest, a->data->data(), a->data->size());
    }
    return a->claim;
}

struct self_setup {
    test::uct_entity entity;
    uct::ep *ep;

    explicit self_setup(size_t rx_headroom = 0) : entity("self", "", rx_headroom)
    {
        REQUIRE(entity.ok());
        ep = entity.connect(entity.addresses());
        REQUIRE(ep != nullptr);
    }
};

std::vector<uint8_t> short_message(uint64_t header, const std::vector<uint8_t> &payload)
{
    std::vector<uint8_t> expected(sizeof(header) + payload.size());
    std::memcpy(expected.data(), &header, sizeof(header));
    std::copy(payload.begin(), payload.end(), expected.begin() + sizeof(header));
    return expected;
}


/* Sends log output to a temporary file for the scope's lifetime. */
class log_capture {
public:
    log_capture()
    {
        char name[] = "/tmp/test_self_log_XXXXXX";
        int fd      = mkstemp(name);
        REQUIRE(fd >= 0);
        close(fd);
        path_ = name;
        REQUIRE(ucs::log_set_file(path_.c_str()) == UCS_OK);
    }
    ~log_capture()
    {
        ucs::log_set_file("stdout");
        unlink(path_.c_str());
    }
    std::string text() const
    {
        std::fflush(ucs::log_stream());
        std::ifstream in(path_);
        return std::string(std::istreambuf_iterator<char>(in), {});
    }

private:
    std::string path_;
};

} // namespace

TEST_CASE("self am_short at boundary sizes", "[self]")
{
    self_setup s;
    recorder rec;
    REQUIRE(s.entity.iface().set_am_handler(AM_ID, recorder::handler, &rec, 0) == UCS_OK);
    /* max_short counts the 8-byte header, as on every transport. */
    REQUIRE(s.entity.attr().am.max_short == 8192);
    const size_t max = s.entity.attr().am.max_short - sizeof(uint64_t);

    for (size_t length : {size_t(0), size_t(1), size_t(8), max - 1, max}) {
        INFO("length " << length);
        rec.messages.clear();
        auto payload    = pattern(length, unsigned(length));
        uint64_t header = 0x1122334455667788ull ^ length;
        REQUIRE(s.ep->am_short(AM_ID, header, payload.data(), unsigned(length)) == UCS_OK);
        REQUIRE(rec.messages.size() == 1); /* delivered inside the call */
        CHECK(rec.messages[0].bytes == short_message(header, payload));
        CHECK((rec.messages[0].flags & uct::am_cb_flag::DESC) != 0);
    }

    rec.messages.clear();
    auto too_long = pattern(max + 1, 1);
    CHECK(s.ep->am_short(AM_ID, 0, too_long.data(), unsigned(max + 1)) == UCS_ERR_INVALID_PARAM);
    CHECK(s.ep->am_short(uct::AM_ID_MAX, 0, too_long.data(), 1) == UCS_ERR_INVALID_PARAM);
    CHECK(rec.messages.empty());
}

TEST_CASE("self am_short_iov delivers the entries back to back", "[self]")
{
    self_setup s;
    recorder rec;
    REQUIRE(s.entity.iface().set_am_handler(AM_ID, recorder::handler, &rec, 0) == UCS_OK);
    const size_t max = s.entity.attr().am.max_short;

    /* Split points inside and across the 8-byte header word. */
    for (std::vector<size_t> pieces :
         {std::vector<size_t>{8}, {3, 5}, {1, 7, 0, 40}, {100, max - 100}}) {
        size_t total = std::accumulate(pieces.begin(), pieces.end(), size_t(0));
        INFO("total " << total << " in " << pieces.size() << " entries");
        auto bytes = pattern(total, unsigned(total));
        std::vector<uct::iov> iovs;
        size_t at = 0;
        for (size_t len : pieces) {
            iovs.push_back({bytes.data() + at, len, uct::MEM_HANDLE_NULL});
            at += len;
        }
        rec.messages.clear();
        REQUIRE(s.ep->am_short_iov(AM_ID, iovs.data(), iovs.size()) == UCS_OK);
        REQUIRE(rec.messages.size() == 1);
        CHECK(rec.messages[0].bytes == bytes);
    }

    /* Fewer bytes than the header word, or more than a short AM holds. */
    rec.messages.clear();
    auto bytes = pattern(max + 1, 3);
    uct::iov small{bytes.data(), 7, uct::MEM_HANDLE_NULL};
    CHECK(s.ep->am_short_iov(AM_ID, &small, 1) == UCS_ERR_INVALID_PARAM);
    uct::iov large{bytes.data(), max + 1, uct::MEM_HANDLE_NULL};
    CHECK(s.ep->am_short_iov(AM_ID, &large, 1) == UCS_ERR_INVALID_PARAM);
    CHECK(rec.messages.empty());
}

TEST_CASE("self am_bcopy at boundary sizes", "[self]")
{
    self_setup s;
    recorder rec;
    REQUIRE(s.entity.iface().set_am_handler(AM_ID, recorder::handler, &rec, 0) == UCS_OK);
    const size_t max = s.entity.attr().am.max_bcopy;
    REQUIRE(max == 8192);

    for (size_t length : {size_t(0), size_t(1), size_t(100), max - 1, max}) {
        INFO("length " << length);
        rec.messages.clear();
        auto payload = pattern(length, 5);
        pack_args args{&payload, length};
        CHECK(s.ep->am_bcopy(AM_ID, pack_vector, &args, 0) == ssize_t(length));
        REQUIRE(rec.messages.size() == 1);
        CHECK(rec.messages[0].bytes == payload);
        CHECK((rec.messages[0].flags & uct::am_cb_flag::DESC) != 0);
    }

    /* A packer claiming more than the limit is refused, nothing delivered. */
    rec.messages.clear();
    auto payload = pattern(16, 5);
    pack_args liar{&payload, max + 1};
    log_capture log;
    CHECK(s.ep->am_bcopy(AM_ID, pack_vector, &liar, 0) == UCS_ERR_INVALID_PARAM);
    CHECK(log.text().find("packer wrote") != std::string::npos);
    CHECK(s.ep->am_bcopy(AM_ID, nullptr, &liar, 0) == UCS_ERR_INVALID_PARAM);
    CHECK(rec.messages.empty());
}

TEST_CASE("self am_zcopy at boundary sizes, header plus iovs", "[self]")
{
    self_setup s;
    recorder rec;
    REQUIRE(s.entity.iface().set_am_handler(AM_ID, recorder::handler, &rec, 0) == UCS_OK);
    const uct::iface_attr &attr = s.entity.attr();
    const size_t max = attr.am.max_zcopy, max_hdr = attr.am.max_hdr;
    REQUIRE(max == 8192);
    REQUIRE(max_hdr > 0);

    auto header  = pattern(max_hdr + 1, 9);
    auto payload = pattern(max + 1, 11);
    auto zcopy   = [&](size_t hdr_len, std::vector<size_t> pieces) {
        std::vector<uct::iov> iovs;
        size_t at = 0;
        for (size_t len : pieces) {
            iovs.push_back({payload.data() + at, len, uct::MEM_HANDLE_NULL});
            at += len;
        }
        return s.ep->am_zcopy(AM_ID, header.data(), unsigned(hdr_len), iovs.data(), iovs.size(), 0,
                                nullptr);
    };
    auto expected = [&](size_t hdr_len, size_t total) {
        std::vector<uint8_t> e(header.begin(), header.begin() + hdr_len);
        e.insert(e.end(), payload.begin(), payload.begin() + total);
        return e;
    };

    struct layout {
        size_t hdr;
        std::vector<size_t> pieces;
    };
    const layout cases[] = {
        {0, {1, 2}},
        {8, {}},
        {8, {1}},
        {max_hdr, {max}},
        {max_hdr, {max - 100, 0, 100}},
        {16, {1, 1000, 3, 4000}},
    };
    for (const auto &c : cases) {
        size_t total = std::accumulate(c.pieces.begin(), c.pieces.end(), size_t(0));
        INFO("header " << c.hdr << " total " << total);
        rec.messages.clear();
        REQUIRE(zcopy(c.hdr, c.pieces) == UCS_OK);
        REQUIRE(rec.messages.size() == 1);
        CHECK(rec.messages[0].bytes == expected(c.hdr, total));
        CHECK((rec.messages[0].flags & uct::am_cb_flag::DESC) != 0);
    }

    /* One iov and no header: the handler sees the sender's buffer itself. */
    rec.messages.clear();
    REQUIRE(zcopy(0, {max}) == UCS_OK);
    REQUIRE(rec.messages.size() == 1);
    CHECK(rec.messages[0].data == payload.data());
    CHECK((rec.messages[0].flags & uct::am_cb_flag::DESC) == 0);
    CHECK(rec.messages[0].bytes == expected(0, max));

    rec.messages.clear();
    CHECK(zcopy(0, {max + 1}) == UCS_ERR_INVALID_PARAM);
    CHECK(zcopy(8, {max, 1}) == UCS_ERR_INVALID_PARAM);
    CHECK(zcopy(max_hdr + 1, {1}) == UCS_ERR_INVALID_PARAM);
    CHECK(s.ep->am_zcopy(AM_ID, nullptr, 4, nullptr, 0, 0, nullptr) == UCS_ERR_INVALID_PARAM);
    CHECK(rec.messages.empty());
}

TEST_CASE("self DESC buffers can be kept, written in the headroom, and released", "[self]")
{
    const size_t headroom = 40;
    self_setup s(headroom);
    recorder rec;
    rec.keep = true;
    REQUIRE(s.entity.iface().set_am_handler(AM_ID, recorder::handler, &rec, 0) == UCS_OK);

    /* Keep more messages than one allocation of descriptors holds. */
    const size_t count = 200, length = 1000;
    for (size_t i = 0; i < count; ++i) {
        auto payload = pattern(length, unsigned(i));
        pack_args args{&payload, length};
        REQUIRE(s.ep->am_bcopy(AM_ID, pack_vector, &args, 0) == ssize_t(length));
    }
    REQUIRE(rec.kept.size() == count);

    /* The headroom before each kept buffer is ours to write. */
    for (void *data : rec.kept) {
        std::memset(static_cast<uint8_t *>(data) - headroom, 0xab, headroom);
    }
    for (size_t i = 0; i < count; ++i) {
        auto *data = static_cast<uint8_t *>(rec.kept[i]);
        INFO("message " << i);
        REQUIRE(std::equal(data, data + length, pattern(length, unsigned(i)).begin()));
        CHECK(reinterpret_cast<uintptr_t>(data) % 16 == 0);
    }
    CHECK(std::set<void *>(rec.kept.begin(), rec.kept.end()).size() == count);

    /* Released buffers are reused by later messages. */
    void *last_released = rec.kept.back();
    for (void *data : rec.kept) {
        s.entity.iface().release_am_desc(data);
    }
    rec.kept.clear();
    rec.keep     = false;
    auto payload = pattern(10, 1);
    pack_args args{&payload, payload.size()};
    REQUIRE(s.ep->am_bcopy(AM_ID, pack_vector, &args, 0) == 10);
    CHECK(rec.messages.back().data == last_released);
}

namespace {

/*
 * A handler that replies to itself: message n sends message n+1 (until
 * `last`) and also `fanout` extra messages. It records the order and how
 * deep self handlers nest.
 */
struct chatter {
    uct::ep *ep       = nullptr;
    uct::iface *iface = nullptr;
    uint64_t last     = 0;
    unsigned fanout   = 0;
    int depth         = 0;
    int max_depth     = 0;
    std::vector<uint64_t> seen;
    std::vector<uint64_t> refused; /* sends that got NO_RESOURCE */
    ucs_status_t inner_flush = UCS_OK;
    unsigned inner_progress  = 0;

    static ucs_status_t handler(void *arg, void *data, size_t, unsigned)
    {
        auto *c = static_cast<chatter *>(arg);
        ++c->depth;
        c->max_depth = std::max(c->max_depth, c->depth);
        uint64_t n;
        std::memcpy(&n, data, sizeof(n));
        c->seen.push_back(n);
        if (n < c->last) {
            if (c->ep->am_short(AM_ID, n + 1, nullptr, 0) != UCS_OK) {
                c->refused.push_back(n + 1);
            }
        }
        for (unsigned i = 0; i < c->fanout; ++i) {
            uint64_t id = 1000000 + i;
            if (c->ep->am_short(AM_ID, id, nullptr, 0) != UCS_OK) {
                c->refused.push_back(id);
            }
        }
        c->fanout         = 0;
        c->inner_flush    = c->ep->flush(0, nullptr);
        c->inner_progress = c->iface->progress();
        --c->depth;
        return UCS_OK;
    }
};

} // namespace

TEST_CASE("self handlers that send from inside a handler never recurse", "[self]")
{
    self_setup s;
    chatter c;
    c.ep    = s.ep;
    c.iface = &s.entity.iface();
    REQUIRE(s.entity.iface().set_am_handler(AM_ID, chatter::handler, &c, 0) == UCS_OK);

    SECTION("a reply chain much longer than the queue") {
        c.last = 5000;
        REQUIRE(s.ep->am_short(AM_ID, 0, nullptr, 0) == UCS_OK);
        CHECK(c.seen.size() == 1);                   /* the first, synchronously */
        CHECK(c.inner_flush == UCS_ERR_NO_RESOURCE); /* reply queued, not deliverable */
        CHECK(c.inner_progress == 0);                /* progress does not nest */
        REQUIRE(test::poll_until([&] { return c.seen.size() == 5001; },
                                 [&] { s.entity.progress(); }));
        CHECK(c.max_depth == 1);
        CHECK(c.refused.empty());
        std::vector<uint64_t> order(5001);
        std::iota(order.begin(), order.end(), 0);
        CHECK(c.seen == order);
        CHECK(s.ep->flush(0, nullptr) == UCS_OK);
    }

    SECTION("a burst larger than the queue gets NO_RESOURCE, then pending") {
        const unsigned queue_len = uct::self::default_self_config().nested_queue_len;
        c.fanout                 = queue_len + 10;
        REQUIRE(s.ep->am_short(AM_ID, 7, nullptr, 0) == UCS_OK);
        REQUIRE(c.refused.size() == 10);
        CHECK(c.refused.front() == 1000000 + queue_len);

        /* The refused ones go through the pending queue. */
        struct resend : uct::pending_req {
            uct::ep *ep;
            uint64_t id;
            int *sent;
        };
        int sent = 0;
        std::vector<resend> reqs(c.refused.size());
        for (size_t i = 0; i < reqs.size(); ++i) {
            reqs[i].ep   = s.ep;
            reqs[i].id   = c.refused[i];
            reqs[i].sent = &sent;
            reqs[i].func = [](uct::pending_req *self) {
                auto *r             = static_cast<resend *>(self);
                ucs_status_t status = r->ep->am_short(AM_ID, r->id, nullptr, 0);
                if (status == UCS_OK) {
                    ++*r->sent;
                }
                return status;
            };
            REQUIRE(s.ep->pending_add(&reqs[i], 0) == UCS_OK);
        }
        REQUIRE(test::poll_until([&] { return c.seen.size() == 1 + queue_len + 10; },
                                 [&] { s.entity.progress(); }));
        CHECK(sent == 10);
        CHECK(c.max_depth == 1);
        /* Delivered in send order: the burst, then the resent tail. */
        for (unsigned i = 0; i < queue_len + 10; ++i) {
            CHECK(c.seen[1 + i] == 1000000 + i);
        }
        /* Idle again: pending_add says "just send". */
        uct::pending_req idle_req{};
        idle_req.func = [](uct::pending_req *) { return UCS_OK; };
        CHECK(s.ep->pending_add(&idle_req, 0) == UCS_ERR_BUSY);
    }

    SECTION("flush outside a handler delivers what handlers queued") {
        c.last = 3;
        REQUIRE(s.ep->am_short(AM_ID, 0, nullptr, 0) == UCS_OK);
        CHECK(c.seen.size() == 1);
        /* Each drain delivers what was queued; each delivery queues one more. */
        ucs_status_t status = s.ep->flush(0, nullptr);
        CHECK(c.seen.size() == 2);
        CHECK(status == UCS_ERR_NO_RESOURCE);
        CHECK(s.entity.iface().flush(0, nullptr) == UCS_ERR_NO_RESOURCE);
        CHECK(s.entity.iface().flush(0, nullptr) == UCS_OK);
        CHECK(c.seen == std::vector<uint64_t>{0, 1, 2, 3});
    }
}

TEST_CASE("self pending queue: purge per endpoint", "[self]")
{
    self_setup s;
    uct::ep *other = s.entity.connect(s.entity.addresses());
    REQUIRE(other != nullptr);
    chatter c;
    c.ep     = s.ep;
    c.iface  = &s.entity.iface();
    c.fanout = uct::self::default_self_config().nested_queue_len;
    REQUIRE(s.entity.iface().set_am_handler(AM_ID, chatter::handler, &c, 0) == UCS_OK);
    REQUIRE(s.ep->am_short(AM_ID, 0, nullptr, 0) == UCS_OK); /* fills the queue */
    REQUIRE(c.refused.empty());
    /* From outside a handler too: the queue is full, order must be kept. */
    CHECK(s.ep->am_short(AM_ID, 1, nullptr, 0) == UCS_ERR_NO_RESOURCE);

    uct::pending_req a{}, b{}, d{};
    a.func = b.func = d.func = [](uct::pending_req *) { return UCS_OK; };
    REQUIRE(s.ep->pending_add(&a, 0) == UCS_OK);
    REQUIRE(other->pending_add(&b, 0) == UCS_OK);
    REQUIRE(s.ep->pending_add(&d, 0) == UCS_OK);

    std::vector<uct::pending_req *> purged;
    s.ep->pending_purge(
        [](uct::pending_req *req, void *arg) {
        static_cast<std::vector<uct::pending_req *> *>(arg)->push_back(req);
        },
        &purged);
    CHECK(purged == std::vector<uct::pending_req *>{&a, &d});
    purged.clear();
    other->pending_purge(
        [](uct::pending_req *req, void *arg) {
        static_cast<std::vector<uct::pending_req *> *>(arg)->push_back(req);
        },
        &purged);
    CHECK(purged == std::vector<uct::pending_req *>{&b});

    s.entity.progress();
    CHECK(s.entity.iface().flush(0, nullptr) == UCS_OK);
}
