/*
 * Conformance: active messages. Every AM kind the iface lists delivers
 * exactly the bytes sent (the short header first, gathered from entries
 * too (am_short_iov), the zcopy header before
 * the iov data) at the smallest sizes and at each limit the attributes
 * report; one byte, header byte or iov entry past a limit is refused with
 * an error and delivers nothing; messages of all kinds on one ep arrive in
 * the order sent (UCP's AM lane relies on it: docs/architecture.md).
 */
#include "conform_ops.h"
#include "conform_pair.h"

#include <algorithm>
#include <cstring>
#include <deque>

namespace {

using namespace test::conform;
using test::counted_comp;

constexpr uct::am_id_t AM_ID = am_sink::AM_ID;

/* One message to send: what the handler must receive, and how to split it. */
struct message {
    op_kind kind;
    std::vector<uint8_t> bytes;
    size_t zcopy_hdr = 0;
    size_t iovcnt    = 1;
};

std::string describe(const message &m)
{
    return std::string(kind_name(m.kind)) + " of " + std::to_string(m.bytes.size()) +
           " bytes (zcopy header " + std::to_string(m.zcopy_hdr) + ", " + std::to_string(m.iovcnt) +
           " iov)";
}

/* The messages at the limits of `kind`. */
std::vector<message> limit_messages(const uct::iface_attr &a, op_kind kind, uint64_t *seed)
{
    std::vector<message> out;
    auto add = [&](size_t length, size_t hdr, size_t iovcnt) {
        out.push_back({kind, pattern(length, (*seed)++), hdr, iovcnt});
    };
    switch (kind) {
    case op_kind::SHORT: {
        const size_t max = a.am.max_short; /* with the 8-byte header */
        for (size_t len : {size_t(8), size_t(9), max - 1, max}) {
            add(len, 0, 1);
        }
        /* Gathered by am_short_iov, split inside and after the header word. */
        for (size_t len : {size_t(8), size_t(9), max}) {
            add(len, 0, 3);
        }
        break;
    }
    case op_kind::BCOPY: {
        const size_t max = a.am.max_bcopy;
        for (size_t len : {size_t(0), size_t(1), max - 1, max}) {
            add(len, 0, 1);
        }
        break;
    }
    case op_kind::ZCOPY: {
        const size_t max = std::min(a.am.max_zcopy, SIZE_CAP);
        const size_t min = std::max<size_t>(a.am.min_zcopy, 1);
        const size_t hdr = a.am.max_hdr;
        const size_t iov = std::min({a.am.max_iov, IOV_CAP, max});
        add(min, 0, 1);
        add(hdr + min, hdr, 1);
        add(hdr + max, hdr, 1);
        add(max, 0, iov);
        add(hdr + max, hdr, iov);
        break;
    }
    }
    return out;
}

/* Sends `m` (retrying while the transport is full) and waits for its
 * completion; checks the completion ran exactly when one was promised. */
void send_and_complete(pair &p, const message &m)
{
    INFO(describe(m));
    counted_comp comp;
    ucs_status_t status = p.retry([&] {
        return send_am(p.ep(), AM_ID, m.kind, m.bytes, &comp, m.zcopy_hdr, m.iovcnt);
    });
    const bool promised = (status == UCS_INPROGRESS);
    CHECK(p.complete(status, comp) == UCS_OK);
    CHECK(comp.fired == (promised ? 1 : 0));
}

/* The peer received exactly `sent`, in order. */
void check_received(pair &p, const std::vector<message> &sent)
{
    std::vector<am_record> got;
    CHECK(p.peer().take_ams(sent.size(), SIZE_MAX, &got));
    REQUIRE(got.size() == sent.size());
    for (size_t i = 0; i < sent.size(); ++i) {
        INFO("message " << i << ": " << describe(sent[i]));
        CHECK(got[i].length == sent[i].bytes.size());
        CHECK(differ(got[i].bytes, sent[i].bytes) == "");
    }
}

/* One past each limit of `kind`: refused with an error. */
void check_refusals(pair &p, op_kind kind)
{
    const uct::iface_attr &a = p.attr();
    counted_comp comp;
    auto refused = [&](const char *what, size_t length, size_t hdr, size_t iovcnt) {
        INFO(kind_name(kind) << ": " << what);
        std::vector<uint8_t> bytes(length, 0x77);
        ucs_status_t status = send_am(p.ep(), AM_ID, kind, bytes, &comp, hdr, iovcnt);
        CHECK(is_error(status));
    };
    if (kind == op_kind::SHORT) {
        refused("am.max_short + 1 bytes with the header", a.am.max_short + 1, 0, 1);
        refused("am.max_short + 1 bytes gathered from 3 entries", a.am.max_short + 1, 0, 3);
        refused("7 bytes gathered from 3 entries", 7, 0, 3);
    } else if (kind == op_kind::ZCOPY) {
        refused("a header of am.max_hdr + 1 bytes", a.am.max_hdr + 2, a.am.max_hdr + 1, 1);
        if (a.am.max_iov < IOV_CAP) {
            refused("am.max_iov + 1 entries", a.am.max_iov + 1, 0, a.am.max_iov + 1);
        }
        if (a.am.max_zcopy < SIZE_CAP) {
            refused("am.max_zcopy + 1 bytes", a.am.max_zcopy + 1, 0, 1);
        }
    }
    /* bcopy has no refusal to test: its pack callback must not exceed the
     * limit, the transport gives it a buffer of that size. */
    CHECK(comp.fired == 0);
}

void am_limits(const transport_spec &spec)
{
    CONFORM_OPEN(p, spec);
    const auto kinds = am_kinds(p.attr());
    if (kinds.empty()) {
        WARN(p.name() << ": skipped: the iface attributes lack AM_SHORT, AM_BCOPY and "
                         "AM_ZCOPY");
        return;
    }
    uint64_t seed = 1;
    for (op_kind kind : kinds) {
        std::vector<message> sent = limit_messages(p.attr(), kind, &seed);
        for (const message &m : sent) {
            send_and_complete(p, m);
        }
        check_refusals(p, kind);
        /* Nothing of the refused ones arrives: the marker comes right after. */
        sent.push_back(limit_messages(p.attr(), kind, &seed).front());
        send_and_complete(p, sent.back());
        check_received(p, sent);
    }
}

void am_order(const transport_spec &spec)
{
    CONFORM_OPEN(p, spec);
    const uct::iface_attr &a = p.attr();
    const auto kinds         = am_kinds(a);
    if (kinds.empty()) {
        WARN(p.name() << ": skipped: the iface attributes lack AM_SHORT, AM_BCOPY and "
                         "AM_ZCOPY");
        return;
    }

    /* Lengths of every kind vary; each message starts with its index. */
    constexpr size_t COUNT = 600;
    std::vector<message> sent;
    for (size_t i = 0; i < COUNT; ++i) {
        message m{kinds[i % kinds.size()], {}, 0, 1};
        size_t length;
        switch (m.kind) {
        case op_kind::SHORT:
            length   = 8 + (i * 7) % (a.am.max_short - 7);
            m.iovcnt = 1 + (i / kinds.size()) % 3; /* am_short or am_short_iov */
            break;
        case op_kind::BCOPY:
            length = 8 + (i * 131) % (std::min(a.am.max_bcopy, size_t(4096)) - 7);
            break;
        default:
            m.zcopy_hdr = (i % 3 == 0) ? 0 : std::min(a.am.max_hdr, 8 + i % 24);
            m.iovcnt    = 1 + i % std::min<size_t>(a.am.max_iov, 4);
            length      = m.zcopy_hdr + std::max(a.am.min_zcopy, m.iovcnt + (i * 37) % 2048);
            break;
        }
        m.bytes        = pattern(std::max<size_t>(length, sizeof(uint64_t)), i);
        uint64_t index = i;
        std::memcpy(m.bytes.data(), &index, sizeof(index));
        sent.push_back(std::move(m));
    }

    /* Sent back to back: zero-copy buffers stay untouched until completed. */
    std::deque<counted_comp> comps(COUNT);
    size_t promised = 0;
    for (size_t i = 0; i < COUNT; ++i) {
        const message &m    = sent[i];
        ucs_status_t status = p.retry([&] {
            return send_am(p.ep(), AM_ID, m.kind, m.bytes, &comps[i], m.zcopy_hdr, m.iovcnt);
        });
        INFO("message " << i << ": " << describe(m));
        REQUIRE(((status == UCS_OK) || (status == UCS_INPROGRESS)));
        promised += (status == UCS_INPROGRESS);
    }
    check_received(p, sent);
    CHECK(p.wait_until([&] {
        return std::count_if(comps.begin(), comps.end(),
                             [](const counted_comp &c) { return c.fired != 0; }) == long(promised);
    }));
    for (const counted_comp &c : comps) {
        CHECK(c.fired <= 1);
        CHECK(c.last == UCS_OK);
    }
}

} // namespace

CONFORM_TEST_CASE("active messages arrive whole at every size limit", am_limits)
CONFORM_TEST_CASE("active messages keep their order across kinds", am_order)
