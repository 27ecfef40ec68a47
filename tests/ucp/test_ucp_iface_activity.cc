/*
 * Which ifaces a worker progresses: on every call only those its eps use
 * or that peers reached it through; the others once in idle_poll_period
 * calls, so a peer that connects to us from our address still gets
 * through, and ucp_worker_arm watches every iface for a sleeping worker.
 */
#include "ucp_peer.h"
#include "ucp_test_util.h"

#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_worker.h>

#include <catch2/catch.hpp>

#include <poll.h>

#include <chrono>
#include <set>
#include <string>

using namespace ucp_test;

namespace {

constexpr ucp_tag_t full_mask = ~ucp_tag_t(0);
constexpr size_t small_size   = 64;
constexpr size_t large_size   = 300000; /* rendezvous: needs our reply ep */

/* Transport names of the worker's ifaces that are (not) progressed always. */
std::multiset<std::string> ifaces_named(ucp_worker_h worker, bool active)
{
    std::multiset<std::string> names;
    for (const ucp::worker_iface &wi : worker->ifaces) {
        if (wi.active == active) {
            names.insert(worker->context.tls[wi.tl_index].resource.tl_name);
        }
    }
    return names;
}

/* Every iface a lane of an ep uses is progressed on every call. */
bool lanes_active(ucp_worker_h worker)
{
    bool ok = true;
    worker->ep_ids.for_each([&](unsigned, ucp_ep *ep) {
        for (uint8_t i = 0; i < ep->num_lanes; ++i) {
            ok &= worker->ifaces[ep->lanes[i].iface_index].active;
        }
    });
    return ok;
}

/* Connects to the parent from its address (the parent makes no ep of its
 * own), waits for its go, sends a small and a rendezvous message. */
int sender_child(int fd, const char *tls)
{
    peer p;
    TEST_CHILD_CHECK(p.init(tls) == UCS_OK);
    std::vector<uint8_t> remote;
    TEST_CHILD_CHECK(test::recv_blob(fd, &remote));
    TEST_CHILD_CHECK(p.connect(remote) == UCS_OK);
    uint8_t go;
    TEST_CHILD_CHECK(test::recv_value(fd, &go));
    std::vector<uint8_t> small(small_size), large(large_size);
    fill_pattern(small.data(), small.size(), 1);
    fill_pattern(large.data(), large.size(), 2);
    TEST_CHILD_CHECK(p.send(small.data(), small.size(), 1) == UCS_OK);
    TEST_CHILD_CHECK(p.send(large.data(), large.size(), 2) == UCS_OK);
    uint8_t done;
    TEST_CHILD_CHECK(p.recv_value_progress(fd, &done));
    return 0;
}

ucs_status_ptr_t post_recv(ucp_worker_h worker, std::vector<uint8_t> *buffer, ucp_tag_t tag)
{
    ucp_request_param_t param{};
    return ucp_tag_recv_nbx(worker, buffer->data(), buffer->size(), tag, full_mask, &param);
}

} // namespace

TEST_CASE("progress polls the ifaces eps use; a peer that connects to us gets through",
          "[ucp_iface_activity]")
{
    for (const char *tls : {"posix,cma", "sysv", "tcp", "posix,sysv,cma,tcp,self"}) {
        INFO("UCX_TLS=" << tls);
        peer p;
        REQUIRE(p.init(tls) == UCS_OK);
        /* Nothing uses any iface yet. */
        CHECK(ifaces_named(p.worker, true).empty());
        CHECK(!ifaces_named(p.worker, false).empty());

        test::child_process child([tls](int fd) { return sender_child(fd, tls); });
        REQUIRE(test::send_blob(child.fd(), p.address()));
        std::vector<uint8_t> small(small_size), large(large_size);
        ucs_status_ptr_t rsmall = post_recv(p.worker, &small, 1);
        ucs_status_ptr_t rlarge = post_recv(p.worker, &large, 2);
        REQUIRE(!UCS_PTR_IS_ERR(rsmall));
        REQUIRE(!UCS_PTR_IS_ERR(rlarge));
        REQUIRE(test::send_value(child.fd(), uint8_t(1)));
        CHECK(test::poll_until(
            [&] {
            return (ucp_request_check_status(rsmall) != UCS_INPROGRESS) &&
                   (ucp_request_check_status(rlarge) != UCS_INPROGRESS);
            },
            [&] { ucp_worker_progress(p.worker); }));
        CHECK(p.wait(rsmall) == UCS_OK);
        CHECK(p.wait(rlarge) == UCS_OK);
        CHECK(check_pattern(small.data(), small.size(), 1));
        CHECK(check_pattern(large.data(), large.size(), 2));

        /* The ep our worker made for the child has lanes: those are
         * progressed; an iface no peer can use from another process is not. */
        CHECK(lanes_active(p.worker));
        const std::multiset<std::string> active = ifaces_named(p.worker, true);
        CHECK(!active.empty());
        CHECK(active.count("self") == 0);
        if (std::string(tls).find("posix") != std::string::npos) {
            CHECK(active.count("posix") == 1); /* the peer's lanes are shm too */
            CHECK(active.count("tcp") == 0);
            CHECK(active.count("sysv") == 0);
        }
        REQUIRE(test::send_value(child.fd(), uint8_t(1)));
        CHECK(child.wait() == 0);
    }
}

