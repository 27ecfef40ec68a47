/*
 * The tag API beyond plain send/recv: probe and msg_recv, sync sends,
 * iov and generic datatypes, cancel, request memory semantics, and a peer
 * that dies with requests outstanding.
 */
#include "generic_dt_util.h"
#include "ucp_peer.h"
#include "ucp_test_util.h"

#include <ucp/core/ucp_address.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <random>

using namespace ucp_test;

namespace {

constexpr ucp_tag_t full_mask = ~ucp_tag_t(0);
const char *const transports[] = {"posix,cma", "tcp"};

/* Child that connects, sends the sizes it is told, then waits. */
int sender_child(int fd, const char *tls, bool sync)
{
    peer p;
    TEST_CHILD_CHECK(p.init(tls) == UCS_OK);
    TEST_CHILD_CHECK(p.connect_over(fd));
    for (;;) {
        size_t size = 0;
        TEST_CHILD_CHECK(p.recv_value_progress(fd, &size));
        if (size == SIZE_MAX) {
            break;
        }
        std::vector<uint8_t> buffer(size + 1);
        fill_pattern(buffer.data(), size, size);
        ucp_request_param_t param{};
        ucs_status_ptr_t req = sync ?
            ucp_tag_send_sync_nbx(p.ep, buffer.data(), size, size, &param) :
            ucp_tag_send_nbx(p.ep, buffer.data(), size, size, &param);
        TEST_CHILD_CHECK(p.wait(req) == UCS_OK);
        TEST_CHILD_CHECK(test::send_value(fd, size));
    }
    return 0;
}

} // namespace

TEST_CASE("probe without and with remove, then msg_recv", "[ucp_tag_ops]")
{
    for (const char *tls : transports) {
        INFO("UCX_TLS=" << tls);
        peer p;
        REQUIRE(p.init(tls) == UCS_OK);
        test::child_process child([tls](int fd) { return sender_child(fd, tls, false); });
        REQUIRE(p.connect_over(child.fd()));
        for (size_t size : {size_t(5), size_t(3000), size_t(20000), size_t(300000)}) {
            INFO("size " << size);
            REQUIRE(test::send_value(child.fd(), size));
            ucp_tag_recv_info_t info{};
            ucp_tag_message_h msg = nullptr;
            REQUIRE(test::poll_until([&] {
                msg = ucp_tag_probe_nb(p.worker, size, full_mask, 0, &info);
                return msg != nullptr;
            }, [&] { ucp_worker_progress(p.worker); }));
            CHECK(info.length == size);
            CHECK(info.sender_tag == size);
            /* Without remove the message stays: probe sees it again. */
            ucp_tag_recv_info_t again{};
            msg = ucp_tag_probe_nb(p.worker, size, full_mask, 1, &again);
            REQUIRE(msg != nullptr);
            CHECK(again.length == size);
            /* Removed: neither probe nor a receive with its tag sees it. */
            CHECK(ucp_tag_probe_nb(p.worker, size, full_mask, 0, &again) == nullptr);

            std::vector<uint8_t> buffer(size);
            ucp_request_param_t param{};
            param.op_attr_mask       = UCP_OP_ATTR_FIELD_RECV_INFO;
            param.recv_info.tag_info = &info;
            ucs_status_ptr_t req = ucp_tag_msg_recv_nbx(p.worker, buffer.data(), size, msg,
                                                        &param);
            REQUIRE(p.wait(req) == UCS_OK);
            CHECK(check_pattern(buffer.data(), size, size));
            size_t done;
            REQUIRE(test::recv_value(child.fd(), &done));
        }
        REQUIRE(test::send_value(child.fd(), SIZE_MAX));
        CHECK(child.wait() == 0);
    }
}

