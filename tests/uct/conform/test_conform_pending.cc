/*
 * Conformance: the pending queue. With room to send, pending_add answers
 * UCS_ERR_BUSY. Filled (the peer consumes nothing) the transport answers
 * UCS_ERR_NO_RESOURCE; pending_add then queues, and keeps queueing while
 * anything is queued; once the peer consumes again the requests are
 * dispatched in the order queued, each once, so the peer sees one unbroken
 * sequence. pending_purge hands back each queued request exactly once and
 * none of them runs afterwards.
 */
#include "conform_ops.h"
#include "conform_pair.h"

#include <algorithm>
#include <cstring>
#include <deque>

namespace {

using namespace test::conform;

constexpr size_t QUEUED = 16;

/* Sends one AM that starts with `seq`. */
ucs_status_t send_seq(pair &p, op_kind kind, uint64_t seq)
{
    const size_t length = (kind == op_kind::SHORT) ? p.attr().am.max_short :
                                                     std::min(p.attr().am.max_bcopy, size_t(4096));
    std::vector<uint8_t> bytes(std::max(length, sizeof(seq)), uint8_t(seq));
    std::memcpy(bytes.data(), &seq, sizeof(seq));
    return send_am(p.ep(), am_sink::AM_ID, kind, bytes, nullptr);
}

/* A queued send of one sequence number. */
struct seq_request : uct::pending_req {
    pair *p;
    op_kind kind;
    uint64_t seq;
    int calls = 0;
    std::vector<uint64_t> *dispatched;

    seq_request(pair *owner, op_kind k, uint64_t s, std::vector<uint64_t> *log) :
        uct::pending_req{}, p(owner), kind(k), seq(s), dispatched(log)
    {
        func = run;
    }

