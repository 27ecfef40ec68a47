/*
 * Triggered operations and the deferred work queue
 * (UCP_EXT_PARAM_FIELD_TRIGGER, ucp_cntr_op_nbx, ucp_dwq_cancel/flush):
 * thresholds met at post, jumps over several thresholds (threshold order,
 * posting order among equals), 2^64 edges, a counter set lower, buffers read
 * when the operation starts, cancel and flush (queued and started), counters
 * held, firing from a callback, chains of 1000 stages, endpoints and keys
 * that go first, ucp_worker_arm, bad arguments; and between processes over
 * shared memory and tcp, a ping-pong and a 4-process DAG run by progress
 * alone.
 */
#include "ext_test_util.h"
#include "rma_test_util.h"
#include "ucp_peer.h"

#include <ucp/api/ucp_ext.h>

#include <catch2/catch.hpp>

#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

using namespace ucp_test;

namespace {

constexpr uint64_t features = UCP_FEATURE_TAG | UCP_FEATURE_STREAM | UCP_FEATURE_AM |
                              UCP_FEATURE_RMA | UCP_FEATURE_AMO64 | UCP_FEATURE_WAKEUP;

/* What the callbacks of triggered operations saw. */
struct seen_calls {
    unsigned calls           = 0;
    ucs_status_t status      = UCS_INPROGRESS;
    uint64_t err_in_callback = 0;
    ucp_cntr_h err_of        = nullptr;
};

void seen_send(void *, ucs_status_t status, void *arg)
{
    auto *seen = static_cast<seen_calls *>(arg);
    ++seen->calls;
    seen->status = status;
    if (seen->err_of != nullptr) {
        seen->err_in_callback = ucp_cntr_read_err(seen->err_of);
    }
}

void with_callback(ucp_ext_request_param_t *ext, seen_calls *seen)
{
    ext->base.op_attr_mask |= UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    ext->base.cb.send   = seen_send;
    ext->base.user_data = seen;
}

/* The tags of the messages waiting unexpected, in arrival order. */
std::vector<ucp_tag_t> drain_tags(peer &p, size_t expected)
{
    std::vector<ucp_tag_t> tags;
    for (size_t i = 0; i < expected; ++i) {
        uint64_t value;
        ucp_tag_recv_info_t info{};
        if (p.recv(&value, sizeof(value), 0, 0, &info) != UCS_OK) {
            break;
        }
        tags.push_back(info.sender_tag);
    }
    return tags;
}

/* ucp_cntr_op_nbx with an operation outside ucp_cntr_op_t, as a C caller
 * may pass one (read unchecked here only: an enum load is UBSan's). */
__attribute__((no_sanitize("enum"))) ucs_status_ptr_t cntr_op_raw(ucp_cntr_h cntr, int raw_op)
{
    ucp_cntr_op_t op;
    std::memcpy(&op, &raw_op, sizeof(op));
    return ucp_cntr_op_nbx(cntr, op, 1, nullptr);
}

bool nothing_unexpected(peer &p)
{
    for (int i = 0; i < 100; ++i) {
        ucp_worker_progress(p.worker);
    }
    ucp_tag_recv_info_t info{};
    return ucp_tag_probe_nb(p.worker, 0, 0, 0, &info) == nullptr;
}

} // namespace

