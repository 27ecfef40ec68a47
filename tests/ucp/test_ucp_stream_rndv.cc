/*
 * Stream rendezvous (ucp/stream/stream_rndv.cc) between two processes: a
 * large send goes straight into a receive posted for it; one no receive
 * takes is pulled into UCP's memory, so the sender completes while the
 * receiver only progresses, and later receives and recv_data_nb get the
 * bytes in order; an ep closed with rendezvous data waiting; malformed
 * requests from a peer.
 */
#include "ucp_peer.h"
#include "ucp_test_util.h"

#include <ucp/core/ucp_ep.h>
#include <ucp/proto/select.h>
#include <ucp/proto/wire.h>
#include <ucp/stream/stream.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <string>

using namespace ucp_test;

namespace {

const char *const transports[] = {"posix,cma", "tcp"};

constexpr size_t big   = 1u << 20; /* well past proto::stream_rndv_min */
constexpr size_t small = 1000;     /* eager */

static_assert(big >= ucp::proto::stream_rndv_min);

const ucp::stream_worker &streams(const peer &p)
{
    return *p.worker->stream_state;
}

/* Sends `length` bytes of pattern `seed`; waits for the send. */
bool send_pattern(peer &p, size_t length, uint8_t seed)
{
    std::vector<uint8_t> data(length);
    fill_pattern(data.data(), data.size(), seed);
    ucp_request_param_t param{};
    return p.wait(ucp_stream_send_nbx(p.ep, data.data(), data.size(), &param)) == UCS_OK;
}

/* A WAITALL receive of `length` bytes; its request (or NULL when done). */
ucs_status_ptr_t post_waitall(peer &p, void *buffer, size_t length, size_t *received)
{
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_STREAM_RECV_FLAG_WAITALL;
    return ucp_stream_recv_nbx(p.ep, buffer, length, received, &param);
}

/* Receives exactly `length` bytes with WAITALL; empty on failure. */
std::vector<uint8_t> recv_all(peer &p, size_t length)
{
    std::vector<uint8_t> data(length);
    size_t received      = 0;
    ucs_status_ptr_t req = post_waitall(p, data.data(), length, &received);
    if (UCS_PTR_IS_ERR(req)) {
        return {};
    }
    if (req != nullptr) {
        ucs_status_t status;
        while ((status = ucp_stream_recv_request_test(req, &received)) == UCS_INPROGRESS) {
            ucp_worker_progress(p.worker);
        }
        ucp_request_free(req);
        if (status != UCS_OK) {
            return {};
        }
    }
    return (received == length) ? data : std::vector<uint8_t>{};
}

/* Child: sends a big message and a small one when told, reports that both
 * sends completed, then sends two more big ones when told. */
int sender_child(int fd, const char *tls)
{
    peer p;
    TEST_CHILD_CHECK(p.init(tls, UCP_FEATURE_STREAM) == UCS_OK);
    TEST_CHILD_CHECK(p.connect_over(fd));
    for (int round = 0; round < 2; ++round) {
        uint8_t go;
        TEST_CHILD_CHECK(test::recv_value(fd, &go));
        TEST_CHILD_CHECK(send_pattern(p, big, uint8_t(10 + round)));
        TEST_CHILD_CHECK(send_pattern(p, small, uint8_t(20 + round)));
        TEST_CHILD_CHECK(test::send_value(fd, uint8_t(1)));
    }
    uint8_t go;
    TEST_CHILD_CHECK(test::recv_value(fd, &go));
    TEST_CHILD_CHECK(send_pattern(p, big, 30));
    TEST_CHILD_CHECK(send_pattern(p, big, 31));
    TEST_CHILD_CHECK(test::send_value(fd, uint8_t(1)));
    /* Progress until the parent is done: it may still pull from us. */
    TEST_CHILD_CHECK(p.recv_value_progress(fd, &go));
    return 0;
}

} // namespace