TEST_CASE("sync send completes only after the receive matched", "[ucp_tag_ops]")
{
    for (const char *tls : transports) {
        INFO("UCX_TLS=" << tls);
        peer p;
        REQUIRE(p.init(tls) == UCS_OK);
        test::child_process child([tls](int fd) {
            peer s;
            TEST_CHILD_CHECK(s.init(tls) == UCS_OK);
            TEST_CHILD_CHECK(s.connect_over(fd));
            for (size_t size : {size_t(8), size_t(5000), size_t(50000), size_t(500000)}) {
                std::vector<uint8_t> buffer(size);
                fill_pattern(buffer.data(), size, size);
                ucp_request_param_t param{};
                ucs_status_ptr_t req = ucp_tag_send_sync_nbx(s.ep, buffer.data(), size,
                                                             size, &param);
                TEST_CHILD_CHECK(req != nullptr);
                TEST_CHILD_CHECK(!UCS_PTR_IS_ERR(req));
                /* The receiver posts only after hearing from us: until then
                 * progress must not complete the send. */
                for (int i = 0; i < 20000; ++i) {
                    ucp_worker_progress(s.worker);
                }
                TEST_CHILD_CHECK(ucp_request_check_status(req) == UCS_INPROGRESS);
                TEST_CHILD_CHECK(test::send_value(fd, size));
                TEST_CHILD_CHECK(s.wait(req) == UCS_OK);
                TEST_CHILD_CHECK(test::send_value(fd, size));
            }
            return 0;
        });
        REQUIRE(p.connect_over(child.fd()));
        for (int n = 0; n < 4; ++n) {
            size_t size = 0;
            REQUIRE(test::recv_value(child.fd(), &size));
            std::vector<uint8_t> buffer(size);
            ucp_tag_recv_info_t info{};
            REQUIRE(p.recv(buffer.data(), size, size, full_mask, &info) == UCS_OK);
            CHECK(check_pattern(buffer.data(), size, size));
            REQUIRE(test::recv_value(child.fd(), &size));
        }
        CHECK(child.wait() == 0);
    }
}

namespace {

/* A generic datatype over a strided array: every other byte is data. */
struct strided {
    uint8_t *base;
    size_t  count;      /* data bytes */
};

void *strided_start_pack(void *, const void *buffer, size_t count)
{
    return new strided{static_cast<uint8_t*>(const_cast<void*>(buffer)), count};
}

void *strided_start_unpack(void *, void *buffer, size_t count)
{
    return new strided{static_cast<uint8_t*>(buffer), count};
}

size_t strided_packed_size(void *state)
{
    return static_cast<strided*>(state)->count;
}

size_t strided_pack(void *state, size_t offset, void *dest, size_t max_length)
{
    auto *s = static_cast<strided*>(state);
    size_t n = std::min(max_length, s->count - offset);
    for (size_t i = 0; i < n; ++i) {
        static_cast<uint8_t*>(dest)[i] = s->base[2 * (offset + i)];
    }
    return n;
}

ucs_status_t strided_unpack(void *state, size_t offset, const void *src, size_t length)
{
    auto *s = static_cast<strided*>(state);
    if (offset + length > s->count) {
        return UCS_ERR_MESSAGE_TRUNCATED;
    }
    for (size_t i = 0; i < length; ++i) {
        s->base[2 * (offset + i)] = static_cast<const uint8_t*>(src)[i];
    }
    return UCS_OK;
}

void strided_finish(void *state)
{
    delete static_cast<strided*>(state);
}

ucp_datatype_t make_strided()
{
    ucp_generic_dt_ops_t ops{};
    ops.start_pack   = strided_start_pack;
    ops.start_unpack = strided_start_unpack;
    ops.packed_size  = strided_packed_size;
    ops.pack         = strided_pack;
    ops.unpack       = strided_unpack;
    ops.finish       = strided_finish;
    ucp_datatype_t dt = 0;
    if (ucp_dt_create_generic(&ops, nullptr, &dt) != UCS_OK) {
        return 0;
    }
    return dt;
}

enum class layout { contig, iov, generic };

/* A message of `size` bytes laid out as `kind`: buffer + count + dt. */
struct laid_out {
    std::vector<uint8_t>     storage;
    std::vector<ucp_dt_iov_t> iov;
    void                     *buffer;
    size_t                   count;
    ucp_datatype_t           dt;

