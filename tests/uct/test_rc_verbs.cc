/*
 * What only rc_verbs has (the conformance suite covers the interface
 * contract): UCX_RC_VERBS_* reaching the iface, connecting a QP (address
 * checks, once only, nothing sent before), ranges outside a remote key
 * refused early, a remote access error failing the ep once, the send CQ
 * never overrun (also by a failed QP's flushed requests), and wakeup
 * through the completion channel. Runs on a verbs
 * device: on CI the emulated one (tests/verbs_emu, meson test rc_verbs);
 * without a device each test skips with a message.
 */
#include <catch2/catch.hpp>

#include "../ucs/config_test_util.h"
#include "uct_test_util.h"

#include <poll.h>

#include <chrono>
#include <memory>
#include <cstring>
#include <string>
#include <vector>

namespace {

using config_test::config_file_scope;
using config_test::env_guard;
using config_test::log_capture;

bool have_rc_verbs()
{
    test::uct_entity probe("rc_verbs");
    if (!probe.ok()) {
        WARN("rc_verbs: skipped: no verbs device here ("
             << probe.error() << "); meson test rc_verbs runs these on the emulated device");
        return false;
    }
    return true;
}

/* What an ep's error handler heard. */
struct error_log {
    std::vector<std::pair<uct::ep *, ucs_status_t>> reports;

    static ucs_status_t on_error(void *arg, uct::ep *ep, ucs_status_t status)
    {
        static_cast<error_log *>(arg)->reports.emplace_back(ep, status);
        return UCS_OK;
    }
};

/* Two eps of one iface connected to each other (RC loopback, as on a real port). */
struct loopback {
    error_log errors;
    test::uct_entity entity{"rc_verbs", "", 0, "", error_log::on_error, &errors};
    uct::ep *a = nullptr;
    uct::ep *b = nullptr;

    loopback()
    {
        REQUIRE(entity.ok());
        REQUIRE(entity.iface().ep_create(&a) == UCS_OK);
        REQUIRE(entity.iface().ep_create(&b) == UCS_OK);
    }

    ~loopback()
    {
        delete a;
        delete b;
    }

    std::vector<uint8_t> device_address() const { return entity.addresses().device; }

    static std::vector<uint8_t> ep_address(const test::uct_entity &e, uct::ep *ep)
    {
        std::vector<uint8_t> addr(e.attr().ep_addr_len);
        REQUIRE(ep->get_address(addr.data()) == UCS_OK);
        return addr;
    }

    void connect()
    {
        const auto dev = device_address();
        const auto ea = ep_address(entity, a), eb = ep_address(entity, b);
        REQUIRE(a->connect_to_ep(dev.data(), dev.size(), eb.data(), eb.size()) == UCS_OK);
        REQUIRE(b->connect_to_ep(dev.data(), dev.size(), ea.data(), ea.size()) == UCS_OK);
    }

    template <typename Pred>
    bool progress_until(Pred done)
    {
        return entity.progress_until(done);
    }
};

struct am_counter {
    std::vector<std::vector<uint8_t>> messages;

    static ucs_status_t on_am(void *arg, void *data, size_t length, unsigned)
    {
        auto *p = static_cast<const uint8_t *>(data);
        static_cast<am_counter *>(arg)->messages.emplace_back(p, p + length);
        return UCS_OK;
    }
};

} // namespace

TEST_CASE("UCX_RC_VERBS_* variables configure the rc_verbs iface", "[rc_verbs]")
{
    if (!have_rc_verbs()) {
        return;
    }
    config_file_scope no_file;
    env_guard env;
    env.set("UCX_RC_VERBS_TX_MIN_INLINE", "128");
    env.set("UCX_RC_VERBS_SEG_SIZE", "4096");
    env.set("UCX_RC_VERBS_TX_MIN_SGE", "3");
    {
        test::uct_entity e("rc_verbs");
        REQUIRE(e.ok());
        CHECK(e.attr().am.max_short == 127); /* the AM id byte rides inline too */
        CHECK(e.attr().put.max_short == 128);
        CHECK(e.attr().am.max_bcopy == 4095);
        CHECK(e.attr().put.max_bcopy == 4096);
        CHECK(e.attr().am.max_iov == 2); /* one entry carries the header */
        CHECK(e.attr().put.max_iov == 3);
    }
    env.set("UCX_MPI_RC_VERBS_SEG_SIZE", "2048");
    {
        test::uct_entity e("rc_verbs", "", 0, "MPI_");
        REQUIRE(e.ok());
        CHECK(e.attr().am.max_bcopy == 2047);
    }
    for (const char *bad : {"UCX_RC_VERBS_TX_MIN_SGE=0", "UCX_RC_VERBS_SEG_SIZE=10",
                            "UCX_RC_VERBS_RETRY_COUNT=8", "UCX_IB_GID_INDEX=300"}) {
        INFO(bad);
        const std::string setting(bad);
        const size_t eq = setting.find('=');
        env_guard one;
        one.set(setting.substr(0, eq), setting.substr(eq + 1));
        log_capture log{UCS_LOG_LEVEL_ERROR};
        test::uct_entity e("rc_verbs");
        CHECK_FALSE(e.ok());
        CHECK(log.text().find(setting.substr(4, eq - 4)) != std::string::npos);
    }
}

