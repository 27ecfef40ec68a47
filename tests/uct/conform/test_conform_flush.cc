/*
 * Conformance: flush, of the ep and of the iface, with a completion and
 * polled without one. Once a flush is done (UCS_OK, or its completion ran
 * once with UCS_OK) everything issued before it is done remotely: the puts
 * and posted atomics are in the peer's memory, every zero-copy operation
 * before it has completed (checked at the moment the flush completes), and
 * the active messages before it all arrive, in order. A flush with nothing
 * outstanding returns UCS_OK at once.
 */
#include "conform_ops.h"
#include "conform_pair.h"

#include <algorithm>
#include <cstring>
#include <deque>

namespace {

using namespace test::conform;
using test::counted_comp;

/* A flush completion that notes how many earlier zcopy operations had
 * completed when it ran. */
struct flush_comp : uct::completion {
    int fired            = 0;
    ucs_status_t last    = UCS_OK;
    long zcopy_done_then = -1;
    const std::deque<counted_comp> *zcopy;

    explicit flush_comp(const std::deque<counted_comp> *zc) : zcopy(zc)
    {
        func = [](uct::completion *self) {
            auto *f = static_cast<flush_comp *>(self);
            ++f->fired;
            f->last            = f->status;
            f->zcopy_done_then = done(*f->zcopy);
        };
        count  = 1;
        status = UCS_OK;
    }

    static long done(const std::deque<counted_comp> &comps)
    {
        return std::count_if(comps.begin(), comps.end(),
                             [](const counted_comp &c) { return c.fired != 0; });
    }
};

struct variant {
    bool iface; /* iface flush, else ep flush */
    bool with_comp;
    const char *name;
};

constexpr variant VARIANTS[] = {
    {false, true, "ep flush with a completion"},
    {false, false, "ep flush polled without a completion"},
    {true, true, "iface flush with a completion"},
    {true, false, "iface flush polled without a completion"},
};

constexpr size_t PUTS = 48, AMS = 48, ADDS = 16, SLOT = 2048;

void one_round(pair &p, const pair::remote_region &r, std::vector<uint8_t> *shadow,
               const variant &v, uint64_t round)
{
    INFO(v.name);
    const uct::iface_attr &a = p.attr();
    const auto puts = put_kinds(a), ams = am_kinds(a);
    const bool adds = (a.atomic64_post & uct::atomic_op_bit(uct::atomic_op::ADD)) != 0;

    /* Everything below goes out back to back, nothing waited for. */
    std::deque<counted_comp> zcopy;
    std::vector<std::vector<uint8_t>> buffers; /* zcopy data lives until the end */
    long promised = 0;
    for (size_t i = 0; !puts.empty() && (i < PUTS); ++i) {
        op_kind kind  = puts[i % puts.size()];
        size_t length = 1 + (i * 97 + round) % std::min(put_limit(a, kind), SLOT - 8);
        size_t at     = 8 + i * SLOT;
        buffers.push_back(pattern(length, round * 1000 + i));
        const auto &bytes   = buffers.back();
        counted_comp &comp  = zcopy.emplace_back();
        ucs_status_t status = p.retry([&] {
            return put(p.ep(), kind, bytes.data(), length, r.desc.address + at, r.rkey(), &comp);
        });
        INFO("put " << kind_name(kind) << " of " << length << " bytes");
        REQUIRE(((status == UCS_OK) || (status == UCS_INPROGRESS)));
        promised += (status == UCS_INPROGRESS);
        std::copy(bytes.begin(), bytes.end(), shadow->begin() + long(at));
    }
    for (size_t i = 0; adds && (i < ADDS); ++i) {
        ucs_status_t status = p.retry([&] {
            return p.ep().atomic_post(uct::atomic_op::ADD, 8, 3, r.desc.address, r.rkey());
        });
        REQUIRE(status == UCS_OK);
    }
    if (adds) {
        uint64_t counter;
        std::memcpy(&counter, shadow->data(), sizeof(counter));
        counter += 3 * ADDS;
        std::memcpy(shadow->data(), &counter, sizeof(counter));
    }
    std::vector<std::vector<uint8_t>> messages;
    for (size_t i = 0; !ams.empty() && (i < AMS); ++i) {
        op_kind kind = ams[i % ams.size()];
        messages.push_back(pattern(8 + i % 64, round * 7000 + i));
        const auto &bytes   = messages.back();
        counted_comp &comp  = zcopy.emplace_back();
        ucs_status_t status = p.retry([&] {
            return send_am(p.ep(), am_sink::AM_ID, kind, bytes, &comp);
        });
        REQUIRE(((status == UCS_OK) || (status == UCS_INPROGRESS)));
        promised += (status == UCS_INPROGRESS);
    }

    auto flush = [&](uct::completion *comp) {
        return v.iface ? p.iface().flush(0, comp) : p.ep().flush(0, comp);
    };
    if (v.with_comp) {
        flush_comp fc(&zcopy);
        ucs_status_t status = p.retry([&] { return flush(&fc); });
        if (status == UCS_OK) {
            CHECK(fc.fired == 0);
            CHECK(flush_comp::done(zcopy) == promised);
        } else {
            REQUIRE(status == UCS_INPROGRESS);
            REQUIRE(p.wait_until([&] { return fc.fired != 0; }));
            CHECK(fc.fired == 1);
            CHECK(fc.last == UCS_OK);
            CHECK(fc.zcopy_done_then == promised);
        }
    } else {
        ucs_status_t status = UCS_INPROGRESS;
        CHECK(p.wait_until([&] {
            status = flush(nullptr);
            return (status != UCS_INPROGRESS) && (status != UCS_ERR_NO_RESOURCE);
        }));
        CHECK(status == UCS_OK);
        CHECK(flush_comp::done(zcopy) == promised);
    }

    /* Done remotely: the peer's memory, read before it progresses again. */
    if (!shadow->empty()) {
        std::vector<uint8_t> now;
        REQUIRE(p.peer().read(r.desc.address, r.desc.length, &now));
        CHECK(differ(now, *shadow) == "");
    }
    std::vector<am_record> got;
    CHECK(p.peer().take_ams(messages.size(), SIZE_MAX, &got));
    REQUIRE(got.size() == messages.size());
    for (size_t i = 0; i < messages.size(); ++i) {
        CHECK(differ(got[i].bytes, messages[i]) == "");
    }

    /* Nothing outstanding now. */
    CHECK(flush(nullptr) == UCS_OK);
}

void flush_completes_everything_before_it(const transport_spec &spec)
{
    CONFORM_OPEN(p, spec);
    if (put_kinds(p.attr()).empty() && am_kinds(p.attr()).empty()) {
        WARN(p.name() << ": skipped: the iface attributes list no put and no active "
                         "message to flush");
        return;
    }
    const bool rma = !put_kinds(p.attr()).empty() ||
                     (p.attr().atomic64_post & uct::atomic_op_bit(uct::atomic_op::ADD));
    pair::remote_region r       = rma ? p.expose(8 + PUTS * SLOT, 3) : pair::remote_region{};
    std::vector<uint8_t> shadow = rma ? pattern(r.desc.length, 3) : std::vector<uint8_t>{};
    uint64_t round              = 0;
    for (const variant &v : VARIANTS) {
        one_round(p, r, &shadow, v, ++round);
    }
}

} // namespace

CONFORM_TEST_CASE("flush completes everything issued before it",
                  flush_completes_everything_before_it)