TEST_CASE("stream rendezvous: into the posted receive, or staged so the sender completes",
          "[ucp_stream]")
{
    for (const char *tls : transports) {
        INFO("UCX_TLS=" << tls);
        peer p;
        REQUIRE(p.init(tls, UCP_FEATURE_STREAM) == UCS_OK);
        test::child_process child([tls](int fd) { return sender_child(fd, tls); });
        REQUIRE(p.connect_over(child.fd()));
        REQUIRE(p.ep->rndv_lane != ucp::no_lane);

        /* Posted before the sender starts: the bytes go straight in. */
        std::vector<uint8_t> in(big);
        size_t received      = 0;
        ucs_status_ptr_t req = post_waitall(p, in.data(), big, &received);
        REQUIRE(req != nullptr);
        REQUIRE(!UCS_PTR_IS_ERR(req));
        REQUIRE(test::send_value(child.fd(), uint8_t(1)));
        CHECK(p.wait(req) == UCS_OK);
        CHECK(check_pattern(in.data(), big, 10));
        std::vector<uint8_t> tail = recv_all(p, small);
        REQUIRE(tail.size() == small);
        CHECK(check_pattern(tail.data(), small, 20));
        uint8_t sent;
        REQUIRE(p.recv_value_progress(child.fd(), &sent));
        CHECK(streams(p).pulls_direct == 1);
        CHECK(streams(p).pulls_staged == 0);

        /* No receive at all: the sender still completes (we only progress),
         * the bytes wait in a segment of ours, ahead of the small message. */
        REQUIRE(test::send_value(child.fd(), uint8_t(1)));
        REQUIRE(p.recv_value_progress(child.fd(), &sent));
        CHECK(streams(p).pulls_staged == 1);
        std::vector<uint8_t> got;
        for (size_t piece = 300000; got.size() < big;) { /* pieces across it */
            std::vector<uint8_t> part = recv_all(p, std::min(piece, big - got.size()));
            REQUIRE(!part.empty());
            got.insert(got.end(), part.begin(), part.end());
        }
        CHECK(check_pattern(got.data(), big, 11));
        tail = recv_all(p, small);
        REQUIRE(tail.size() == small);
        CHECK(check_pattern(tail.data(), small, 21));

        /* recv_data_nb: the whole message in one of UCP's buffers. */
        REQUIRE(test::send_value(child.fd(), uint8_t(1)));
        REQUIRE(p.recv_value_progress(child.fd(), &sent));
        for (uint8_t seed : {30, 31}) {
            size_t length         = 0;
            ucs_status_ptr_t data = nullptr;
            REQUIRE(test::poll_until(
                [&] {
                data = ucp_stream_recv_data_nb(p.ep, &length);
                return data != nullptr;
                },
                [&] { ucp_worker_progress(p.worker); }));
            REQUIRE(!UCS_PTR_IS_ERR(data));
            CHECK(length == big);
            CHECK(check_pattern(static_cast<uint8_t *>(data), length, seed));
            ucp_stream_data_release(p.ep, data);
        }
        CHECK(streams(p).pulls_direct == 1);
        CHECK(streams(p).pulls_staged == 3);
        REQUIRE(test::send_value(child.fd(), uint8_t(1)));
        CHECK(child.wait() == 0);
    }
}

TEST_CASE("stream rendezvous: an ep closed with data not pulled; malformed requests",
          "[ucp_stream]")
{
    peer p;
    REQUIRE(p.init("self", UCP_FEATURE_STREAM) == UCS_OK);
    REQUIRE(p.connect(p.address()) == UCS_OK);
    log_capture capture;

    /* A request shorter than its header, or than the key it announces. */
    alignas(8) uint8_t fake[sizeof(ucp::wire::rts_hdr) + 8] = {};
    CHECK(ucp::stream_rts_handler(p.worker, fake, sizeof(ucp::wire::rts_hdr) - 1, 0) == UCS_OK);
    ucp::wire::rts_hdr rts{};
    rts.length      = big;
    rts.rkey_length = 100;
    std::memcpy(fake, &rts, sizeof(rts));
    CHECK(ucp::stream_rts_handler(p.worker, fake, sizeof(fake), 0) == UCS_OK);
    rts.rkey_length = 8;
    rts.length      = 0;
    std::memcpy(fake, &rts, sizeof(rts));
    CHECK(ucp::stream_rts_handler(p.worker, fake, sizeof(fake), 0) == UCS_OK);
    const std::string text = capture.text();
    size_t warnings        = 0;
    for (size_t at = text.find("malformed stream rendezvous"); at != std::string::npos;
         at        = text.find("malformed stream rendezvous", at + 1)) {
        ++warnings;
    }
    CHECK(warnings == 3);

    /* Sent to ourselves, never received nor progressed: the close cancels
     * the send and frees what waits. */
    std::vector<uint8_t> data(big, 7);
    ucp_request_param_t param{};
    ucs_status_ptr_t send = ucp_stream_send_nbx(p.ep, data.data(), data.size(), &param);
    REQUIRE(send != nullptr);
    REQUIRE(!UCS_PTR_IS_ERR(send));
    REQUIRE(p.worker->stream_state != nullptr);
    CHECK(streams(p).pulls_direct + streams(p).pulls_staged == 0);
    CHECK(p.close_ep() == UCS_OK);
    CHECK(ucp_request_check_status(send) == UCS_ERR_CANCELED);
    ucp_request_free(send);
    for (int i = 0; i < 100; ++i) {
        ucp_worker_progress(p.worker); /* nothing left to stage */
    }
    CHECK(streams(p).deferred.empty());
}