    static ucs_status_t run(uct::pending_req *self)
    {
        auto *r = static_cast<seq_request *>(self);
        ++r->calls;
        ucs_status_t status = send_seq(*r->p, r->kind, r->seq);
        if (status == UCS_OK) {
            r->dispatched->push_back(r->seq);
        }
        return status;
    }
};

/* What filling the transport and queueing behind it came to. */
struct fill_result {
    uint64_t sent           = 0; /* went out directly: 0 .. sent - 1 */
    bool saw_full           = false;
    ucs_status_t unexpected = UCS_OK; /* an answer outside the contract */
};

/* Sends until the transport is full, then queues QUEUED requests (numbered
 * on from the direct sends). Runs while the peer is held: must not throw. */
void fill_and_queue(pair &p, op_kind kind, std::deque<seq_request> *reqs,
                    std::vector<uint64_t> *log, fill_result *out)
{
    auto deadline = std::chrono::steady_clock::now() + WAIT_TIMEOUT;
    uint64_t next = 0;
    while (reqs->empty() && (std::chrono::steady_clock::now() < deadline)) {
        ucs_status_t status = send_seq(p, kind, next);
        if (status == UCS_OK) {
            ++next;
            continue;
        }
        if (status != UCS_ERR_NO_RESOURCE) {
            out->unexpected = status;
            return;
        }
        out->saw_full  = true;
        seq_request &r = reqs->emplace_back(&p, kind, next, log);
        status         = p.ep().pending_add(&r, 0);
        if (status == UCS_OK) {
            break;
        }
        reqs->pop_back();
        if (status != UCS_ERR_BUSY) {
            out->unexpected = status;
            return;
        }
        /* Room came back in between: go on sending. */
    }
    out->sent = next;
    /* Behind a queued request everything queues, in order. */
    while (!reqs->empty() && (reqs->size() < QUEUED)) {
        seq_request &r      = reqs->emplace_back(&p, kind, next + reqs->size(), log);
        ucs_status_t status = p.ep().pending_add(&r, 0);
        if (status != UCS_OK) {
            reqs->pop_back();
            out->unexpected = status;
            return;
        }
    }
}

/* The AM kind that fills the transport, or none (skips with a warning). */
bool fill_kind(pair &p, op_kind *kind)
{
    if (p.attr().flags & uct::iface_flag::AM_BCOPY) {
        *kind = op_kind::BCOPY;
    } else if (p.attr().flags & uct::iface_flag::AM_SHORT) {
        *kind = op_kind::SHORT;
    } else {
        WARN(p.name() << ": only pending_add with room was checked: the iface attributes "
                         "lack AM_SHORT and AM_BCOPY, so nothing fills the transport");
        return false;
    }
    return true;
}

/* pending_add with room answers UCS_ERR_BUSY (after one message, so any
 * connection is up). */
void check_busy_with_room(pair &p)
{
    if (!am_kinds(p.attr()).empty()) {
        op_kind kind = am_kinds(p.attr()).front();
        std::vector<uint8_t> bytes(8, 1);
        test::counted_comp comp;
        ucs_status_t status = p.retry([&] {
            return send_am(p.ep(), am_sink::AM_ID, kind, bytes, &comp);
        });
        CHECK(p.complete(status, comp) == UCS_OK);
        std::vector<am_record> got;
        CHECK(p.peer().take_ams(1, 0, &got));
    }
    std::vector<uint64_t> log;
    seq_request probe(&p, op_kind::SHORT, 0, &log);
    CHECK(p.ep().pending_add(&probe, 0) == UCS_ERR_BUSY);
    CHECK(probe.calls == 0);
}

/* The peer got exactly 0 .. count - 1, in order. */
void check_sequence(pair &p, uint64_t count)
{
    std::vector<am_record> got;
    CHECK(p.peer().take_ams(count, sizeof(uint64_t), &got));
    REQUIRE(got.size() == count);
    for (uint64_t i = 0; i < count; ++i) {
        uint64_t seq;
        REQUIRE(got[i].bytes.size() == sizeof(seq));
        std::memcpy(&seq, got[i].bytes.data(), sizeof(seq));
        INFO("message " << i << " of " << count);
        REQUIRE(seq == i);
    }
}

void pending_dispatch_order(const transport_spec &spec)
{
    CONFORM_OPEN(p, spec);
    CONFORM_NEEDS(p, PENDING);
    check_busy_with_room(p);
    op_kind kind;
    if (!fill_kind(p, &kind)) {
        return;
    }

    std::deque<seq_request> reqs;
    std::vector<uint64_t> dispatched;
    fill_result fill;
    REQUIRE(p.peer().while_held([&] { fill_and_queue(p, kind, &reqs, &dispatched, &fill); }));
    INFO(fill.sent << " messages went out before the transport was full");
    CHECK(fill.unexpected == UCS_OK);
    REQUIRE(fill.saw_full);
    REQUIRE(reqs.size() == QUEUED);

    /* The peer consumes again: the queue drains in order. */
    CHECK(p.wait_until([&] { return dispatched.size() == reqs.size(); }));
    for (size_t i = 0; i < reqs.size(); ++i) {
        CHECK(dispatched[i] == fill.sent + i);
    }
    check_sequence(p, fill.sent + reqs.size());
}

void pending_purge(const transport_spec &spec)
{
    CONFORM_OPEN(p, spec);
    CONFORM_NEEDS(p, PENDING);
    op_kind kind;
    if (!fill_kind(p, &kind)) {
        return;
    }

    std::deque<seq_request> reqs;
    std::vector<uint64_t> dispatched;
    std::vector<uct::pending_req *> purged;
    fill_result fill;
    REQUIRE(p.peer().while_held([&] {
        fill_and_queue(p, kind, &reqs, &dispatched, &fill);
        p.ep().pending_purge(
            [](uct::pending_req *req, void *arg) {
            static_cast<std::vector<uct::pending_req *> *>(arg)->push_back(req);
            },
            &purged);
    }));
    CHECK(fill.unexpected == UCS_OK);
    REQUIRE(fill.saw_full);
    REQUIRE(reqs.size() == QUEUED);

    /* Each queued request came back once, and none runs any more. */
    CHECK(purged.size() == reqs.size());
    for (seq_request &r : reqs) {
        CHECK(std::count(purged.begin(), purged.end(), &r) == 1);
    }
    check_sequence(p, fill.sent);
    REQUIRE(p.flush_ep() == UCS_OK);
    for (seq_request &r : reqs) {
        CHECK(r.calls == 0);
    }
    CHECK(dispatched.empty());

    /* The ep works on: the next message follows the last direct one. */
    CHECK(p.retry([&] { return send_seq(p, kind, fill.sent); }) == UCS_OK);
    std::vector<am_record> got;
    CHECK(p.peer().take_ams(1, sizeof(uint64_t), &got));
    REQUIRE(got.size() == 1);
    uint64_t seq;
    std::memcpy(&seq, got[0].bytes.data(), sizeof(seq));
    CHECK(seq == fill.sent);
}

} // namespace

CONFORM_TEST_CASE("pending requests are dispatched in order once resources return",
                  pending_dispatch_order)
CONFORM_TEST_CASE("pending_purge hands back every queued request", pending_purge)
