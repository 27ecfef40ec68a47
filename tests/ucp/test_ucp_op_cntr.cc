/*
 * Operations that count their completion on counters
 * (UCP_OP_ATTR_FIELD_EXT, ucp/api/ucp_ext.h): tag, stream and AM traffic
 * and RMA between two processes counted in completions and in bytes,
 * completions inside the call counted at once, failures on the error value
 * (of err_cntr, or of cntr when there is none), the caller's callback and
 * user data kept, each operation counted once, bad extension fields and
 * calls that do not count refused, and a counter busy while operations
 * counting on it are in flight.
 */
#include "ext_test_util.h"
#include "rma_test_util.h"
#include "ucp_peer.h"

#include <ucp/api/ucp_ext.h>

#include <catch2/catch.hpp>

#include <numeric>
#include <vector>

using namespace ucp_test;

namespace {

constexpr uint64_t features = UCP_FEATURE_TAG | UCP_FEATURE_STREAM | UCP_FEATURE_AM |
                              UCP_FEATURE_RMA | UCP_FEATURE_AMO64;
/* Short, bcopy, multi-fragment and rendezvous sizes. */
const size_t sizes[]     = {8, 1500, 20000, 300000};
constexpr uint16_t am_id = 11;

size_t total_bytes()
{
    return std::accumulate(std::begin(sizes), std::end(sizes), size_t(0));
}

ucs_status_t discard_am(void *, const void *, size_t, void *, size_t, const ucp_am_recv_param_t *)
{
    return UCS_OK;
}

/*
 * The child sends every size as a tag message, on the stream and as an
 * active message, each counted on `sends` (completions) and `bytes`
 * (EVENTS_BYTES), without keeping a request; then waits on the counters
 * alone.
 */
int sender_child(int fd, const char *tls)
{
    peer c;
    TEST_CHILD_CHECK(c.init_with(tls, features, {}) == UCS_OK);
    TEST_CHILD_CHECK(c.connect_over(fd));
    ucp_cntr_h sends = new_cntr(c.worker);
    ucp_cntr_h bytes = new_cntr(c.worker, UCP_CNTR_FLAG_EVENTS_BYTES);
    TEST_CHILD_CHECK((sends != nullptr) && (bytes != nullptr));
    std::vector<std::vector<uint8_t>> buffers;
    for (size_t i = 0; i < std::size(sizes); ++i) {
        buffers.emplace_back(sizes[i]);
        fill_pattern(buffers.back().data(), sizes[i], i);
    }
    for (ucp_cntr_h cntr : {sends, bytes}) {
        ucp_ext_request_param_t ext = counted_by(cntr);
        for (size_t i = 0; i < std::size(sizes); ++i) {
            const auto &b = buffers[i];
            for (ucs_status_ptr_t r :
                 {ucp_tag_send_nbx(c.ep, b.data(), b.size(), i, &ext.base),
                  ucp_stream_send_nbx(c.ep, b.data(), b.size(), &ext.base),
                  ucp_am_send_nbx(c.ep, am_id, nullptr, 0, b.data(), b.size(), &ext.base)}) {
                TEST_CHILD_CHECK(!UCS_PTR_IS_ERR(r));
                if (r != nullptr) {
                    ucp_request_free(r); /* completes and counts by itself */
                }
            }
        }
    }
    const uint64_t ops = 3 * std::size(sizes);
    TEST_CHILD_CHECK(ucp_cntr_wait(sends, ops, 60000) == UCS_OK);
    TEST_CHILD_CHECK(ucp_cntr_wait(bytes, 3 * total_bytes(), 60000) == UCS_OK);
    TEST_CHILD_CHECK(ucp_cntr_read(sends) == ops); /* each once */
    TEST_CHILD_CHECK(ucp_cntr_read_err(sends) + ucp_cntr_read_err(bytes) == 0);
    TEST_CHILD_CHECK(test::sync_peer(fd));
    /* The parent has received everything: nothing is counted twice. */
    TEST_CHILD_CHECK(ucp_cntr_read(sends) == ops);
    TEST_CHILD_CHECK(ucp_cntr_read(bytes) == 3 * total_bytes());
    TEST_CHILD_CHECK(ucp_cntr_destroy(sends) == UCS_OK);
    TEST_CHILD_CHECK(ucp_cntr_destroy(bytes) == UCS_OK);
    return 0;
}

} // namespace