    laid_out(layout kind, size_t size, ucp_datatype_t generic_dt)
    {
        switch (kind) {
        case layout::contig:
            storage.resize(size + 1);
            buffer = storage.data();
            count  = size;
            dt     = ucp_dt_make_contig(1);
            break;
        case layout::iov: {
            storage.resize(size + 1);
            size_t offset = 0, piece = 1;
            while (offset < size) {     /* growing pieces, some empty */
                size_t n = std::min(piece, size - offset);
                iov.push_back({storage.data() + offset, n});
                iov.push_back({storage.data() + offset + n, 0});
                offset += n;
                piece   = piece * 3 + 1;
            }
            buffer = iov.data();
            count  = iov.size();
            dt     = ucp_dt_make_iov();
            break;
        }
        case layout::generic:
            storage.resize(2 * size + 1);
            buffer = storage.data();
            count  = size;
            dt     = generic_dt;
            break;
        }
    }

    /* The message bytes, whatever the layout. */
    std::vector<uint8_t> bytes(layout kind, size_t size) const
    {
        if (kind != layout::generic) {
            return {storage.begin(), storage.begin() + long(size)};
        }
        std::vector<uint8_t> out(size);
        for (size_t i = 0; i < size; ++i) {
            out[i] = storage[2 * i];
        }
        return out;
    }

    void fill(layout kind, size_t size, uint64_t seed)
    {
        std::vector<uint8_t> pattern(size);
        fill_pattern(pattern.data(), size, seed);
        for (size_t i = 0; i < size; ++i) {
            storage[(kind == layout::generic) ? 2 * i : i] = pattern[i];
        }
    }
};

} // namespace

TEST_CASE("iov and generic datatypes in every combination", "[ucp_tag_ops]")
{
    const ucp_datatype_t generic_dt = make_strided();
    REQUIRE(generic_dt != 0);
    const layout kinds[] = {layout::contig, layout::iov, layout::generic};
    const size_t sizes[] = {0, 10, 100, 5000, 20000, 100000};
    for (const char *tls : {"posix,cma", "tcp", "self"}) {
        INFO("UCX_TLS=" << tls);
        peer p;
        REQUIRE(p.init(tls) == UCS_OK);
        REQUIRE(p.connect(p.address()) == UCS_OK);
        for (layout skind : kinds) {
            for (layout rkind : kinds) {
                for (size_t size : sizes) {
                    INFO("send " << int(skind) << " recv " << int(rkind) << " size " << size);
                    laid_out out(skind, size, generic_dt), in(rkind, size, generic_dt);
                    out.fill(skind, size, size + 3);
                    ucp_request_param_t rparam{};
                    rparam.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
                    rparam.datatype     = in.dt;
                    ucs_status_ptr_t rreq = ucp_tag_recv_nbx(p.worker, in.buffer, in.count,
                                                             1, full_mask, &rparam);
                    REQUIRE(!UCS_PTR_IS_ERR(rreq));
                    REQUIRE(p.send(out.buffer, out.count, 1, out.dt) == UCS_OK);
                    REQUIRE(p.wait(rreq) == UCS_OK);
                    std::vector<uint8_t> expect(size);
                    fill_pattern(expect.data(), size, size + 3);
                    CHECK(in.bytes(rkind, size) == expect);
                }
            }
        }
    }
    ucp_dt_destroy(generic_dt);
}