TEST_CASE("an ep to a peer makes its lanes' ifaces progressed at once", "[ucp_iface_activity]")
{
    peer a, b;
    REQUIRE(a.init("posix,sysv,cma,tcp,self") == UCS_OK);
    REQUIRE(b.init("posix,sysv,cma,tcp,self") == UCS_OK);
    REQUIRE(a.connect(b.address()) == UCS_OK);
    CHECK(lanes_active(a.worker));
    CHECK(a.ep->num_lanes > 0);
    CHECK(ifaces_named(a.worker, true).size() <= a.ep->num_lanes);
    /* b has no ep: it finds a's first message on an iface it looks at rarely. */
    uint64_t value = 0x1234, got = 0;
    ucp_request_param_t param{};
    ucs_status_ptr_t rreq = ucp_tag_recv_nbx(b.worker, &got, sizeof(got), 5, full_mask, &param);
    ucs_status_ptr_t sreq = ucp_tag_send_nbx(a.ep, &value, sizeof(value), 5, &param);
    CHECK(test::poll_until([&] { return ucp_request_check_status(rreq) != UCS_INPROGRESS; },
                           [&] {
        ucp_worker_progress(a.worker);
        ucp_worker_progress(b.worker);
    }));
    CHECK(b.wait(rreq) == UCS_OK);
    CHECK(a.wait(sreq) == UCS_OK);
    CHECK(got == 0x1234);
    CHECK(ifaces_named(b.worker, true).count("self") == 0);
}

namespace {

/* Sleeps on the efd between progress calls until `request` completes; false
 * on a lost wakeup (a sleep that timed out although one progress finishes
 * the request) or the overall deadline. */
bool sleep_until_done(ucp_worker_h worker, int efd, void *request, unsigned *sleeps)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (ucp_request_check_status(request) == UCS_INPROGRESS) {
        if (std::chrono::steady_clock::now() > deadline) {
            return false;
        }
        if (ucp_worker_progress(worker) != 0) {
            continue;
        }
        ucs_status_t status = ucp_worker_arm(worker);
        if (status == UCS_ERR_BUSY) {
            continue;
        }
        if (status != UCS_OK) {
            return false;
        }
        ++*sleeps;
        pollfd pfd{efd, POLLIN, 0};
        if (::poll(&pfd, 1, 5000) != 1) {
            ucp_worker_progress(worker);
            if (ucp_request_check_status(request) != UCS_INPROGRESS) {
                return false;
            }
        }
    }
    return true;
}

} // namespace

TEST_CASE("a sleeping worker without eps wakes for a peer that connects to it",
          "[ucp_iface_activity]")
{
    for (const char *tls : {"posix,cma", "sysv", "tcp"}) {
        INFO("UCX_TLS=" << tls);
        peer p;
        REQUIRE(p.init(tls, UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP) == UCS_OK);
        int efd = -1;
        REQUIRE(ucp_worker_get_efd(p.worker, &efd) == UCS_OK);
        test::child_process child([tls](int fd) { return sender_child(fd, tls); });
        REQUIRE(test::send_blob(child.fd(), p.address()));
        std::vector<uint8_t> small(small_size), large(large_size);
        ucs_status_ptr_t rsmall = post_recv(p.worker, &small, 1);
        ucs_status_ptr_t rlarge = post_recv(p.worker, &large, 2);
        REQUIRE(!UCS_PTR_IS_ERR(rsmall));
        REQUIRE(!UCS_PTR_IS_ERR(rlarge));
        CHECK(ifaces_named(p.worker, true).empty());
        REQUIRE(test::send_value(child.fd(), uint8_t(1)));
        unsigned sleeps = 0;
        CHECK(sleep_until_done(p.worker, efd, rsmall, &sleeps));
        CHECK(sleep_until_done(p.worker, efd, rlarge, &sleeps));
        CHECK(p.wait(rsmall) == UCS_OK);
        CHECK(p.wait(rlarge) == UCS_OK);
        CHECK(check_pattern(small.data(), small.size(), 1));
        CHECK(check_pattern(large.data(), large.size(), 2));
        CHECK(lanes_active(p.worker));
        REQUIRE(test::send_value(child.fd(), uint8_t(1)));
        CHECK(child.wait() == 0);
    }
}
