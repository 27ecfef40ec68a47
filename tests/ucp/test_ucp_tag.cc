/*
 * Tag matching end to end between two processes over each transport: every
 * protocol size class at its boundaries, unexpected and expected arrival,
 * MPI matching order with wildcards, probe / msg_recv, sync sends, cancel.
 */
#include "ucp_peer.h"
#include "ucp_test_util.h"

#include <ucp/core/ucp_request.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <random>

using namespace ucp_test;

namespace {

const char *const transports[] = {"posix,cma", "sysv", "tcp"};

/* Sizes around every protocol boundary of our transports. */
const size_t boundary_sizes[] = {0,     1,     7,     8,     9,      63,         64,
                                 111,   112,   113,   119,   120,    121,        4095,
                                 4096,  8151,  8152,  8159,  8160,   8161,       8183,
                                 8184,  8185,  8192,  8193,  12000,  16383,      16384,
                                 16385, 65535, 65536, 65537, 200003, (1u << 20), (4u << 20) + 3};

constexpr ucp_tag_t full_mask = ~ucp_tag_t(0);

/* Child: connect, then send each size once `go` arrives. */
int send_sizes_child(int fd, const char *tls)
{
    peer p;
    TEST_CHILD_CHECK(p.init(tls) == UCS_OK);
    TEST_CHILD_CHECK(p.connect_over(fd));
    std::vector<uint8_t> buffer;
    for (size_t i = 0; i < std::size(boundary_sizes); ++i) {
        const size_t size = boundary_sizes[i];
        buffer.resize(size + 1);
        fill_pattern(buffer.data(), size, size);
        TEST_CHILD_CHECK(p.send(buffer.data(), size, 1000 + i) == UCS_OK);
    }
    /* Stay until the parent has everything: rendezvous pulls from us. */
    ucp_request_param_t flush_param{};
    TEST_CHILD_CHECK(p.wait(ucp_ep_flush_nbx(p.ep, &flush_param)) == UCS_OK);
    TEST_CHILD_CHECK(test::sync_peer(fd));
    return 0;
}

void receive_sizes(peer &p, bool unexpected)
{
    std::vector<uint8_t> buffer;
    for (size_t i = 0; i < std::size(boundary_sizes); ++i) {
        const size_t size = boundary_sizes[i];
        INFO("size " << size << (unexpected ? " unexpected" : " expected"));
        buffer.assign(size + 16, 0xee);
        ucp_tag_recv_info_t info{};
        REQUIRE(p.recv(buffer.data(), size + 16, 1000 + i, full_mask, &info) == UCS_OK);
        CHECK(info.sender_tag == 1000 + i);
        CHECK(info.length == size);
        CHECK(check_pattern(buffer.data(), size, size));
        CHECK(buffer[size] == 0xee); /* nothing written past the message */
    }
}

} // namespace

TEST_CASE("tag send/recv at every protocol boundary", "[ucp_tag]")
{
    for (const char *tls : transports) {
        for (bool unexpected : {false, true}) {
            INFO("UCX_TLS=" << tls);
            peer p;
            REQUIRE(p.init(tls) == UCS_OK);
            test::child_process child([tls](int fd) { return send_sizes_child(fd, tls); });
            REQUIRE(p.connect_over(child.fd()));
            if (unexpected) {
                /* Let every eager message arrive before any receive is posted:
                 * progress until the first rendezvous offer is queued. */
                REQUIRE(p.wait_unexpected(1000 + 26));
            }
            receive_sizes(p, unexpected);
            REQUIRE(test::sync_peer(child.fd()));
            CHECK(child.wait() == 0);
        }
    }
}

TEST_CASE("tag send/recv to self in one process", "[ucp_tag]")
{
    for (const char *tls : {"self", "posix,cma", "tcp"}) {
        INFO("UCX_TLS=" << tls);
        peer p;
        REQUIRE(p.init(tls) == UCS_OK);
        REQUIRE(p.connect(p.address()) == UCS_OK);
        std::vector<uint8_t> out, in;
        for (size_t size : boundary_sizes) {
            INFO("size " << size);
            out.resize(size + 1);
            in.assign(size + 1, 0);
            fill_pattern(out.data(), size, size);
            ucp_request_param_t rparam{};
            ucs_status_ptr_t rreq = ucp_tag_recv_nbx(p.worker, in.data(), size, 7, full_mask,
                                                     &rparam);
            REQUIRE(!UCS_PTR_IS_ERR(rreq));
            REQUIRE(p.send(out.data(), size, 7) == UCS_OK);
            REQUIRE(p.wait(rreq) == UCS_OK);
            CHECK(check_pattern(in.data(), size, size));
        }
    }
}