TEST_CASE("triggered operations: when they start, and in which order", "[ucp_trigger]")
{
    peer p;
    REQUIRE(p.init("self", features) == UCS_OK);
    REQUIRE(p.connect(p.address()) == UCS_OK);
    ucp_cntr_h trigger = new_cntr(p.worker);
    ucp_cntr_h done    = new_cntr(p.worker);
    REQUIRE(trigger != nullptr);
    REQUIRE(done != nullptr);
    uint64_t value = 42;

    SECTION("a threshold met at post starts the operation in the call") {
        ucp_ext_request_param_t ext = triggered_by(trigger, 0, done);
        CHECK(ucp_tag_send_nbx(p.ep, &value, sizeof(value), 1, &ext.base) == nullptr);
        CHECK(ucp_cntr_read(done) == 1);
        CHECK(drain_tags(p, 1) == std::vector<ucp_tag_t>{1});
    }

    SECTION("an unmet threshold waits for the counter and for progress, not for the update") {
        seen_calls seen;
        ucp_ext_request_param_t ext = triggered_by(trigger, 2, done);
        with_callback(&ext, &seen);
        ucs_status_ptr_t r = ucp_tag_send_nbx(p.ep, &value, sizeof(value), 7, &ext.base);
        REQUIRE(UCS_PTR_IS_PTR(r));
        CHECK(ucp_request_check_status(r) == UCS_INPROGRESS);
        CHECK(ucp_cntr_add(trigger, 1) == UCS_OK);
        CHECK(nothing_unexpected(p));
        CHECK(ucp_cntr_add(trigger, 1) == UCS_OK);
        /* Not inside the update: the worker's progress starts it. */
        CHECK(seen.calls == 0);
        CHECK(p.wait_unexpected(7));
        CHECK(seen.calls == 1);
        CHECK(seen.status == UCS_OK);
        CHECK(ucp_request_check_status(r) == UCS_OK);
        ucp_request_free(r);
        CHECK(ucp_cntr_read(done) == 1);
        CHECK(drain_tags(p, 1) == std::vector<ucp_tag_t>{7});
    }

    SECTION("a jump over several thresholds starts them in threshold order, equal ones "
            "in posting order") {
        const uint64_t thresholds[] = {3, 1, 2, 2, 5, 1, 9};
        std::vector<ucs_status_ptr_t> requests;
        for (size_t i = 0; i < std::size(thresholds); ++i) {
            ucp_ext_request_param_t ext = triggered_by(trigger, thresholds[i], done);
            requests.push_back(ucp_tag_send_nbx(p.ep, &value, sizeof(value), i, &ext.base));
            REQUIRE(UCS_PTR_IS_PTR(requests.back()));
        }
        CHECK(ucp_cntr_set(trigger, 5) == UCS_OK);
        CHECK(drain_tags(p, 6) == std::vector<ucp_tag_t>{1, 5, 2, 3, 0, 4});
        CHECK(ucp_cntr_read(done) == 6);
        /* The last one (9) is still queued: the counter is busy. */
        CHECK(ucp_cntr_destroy(trigger) == UCS_ERR_BUSY);
        CHECK(ucp_request_check_status(requests.back()) == UCS_INPROGRESS);
        CHECK(ucp_cntr_add(trigger, 4) == UCS_OK);
        for (ucs_status_ptr_t r : requests) {
            CHECK(p.wait(r) == UCS_OK);
        }
        CHECK(drain_tags(p, 1) == std::vector<ucp_tag_t>{6});
    }

    SECTION("a post met already while others are due joins them in threshold order") {
        ucp_ext_request_param_t first = triggered_by(trigger, 1);
        ucs_status_ptr_t r1 = ucp_tag_send_nbx(p.ep, &value, sizeof(value), 1, &first.base);
        REQUIRE(UCS_PTR_IS_PTR(r1));
        CHECK(ucp_cntr_add(trigger, 1) == UCS_OK);
        /* Met at post, but the first has not started yet: no overtaking by
         * posting order; an equal threshold goes after it, a lower one
         * before. */
        ucp_ext_request_param_t equal = triggered_by(trigger, 1);
        ucs_status_ptr_t r2 = ucp_tag_send_nbx(p.ep, &value, sizeof(value), 2, &equal.base);
        ucp_ext_request_param_t lower = triggered_by(trigger, 0);
        ucs_status_ptr_t r3 = ucp_tag_send_nbx(p.ep, &value, sizeof(value), 3, &lower.base);
        CHECK(UCS_PTR_IS_PTR(r2));
        CHECK(UCS_PTR_IS_PTR(r3));
        CHECK(drain_tags(p, 3) == std::vector<ucp_tag_t>{3, 1, 2});
        for (ucs_status_ptr_t r : {r1, r2, r3}) {
            CHECK(p.wait(r) == UCS_OK);
        }
    }

    SECTION("thresholds at the edges of 64 bits") {
        ucp_ext_request_param_t top = triggered_by(trigger, UINT64_MAX);
        ucs_status_ptr_t r          = ucp_tag_send_nbx(p.ep, &value, sizeof(value), 3, &top.base);
        REQUIRE(UCS_PTR_IS_PTR(r));
        CHECK(ucp_cntr_set(trigger, UINT64_MAX - 1) == UCS_OK);
        CHECK(nothing_unexpected(p));
        CHECK(ucp_cntr_add(trigger, 1) == UCS_OK);
        CHECK(p.wait(r) == UCS_OK);
        CHECK(drain_tags(p, 1) == std::vector<ucp_tag_t>{3});
        /* Wrapped to 0: a threshold of 1 is not met, one of 0 always is. */
        CHECK(ucp_cntr_add(trigger, 1) == UCS_OK);
        ucp_ext_request_param_t one = triggered_by(trigger, 1);
        r                           = ucp_tag_send_nbx(p.ep, &value, sizeof(value), 4, &one.base);
        CHECK(UCS_PTR_IS_PTR(r));
        ucp_ext_request_param_t zero = triggered_by(trigger, 0);
        CHECK(ucp_tag_send_nbx(p.ep, &value, sizeof(value), 5, &zero.base) == nullptr);
        CHECK(drain_tags(p, 1) == std::vector<ucp_tag_t>{5});
        CHECK(ucp_dwq_cancel(p.worker, r) == UCS_OK);
        CHECK(p.wait(r) == UCS_ERR_CANCELED);
    }

    SECTION("setting the counter lower does not undo what started, nor start the rest") {
        ucp_ext_request_param_t at2 = triggered_by(trigger, 2);
        ucp_ext_request_param_t at4 = triggered_by(trigger, 4);
        ucs_status_ptr_t r2         = ucp_tag_send_nbx(p.ep, &value, sizeof(value), 2, &at2.base);
        ucs_status_ptr_t r4         = ucp_tag_send_nbx(p.ep, &value, sizeof(value), 4, &at4.base);
        CHECK(ucp_cntr_set(trigger, 3) == UCS_OK);
        CHECK(p.wait(r2) == UCS_OK);
        CHECK(ucp_cntr_set(trigger, 0) == UCS_OK);
        CHECK(drain_tags(p, 1) == std::vector<ucp_tag_t>{2});
        CHECK(ucp_cntr_add(trigger, 3) == UCS_OK);
        CHECK(nothing_unexpected(p));
        CHECK(ucp_cntr_add(trigger, 1) == UCS_OK);
        CHECK(p.wait(r4) == UCS_OK);
        CHECK(drain_tags(p, 1) == std::vector<ucp_tag_t>{4});
    }

    SECTION("buffers are read when the operation starts, not when it is posted") {
        uint64_t payload            = 1;
        ucp_ext_request_param_t ext = triggered_by(trigger, 1);
        ucs_status_ptr_t r = ucp_tag_send_nbx(p.ep, &payload, sizeof(payload), 9, &ext.base);
        REQUIRE(UCS_PTR_IS_PTR(r));
        payload = 2;
        CHECK(ucp_cntr_add(trigger, 1) == UCS_OK);
        CHECK(p.wait(r) == UCS_OK);
        uint64_t got = 0;
        ucp_tag_recv_info_t info{};
        CHECK(p.recv(&got, sizeof(got), 9, ~ucp_tag_t(0), &info) == UCS_OK);
        CHECK(got == 2);
    }

    SECTION("a triggered receive, and a started one cancelled through its request") {
        uint64_t got                = 0;
        ucp_ext_request_param_t ext = triggered_by(trigger, 1, done);
        ucs_status_ptr_t r = ucp_tag_recv_nbx(p.worker, &got, sizeof(got), 11, ~ucp_tag_t(0),
                                              &ext.base);
        REQUIRE(UCS_PTR_IS_PTR(r));
        CHECK(ucp_cntr_add(trigger, 1) == UCS_OK);
        for (int i = 0; i < 10; ++i) {
            ucp_worker_progress(p.worker); /* started: an expected receive now */
        }
        CHECK(ucp_dwq_cancel(p.worker, r) == UCS_ERR_BUSY);
        CHECK(p.send(&value, sizeof(value), 11) == UCS_OK);
        ucp_tag_recv_info_t info{};
        while (ucp_tag_recv_request_test(r, &info) == UCS_INPROGRESS) {
            ucp_worker_progress(p.worker);
        }
        CHECK(ucp_request_check_status(r) == UCS_OK);
        CHECK(info.sender_tag == 11);
        CHECK(info.length == sizeof(value));
        CHECK(got == value);
        ucp_request_free(r);
        CHECK(ucp_cntr_read(done) == 1);

        r = ucp_tag_recv_nbx(p.worker, &got, sizeof(got), 12, ~ucp_tag_t(0), &ext.base);
        REQUIRE(UCS_PTR_IS_PTR(r));
        CHECK(ucp_cntr_add(trigger, 1) == UCS_OK);
        for (int i = 0; i < 10; ++i) {
            ucp_worker_progress(p.worker);
        }
        ucp_request_cancel(p.worker, r);
        CHECK(p.wait(r) == UCS_ERR_CANCELED);
        CHECK(ucp_cntr_read_err(done) == 1);
    }

    SECTION("the caller's request memory, and FORCE_IMM_CMPL") {
        ucp_ext_request_param_t ext = triggered_by(trigger, 1, done);
        ext.base.op_attr_mask |= UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL;
        CHECK(UCS_PTR_STATUS(ucp_tag_send_nbx(p.ep, &value, sizeof(value), 1, &ext.base)) ==
              UCS_ERR_NO_RESOURCE);
        ext = triggered_by(trigger, 1, done);
        ext.base.op_attr_mask |= UCP_OP_ATTR_FIELD_REQUEST;
        ext.base.request = nullptr;
        CHECK(UCS_PTR_STATUS(ucp_tag_send_nbx(p.ep, &value, sizeof(value), 1, &ext.base)) ==
              UCS_ERR_INVALID_PARAM);
        ucp_context_attr_t attr{};
        attr.field_mask = UCP_ATTR_FIELD_REQUEST_SIZE;
        REQUIRE(ucp_context_query(p.context, &attr) == UCS_OK);
        std::vector<uint8_t> memory(attr.request_size + 64);
        ext.base.request   = memory.data() + attr.request_size;
        ucs_status_ptr_t r = ucp_tag_send_nbx(p.ep, &value, sizeof(value), 8, &ext.base);
        CHECK(r == ext.base.request);
        CHECK(ucp_request_check_status(r) == UCS_INPROGRESS);
        CHECK(ucp_cntr_add(trigger, 1) == UCS_OK);
        while (ucp_request_check_status(r) == UCS_INPROGRESS) {
            ucp_worker_progress(p.worker);
        }
        CHECK(ucp_request_check_status(r) == UCS_OK);
        CHECK(ucp_cntr_read(done) == 1);
        CHECK(drain_tags(p, 1) == std::vector<ucp_tag_t>{8});
        CHECK(nothing_unexpected(p));
    }

    CHECK(ucp_dwq_flush(p.worker, nullptr, nullptr) == UCS_OK);
    CHECK(ucp_cntr_destroy(trigger) == UCS_OK);
    CHECK(ucp_cntr_destroy(done) == UCS_OK);
}