TEST_CASE("truncated receive reports MESSAGE_TRUNCATED", "[ucp_tag_ops]")
{
    for (const char *tls : {"self", "posix,cma"}) {
        INFO("UCX_TLS=" << tls);
        peer p;
        REQUIRE(p.init(tls) == UCS_OK);
        REQUIRE(p.connect(p.address()) == UCS_OK);
        for (size_t size : {size_t(100), size_t(20000), size_t(200000)}) {
            std::vector<uint8_t> out(size, 7), in(size / 2 + 1, 0);
            ucp_request_param_t rparam{};
            ucs_status_ptr_t rreq = ucp_tag_recv_nbx(p.worker, in.data(), size / 2, 3,
                                                     full_mask, &rparam);
            REQUIRE(!UCS_PTR_IS_ERR(rreq));
            REQUIRE(p.send(out.data(), size, 3) == UCS_OK);
            CHECK(p.wait(rreq) == UCS_ERR_MESSAGE_TRUNCATED);
            CHECK(in[size / 2] == 0);   /* nothing past the buffer */
        }
    }
}

namespace {

struct callback_log {
    int          calls = 0;
    ucs_status_t status = UCS_OK;
    ucp_tag_recv_info_t info{};
};

void recv_cb(void *, ucs_status_t status, const ucp_tag_recv_info_t *info, void *user)
{
    auto *log   = static_cast<callback_log*>(user);
    log->calls++;
    log->status = status;
    log->info   = *info;
}

void send_cb(void *, ucs_status_t status, void *user)
{
    auto *log   = static_cast<callback_log*>(user);
    log->calls++;
    log->status = status;
}

int init_calls = 0;

void count_init(void *request)
{
    ++init_calls;
    *static_cast<uint64_t*>(request) = 0xfeedface;
}

} // namespace

TEST_CASE("cancel of a posted receive", "[ucp_tag_ops]")
{
    peer p;
    REQUIRE(p.init("self") == UCS_OK);
    callback_log log;
    uint8_t buffer[16];
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.recv      = recv_cb;
    param.user_data    = &log;
    ucs_status_ptr_t req = ucp_tag_recv_nbx(p.worker, buffer, sizeof(buffer), 9,
                                            full_mask, &param);
    REQUIRE(req != nullptr);
    REQUIRE(!UCS_PTR_IS_ERR(req));
    CHECK(ucp_request_check_status(req) == UCS_INPROGRESS);
    ucp_request_cancel(p.worker, req);
    CHECK(ucp_request_check_status(req) == UCS_ERR_CANCELED);
    CHECK(log.calls == 1);
    CHECK(log.status == UCS_ERR_CANCELED);
    ucp_request_free(req);

    /* A message with that tag now lands in the unexpected queue. */
    REQUIRE(p.connect(p.address()) == UCS_OK);
    uint64_t value = 77;
    REQUIRE(p.send(&value, sizeof(value), 9) == UCS_OK);
    ucp_tag_recv_info_t info{};
    CHECK(ucp_tag_probe_nb(p.worker, 9, full_mask, 0, &info) != nullptr);
}