namespace {

struct message_plan {
    std::vector<ucp_tag_t> tags;
    std::vector<size_t> sizes;
};

message_plan make_plan(unsigned seed, size_t count)
{
    std::mt19937 rng(seed);
    message_plan plan;
    for (size_t i = 0; i < count; ++i) {
        plan.tags.push_back(rng() % 4);
        unsigned kind = rng() % 100;
        size_t size   = (kind < 70) ? rng() % 256 : (kind < 95) ? rng() % 10000 : rng() % 40000;
        plan.sizes.push_back(size);
    }
    return plan;
}

/* Child: sends the plan with many requests in flight; payload encodes i. */
int send_plan_child(int fd, const char *tls, unsigned seed, size_t count)
{
    peer p;
    TEST_CHILD_CHECK(p.init(tls) == UCS_OK);
    TEST_CHILD_CHECK(p.connect_over(fd));
    message_plan plan = make_plan(seed, count);
    std::vector<std::vector<uint8_t>> buffers(count);
    std::vector<void *> inflight;
    for (size_t i = 0; i < count; ++i) {
        buffers[i].resize(std::max<size_t>(plan.sizes[i], 1));
        fill_pattern(buffers[i].data(), plan.sizes[i], i);
        ucp_request_param_t param{};
        ucs_status_ptr_t req = ucp_tag_send_nbx(p.ep, buffers[i].data(), plan.sizes[i],
                                                plan.tags[i], &param);
        TEST_CHILD_CHECK(!UCS_PTR_IS_ERR(req));
        if (req != nullptr) {
            inflight.push_back(req);
        }
        /* Bound what is in flight; keep the rest of the memory alive. */
        while (inflight.size() > 64) {
            ucp_worker_progress(p.worker);
            auto done = std::remove_if(inflight.begin(), inflight.end(), [](void *r) {
                if (ucp_request_check_status(r) == UCS_INPROGRESS) {
                    return false;
                }
                ucp_request_free(r);
                return true;
            });
            inflight.erase(done, inflight.end());
        }
    }
    for (void *req : inflight) {
        TEST_CHILD_CHECK(p.wait(req) == UCS_OK);
    }
    TEST_CHILD_CHECK(test::sync_peer(fd));
    return 0;
}

} // namespace

TEST_CASE("random tags, sizes and wildcards match in MPI order", "[ucp_tag]")
{
    const size_t count  = 10000;
    const unsigned seed = 12345;
    for (const char *tls : transports) {
        INFO("UCX_TLS=" << tls);
        peer p;
        REQUIRE(p.init(tls) == UCS_OK);
        test::child_process child([=](int fd) { return send_plan_child(fd, tls, seed, count); });
        REQUIRE(p.connect_over(child.fd()));

        /* Each receive must get the first message in send order that it
         * matches among those not received yet. */
        message_plan plan = make_plan(seed, count);
        std::vector<bool> consumed(count, false);
        std::mt19937 rng(seed + 1);
        std::vector<uint8_t> buffer(40000 + 8);
        size_t first_left = 0;
        size_t mismatches = 0;
        for (size_t n = 0; n < count; ++n) {
            while (consumed[first_left]) {
                ++first_left;
            }
            ucp_tag_t tag, mask;
            if (rng() % 10 < 3) {
                tag  = 0;
                mask = 0; /* any tag */
            } else {
                /* The tag of some message still to come. */
                size_t pick = first_left + rng() % std::min<size_t>(count - first_left, 50);
                while (consumed[pick]) {
                    ++pick;
                }
                tag  = plan.tags[pick];
                mask = full_mask;
            }
            size_t expect = first_left;
            while (consumed[expect] || ((plan.tags[expect] ^ tag) & mask)) {
                ++expect;
            }
            consumed[expect] = true;
            ucp_tag_recv_info_t info{};
            REQUIRE(p.recv(buffer.data(), buffer.size(), tag, mask, &info) == UCS_OK);
            if ((info.length != plan.sizes[expect]) || (info.sender_tag != plan.tags[expect]) ||
                !check_pattern(buffer.data(), info.length, expect)) {
                ++mismatches;
            }
        }
        CHECK(mismatches == 0);
        REQUIRE(test::sync_peer(child.fd()));
        CHECK(child.wait() == 0);
    }
}
