/*
 * Conformance: descriptors an AM handler keeps. A message delivered with
 * am_cb_flag::DESC may be kept by returning UCS_INPROGRESS: its bytes stay
 * as they were while more traffic passes through the iface, until the
 * handler's owner returns it with release_am_desc(). The rx headroom the
 * iface was opened with lies in front of such data and is the handler's
 * to write. Transports that deliver nothing with DESC (the data is valid
 * only during the call) skip.
 */
#include "conform_ops.h"
#include "conform_pair.h"

#include <algorithm>

namespace {

using namespace test::conform;
using test::counted_comp;

/* Sends one message of each kind at its largest size (zcopy capped). */
size_t send_round(pair &p, uint64_t seed)
{
    size_t sent = 0;
    for (op_kind kind : am_kinds(p.attr())) {
        size_t length = std::min(am_limit(p.attr(), kind), SIZE_CAP);
        length        = std::max(length, sizeof(uint64_t));
        auto bytes    = pattern(length, seed + sent);
        counted_comp comp;
        ucs_status_t status = p.retry([&] {
            return send_am(p.ep(), am_sink::AM_ID, kind, bytes, &comp);
        });
        INFO(kind_name(kind) << " of " << length << " bytes");
        CHECK(p.complete(status, comp) == UCS_OK);
        ++sent;
    }
    return sent;
}

void am_kept_descriptors(const transport_spec &spec)
{
    CONFORM_OPEN(p, spec);
    if (am_kinds(p.attr()).empty()) {
        WARN(p.name() << ": skipped: the iface attributes lack AM_SHORT, AM_BCOPY and "
                         "AM_ZCOPY");
        return;
    }

    /* Kept: a few rounds of every kind. */
    REQUIRE(p.peer().keep_descs(true));
    size_t kept_sent = 0;
    for (uint64_t round = 0; round < 4; ++round) {
        kept_sent += send_round(p, 100 * round);
    }
    std::vector<am_record> first;
    CHECK(p.peer().take_ams(kept_sent, 0, &first));
    CHECK(first.size() == kept_sent);
    const auto with_desc = size_t(std::count_if(first.begin(), first.end(), [](const am_record &r) {
        return (r.flags & uct::am_cb_flag::DESC) != 0;
    }));
    REQUIRE(p.peer().keep_descs(false));

    /* Traffic through the same receive resources while they are kept. */
    size_t later_sent = 0;
    for (uint64_t round = 0; round < 32; ++round) {
        later_sent += send_round(p, 1000 + 100 * round);
    }
    std::vector<am_record> later;
    CHECK(p.peer().take_ams(later_sent, 0, &later));
    CHECK(later.size() == later_sent);

    kept_report report;
    REQUIRE(p.peer().release_kept(&report));
    if (with_desc == 0) {
        WARN(p.name() << ": skipped: no message arrived with am_cb_flag::DESC, so a "
                         "handler can keep none");
        CHECK(report.kept == 0);
        return;
    }
    CHECK(report.kept == with_desc);
    CHECK(report.intact == report.kept);
    CHECK(report.headroom_violations == 0);

    /* Released: the iface goes on as before. */
    const size_t after = send_round(p, 9999);
    std::vector<am_record> last;
    CHECK(p.peer().take_ams(after, 0, &last));
    CHECK(last.size() == after);
}

} // namespace

CONFORM_TEST_CASE("descriptors kept by an AM handler stay intact until released",
                  am_kept_descriptors)