TEST_CASE("deferred work queue: cancel, flush, held counters, and what goes first", "[ucp_trigger]")
{
    peer p;
    REQUIRE(p.init("self", features) == UCS_OK);
    REQUIRE(p.connect(p.address()) == UCS_OK);
    ucp_cntr_h trigger = new_cntr(p.worker);
    ucp_cntr_h other   = new_cntr(p.worker);
    ucp_cntr_h done    = new_cntr(p.worker);
    ucp_cntr_h errors  = new_cntr(p.worker);
    REQUIRE(trigger != nullptr);
    REQUIRE(other != nullptr);
    REQUIRE(done != nullptr);
    REQUIRE(errors != nullptr);
    uint64_t value = 5;

    SECTION("cancel: queued -> cancelled, counted as a failure before the callback; "
            "again -> not a queued operation") {
        seen_calls seen;
        seen.err_of                 = errors;
        ucp_ext_request_param_t ext = triggered_by(trigger, 1, done);
        ext.ext_field_mask |= UCP_EXT_PARAM_FIELD_ERR_CNTR;
        ext.err_cntr = errors;
        with_callback(&ext, &seen);
        ucs_status_ptr_t r = ucp_tag_send_nbx(p.ep, &value, sizeof(value), 1, &ext.base);
        REQUIRE(UCS_PTR_IS_PTR(r));
        CHECK(ucp_cntr_destroy(done) == UCS_ERR_BUSY); /* counted on when it runs */
        CHECK(ucp_dwq_cancel(p.worker, r) == UCS_OK);
        CHECK(seen.calls == 1);
        CHECK(seen.status == UCS_ERR_CANCELED);
        CHECK(seen.err_in_callback == 1);
        CHECK(ucp_request_check_status(r) == UCS_ERR_CANCELED);
        CHECK(ucp_dwq_cancel(p.worker, r) == UCS_ERR_INVALID_PARAM);
        ucp_request_free(r);
        CHECK(ucp_cntr_add(trigger, 1) == UCS_OK);
        CHECK(nothing_unexpected(p));
        CHECK(ucp_cntr_read(done) == 0);
        CHECK(ucp_cntr_read_err(errors) == 1);
        CHECK(ucp_dwq_cancel(p.worker, nullptr) == UCS_ERR_INVALID_PARAM);
    }

    SECTION("flush: all on one counter, or all; started ones run on") {
        std::vector<ucs_status_ptr_t> on_trigger, on_other;
        for (uint64_t i = 1; i <= 3; ++i) {
            ucp_ext_request_param_t a = triggered_by(trigger, i, done);
            ucp_ext_request_param_t b = triggered_by(other, i, done);
            on_trigger.push_back(ucp_tag_send_nbx(p.ep, &value, sizeof(value), i, &a.base));
            on_other.push_back(ucp_tag_send_nbx(p.ep, &value, sizeof(value), 10 + i, &b.base));
        }
        CHECK(ucp_cntr_add(trigger, 1) == UCS_OK);
        CHECK(p.wait_unexpected(1)); /* the first started */
        size_t cancelled = 0;
        CHECK(ucp_dwq_flush(p.worker, trigger, &cancelled) == UCS_OK);
        CHECK(cancelled == 2);
        CHECK(ucp_request_check_status(on_other[0]) == UCS_INPROGRESS);
        CHECK(ucp_dwq_flush(p.worker, nullptr, &cancelled) == UCS_OK);
        CHECK(cancelled == 3);
        CHECK(p.wait(on_trigger[0]) == UCS_OK);
        for (size_t i = 1; i < 3; ++i) {
            CHECK(p.wait(on_trigger[i]) == UCS_ERR_CANCELED);
        }
        for (ucs_status_ptr_t r : on_other) {
            CHECK(p.wait(r) == UCS_ERR_CANCELED);
        }
        CHECK(ucp_cntr_read(done) == 1);
        CHECK(ucp_cntr_read_err(done) == 5);
        CHECK(drain_tags(p, 1) == std::vector<ucp_tag_t>{1});
        CHECK(ucp_dwq_flush(p.worker, nullptr, &cancelled) == UCS_OK);
        CHECK(cancelled == 0);
    }

    SECTION("a flush from the callback of an operation that just started, in the same "
            "firing pass") {
        /* Thresholds 1..4 on one counter; the first one's callback flushes
         * the counter's queue while the others are due in the same pass. */
        struct flusher {
            ucp_worker_h worker;
            ucp_cntr_h trigger;
            size_t cancelled = 0;
            static void cb(void *, ucs_status_t, void *arg)
            {
                auto *f = static_cast<flusher *>(arg);
                ucp_dwq_flush(f->worker, f->trigger, &f->cancelled);
            }
        } f{p.worker, trigger};
        std::vector<ucs_status_ptr_t> requests;
        for (uint64_t i = 1; i <= 4; ++i) {
            ucp_ext_request_param_t ext = triggered_by(trigger, i, done);
            if (i == 1) {
                ext.base.op_attr_mask |= UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
                ext.base.cb.send   = flusher::cb;
                ext.base.user_data = &f;
            }
            requests.push_back(ucp_tag_send_nbx(p.ep, &value, sizeof(value), i, &ext.base));
            REQUIRE(UCS_PTR_IS_PTR(requests.back()));
        }
        CHECK(ucp_cntr_set(trigger, 4) == UCS_OK);
        CHECK(p.wait(requests[0]) == UCS_OK);
        CHECK(f.cancelled == 3);
        for (size_t i = 1; i < requests.size(); ++i) {
            CHECK(p.wait(requests[i]) == UCS_ERR_CANCELED);
        }
        CHECK(drain_tags(p, 1) == std::vector<ucp_tag_t>{1});
        CHECK(nothing_unexpected(p));
        CHECK(ucp_cntr_read(done) == 1);
        CHECK(ucp_cntr_read_err(done) == 3);
    }

    SECTION("a counter changed by another thread starts what waits for it, 1000 times") {
        /* Each round's post arms the counter afresh (the last round's
         * operation emptied its queue) while the other thread adds to it:
         * a change that neither side noticed would leave the operation
         * queued for ever. */
        constexpr uint64_t rounds = 1000;
        std::atomic<uint64_t> posted{0};
        std::thread adder([&] {
            for (uint64_t i = 1; i <= rounds; ++i) {
                while (posted.load() < i) {
                }
                ucp_cntr_add(trigger, 1);
            }
        });
        bool all_started = true;
        for (uint64_t i = 1; i <= rounds; ++i) {
            ucp_ext_request_param_t ext = triggered_by(trigger, i);
            ucs_status_ptr_t r          = ucp_cntr_op_nbx(other, UCP_CNTR_OP_ADD, 1, &ext.base);
            posted.store(i);
            all_started = all_started && !UCS_PTR_IS_ERR(r) &&
                          test::poll_until(
                              [&] {
                return (r == nullptr) || (ucp_request_check_status(r) != UCS_INPROGRESS);
                              },
                              [&] { ucp_worker_progress(p.worker); }, std::chrono::seconds(10));
            if (UCS_PTR_IS_PTR(r)) {
                ucp_request_free(r);
            }
        }
        posted.store(rounds);
        adder.join();
        CHECK(all_started);
        CHECK(ucp_cntr_read(other) == rounds);
    }

    SECTION("counters waited for, counted on or updated cannot be destroyed") {
        ucp_ext_request_param_t ext = triggered_by(trigger, 1);
        ucs_status_ptr_t r          = ucp_cntr_op_nbx(other, UCP_CNTR_OP_ADD, 1, &ext.base);
        REQUIRE(UCS_PTR_IS_PTR(r));
        CHECK(ucp_cntr_destroy(trigger) == UCS_ERR_BUSY);
        CHECK(ucp_cntr_destroy(other) == UCS_ERR_BUSY);
        CHECK(ucp_cntr_add(trigger, 1) == UCS_OK);
        CHECK(p.wait(r) == UCS_OK);
        CHECK(ucp_cntr_read(other) == 1);
    }

    SECTION("counter operations: add, set and their error forms, at once or triggered") {
        CHECK(ucp_cntr_op_nbx(other, UCP_CNTR_OP_ADD, 5, nullptr) == nullptr);
        CHECK(ucp_cntr_op_nbx(other, UCP_CNTR_OP_ADD_ERR, 2, nullptr) == nullptr);
        CHECK(ucp_cntr_read(other) == 5);
        CHECK(ucp_cntr_read_err(other) == 2);
        std::vector<ucs_status_ptr_t> requests;
        for (auto [op, v] : {std::pair{UCP_CNTR_OP_SET, 100},
                             {UCP_CNTR_OP_ADD, 1},
                             {UCP_CNTR_OP_SET_ERR, 9},
                             {UCP_CNTR_OP_ADD_ERR, 1}}) {
            ucp_ext_request_param_t ext = triggered_by(trigger, 1);
            requests.push_back(ucp_cntr_op_nbx(other, op, uint64_t(v), &ext.base));
            REQUIRE(UCS_PTR_IS_PTR(requests.back()));
        }
        CHECK(ucp_cntr_read(other) == 5);
        CHECK(ucp_cntr_add(trigger, 1) == UCS_OK);
        for (ucs_status_ptr_t r : requests) {
            CHECK(p.wait(r) == UCS_OK);
        }
        CHECK(ucp_cntr_read(other) == 101); /* in posting order */
        CHECK(ucp_cntr_read_err(other) == 10);
    }

    SECTION("firing from inside a completion callback, and a chain of 1000 stages") {
        /* Stage k waits for `trigger` >= k and adds 1 to `other`; stage k'
         * waits for `other` >= k and adds 1 to `trigger`: 1000 stages that
         * run by progress alone once the first add happens. */
        constexpr uint64_t stages = 500;
        std::vector<ucs_status_ptr_t> requests;
        for (uint64_t k = 1; k <= stages; ++k) {
            ucp_ext_request_param_t a = triggered_by(trigger, k);
            ucp_ext_request_param_t b = triggered_by(other, k);
            requests.push_back(ucp_cntr_op_nbx(other, UCP_CNTR_OP_ADD, 1, &a.base));
            requests.push_back(ucp_cntr_op_nbx(trigger, UCP_CNTR_OP_ADD, 1, &b.base));
        }
        /* The last stage sends a message. */
        ucp_ext_request_param_t last = triggered_by(trigger, stages + 1, done);
        requests.push_back(ucp_tag_send_nbx(p.ep, &value, sizeof(value), 77, &last.base));
        for (ucs_status_ptr_t r : requests) {
            REQUIRE(UCS_PTR_IS_PTR(r));
        }
        /* The first add comes from the callback of a send. */
        struct kick {
            static void cb(void *, ucs_status_t, void *arg)
            {
                ucp_cntr_add(static_cast<ucp_cntr_h>(arg), 1);
            }
        };
        ucp_request_param_t param{};
        param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                             UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
        param.cb.send   = kick::cb;
        param.user_data = trigger;
        CHECK(p.wait(ucp_tag_send_nbx(p.ep, &value, sizeof(value), 76, &param)) == UCS_OK);
        CHECK(ucp_cntr_wait(done, 1, 60000) == UCS_OK);
        CHECK(ucp_cntr_read(trigger) == stages + 1);
        CHECK(ucp_cntr_read(other) == stages);
        for (ucs_status_ptr_t r : requests) {
            CHECK(p.wait(r) == UCS_OK);
        }
        CHECK(drain_tags(p, 2) == std::vector<ucp_tag_t>{76, 77});
    }

    SECTION("closing the endpoint cancels what waits to go out of it") {
        seen_calls seen;
        ucp_ext_request_param_t ext = triggered_by(trigger, 1, done);
        with_callback(&ext, &seen);
        ucs_status_ptr_t r = ucp_tag_send_nbx(p.ep, &value, sizeof(value), 1, &ext.base);
        REQUIRE(UCS_PTR_IS_PTR(r));
        ucp_ext_request_param_t recv = triggered_by(trigger, 1);
        uint64_t got;
        ucs_status_ptr_t rr = ucp_tag_recv_nbx(p.worker, &got, sizeof(got), 1, ~ucp_tag_t(0),
                                               &recv.base);
        REQUIRE(UCS_PTR_IS_PTR(rr));
        ucp_request_param_t close{};
        close.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        close.flags        = UCP_EP_CLOSE_FLAG_FORCE;
        CHECK(p.wait(ucp_ep_close_nbx(p.ep, &close)) == UCS_OK);
        p.ep = nullptr;
        CHECK(seen.calls == 1);
        CHECK(seen.status == UCS_ERR_CANCELED);
        CHECK(ucp_cntr_read_err(done) == 1);
        CHECK(p.wait(r) == UCS_ERR_CANCELED);
        /* The receive names no endpoint: still queued. */
        CHECK(ucp_request_check_status(rr) == UCS_INPROGRESS);
        CHECK(ucp_dwq_cancel(p.worker, rr) == UCS_OK);
        CHECK(p.wait(rr) == UCS_ERR_CANCELED);
    }

    SECTION("flushes: triggered, and counted when they complete") {
        rma_test::region region;
        REQUIRE(region.map(p.context, rma_test::memory::registered, 4096) == UCS_OK);
        ucp_rkey_h rkey;
        REQUIRE(ucp_ep_rkey_unpack(p.ep, region.key().data(), &rkey) == UCS_OK);
        ucp_ext_request_param_t put          = triggered_by(trigger, 1, done);
        ucp_ext_request_param_t ep_flush     = triggered_by(trigger, 1, done);
        ucp_ext_request_param_t worker_flush = triggered_by(trigger, 2, done);
        ucs_status_ptr_t r1 = ucp_put_nbx(p.ep, &value, sizeof(value), region.address(), rkey,
                                          &put.base);
        ucs_status_ptr_t r2 = ucp_ep_flush_nbx(p.ep, &ep_flush.base);
        ucs_status_ptr_t r3 = ucp_worker_flush_nbx(p.worker, &worker_flush.base);
        for (ucs_status_ptr_t r : {r1, r2, r3}) {
            REQUIRE(UCS_PTR_IS_PTR(r));
        }
        CHECK(ucp_cntr_add(trigger, 1) == UCS_OK);
        CHECK(p.wait(r1) == UCS_OK);
        CHECK(p.wait(r2) == UCS_OK);
        CHECK(ucp_cntr_read(done) == 2); /* the put and the ep flush */
        uint64_t landed;
        std::memcpy(&landed, region.data(), sizeof(landed));
        CHECK(landed == value);
        CHECK(ucp_request_check_status(r3) == UCS_INPROGRESS);
        CHECK(ucp_cntr_add(trigger, 1) == UCS_OK);
        CHECK(p.wait(r3) == UCS_OK);
        CHECK(ucp_cntr_read(done) == 3);
        ucp_rkey_destroy(rkey);
    }

    SECTION("a remote key destroyed before the put starts fails it") {
        rma_test::region region;
        REQUIRE(region.map(p.context, rma_test::memory::registered, 4096) == UCS_OK);
        ucp_rkey_h rkey;
        REQUIRE(ucp_ep_rkey_unpack(p.ep, region.key().data(), &rkey) == UCS_OK);
        ucp_ext_request_param_t ext = triggered_by(trigger, 1, done);
        ucs_status_ptr_t r = ucp_put_nbx(p.ep, &value, sizeof(value), region.address(), rkey,
                                         &ext.base);
        REQUIRE(UCS_PTR_IS_PTR(r));
        ucp_rkey_destroy(rkey);
        CHECK(ucp_cntr_add(trigger, 1) == UCS_OK);
        CHECK(p.wait(r) == UCS_ERR_INVALID_PARAM);
        CHECK(ucp_cntr_read_err(done) == 1);
        /* A key destroyed already is refused at post. */
        ext = triggered_by(trigger, 2, done);
        CHECK(UCS_PTR_STATUS(ucp_put_nbx(p.ep, &value, sizeof(value), region.address(), rkey,
                                         &ext.base)) == UCS_ERR_INVALID_PARAM);
    }

    SECTION("another key destroyed meanwhile: the put's own key is looked up, and it goes") {
        rma_test::region region;
        REQUIRE(region.map(p.context, rma_test::memory::registered, 4096) == UCS_OK);
        ucp_rkey_h rkey, other;
        REQUIRE(ucp_ep_rkey_unpack(p.ep, region.key().data(), &rkey) == UCS_OK);
        REQUIRE(ucp_ep_rkey_unpack(p.ep, region.key().data(), &other) == UCS_OK);
        ucp_ext_request_param_t ext = triggered_by(trigger, 1, done);
        const uint64_t pattern      = 0x1122334455667788;
        ucs_status_ptr_t r = ucp_put_nbx(p.ep, &pattern, sizeof(pattern), region.address(), rkey,
                                         &ext.base);
        REQUIRE(UCS_PTR_IS_PTR(r));
        ucp_rkey_destroy(other);
        CHECK(ucp_cntr_add(trigger, 1) == UCS_OK);
        CHECK(p.wait(r) == UCS_OK);
        CHECK(ucp_cntr_read(done) == 1);
        CHECK(ucp_cntr_read_err(done) == 0);
        uint64_t landed;
        std::memcpy(&landed, region.data(), sizeof(landed));
        CHECK(landed == pattern);
        ucp_rkey_destroy(rkey);
    }

    SECTION("ucp_worker_arm says busy while an operation is due") {
        ucp_ext_request_param_t ext = triggered_by(trigger, 1);
        ucs_status_ptr_t r          = ucp_tag_send_nbx(p.ep, &value, sizeof(value), 1, &ext.base);
        REQUIRE(UCS_PTR_IS_PTR(r));
        while (ucp_worker_progress(p.worker) != 0) {
        }
        CHECK(ucp_worker_arm(p.worker) == UCS_OK);
        CHECK(ucp_cntr_add(trigger, 1) == UCS_OK); /* signals the worker */
        CHECK(ucp_worker_arm(p.worker) == UCS_ERR_BUSY);
        CHECK(ucp_cntr_arm(trigger) == UCS_ERR_BUSY);
        CHECK(p.wait(r) == UCS_OK);
        CHECK(drain_tags(p, 1) == std::vector<ucp_tag_t>{1});
    }

    SECTION("bad arguments are refused") {
        ucp_ext_request_param_t ext = triggered_by(nullptr, 1);
        CHECK(UCS_PTR_STATUS(ucp_tag_send_nbx(p.ep, &value, 8, 1, &ext.base)) ==
              UCS_ERR_INVALID_PARAM);
        peer stranger;
        REQUIRE(stranger.init("self", UCP_FEATURE_TAG) == UCS_OK);
        ucp_cntr_h foreign = new_cntr(stranger.worker);
        REQUIRE(foreign != nullptr);
        ext = triggered_by(foreign, 1);
        CHECK(UCS_PTR_STATUS(ucp_tag_send_nbx(p.ep, &value, 8, 1, &ext.base)) ==
              UCS_ERR_INVALID_PARAM);
        CHECK(ucp_dwq_flush(p.worker, foreign, nullptr) == UCS_ERR_INVALID_PARAM);
        CHECK(ucp_cntr_destroy(foreign) == UCS_OK);
        ext = triggered_by(trigger, 1);
        size_t length;
        CHECK(UCS_PTR_STATUS(ucp_stream_recv_nbx(p.ep, &value, 8, &length, &ext.base)) ==
              UCS_ERR_UNSUPPORTED);
        ext = triggered_by(trigger, 1, done);
        CHECK(UCS_PTR_STATUS(ucp_cntr_op_nbx(other, UCP_CNTR_OP_ADD, 1, &ext.base)) ==
              UCS_ERR_INVALID_PARAM);
        CHECK(UCS_PTR_STATUS(cntr_op_raw(other, 17)) == UCS_ERR_INVALID_PARAM);
        CHECK(UCS_PTR_STATUS(ucp_cntr_op_nbx(nullptr, UCP_CNTR_OP_ADD, 1, nullptr)) ==
              UCS_ERR_INVALID_PARAM);
        CHECK(ucp_dwq_flush(nullptr, nullptr, nullptr) == UCS_ERR_INVALID_PARAM);
        CHECK(nothing_unexpected(p));
        CHECK(ucp_cntr_read(other) == 0);
    }

    CHECK(ucp_dwq_flush(p.worker, nullptr, nullptr) == UCS_OK);
    for (ucp_cntr_h c : {trigger, other, done, errors}) {
        CHECK(ucp_cntr_destroy(c) == UCS_OK);
    }
}