TEST_CASE("counted operations: tag, stream and AM traffic counted on both sides", "[ucp_cntr]")
{
    const char *tls = GENERATE("posix,cma", "tcp");
    CAPTURE(tls);
    peer p;
    REQUIRE(p.init_with(tls, features, {}) == UCS_OK);
    REQUIRE(set_am_handler(p.worker, am_id, discard_am, nullptr) == UCS_OK);
    test::child_process child([tls](int fd) { return sender_child(fd, tls); });
    REQUIRE(p.connect_over(child.fd()));

    ucp_cntr_h recvs = new_cntr(p.worker);
    ucp_cntr_h bytes = new_cntr(p.worker, UCP_CNTR_FLAG_EVENTS_BYTES);
    REQUIRE(recvs != nullptr);
    REQUIRE(bytes != nullptr);
    /* The child sends everything twice (once per counter of its own). */
    std::vector<std::vector<uint8_t>> buffers;
    std::vector<ucs_status_ptr_t> requests;
    for (int round = 0; round < 2; ++round) {
        for (size_t i = 0; i < std::size(sizes); ++i) {
            buffers.emplace_back(sizes[i]);
            ucp_ext_request_param_t ext = counted_by(round == 0 ? recvs : bytes);
            requests.push_back(ucp_tag_recv_nbx(p.worker, buffers.back().data(), sizes[i], i,
                                                ~ucp_tag_t(0), &ext.base));
            REQUIRE(!UCS_PTR_IS_ERR(requests.back()));
        }
    }
    CHECK(ucp_cntr_wait(recvs, std::size(sizes), 60000) == UCS_OK);
    CHECK(ucp_cntr_wait(bytes, total_bytes(), 60000) == UCS_OK);
    for (size_t i = 0; i < buffers.size(); ++i) {
        CHECK(check_pattern(buffers[i].data(), buffers[i].size(), i % std::size(sizes)));
    }
    for (ucs_status_ptr_t r : requests) {
        CHECK(p.wait(r) == UCS_OK);
    }
    /* Stream receives count the bytes each one got. */
    ucp_cntr_h stream_bytes = new_cntr(p.worker, UCP_CNTR_FLAG_EVENTS_BYTES);
    REQUIRE(stream_bytes != nullptr);
    std::vector<uint8_t> sink(2 * total_bytes());
    size_t received = 0;
    while (received < sink.size()) {
        ucp_ext_request_param_t ext = counted_by(stream_bytes);
        size_t length               = 0;
        ucs_status_ptr_t r          = ucp_stream_recv_nbx(p.ep, sink.data() + received,
                                                          sink.size() - received, &length, &ext.base);
        REQUIRE(!UCS_PTR_IS_ERR(r));
        if (r != nullptr) {
            REQUIRE(p.wait(r) == UCS_OK);
            length = ucp_cntr_read(stream_bytes) - received;
        }
        received += length;
        CHECK(ucp_cntr_read(stream_bytes) == received);
    }
    CHECK(ucp_cntr_read(recvs) == std::size(sizes));
    CHECK(ucp_cntr_read_err(recvs) + ucp_cntr_read_err(bytes) == 0);
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(child.wait() == 0);
    for (ucp_cntr_h c : {recvs, bytes, stream_bytes}) {
        CHECK(ucp_cntr_destroy(c) == UCS_OK);
    }
}