TEST_CASE("request memory, request_init and immediate completion", "[ucp_tag_ops]")
{
    peer p;
    ucp_config_t *config;
    REQUIRE(ucp_config_read(nullptr, nullptr, &config) == UCS_OK);
    REQUIRE(ucp_config_modify(config, "TLS", "self") == UCS_OK);
    ucp_params_t params{};
    params.field_mask   = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_REQUEST_SIZE |
                          UCP_PARAM_FIELD_REQUEST_INIT;
    params.features     = UCP_FEATURE_TAG;
    params.request_size = 24;
    params.request_init = count_init;
    init_calls = 0;
    REQUIRE(ucp_init(&params, config, &p.context) == UCS_OK);
    ucp_config_release(config);
    ucp_worker_params_t wparams{};
    REQUIRE(ucp_worker_create(p.context, &wparams, &p.worker) == UCS_OK);
    REQUIRE(p.connect(p.address()) == UCS_OK);

    ucp_context_attr_t attr{};
    attr.field_mask = UCP_ATTR_FIELD_REQUEST_SIZE;
    REQUIRE(ucp_context_query(p.context, &attr) == UCS_OK);
    REQUIRE(attr.request_size >= 16);

    /* A pooled request: the user area was initialised once, and keeps what
     * the application stored across reuse. */
    uint8_t buffer[32];
    callback_log log;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.recv      = recv_cb;
    param.user_data    = &log;
    void *req = ucp_tag_recv_nbx(p.worker, buffer, sizeof(buffer), 1, full_mask, &param);
    REQUIRE(req != nullptr);
    REQUIRE(!UCS_PTR_IS_ERR(req));
    CHECK(*static_cast<uint64_t*>(req) == 0xfeedface);
    const int inits = init_calls;
    CHECK(inits > 0);
    *static_cast<uint64_t*>(req) = 42;
    uint64_t value = 5;
    REQUIRE(p.send(&value, sizeof(value), 1) == UCS_OK);
    REQUIRE(p.wait(req) == UCS_OK);
    CHECK(log.calls == 1);
    CHECK(log.info.length == sizeof(value));

    void *again = ucp_tag_recv_nbx(p.worker, buffer, sizeof(buffer), 2, full_mask, &param);
    REQUIRE(again == req);              /* LIFO pool: the same element */
    CHECK(*static_cast<uint64_t*>(again) == 42);
    CHECK(init_calls == inits);
    ucp_request_cancel(p.worker, again);
    ucp_request_free(again);

    /* Immediate completion: NULL, no callback, recv_info filled. */
    REQUIRE(p.send(&value, sizeof(value), 3) == UCS_OK);
    ucp_tag_recv_info_t info{};
    log = {};
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_RECV_INFO;
    param.recv_info.tag_info = &info;
    CHECK(ucp_tag_recv_nbx(p.worker, buffer, sizeof(buffer), 3, full_mask, &param) ==
          nullptr);
    CHECK(log.calls == 0);
    CHECK(info.length == sizeof(value));
    CHECK(info.sender_tag == 3);

    /* NO_IMM_CMPL: a request, callback already run, completed. */
    REQUIRE(p.send(&value, sizeof(value), 4) == UCS_OK);
    param.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    req = ucp_tag_recv_nbx(p.worker, buffer, sizeof(buffer), 4, full_mask, &param);
    REQUIRE(req != nullptr);
    REQUIRE(!UCS_PTR_IS_ERR(req));
    CHECK(ucp_request_check_status(req) == UCS_OK);
    CHECK(log.calls == 1);
    ucp_request_free(req);

    /* Caller's request memory: completed in place even when immediate, and
     * the user area after it is left alone. */
    std::vector<uint8_t> mine(attr.request_size + 32, 0xab);
    void *user = mine.data() + attr.request_size;
    ucp_request_param_t sparam{};
    sparam.op_attr_mask = UCP_OP_ATTR_FIELD_REQUEST | UCP_OP_ATTR_FIELD_CALLBACK |
                          UCP_OP_ATTR_FIELD_USER_DATA;
    sparam.request      = user;
    sparam.cb.send      = send_cb;
    sparam.user_data    = &log;
    log = {};
    ucs_status_ptr_t sreq = ucp_tag_send_nbx(p.ep, &value, sizeof(value), 5, &sparam);
    CHECK(!UCS_PTR_IS_ERR(sreq));
    CHECK(ucp_request_check_status(user) == UCS_OK);
    CHECK(log.calls == 0);             /* no callback from inside the call */
    CHECK(static_cast<uint8_t*>(user)[0] == 0xab);

    /* A send callback never runs inside the call. */
    std::vector<uint8_t> big(100000, 1);
    ucp_request_param_t cbparam{};
    cbparam.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    cbparam.cb.send      = send_cb;
    cbparam.user_data    = &log;
    log = {};
    std::vector<uint8_t> sink(100000);
    ucp_request_param_t rparam{};
    void *rreq = ucp_tag_recv_nbx(p.worker, sink.data(), sink.size(), 6, full_mask, &rparam);
    sreq = ucp_tag_send_nbx(p.ep, big.data(), big.size(), 6, &cbparam);
    CHECK(log.calls == 0);
    CHECK(p.wait(sreq) == UCS_OK);
    CHECK(p.wait(rreq) == UCS_OK);
}