TEST_CASE("deferred work queue: a worker destroyed with queued operations", "[ucp_trigger]")
{
    peer p;
    REQUIRE(p.init("self", features) == UCS_OK);
    REQUIRE(p.connect(p.address()) == UCS_OK);
    ucp_cntr_h trigger = new_cntr(p.worker);
    REQUIRE(trigger != nullptr);
    uint64_t value = 1, got = 0;
    seen_calls seen;
    ucp_ext_request_param_t ext = triggered_by(trigger, 1);
    with_callback(&ext, &seen);
    ucs_status_ptr_t send        = ucp_tag_send_nbx(p.ep, &value, sizeof(value), 1, &ext.base);
    ucp_ext_request_param_t recv = triggered_by(trigger, 1);
    ucs_status_ptr_t r           = ucp_tag_recv_nbx(p.worker, &got, sizeof(got), 2, ~ucp_tag_t(0),
                                                    &recv.base);
    REQUIRE(UCS_PTR_IS_PTR(send));
    REQUIRE(UCS_PTR_IS_PTR(r));
    /* The ep goes first (its send is cancelled), then the worker with the
     * receive and the counter: nothing leaks (sanitizer build). */
    p.close();
    CHECK(seen.calls == 1);
    CHECK(seen.status == UCS_ERR_CANCELED);
}