namespace {

struct callback_seen {
    unsigned calls          = 0;
    ucs_status_t status     = UCS_INPROGRESS;
    void *user_data         = nullptr;
    uint64_t counted_before = 0; /* the counter's error value in the callback */
    ucp_cntr_h cntr         = nullptr;
};

void seen_send(void *, ucs_status_t status, void *user_data)
{
    auto *seen = static_cast<callback_seen *>(user_data);
    ++seen->calls;
    seen->status    = status;
    seen->user_data = user_data;
}

void seen_recv(void *, ucs_status_t status, const ucp_tag_recv_info_t *, void *user_data)
{
    auto *seen = static_cast<callback_seen *>(user_data);
    ++seen->calls;
    seen->status         = status;
    seen->user_data      = user_data;
    seen->counted_before = ucp_cntr_read_err(seen->cntr); /* no progress: allowed here */
}

} // namespace

TEST_CASE("counted operations: at once, with the caller's callback, and failures", "[ucp_cntr]")
{
    peer p;
    REQUIRE(p.init("self", UCP_FEATURE_TAG | UCP_FEATURE_RMA) == UCS_OK);
    REQUIRE(p.connect(p.address()) == UCS_OK);
    ucp_cntr_h ok  = new_cntr(p.worker);
    ucp_cntr_h err = new_cntr(p.worker);
    REQUIRE(ok != nullptr);
    REQUIRE(err != nullptr);

    SECTION("a send done inside the call is counted when it returns") {
        uint64_t value              = 7;
        ucp_ext_request_param_t ext = counted_by(ok, err);
        CHECK(ucp_tag_send_nbx(p.ep, &value, sizeof(value), 1, &ext.base) == nullptr);
        CHECK(ucp_cntr_read_err(ok) == 0);
        CHECK(ucp_cntr_wait(ok, 1, 0) == UCS_OK); /* checked once, no waiting */
        ucp_tag_recv_info_t info{};
        CHECK(p.recv(&value, sizeof(value), 1, ~ucp_tag_t(0), &info) == UCS_OK);
        CHECK(ucp_cntr_read(ok) == 1);
    }

    SECTION("a receive done inside the call is counted, with or without the caller's info") {
        ucp_cntr_h bytes = new_cntr(p.worker, UCP_CNTR_FLAG_EVENTS_BYTES);
        REQUIRE(bytes != nullptr);
        for (bool null_info : {false, true}) {
            uint64_t value = 7;
            ucp_request_param_t plain{};
            CHECK(p.wait(ucp_tag_send_nbx(p.ep, &value, sizeof(value), 5, &plain)) == UCS_OK);
            REQUIRE(p.wait_unexpected(5));
            ucp_tag_recv_info_t info{};
            ucp_ext_request_param_t ext = counted_by(bytes);
            ext.base.op_attr_mask |= UCP_OP_ATTR_FIELD_RECV_INFO;
            ext.base.recv_info.tag_info = null_info ? nullptr : &info;
            value                       = 0;
            ucs_status_ptr_t r = ucp_tag_recv_nbx(p.worker, &value, sizeof(value), 5, ~ucp_tag_t(0),
                                                  &ext.base);
            CHECK(r == nullptr);
            CHECK(value == 7);
            CHECK(info.length == (null_info ? 0 : sizeof(value)));
        }
        CHECK(ucp_cntr_read(bytes) == 2 * sizeof(uint64_t));
        CHECK(ucp_cntr_destroy(bytes) == UCS_OK);
    }

    SECTION("UCP_OP_ATTR_FLAG_NO_IMM_CMPL: the callback counts, once, with the caller's data") {
        uint64_t value = 7;
        callback_seen seen;
        ucp_ext_request_param_t ext = counted_by(ok, err);
        ext.base.op_attr_mask |= UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                                 UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
        ext.base.cb.send   = seen_send;
        ext.base.user_data = &seen;
        ucs_status_ptr_t r = ucp_tag_send_nbx(p.ep, &value, sizeof(value), 2, &ext.base);
        REQUIRE(UCS_PTR_IS_PTR(r));
        CHECK(p.wait(r) == UCS_OK);
        CHECK(seen.calls == 1);
        CHECK(seen.user_data == &seen);
        CHECK(seen.status == UCS_OK);
        ucp_tag_recv_info_t info{};
        CHECK(p.recv(&value, sizeof(value), 2, ~ucp_tag_t(0), &info) == UCS_OK);
        CHECK(ucp_cntr_read(ok) == 1);
    }

    SECTION("a canceled receive counts an error, before the caller's callback runs") {
        uint64_t value = 0;
        callback_seen seen;
        seen.cntr                   = err;
        ucp_ext_request_param_t ext = counted_by(ok, err);
        ext.base.op_attr_mask |= UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
        ext.base.cb.recv   = seen_recv;
        ext.base.user_data = &seen;
        ucs_status_ptr_t r = ucp_tag_recv_nbx(p.worker, &value, sizeof(value), 99, ~ucp_tag_t(0),
                                              &ext.base);
        REQUIRE(UCS_PTR_IS_PTR(r));
        /* In flight: the counters cannot go. */
        CHECK(ucp_cntr_destroy(ok) == UCS_ERR_BUSY);
        CHECK(ucp_cntr_destroy(err) == UCS_ERR_BUSY);
        ucp_request_cancel(p.worker, r);
        CHECK(p.wait(r) == UCS_ERR_CANCELED);
        CHECK(seen.calls == 1);
        CHECK(seen.status == UCS_ERR_CANCELED);
        CHECK(seen.counted_before == 1);
        CHECK(ucp_cntr_read_err(err) == 1);
        CHECK(ucp_cntr_read(ok) == 0);
        CHECK(ucp_cntr_read_err(ok) == 0);
    }

    SECTION("an error inside the call goes to cntr's error value without err_cntr") {
        rma_test::region region;
        REQUIRE(region.map(p.context, rma_test::memory::registered, 4096) == UCS_OK);
        ucp_rkey_h rkey;
        REQUIRE(ucp_ep_rkey_unpack(p.ep, region.key().data(), &rkey) == UCS_OK);
        std::vector<uint8_t> data(64);
        ucp_ext_request_param_t ext = counted_by(ok);
        /* Past the region's end: refused before anything moves. */
        ucs_status_ptr_t r = ucp_put_nbx(p.ep, data.data(), data.size(),
                                         region.address() + 4096 - 8, rkey, &ext.base);
        CHECK(UCS_PTR_IS_ERR(r));
        CHECK(ucp_cntr_read_err(ok) == 1);
        CHECK(ucp_cntr_read(ok) == 0);
        ucp_rkey_destroy(rkey);
    }

    SECTION("bad extension fields and calls that count nothing are refused") {
        uint64_t value              = 0;
        ucp_ext_request_param_t ext = counted_by(ok);
        ext.ext_field_mask |= UCS_BIT(40);
        CHECK(UCS_PTR_STATUS(ucp_tag_send_nbx(p.ep, &value, 8, 3, &ext.base)) ==
              UCS_ERR_INVALID_PARAM);
        peer other;
        REQUIRE(other.init("self", UCP_FEATURE_TAG) == UCS_OK);
        ucp_cntr_h foreign = new_cntr(other.worker);
        REQUIRE(foreign != nullptr);
        ext = counted_by(foreign);
        CHECK(UCS_PTR_STATUS(ucp_tag_send_nbx(p.ep, &value, 8, 3, &ext.base)) ==
              UCS_ERR_INVALID_PARAM);
        CHECK(ucp_cntr_destroy(foreign) == UCS_OK);
        ext = counted_by(foreign); /* destroyed */
        CHECK(UCS_PTR_STATUS(ucp_tag_send_nbx(p.ep, &value, 8, 3, &ext.base)) ==
              UCS_ERR_INVALID_PARAM);
        ext = counted_by(ok);
        ucp_request_param_t close{};
        close.op_attr_mask = UCP_OP_ATTR_FIELD_EXT;
        CHECK(UCS_PTR_STATUS(ucp_ep_close_nbx(p.ep, &close)) == UCS_ERR_UNSUPPORTED);
        CHECK(ucp_cntr_read(ok) + ucp_cntr_read_err(ok) == 0);
        ucp_tag_recv_info_t info{};
        CHECK(ucp_tag_probe_nb(p.worker, 3, ~ucp_tag_t(0), 0, &info) == nullptr);
    }

    CHECK(ucp_cntr_destroy(ok) == UCS_OK);
    CHECK(ucp_cntr_destroy(err) == UCS_OK);
}