namespace {

struct error_state {
    int          calls = 0;
    ucs_status_t status = UCS_OK;
};

void on_peer_error(void *arg, ucp_ep_h, ucs_status_t status)
{
    auto *state   = static_cast<error_state*>(arg);
    state->calls++;
    state->status = status;
}

} // namespace

TEST_CASE("a killed peer fails outstanding requests and calls the handler",
          "[ucp_tag_ops]")
{
    env_guard env;
    env.set("UCX_KEEPALIVE_INTERVAL", "50ms");
    for (const char *tls : transports) {
        INFO("UCX_TLS=" << tls);
        peer p;
        REQUIRE(p.init(tls) == UCS_OK);
        test::child_process child([tls](int fd) {
            peer c;
            TEST_CHILD_CHECK(c.init(tls) == UCS_OK);
            TEST_CHILD_CHECK(c.connect_over(fd));
            TEST_CHILD_CHECK(test::sync_peer(fd));
            for (;;) {          /* progress, never receive, until killed */
                ucp_worker_progress(c.worker);
            }
            return 0;
        });
        std::vector<uint8_t> remote;
        REQUIRE(test::send_blob(child.fd(), p.address()));
        REQUIRE(test::recv_blob(child.fd(), &remote));
        error_state errors;
        REQUIRE(p.connect(remote, UCP_ERR_HANDLING_MODE_PEER, on_peer_error, &errors) ==
                UCS_OK);
        REQUIRE(test::sync_peer(child.fd()));

        /* A rendezvous send and a sync send wait for the peer forever. */
        std::vector<uint8_t> big(1 << 20, 3), small(64, 4);
        ucp_request_param_t param{};
        void *rndv = ucp_tag_send_nbx(p.ep, big.data(), big.size(), 1, &param);
        void *sync = ucp_tag_send_sync_nbx(p.ep, small.data(), small.size(), 2, &param);
        REQUIRE(rndv != nullptr);
        REQUIRE(!UCS_PTR_IS_ERR(rndv));
        REQUIRE(sync != nullptr);
        REQUIRE(!UCS_PTR_IS_ERR(sync));
        for (int i = 0; i < 1000; ++i) {
            ucp_worker_progress(p.worker);
        }
        child.kill(SIGKILL);
        child.wait();
        REQUIRE(test::poll_until([&] {
            return (ucp_request_check_status(rndv) != UCS_INPROGRESS) &&
                   (ucp_request_check_status(sync) != UCS_INPROGRESS);
        }, [&] { ucp_worker_progress(p.worker); }));
        CHECK(ucp_request_check_status(rndv) != UCS_OK);
        CHECK(ucp_request_check_status(sync) != UCS_OK);
        ucp_request_free(rndv);
        ucp_request_free(sync);
        CHECK(errors.calls == 1);
        CHECK(errors.status != UCS_OK);
        /* Sends on the failed ep fail at once. */
        CHECK(UCS_PTR_IS_ERR(ucp_tag_send_nbx(p.ep, small.data(), 8, 3, &param)));
    }
}

