/*
 * The test transport ucp_test_rc on its own, through the uct API, between
 * two processes: eps connect to eps, a message for an ep not connected to
 * its sender is refused, delivery is in order, put/get/flush reach
 * registered memory only, and a dead peer fails the ep.
 */
#include "rc_transport.h"
#include "two_process.h"

#include <catch2/catch.hpp>

#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <uct/base/uct_worker.h>

#include <poll.h>

#include <csignal>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

namespace {

using ucp_test::rc_dropped_unconnected;

/* One rc iface in its own uct worker; the error handler records failures. */
struct rc_side {
    std::unique_ptr<uct::worker> worker;
    uct::component *component = nullptr;
    uct::md *md               = nullptr;
    uct::iface *iface         = nullptr;
    std::vector<std::pair<uct::ep *, ucs_status_t>> errors;
    std::vector<std::vector<uint8_t>> received;

    static ucs_status_t on_error(void *arg, uct::ep *ep, ucs_status_t status)
    {
        static_cast<rc_side *>(arg)->errors.emplace_back(ep, status);
        return UCS_OK;
    }

    static ucs_status_t on_am(void *arg, void *data, size_t length, unsigned)
    {
        const auto *p = static_cast<const uint8_t *>(data);
        static_cast<rc_side *>(arg)->received.emplace_back(p, p + length);
        return UCS_OK;
    }

    bool open()
    {
        worker = std::make_unique<uct::worker>(nullptr, UCS_THREAD_MODE_SINGLE);
        for (uct::component *c : uct::components()) {
            if (std::strcmp(c->name(), ucp_test::rc_tl) == 0) {
                component = c;
            }
        }
        if ((component == nullptr) || (component->md_open(ucp_test::rc_tl, &md) != UCS_OK)) {
            return false;
        }
        uct::iface_params params;
        params.tl_name         = ucp_test::rc_tl;
        params.dev_name        = ucp_test::rc_dev;
        params.err_handler     = on_error;
        params.err_handler_arg = this;
        if (md->iface_open(*worker, params, &iface) != UCS_OK) {
            return false;
        }
        return iface->set_am_handler(5, on_am, this, 0) == UCS_OK;
    }

    ~rc_side()
    {
        delete iface;
        delete md;
    }

    /* Device address then ep address, as the peer connects with them. */
    std::vector<uint8_t> ep_address(uct::ep *ep) const
    {
        const uct::iface_attr &a = iface->attr();
        std::vector<uint8_t> blob(a.device_addr_len + a.ep_addr_len);
        iface->get_device_address(blob.data());
        ep->get_address(blob.data() + a.device_addr_len);
        return blob;
    }

    ucs_status_t connect(uct::ep *ep, const std::vector<uint8_t> &peer) const
    {
        const size_t dev = iface->attr().device_addr_len;
        return ep->connect_to_ep(peer.data(), dev, peer.data() + dev, peer.size() - dev);
    }