TEST_CASE("rc_verbs connects a QP once, to a well-formed peer address", "[rc_verbs]")
{
    if (!have_rc_verbs()) {
        return;
    }
    loopback l;
    const auto dev        = l.device_address();
    const auto eb         = loopback::ep_address(l.entity, l.b);
    const uint64_t header = 7;

    /* Unconnected: nothing goes out. */
    CHECK(l.a->am_short(3, header, nullptr, 0) == UCS_ERR_NO_RESOURCE);
    /* Lengths are what came off the wire: one byte short or long is refused. */
    CHECK(l.a->connect_to_ep(dev.data(), dev.size() - 1, eb.data(), eb.size()) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(l.a->connect_to_ep(dev.data(), dev.size(), eb.data(), eb.size() - 1) ==
          UCS_ERR_INVALID_PARAM);
    std::vector<uint8_t> long_ep(eb);
    long_ep.push_back(0);
    CHECK(l.a->connect_to_ep(dev.data(), dev.size(), long_ep.data(), long_ep.size()) ==
          UCS_ERR_INVALID_PARAM);
    /* A QP number above 24 bits does not exist. */
    std::vector<uint8_t> bad_qpn(eb);
    bad_qpn[3] = 0xff;
    CHECK(l.a->connect_to_ep(dev.data(), dev.size(), bad_qpn.data(), bad_qpn.size()) ==
          UCS_ERR_INVALID_PARAM);

    l.connect();
    CHECK(l.a->connect_to_ep(dev.data(), dev.size(), eb.data(), eb.size()) ==
          UCS_ERR_ALREADY_EXISTS);

    am_counter sink;
    REQUIRE(l.entity.iface().set_am_handler(3, am_counter::on_am, &sink, 0) == UCS_OK);
    const char text[] = "over the queue pair";
    REQUIRE(l.a->am_short(3, header, text, sizeof(text)) == UCS_OK);
    REQUIRE(l.progress_until([&] { return !sink.messages.empty(); }));
    REQUIRE(sink.messages[0].size() == sizeof(header) + sizeof(text));
    CHECK(std::memcmp(sink.messages[0].data(), &header, sizeof(header)) == 0);
    CHECK(std::memcmp(sink.messages[0].data() + sizeof(header), text, sizeof(text)) == 0);
}

TEST_CASE("rc_verbs: a range outside the key is refused, a dead key fails the ep once",
          "[rc_verbs]")
{
    if (!have_rc_verbs()) {
        return;
    }
    loopback l;
    l.connect();
    std::vector<uint8_t> region(4096, 0);
    uct::mem_h memh = nullptr;
    REQUIRE(l.entity.md().mem_reg(region.data(), region.size(), 0, &memh) == UCS_OK);
    std::vector<uint8_t> packed(l.entity.md().attr().rkey_packed_size);
    REQUIRE(l.entity.md().mkey_pack(memh, packed.data()) == UCS_OK);
    uct::rkey_bundle rkey;
    REQUIRE(l.entity.component().rkey_unpack(packed.data(), packed.size(), &rkey) == UCS_OK);

    const uint64_t base  = uint64_t(uintptr_t(region.data()));
    const uint64_t value = 0x1122334455667788ull;
    auto flush           = [&] {
        test::counted_comp flushed;
        ucs_status_t status = l.a->flush(0, &flushed);
        if (status != UCS_INPROGRESS) {
            return status;
        }
        return l.progress_until([&] { return flushed.fired == 1; }) ? flushed.last :
                                                                                UCS_ERR_TIMED_OUT;
    };

    /* One byte past the key's range: refused here, before the device would
     * fail the QP; the ep works on. */
    uint64_t result = 0;
    test::counted_comp refused;
    CHECK(l.a->put_short(&value, sizeof(value), base + region.size() - 7, rkey.rkey) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(l.a->atomic_fetch(uct::atomic_op::ADD, 8, 1, 0, &result, base - 8, rkey.rkey, &refused) ==
          UCS_ERR_INVALID_PARAM);
    REQUIRE(l.a->put_short(&value, sizeof(value), base + 8, rkey.rkey) == UCS_OK);
    CHECK(flush() == UCS_OK);
    CHECK(std::memcmp(region.data() + 8, &value, sizeof(value)) == 0);
    CHECK(refused.fired == 0);
    CHECK(l.errors.reports.empty());

    /* The key dies with its registration: the device refuses the access and
     * the QP fails, with the fetch queued behind the put. */
    REQUIRE(l.entity.md().mem_dereg(memh) == UCS_OK);
    test::counted_comp fetched;
    REQUIRE(l.a->put_short(&value, sizeof(value), base + 16, rkey.rkey) == UCS_OK);
    CHECK(l.a->atomic_fetch(uct::atomic_op::ADD, 8, 1, 0, &result, base, rkey.rkey, &fetched) ==
          UCS_INPROGRESS);
    REQUIRE(l.progress_until([&] { return !l.errors.reports.empty(); }));
    CHECK(l.errors.reports.size() == 1);
    CHECK(l.errors.reports[0].first == l.a);
    CHECK(l.errors.reports[0].second == UCS_ERR_INVALID_ADDR);
    CHECK(fetched.fired == 1);
    CHECK(fetched.last != UCS_OK);
    CHECK(result == 0);
    uint64_t word;
    std::memcpy(&word, region.data() + 16, sizeof(word));
    CHECK(word == 0);
    /* Later operations and flush return the error; nothing is reported again. */
    CHECK(l.a->put_short(&value, sizeof(value), base, rkey.rkey) == UCS_ERR_INVALID_ADDR);
    CHECK(l.a->flush(0, nullptr) == UCS_ERR_INVALID_ADDR);
    for (int i = 0; i < 100; ++i) {
        l.entity.progress();
    }
    CHECK(l.errors.reports.size() == 1);
    l.entity.component().rkey_release(rkey);
}

TEST_CASE("rc_verbs never overruns a small send CQ, also after a QP failed", "[rc_verbs]")
{
    if (!have_rc_verbs()) {
        return;
    }
    config_file_scope no_file;
    env_guard env;
    env.set("UCX_RC_VERBS_TX_CQ_LEN", "4");
    log_capture log{UCS_LOG_LEVEL_ERROR};
    loopback l;
    l.connect();

    /* A QP fails with unsignaled requests queued: the device completes
     * them all with errors, which took no CQ entry when posted. */
    std::vector<uint8_t> region(4096, 0);
    uct::mem_h memh = nullptr;
    REQUIRE(l.entity.md().mem_reg(region.data(), region.size(), 0, &memh) == UCS_OK);
    std::vector<uint8_t> packed(l.entity.md().attr().rkey_packed_size);
    REQUIRE(l.entity.md().mkey_pack(memh, packed.data()) == UCS_OK);
    uct::rkey_bundle rkey;
    REQUIRE(l.entity.component().rkey_unpack(packed.data(), packed.size(), &rkey) == UCS_OK);
    REQUIRE(l.entity.md().mem_dereg(memh) == UCS_OK);
    const uint64_t base = uint64_t(uintptr_t(region.data()));
    unsigned posted     = 0;
    for (; posted < 20; ++posted) {
        const uint64_t value = posted;
        if (l.a->put_short(&value, sizeof(value), base + 8 * (posted % 8), rkey.rkey) != UCS_OK) {
            break; /* the CQ's 4 entries are taken */
        }
    }
    CHECK(posted >= 2);
    REQUIRE(l.progress_until([&] { return !l.errors.reports.empty(); }));
    for (int i = 0; i < 100; ++i) {
        l.entity.progress();
    }

    /* Two more eps of the same iface carry 500 messages through the
     * 4-entry CQ, each one signaled (a completion waits for it). */
    uct::ep *c = nullptr, *d = nullptr;
    REQUIRE(l.entity.iface().ep_create(&c) == UCS_OK);
    REQUIRE(l.entity.iface().ep_create(&d) == UCS_OK);
    std::unique_ptr<uct::ep> own_c(c), own_d(d);
    const auto dev = l.device_address();
    const auto ec = loopback::ep_address(l.entity, c), ed = loopback::ep_address(l.entity, d);
    REQUIRE(c->connect_to_ep(dev.data(), dev.size(), ed.data(), ed.size()) == UCS_OK);
    REQUIRE(d->connect_to_ep(dev.data(), dev.size(), ec.data(), ec.size()) == UCS_OK);
    am_counter sink;
    REQUIRE(l.entity.iface().set_am_handler(6, am_counter::on_am, &sink, 0) == UCS_OK);
    std::vector<uint8_t> payload(64, 0x5a);
    std::vector<uint8_t> header(8, 0);
    test::counted_comp done(500);
    std::vector<uct::iov> none;
    unsigned sent = 0;
    REQUIRE(l.progress_until([&] {
        while (sent < 500) {
            const ucs_status_t status = c->am_zcopy(6, header.data(), 8, nullptr, 0, 0, &done);
            if (status == UCS_ERR_NO_RESOURCE) {
                return false;
            }
            REQUIRE(status == UCS_INPROGRESS);
            ++sent;
        }
        return (done.fired == 1) && (sink.messages.size() == 500);
    }));
    CHECK(done.last == UCS_OK);
    CHECK(log.text().find("overran") == std::string::npos);
    l.entity.component().rkey_release(rkey);
}

TEST_CASE("rc_verbs: an ep waiting for send CQ entries gets those another ep's "
          "unsignaled requests hold",
          "[rc_verbs]")
{
    if (!have_rc_verbs()) {
        return;
    }
    config_file_scope no_file;
    env_guard env;
    env.set("UCX_RC_VERBS_TX_CQ_LEN", "4");
    loopback l;
    l.connect();
    am_counter sink;
    REQUIRE(l.entity.iface().set_am_handler(6, am_counter::on_am, &sink, 0) == UCS_OK);

    /* Three unsignaled sends of a hold all four entries (one for the
     * signaled request that will close their batch). */
    for (int i = 0; i < 3; ++i) {
        REQUIRE(l.a->am_short(6, uint64_t(i), nullptr, 0) == UCS_OK);
    }
    std::vector<uint8_t> header(8, 1);
    test::counted_comp done;
    REQUIRE(l.b->am_zcopy(6, header.data(), 8, nullptr, 0, 0, &done) == UCS_ERR_NO_RESOURCE);

    /* b queues; nothing more is sent on a, yet b's request goes out. */
    struct retry_req : uct::pending_req {
        uct::ep *ep;
        std::vector<uint8_t> *header;
        test::counted_comp *comp;
        bool sent = false;
    } req;
    req.func = [](uct::pending_req *self) {
        auto *r             = static_cast<retry_req *>(self);
        ucs_status_t status = r->ep->am_zcopy(6, r->header->data(), 8, nullptr, 0, 0, r->comp);
        r->sent             = (status == UCS_INPROGRESS);
        return (status == UCS_ERR_NO_RESOURCE) ? status : UCS_OK;
    };
    req.ep     = l.b;
    req.header = &header;
    req.comp   = &done;
    REQUIRE(l.b->pending_add(&req, 0) == UCS_OK);
    REQUIRE(l.progress_until([&] { return (done.fired == 1) && (sink.messages.size() == 4); }));
    CHECK(req.sent);
    CHECK(done.last == UCS_OK);
}

TEST_CASE("rc_verbs wakes a sleeping worker through its completion channel", "[rc_verbs]")
{
    if (!have_rc_verbs()) {
        return;
    }
    loopback l;
    l.connect();
    am_counter sink;
    REQUIRE(l.entity.iface().set_am_handler(5, am_counter::on_am, &sink, 0) == UCS_OK);
    REQUIRE((l.entity.attr().event_flags & uct::event_flag::FD) != 0);
    int fd = -1;
    REQUIRE(l.entity.iface().event_fd_get(&fd) == UCS_OK);

    const unsigned events = uct::event_flag::RECV | uct::event_flag::SEND_COMP;
    /* Idle: arming succeeds and the fd stays quiet. */
    REQUIRE(l.entity.iface().event_arm(events) == UCS_OK);
    pollfd pfd{fd, POLLIN, 0};
    CHECK(::poll(&pfd, 1, 0) == 0);

    /* A message arrives: the fd becomes readable, arming again says busy
     * until progress delivers it. */
    REQUIRE(l.a->am_short(5, 42, nullptr, 0) == UCS_OK);
    REQUIRE(::poll(&pfd, 1, 10000) == 1);
    CHECK(l.entity.iface().event_arm(events) == UCS_ERR_BUSY);
    REQUIRE(l.progress_until([&] { return sink.messages.size() == 1; }));
    for (int i = 0; i < 10; ++i) {
        l.entity.progress();
    }
    CHECK(l.entity.iface().event_arm(events) == UCS_OK);
    CHECK(::poll(&pfd, 1, 0) == 0);
}