TEST_CASE("a force close releases what the sends queued on its eps hold", "[ucp_tag_ops]")
{
    /* b never progresses: a's sends fill b's FIFO, then queue on a's ep (a
     * generic-datatype send among them), and c's new ep queues its wireup
     * (its packed worker address). A force close purges both queues: each
     * request must release what it holds, the datatype state (counted
     * here) and the address (LeakSanitizer sees it in the sanitizer job). */
    peer a, b, c;
    REQUIRE(a.init("posix") == UCS_OK);
    REQUIRE(b.init("posix") == UCS_OK);
    REQUIRE(c.init("posix") == UCS_OK);
    REQUIRE(a.connect(b.address()) == UCS_OK);

    std::vector<ucs_status_ptr_t> queued;
    uint8_t small[8] = {};
    ucp_request_param_t param{};
    for (int i = 0; (i < 10000) && queued.empty(); ++i) {
        ucs_status_ptr_t r = ucp_tag_send_nbx(a.ep, small, sizeof(small), 1, &param);
        REQUIRE(!UCS_PTR_IS_ERR(r));
        if (r != nullptr) {
            queued.push_back(r);   /* b's FIFO is full */
        }
    }
    REQUIRE(!queued.empty());

    const ucp_datatype_t dt = make_identity_generic();
    REQUIRE(dt != 0);
    const generic_counts before = g_generic;
    std::vector<uint8_t> payload(64, 0x5a);
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype     = dt;
    ucs_status_ptr_t generic = ucp_tag_send_nbx(a.ep, payload.data(), payload.size(), 2,
                                                &param);
    REQUIRE(UCS_PTR_IS_PTR(generic));
    queued.push_back(generic);
    REQUIRE(c.connect(b.address()) == UCS_OK);   /* its wireup waits for room */

    for (peer *p : {&a, &c}) {
        ucp_request_param_t force{};
        force.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        force.flags        = UCP_EP_CLOSE_FLAG_FORCE;
        REQUIRE(p->wait(ucp_ep_close_nbx(p->ep, &force)) == UCS_OK);
        p->ep = nullptr;
    }
    for (ucs_status_ptr_t r : queued) {
        CHECK(ucp_request_check_status(r) == UCS_ERR_CANCELED);
        ucp_request_free(r);
    }
    CHECK(g_generic.starts - before.starts == 1);
    CHECK(g_generic.finishes - before.finishes == 1);
    ucp_dt_destroy(dt);
}

TEST_CASE("ucp_ep_create refuses corrupted addresses", "[ucp_tag_ops]")
{
    peer p;
    REQUIRE(p.init("posix,tcp") == UCS_OK);
    const std::vector<uint8_t> good = p.address();
    std::mt19937 rng(7);
    int created = 0;
    log_capture capture;   /* thousands of expected errors */
    for (int i = 0; i < 3000; ++i) {
        std::vector<uint8_t> bad = good;
        int flips = 1 + int(rng() % 4);
        for (int f = 0; f < flips; ++f) {
            bad[rng() % bad.size()] ^= uint8_t(1u << (rng() % 8));
        }
        if (rng() % 4 == 0) {
            bad.resize(rng() % bad.size());   /* truncated: its header lies */
        }
        /* ucp_ep_create gets only a pointer and trusts the header's length
         * (up to the format's limit): keep that much readable. */
        bad.resize(ucp::address_max_length, 0);
        ucp_ep_h ep = nullptr;
        ucp_ep_params_t params{};
        params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        params.address    = reinterpret_cast<const ucp_address_t*>(bad.data());
        if (ucp_ep_create(p.worker, &params, &ep) == UCS_OK) {
            ++created;     /* a flip in a name or padding may still be valid */
            ucp_request_param_t cparam{};
            cparam.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
            cparam.flags        = UCP_EP_CLOSE_FLAG_FORCE;
            p.wait(ucp_ep_close_nbx(ep, &cparam));
        }
    }
    CHECK(created < 3000);
    CHECK(capture.text().find("malformed worker address") != std::string::npos);
    /* Bad arguments. */
    ucp_ep_params_t params{};
    ucp_ep_h ep;
    CHECK(ucp_ep_create(p.worker, &params, &ep) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_ep_create(nullptr, &params, &ep) == UCS_ERR_INVALID_PARAM);
    ucp_request_param_t param{};
    CHECK(UCS_PTR_STATUS(ucp_tag_send_nbx(nullptr, nullptr, 0, 0, &param)) ==
          UCS_ERR_INVALID_PARAM);
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype     = 5;   /* no such class */
    REQUIRE(p.connect(good) == UCS_OK);
    uint8_t byte = 0;
    CHECK(UCS_PTR_IS_ERR(ucp_tag_send_nbx(p.ep, &byte, 1, 0, &param)));
    CHECK(UCS_PTR_IS_ERR(ucp_tag_recv_nbx(p.worker, &byte, 1, 0, 0, &param)));
}