    bool progress_until(const std::function<bool()> &done)
    {
        return test::poll_until(done, [this] { worker->progress(); });
    }
};

struct sequenced {
    uint32_t seq;
    uint8_t fill[60];
};

size_t pack_sequenced(void *dest, void *arg)
{
    std::memcpy(dest, arg, sizeof(sequenced));
    return sizeof(sequenced);
}

constexpr unsigned num_messages = 600;

/* Child: connects its ep only after it saw the parent's early message
 * refused, then checks every message in order, then exposes a buffer. */
int child_body(int fd)
{
    ucp_test::rc_enable_guard enable;
    rc_side side;
    TEST_CHILD_CHECK(side.open());
    uct::ep *ep = nullptr;
    TEST_CHILD_CHECK(side.iface->ep_create(&ep) == UCS_OK);
    std::unique_ptr<uct::ep> ep_owner(ep);
    TEST_CHILD_CHECK(test::send_blob(fd, side.ep_address(ep)));
    std::vector<uint8_t> peer;
    TEST_CHILD_CHECK(test::recv_blob(fd, &peer));

    /* The parent's ep is connected to ours, ours not yet to it. */
    TEST_CHILD_CHECK(test::sync_peer(fd));
    TEST_CHILD_CHECK(side.progress_until([] { return rc_dropped_unconnected >= 1; }));
    TEST_CHILD_CHECK(side.received.empty());
    TEST_CHILD_CHECK(side.connect(ep, peer) == UCS_OK);
    TEST_CHILD_CHECK(side.connect(ep, peer) == UCS_ERR_ALREADY_EXISTS);
    TEST_CHILD_CHECK(test::sync_peer(fd));

    TEST_CHILD_CHECK(side.progress_until([&] { return side.received.size() == num_messages; }));
    for (unsigned i = 0; i < num_messages; ++i) {
        const std::vector<uint8_t> &m = side.received[i];
        uint32_t seq;
        const size_t offset = (i % 2 == 0) ? sizeof(uint64_t) : 0; /* am_short: header word */
        TEST_CHILD_CHECK(m.size() >= offset + sizeof(seq));
        std::memcpy(&seq, m.data() + offset, sizeof(seq));
        TEST_CHILD_CHECK(seq == i);
    }
    TEST_CHILD_CHECK(rc_dropped_unconnected == 1);

    /* A registered buffer for the parent's put and get. */
    std::vector<uint8_t> buffer(100000, 0x11);
    uct::mem_h memh;
    TEST_CHILD_CHECK(side.md->mem_reg(buffer.data(), buffer.size(), 0, &memh) == UCS_OK);
    std::vector<uint8_t> rkey(side.md->attr().rkey_packed_size);
    TEST_CHILD_CHECK(side.md->mkey_pack(memh, rkey.data()) == UCS_OK);
    const auto address = reinterpret_cast<uintptr_t>(buffer.data());
    TEST_CHILD_CHECK(test::send_blob(fd, rkey));
    TEST_CHILD_CHECK(test::send_value(fd, address));
    /* Progress (the target executes) until the parent is done. */
    TEST_CHILD_CHECK(test::poll_until(
        [&] {
        pollfd pfd{fd, POLLIN, 0};
        return ::poll(&pfd, 1, 0) > 0;
        },
        [&] { side.worker->progress(); }));
    uint8_t done;
    TEST_CHILD_CHECK(test::recv_value(fd, &done));
    TEST_CHILD_CHECK(test::sync_peer(fd));
    for (size_t i = 0; i < 5000; ++i) {
        TEST_CHILD_CHECK(buffer[1000 + i] == uint8_t(i * 7));
    }
    side.md->mem_dereg(memh);
    return 0;
}

} // namespace

