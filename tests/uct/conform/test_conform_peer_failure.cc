/*
 * Conformance: a peer process killed (SIGKILL) under an ep. Where the
 * attributes say ERRHANDLE_PEER_FAILURE, the iface's error handler reports
 * that ep once with an error; an operation waiting for the peer's answer
 * completes with an error; later operations fail with an error instead of
 * queueing or hanging; every promised completion and a flush come back.
 * The test drives what the layer above does: progress, check_peers() and,
 * with EP_CHECK, ep check(). In-process transports have no peer to lose.
 */
#include "conform_ops.h"
#include "conform_pair.h"

#include <algorithm>
#include <deque>

namespace {

using namespace test::conform;
using test::counted_comp;

/* One operation towards the peer, of whatever kind the iface has. */
class probe {
public:
    explicit probe(pair &p) : p_(p)
    {
        const uct::iface_attr &a = p.attr();
        if (!am_kinds(a).empty()) {
            am_   = true;
            kind_ = am_kinds(a).front();
        } else if (!put_kinds(a).empty()) {
            kind_ = put_kinds(a).front();
        }
        /* 64 bytes, or the kind's limit where it is lower (an inline limit). */
        const size_t limit = am_ ? am_limit(a, kind_) : put_limit(a, kind_);
        bytes_             = pattern(std::max<size_t>(std::min<size_t>(64, limit), 8), 4);
        if (!am_ || !get_kinds(a).empty() ||
            (a.atomic64_fetch & uct::atomic_op_bit(uct::atomic_op::ADD))) {
            region_ = p.expose(4096, 9);
        }
    }

    bool possible() const { return am_ || !put_kinds(p_.attr()).empty(); }
    /* fetch() reads the first 8 bytes of the exposed region at this address. */
    bool reads_region() const { return region_.key != nullptr; }
    uint64_t region_address() const { return region_.desc.address; }

    ucs_status_t send(counted_comp *comp)
    {
        if (am_) {
            return send_am(p_.ep(), am_sink::AM_ID, kind_, bytes_, comp);
        }
        return put(p_.ep(), kind_, bytes_.data(), bytes_.size(), region_.desc.address,
                   region_.rkey(), comp);
    }

    /* A fetch the peer must answer (get or fetching atomic), if any kind is
     * listed; false if there is none. */
    bool fetch(get_target *target, counted_comp *comp, ucs_status_t *status)
    {
        const uct::iface_attr &a = p_.attr();
        if (!get_kinds(a).empty()) {
            *status = get(p_.ep(), get_kinds(a).front(), target, region_.desc.address,
                          region_.rkey(), comp);
            return true;
        }
        if (a.atomic64_fetch & uct::atomic_op_bit(uct::atomic_op::ADD)) {
            *status = p_.ep().atomic_fetch(uct::atomic_op::ADD, 8, 1, 0, target->buffer,
                                           region_.desc.address, region_.rkey(), comp);
            return true;
        }
        return false;
    }

private:
    pair &p_;
    bool am_      = false;
    op_kind kind_ = op_kind::ZCOPY;
    pair::remote_region region_;
    std::vector<uint8_t> bytes_;
};

void peer_failure(const transport_spec &spec)
{
    CONFORM_OPEN(p, spec);
    if (p.peer().in_process()) {
        WARN(p.name() << ": skipped: the peer is this process (device type SELF), there "
                         "is no peer process to lose");
        return;
    }
    CONFORM_NEEDS(p, ERRHANDLE_PEER_FAILURE);
    probe op(p);
    if (!op.possible()) {
        WARN(p.name() << ": skipped: the iface attributes list no active message and no "
                         "put to reach the peer with");
        return;
    }

    /* The connection works. */
    counted_comp warm;
    REQUIRE(p.complete(p.retry([&] { return op.send(&warm); }), warm) == UCS_OK);
    REQUIRE(p.flush_ep() == UCS_OK);

    /* A fetch the held peer does not answer (a one-sided transport's device
     * may still serve it), then the peer dies. */
    std::vector<uint8_t> served;
    if (op.reads_region()) {
        REQUIRE(p.peer().read(op.region_address(), 8, &served));
    }
    std::vector<uint8_t> sink(64);
    get_target target{sink.data(), 8};
    counted_comp in_flight;
    ucs_status_t fetch_status = UCS_OK;
    bool fetched = false, killed = false;
    REQUIRE(p.peer().while_held([&] {
        fetched = op.fetch(&target, &in_flight, &fetch_status);
        killed  = p.peer().kill();
    }));
    REQUIRE(killed);
    const bool waiting = fetched && (fetch_status == UCS_INPROGRESS);
    INFO("a fetch was " << (waiting ? "" : "not ") << "in flight when the peer died");

    /* What the layer above does, until the failure is known everywhere. */
    struct sent_op {
        counted_comp comp;
        bool promised = false;
    };
    std::deque<sent_op> sent;
    ucs_status_t op_error = UCS_OK;
    auto known            = [&] {
        return !p.failures().empty() && is_error(op_error) && (!waiting || (in_flight.fired != 0));
    };
    CHECK(p.wait_until([&] {
        p.iface().check_peers();
        if (p.attr().flags & uct::iface_flag::EP_CHECK) {
            p.ep().check(0, nullptr);
        }
        if (!is_error(op_error)) {
            sent_op &s          = sent.emplace_back();
            ucs_status_t status = op.send(&s.comp);
            s.promised          = (status == UCS_INPROGRESS);
            if (is_error(status)) {
                op_error = status;
            }
        }
        return known();
    }));
    REQUIRE(p.failures().size() == 1);
    CHECK(p.failures()[0].ep == &p.ep());
    CHECK(is_error(p.failures()[0].status));
    CHECK(is_error(op_error));
    if (waiting) {
        CHECK(in_flight.fired == 1);
        if (in_flight.last == UCS_OK) {
            /* Served before the death: then with the peer's bytes. */
            CHECK(std::vector<uint8_t>(sink.begin(), sink.begin() + 8) == served);
        } else {
            CHECK(is_error(in_flight.last));
        }
    }

    /* Nothing hangs: each promised completion and a flush come back. */
    CHECK(p.wait_until([&] {
        return std::all_of(sent.begin(), sent.end(),
                           [](const sent_op &s) { return !s.promised || (s.comp.fired != 0); });
    }));
    counted_comp flush_comp;
    ucs_status_t flush_status = p.retry([&] { return p.ep().flush(0, &flush_comp); });
    CHECK(flush_status != UCS_ERR_NO_RESOURCE);
    if (flush_status == UCS_INPROGRESS) {
        CHECK(p.wait_until([&] { return flush_comp.fired != 0; }));
    }
    CHECK(p.failures().size() == 1);
}

} // namespace

CONFORM_TEST_CASE("a killed peer fails operations and is reported", peer_failure)