namespace {

/* The target of the RMA test: exposes a region until told to stop. */
int rma_target(int fd, const char *tls)
{
    peer c;
    TEST_CHILD_CHECK(c.init_with(tls, features, {}) == UCS_OK);
    TEST_CHILD_CHECK(c.connect_over(fd));
    rma_test::region region;
    TEST_CHILD_CHECK(region.map(c.context, rma_test::memory::registered, 65536) == UCS_OK);
    TEST_CHILD_CHECK(test::send_blob(fd, region.key()) && test::send_value(fd, region.address()));
    uint8_t done;
    TEST_CHILD_CHECK(c.recv_value_progress(fd, &done));
    return 0;
}

} // namespace

TEST_CASE("counted operations: put, get and atomics counted in bytes", "[ucp_cntr]")
{
    const char *tls = GENERATE("posix,cma", "tcp");
    CAPTURE(tls);
    peer p;
    REQUIRE(p.init_with(tls, features, {}) == UCS_OK);
    test::child_process child([tls](int fd) { return rma_target(fd, tls); });
    REQUIRE(p.connect_over(child.fd()));
    std::vector<uint8_t> key;
    uint64_t base = 0;
    REQUIRE(test::recv_blob(child.fd(), &key));
    REQUIRE(test::recv_value(child.fd(), &base));
    ucp_rkey_h rkey;
    REQUIRE(ucp_ep_rkey_unpack(p.ep, key.data(), &rkey) == UCS_OK);

    ucp_cntr_h bytes = new_cntr(p.worker, UCP_CNTR_FLAG_EVENTS_BYTES);
    ucp_cntr_h ops   = new_cntr(p.worker);
    REQUIRE(bytes != nullptr);
    REQUIRE(ops != nullptr);
    std::vector<uint8_t> out(30000), in(30000);
    fill_pattern(out.data(), out.size(), 9);
    uint64_t add = 3, fetched = 0;
    for (ucp_cntr_h cntr : {bytes, ops}) {
        ucp_ext_request_param_t ext = counted_by(cntr);
        ucs_status_ptr_t put = ucp_put_nbx(p.ep, out.data(), out.size(), base, rkey, &ext.base);
        REQUIRE(!UCS_PTR_IS_ERR(put));
        /* The flush counts too (1, or 0 bytes). */
        REQUIRE(p.wait(ucp_ep_flush_nbx(p.ep, &ext.base)) == UCS_OK);
        REQUIRE(p.wait(put) == UCS_OK);
        REQUIRE(p.wait(ucp_get_nbx(p.ep, in.data(), in.size(), base, rkey, &ext.base)) == UCS_OK);
        ext.base.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
        ext.base.datatype     = ucp_dt_make_contig(sizeof(uint64_t));
        ext.base.reply_buffer = &fetched;
        REQUIRE(p.wait(ucp_atomic_op_nbx(p.ep, UCP_ATOMIC_OP_ADD, &add, 1, base + 32768, rkey,
                                         &ext.base)) == UCS_OK);
    }
    CHECK(in == out);
    CHECK(fetched == add);
    CHECK(ucp_cntr_read(bytes) == 2 * out.size() + sizeof(uint64_t));
    CHECK(ucp_cntr_read(ops) == 4);
    ucp_ext_request_param_t worker_flush = counted_by(ops);
    CHECK(p.wait(ucp_worker_flush_nbx(p.worker, &worker_flush.base)) == UCS_OK);
    CHECK(ucp_cntr_read(ops) == 5);
    ucp_rkey_destroy(rkey);
    CHECK(ucp_cntr_destroy(bytes) == UCS_OK);
    CHECK(ucp_cntr_destroy(ops) == UCS_OK);
    REQUIRE(test::send_value(child.fd(), uint8_t(1)));
    CHECK(child.wait() == 0);
}
