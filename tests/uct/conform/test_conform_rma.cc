/*
 * Conformance: put and get. Every put and get kind the iface lists moves
 * exactly the bytes asked for, at the smallest sizes, at each limit the
 * attributes report (capped at SIZE_CAP), split over the most iov entries
 * allowed, and ending exactly at the end of the peer's region; after an ep
 * flush the peer's whole region holds what was put and nothing else. A
 * range crossing either end of the region, and one entry or byte past a
 * limit, is refused with an error status (at once, by the completion, or
 * by the next flush) and changes nothing.
 */
#include "conform_ops.h"
#include "conform_pair.h"

#include <algorithm>
#include <cstring>

namespace {

using namespace test::conform;
using test::counted_comp;

constexpr size_t REGION = 5 * SIZE_CAP;
constexpr size_t GAP    = 64;

/* Lengths (and iov counts) one kind is tried with, the largest last. */
std::vector<std::pair<size_t, size_t>> lengths_of(op_kind kind, size_t limit, size_t max_iov)
{
    const size_t max                           = std::min(limit, SIZE_CAP);
    std::vector<std::pair<size_t, size_t>> out = {{1, 1}, {8, 1}};
    if (max > 9) {
        out.push_back({max - 1, 1});
    }
    if (kind == op_kind::ZCOPY) {
        out.push_back({max, std::min({max_iov, IOV_CAP, max})});
    }
    out.push_back({max, 1});
    return out;
}

/* An operation that went out: its final status (waiting for a promised
 * completion, which must then run exactly once). */
ucs_status_t finish_op(pair &p, ucs_status_t status, counted_comp &comp)
{
    const bool promised = (status == UCS_INPROGRESS);
    status              = p.complete(status, comp);
    CHECK(comp.fired == (promised ? 1 : 0));
    return status;
}

/* Refused: at once, by its completion, or by the flush after it. */
bool refused(pair &p, const std::function<ucs_status_t(counted_comp *)> &op)
{
    counted_comp comp;
    ucs_status_t status = p.retry([&] { return op(&comp); });
    if (is_error(status)) {
        return true;
    }
    return is_error(p.complete(status, comp)) || is_error(p.flush_ep());
}

void check_region(pair &p, const pair::remote_region &r, const std::vector<uint8_t> &shadow)
{
    std::vector<uint8_t> now;
    REQUIRE(p.peer().read(r.desc.address, r.desc.length, &now));
    CHECK(differ(now, shadow) == "");
}

void put_limits(pair &p, const pair::remote_region &r, op_kind kind, std::vector<uint8_t> *shadow,
                uint64_t *seed)
{
    INFO("put " << kind_name(kind));
    const uct::iface_attr &a = p.attr();
    const uint64_t start = r.desc.address, end = start + r.desc.length;
    const size_t limit = put_limit(a, kind);
    std::vector<uint8_t> eight(8, 0x33);

    /* Refusals first: each leaves the region as it was. */
    auto put_at = [&](uint64_t addr, const std::vector<uint8_t> &bytes, size_t iovcnt) {
        return [&p, &r, kind, addr, &bytes, iovcnt](counted_comp *comp) {
            return put(p.ep(), kind, bytes.data(), bytes.size(), addr, r.rkey(), comp, iovcnt);
        };
    };
    CHECK(refused(p, put_at(end - 4, eight, 1)));
    CHECK(refused(p, put_at(start - 4, eight, 1)));
    if ((kind == op_kind::SHORT) && (limit < SIZE_CAP)) {
        std::vector<uint8_t> big(limit + 1, 0x44);
        CHECK(refused(p, put_at(start, big, 1)));
    }
    if (kind == op_kind::ZCOPY) {
        if (a.put.max_iov < IOV_CAP) {
            std::vector<uint8_t> bytes(a.put.max_iov + 1, 0x55);
            CHECK(refused(p, put_at(start, bytes, a.put.max_iov + 1)));
        }
        if (a.put.max_zcopy < SIZE_CAP) {
            std::vector<uint8_t> big(a.put.max_zcopy + 1, 0x66);
            CHECK(refused(p, put_at(start, big, 1)));
        }
    }
    REQUIRE(p.flush_ep() == UCS_OK);
    check_region(p, r, *shadow);

    /* Then every size, side by side, and the largest at the very end. */
    auto sizes    = lengths_of(kind, limit, a.put.max_iov);
    size_t offset = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
        /* Named copies: a lambda cannot capture structured bindings (C++17). */
        const size_t length = sizes[i].first;
        const size_t iovcnt = sizes[i].second;
        const bool last     = (i + 1 == sizes.size());
        const size_t at     = last ? r.desc.length - length : offset;
        INFO(length << " bytes in " << iovcnt << " iov at offset " << at);
        auto bytes = pattern(length, (*seed)++);
        counted_comp comp;
        ucs_status_t status = p.retry([&] {
            return put(p.ep(), kind, bytes.data(), length, start + at, r.rkey(), &comp, iovcnt);
        });
        CHECK(finish_op(p, status, comp) == UCS_OK);
        std::copy(bytes.begin(), bytes.end(), shadow->begin() + long(at));
        offset += length + GAP;
    }
    REQUIRE(p.flush_ep() == UCS_OK);
    check_region(p, r, *shadow);
}