TEST_CASE("ucp_test_rc: eps connect to eps, refuse strangers, keep order, RMA and peer failure",
          "[ucp_test_rc]")
{
    ucp_test::rc_enable_guard enable;
    rc_dropped_unconnected = 0;
    test::child_process child(child_body);
    rc_side side;
    REQUIRE(side.open());
    CHECK((side.iface->attr().flags & uct::iface_flag::CONNECT_TO_EP) != 0);
    CHECK((side.iface->attr().flags & uct::iface_flag::CONNECT_TO_IFACE) == 0);

    uct::ep *ep = nullptr;
    REQUIRE(side.iface->ep_create(&ep) == UCS_OK);
    std::unique_ptr<uct::ep> ep_owner(ep);
    /* Not connected yet: no resources, as the uct contract says. */
    CHECK(ep->am_short(5, 0, nullptr, 0) == UCS_ERR_NO_RESOURCE);

    std::vector<uint8_t> peer;
    REQUIRE(test::recv_blob(child.fd(), &peer));
    REQUIRE(test::send_blob(child.fd(), side.ep_address(ep)));
    REQUIRE(side.connect(ep, peer) == UCS_OK);

    /* An early message: the child's ep is not connected to ours yet. */
    sequenced early{999, {}};
    REQUIRE(ep->am_bcopy(5, pack_sequenced, &early, 0) == ssize_t(sizeof(early)));
    REQUIRE(test::sync_peer(child.fd()));
    REQUIRE(test::sync_peer(child.fd())); /* the child connected */

    for (unsigned i = 0; i < num_messages; ++i) {
        sequenced m{i, {}};
        std::memset(m.fill, int(i), sizeof(m.fill));
        ucs_status_t status;
        do {
            if (i % 2 == 0) {
                status = ep->am_short(5, 0, &m, sizeof(m));
            } else {
                ssize_t packed = ep->am_bcopy(5, pack_sequenced, &m, 0);
                status         = (packed < 0) ? ucs_status_t(packed) : UCS_OK;
            }
            if (status == UCS_ERR_NO_RESOURCE) {
                side.worker->progress();
            }
        } while (status == UCS_ERR_NO_RESOURCE);
        REQUIRE(status == UCS_OK);
    }

    /* The last messages may wait in our ep's backlog (the child's queue was
     * full): progress sends them while the child has not answered. */
    REQUIRE(side.progress_until([&] { return test::readable(child.fd()); }));

    /* Put into the child's registered buffer, flush, read it back. */
    std::vector<uint8_t> rkey;
    uintptr_t address = 0;
    REQUIRE(test::recv_blob(child.fd(), &rkey));
    REQUIRE(test::recv_value(child.fd(), &address));
    uct::rkey_bundle bundle;
    REQUIRE(side.component->rkey_unpack(rkey.data(), rkey.size(), &bundle) == UCS_OK);
    std::vector<uint8_t> data(5000);
    for (size_t i = 0; i < data.size(); ++i) {
        data[i] = uint8_t(i * 7);
    }
    const uct::iov put_iov{data.data(), data.size(), nullptr};
    REQUIRE(ep->put_zcopy(&put_iov, 1, address + 1000, bundle.rkey, nullptr) == UCS_OK);
    struct flag_comp : uct::completion {
        int fired = 0;
    } comp;
    comp.func   = [](uct::completion *c) { ++static_cast<flag_comp *>(c)->fired; };
    comp.count  = 1;
    comp.status = UCS_OK;
    REQUIRE(ep->flush(0, &comp) == UCS_INPROGRESS);
    REQUIRE(side.progress_until([&] { return comp.fired == 1; }));
    CHECK(comp.status == UCS_OK);

    std::vector<uint8_t> back(5000);
    const uct::iov get_iov{back.data(), back.size(), nullptr};
    comp.count = 1;
    REQUIRE(ep->get_zcopy(&get_iov, 1, address + 1000, bundle.rkey, &comp) == UCS_INPROGRESS);
    REQUIRE(side.progress_until([&] { return comp.fired == 2; }));
    CHECK(comp.status == UCS_OK);
    CHECK(back == data);

    /* Outside the registration: the target refuses, our ep fails. */
    CHECK(side.errors.empty());
    REQUIRE(ep->put_zcopy(&put_iov, 1, address + 99000, bundle.rkey, nullptr) == UCS_OK);
    REQUIRE(side.progress_until([&] { return !side.errors.empty(); }));
    CHECK(side.errors[0].first == ep);
    CHECK(side.errors[0].second == UCS_ERR_INVALID_ADDR);
    side.component->rkey_release(bundle);

    REQUIRE(test::send_value(child.fd(), uint8_t(1)));
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(child.wait() == 0);
}

TEST_CASE("ucp_test_rc: a dead peer fails the ep", "[ucp_test_rc]")
{
    ucp_test::rc_enable_guard enable;
    test::child_process child([](int fd) {
        ucp_test::rc_enable_guard guard;
        rc_side side;
        TEST_CHILD_CHECK(side.open());
        uct::ep *ep = nullptr;
        TEST_CHILD_CHECK(side.iface->ep_create(&ep) == UCS_OK);
        TEST_CHILD_CHECK(test::send_blob(fd, side.ep_address(ep)));
        std::vector<uint8_t> peer;
        TEST_CHILD_CHECK(test::recv_blob(fd, &peer));
        TEST_CHILD_CHECK(side.connect(ep, peer) == UCS_OK);
        TEST_CHILD_CHECK(test::sync_peer(fd));
        test::sync_peer(fd); /* killed while waiting here */
        return 0;
    });
    rc_side side;
    REQUIRE(side.open());
    uct::ep *ep = nullptr;
    REQUIRE(side.iface->ep_create(&ep) == UCS_OK);
    std::unique_ptr<uct::ep> ep_owner(ep);
    std::vector<uint8_t> peer;
    REQUIRE(test::recv_blob(child.fd(), &peer));
    REQUIRE(test::send_blob(child.fd(), side.ep_address(ep)));
    REQUIRE(side.connect(ep, peer) == UCS_OK);
    REQUIRE(test::sync_peer(child.fd()));
    child.kill();
    CHECK(child.wait() == 128 + SIGKILL);

    /* Keepalive finds it (the socket name is gone with the process). */
    REQUIRE(ep->check(0, nullptr) == UCS_OK);
    REQUIRE(side.progress_until([&] { return !side.errors.empty(); }));
    CHECK(side.errors[0].first == ep);
    CHECK(side.errors[0].second == UCS_ERR_CONNECTION_RESET);
    CHECK(ep->am_short(5, 0, nullptr, 0) == UCS_ERR_CONNECTION_RESET);
}