void get_limits(pair &p, const pair::remote_region &r, op_kind kind,
                const std::vector<uint8_t> &shadow)
{
    INFO("get " << kind_name(kind));
    const uct::iface_attr &a = p.attr();
    const uint64_t start = r.desc.address, end = start + r.desc.length;
    const size_t limit = get_limit(a, kind);

    auto get_at = [&](uint64_t addr, size_t length, size_t iovcnt) {
        return [&p, &r, kind, addr, length, iovcnt](counted_comp *comp) {
            std::vector<uint8_t> sink(length);
            get_target t{sink.data(), length};
            ucs_status_t status = get(p.ep(), kind, &t, addr, r.rkey(), comp, iovcnt);
            /* Keep the buffer until a promised completion ran. */
            return is_error(status) ? status : p.complete(status, *comp);
        };
    };
    CHECK(refused(p, get_at(end - 4, 8, 1)));
    CHECK(refused(p, get_at(start - 4, 8, 1)));
    if ((kind == op_kind::BCOPY) && (limit < SIZE_CAP)) {
        CHECK(refused(p, get_at(start, limit + 1, 1)));
    }
    if (kind == op_kind::ZCOPY) {
        if (a.get.max_iov < IOV_CAP) {
            CHECK(refused(p, get_at(start, a.get.max_iov + 1, a.get.max_iov + 1)));
        }
        if (a.get.max_zcopy < SIZE_CAP) {
            CHECK(refused(p, get_at(start, a.get.max_zcopy + 1, 1)));
        }
    }

    auto sizes    = lengths_of(kind, limit, a.get.max_iov);
    size_t offset = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
        /* Named copies: a lambda cannot capture structured bindings (C++17). */
        const size_t length = sizes[i].first;
        const size_t iovcnt = sizes[i].second;
        const bool last     = (i + 1 == sizes.size());
        const size_t at     = last ? r.desc.length - length : offset;
        INFO(length << " bytes in " << iovcnt << " iov from offset " << at);
        std::vector<uint8_t> buffer(length + GAP, 0xee);
        get_target t{buffer.data(), length};
        counted_comp comp;
        ucs_status_t status = p.retry([&] {
            return get(p.ep(), kind, &t, start + at, r.rkey(), &comp, iovcnt);
        });
        CHECK(finish_op(p, status, comp) == UCS_OK);
        CHECK(std::equal(buffer.begin(), buffer.begin() + long(length), shadow.begin() + long(at)));
        CHECK(std::all_of(buffer.begin() + long(length), buffer.end(),
                          [](uint8_t b) { return b == 0xee; }));
        if (kind == op_kind::BCOPY) {
            CHECK(t.unpacked == 1);
            CHECK(t.whole);
        }
        offset += length + GAP;
    }
}

void rma_limits(const transport_spec &spec)
{
    CONFORM_OPEN(p, spec);
    const auto puts = put_kinds(p.attr()), gets = get_kinds(p.attr());
    if (puts.empty() && gets.empty()) {
        WARN(p.name() << ": skipped: the iface attributes lack PUT_SHORT, PUT_BCOPY, "
                         "PUT_ZCOPY, GET_BCOPY and GET_ZCOPY");
        return;
    }
    const uint64_t region_seed  = 77;
    auto r                      = p.expose(REGION, region_seed);
    std::vector<uint8_t> shadow = pattern(r.desc.length, region_seed);
    uint64_t seed               = 1000;
    for (op_kind kind : puts) {
        put_limits(p, r, kind, &shadow, &seed);
    }
    /* Fresh bytes for the gets, written by the peer itself. */
    shadow = pattern(r.desc.length, seed);
    REQUIRE(p.peer().write(r.desc.address, shadow));
    for (op_kind kind : gets) {
        get_limits(p, r, kind, shadow);
    }
}

} // namespace

CONFORM_TEST_CASE("put and get move exact bytes at every limit and refuse out of bounds",
                  rma_limits)
