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

#include <algorithm>
#include <chrono>
#include <csignal>
#include <random>
#include <sstream>

using namespace ucp_test;

namespace {

constexpr ucp_tag_t full_mask  = ~ucp_tag_t(0);
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
            REQUIRE(test::poll_until(
                [&] {
                msg = ucp_tag_probe_nb(p.worker, size, full_mask, 0, &info);
                return msg != nullptr;
                },
                [&] { ucp_worker_progress(p.worker); }));
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
            ucs_status_ptr_t req = ucp_tag_msg_recv_nbx(p.worker, buffer.data(), size, msg, &param);
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
                ucs_status_ptr_t req = ucp_tag_send_sync_nbx(s.ep, buffer.data(), size, size,
                                                             &param);
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
    size_t count; /* data bytes */
};

void *strided_start_pack(void *, const void *buffer, size_t count)
{
    return new strided{static_cast<uint8_t *>(const_cast<void *>(buffer)), count};
}

void *strided_start_unpack(void *, void *buffer, size_t count)
{
    return new strided{static_cast<uint8_t *>(buffer), count};
}

size_t strided_packed_size(void *state)
{
    return static_cast<strided *>(state)->count;
}

size_t strided_pack(void *state, size_t offset, void *dest, size_t max_length)
{
    auto *s  = static_cast<strided *>(state);
    size_t n = std::min(max_length, s->count - offset);
    for (size_t i = 0; i < n; ++i) {
        static_cast<uint8_t *>(dest)[i] = s->base[2 * (offset + i)];
    }
    return n;
}

ucs_status_t strided_unpack(void *state, size_t offset, const void *src, size_t length)
{
    auto *s = static_cast<strided *>(state);
    if (offset + length > s->count) {
        return UCS_ERR_MESSAGE_TRUNCATED;
    }
    for (size_t i = 0; i < length; ++i) {
        s->base[2 * (offset + i)] = static_cast<const uint8_t *>(src)[i];
    }
    return UCS_OK;
}

void strided_finish(void *state)
{
    delete static_cast<strided *>(state);
}

ucp_datatype_t make_strided()
{
    ucp_generic_dt_ops_t ops{};
    ops.start_pack    = strided_start_pack;
    ops.start_unpack  = strided_start_unpack;
    ops.packed_size   = strided_packed_size;
    ops.pack          = strided_pack;
    ops.unpack        = strided_unpack;
    ops.finish        = strided_finish;
    ucp_datatype_t dt = 0;
    if (ucp_dt_create_generic(&ops, nullptr, &dt) != UCS_OK) {
        return 0;
    }
    return dt;
}

enum class layout { contig, iov, generic };

/* A message of `size` bytes laid out as `kind`: buffer + count + dt. */
struct laid_out {
    std::vector<uint8_t> storage;
    std::vector<ucp_dt_iov_t> iov;
    void *buffer;
    size_t count;
    ucp_datatype_t dt;

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
            while (offset < size) { /* growing pieces, some empty */
                size_t n = std::min(piece, size - offset);
                iov.push_back({storage.data() + offset, n});
                iov.push_back({storage.data() + offset + n, 0});
                offset += n;
                piece = piece * 3 + 1;
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
                    rparam.op_attr_mask   = UCP_OP_ATTR_FIELD_DATATYPE;
                    rparam.datatype       = in.dt;
                    ucs_status_ptr_t rreq = ucp_tag_recv_nbx(p.worker, in.buffer, in.count, 1,
                                                             full_mask, &rparam);
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
            ucs_status_ptr_t rreq = ucp_tag_recv_nbx(p.worker, in.data(), size / 2, 3, full_mask,
                                                     &rparam);
            REQUIRE(!UCS_PTR_IS_ERR(rreq));
            REQUIRE(p.send(out.data(), size, 3) == UCS_OK);
            CHECK(p.wait(rreq) == UCS_ERR_MESSAGE_TRUNCATED);
            CHECK(in[size / 2] == 0); /* nothing past the buffer */
        }
    }
}

namespace {

struct callback_log {
    int calls           = 0;
    ucs_status_t status = UCS_OK;
    ucp_tag_recv_info_t info{};
};

void recv_cb(void *, ucs_status_t status, const ucp_tag_recv_info_t *info, void *user)
{
    auto *log = static_cast<callback_log *>(user);
    log->calls++;
    log->status = status;
    log->info   = *info;
}

void send_cb(void *, ucs_status_t status, void *user)
{
    auto *log = static_cast<callback_log *>(user);
    log->calls++;
    log->status = status;
}

int init_calls = 0;

void count_init(void *request)
{
    ++init_calls;
    *static_cast<uint64_t *>(request) = 0xfeedface;
}

} // namespace

TEST_CASE("cancel of a posted receive", "[ucp_tag_ops]")
{
    peer p;
    REQUIRE(p.init("self") == UCS_OK);
    callback_log log;
    uint8_t buffer[16];
    ucp_request_param_t param{};
    param.op_attr_mask   = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.recv        = recv_cb;
    param.user_data      = &log;
    ucs_status_ptr_t req = ucp_tag_recv_nbx(p.worker, buffer, sizeof(buffer), 9, full_mask, &param);
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
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_REQUEST_SIZE |
                        UCP_PARAM_FIELD_REQUEST_INIT;
    params.features     = UCP_FEATURE_TAG;
    params.request_size = 24;
    params.request_init = count_init;
    init_calls          = 0;
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
    void *req          = ucp_tag_recv_nbx(p.worker, buffer, sizeof(buffer), 1, full_mask, &param);
    REQUIRE(req != nullptr);
    REQUIRE(!UCS_PTR_IS_ERR(req));
    CHECK(*static_cast<uint64_t *>(req) == 0xfeedface);
    const int inits = init_calls;
    CHECK(inits > 0);
    *static_cast<uint64_t *>(req) = 42;
    uint64_t value                = 5;
    REQUIRE(p.send(&value, sizeof(value), 1) == UCS_OK);
    REQUIRE(p.wait(req) == UCS_OK);
    CHECK(log.calls == 1);
    CHECK(log.info.length == sizeof(value));

    void *again = ucp_tag_recv_nbx(p.worker, buffer, sizeof(buffer), 2, full_mask, &param);
    REQUIRE(again == req); /* LIFO pool: the same element */
    CHECK(*static_cast<uint64_t *>(again) == 42);
    CHECK(init_calls == inits);
    ucp_request_cancel(p.worker, again);
    ucp_request_free(again);

    /* Immediate completion: NULL, no callback, recv_info filled. */
    REQUIRE(p.send(&value, sizeof(value), 3) == UCS_OK);
    ucp_tag_recv_info_t info{};
    log = {};
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_RECV_INFO;
    param.recv_info.tag_info = &info;
    CHECK(ucp_tag_recv_nbx(p.worker, buffer, sizeof(buffer), 3, full_mask, &param) == nullptr);
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
    sparam.request        = user;
    sparam.cb.send        = send_cb;
    sparam.user_data      = &log;
    log                   = {};
    ucs_status_ptr_t sreq = ucp_tag_send_nbx(p.ep, &value, sizeof(value), 5, &sparam);
    CHECK(!UCS_PTR_IS_ERR(sreq));
    CHECK(ucp_request_check_status(user) == UCS_OK);
    CHECK(log.calls == 0); /* no callback from inside the call */
    CHECK(static_cast<uint8_t *>(user)[0] == 0xab);

    /* A send callback never runs inside the call. */
    std::vector<uint8_t> big(100000, 1);
    ucp_request_param_t cbparam{};
    cbparam.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    cbparam.cb.send      = send_cb;
    cbparam.user_data    = &log;
    log                  = {};
    std::vector<uint8_t> sink(100000);
    ucp_request_param_t rparam{};
    void *rreq = ucp_tag_recv_nbx(p.worker, sink.data(), sink.size(), 6, full_mask, &rparam);
    sreq       = ucp_tag_send_nbx(p.ep, big.data(), big.size(), 6, &cbparam);
    CHECK(log.calls == 0);
    CHECK(p.wait(sreq) == UCS_OK);
    CHECK(p.wait(rreq) == UCS_OK);
}

namespace {

/* Where the error callbacks of the user-data test record their arg. */
std::vector<void *> *current = nullptr;

} // namespace

TEST_CASE("a killed peer fails outstanding requests and calls the handler", "[ucp_tag_ops]")
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
            for (;;) { /* progress, never receive, until killed */
                ucp_worker_progress(c.worker);
            }
            return 0;
        });
        std::vector<uint8_t> remote;
        REQUIRE(test::send_blob(child.fd(), p.address()));
        REQUIRE(test::recv_blob(child.fd(), &remote));
        ucp_test::ep_errors errors;
        REQUIRE(p.connect(remote, UCP_ERR_HANDLING_MODE_PEER, ucp_test::ep_errors::record,
                          &errors) == UCS_OK);
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
        REQUIRE(test::poll_until(
            [&] {
            return (ucp_request_check_status(rndv) != UCS_INPROGRESS) &&
                   (ucp_request_check_status(sync) != UCS_INPROGRESS);
            },
            [&] { ucp_worker_progress(p.worker); }));
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

TEST_CASE("the error callback gets the ep's user data, else the handler's arg", "[ucp_tag_ops]")
{
    /* UCX's semantics, which its ucp_hello_world -e relies on. */
    peer a, b;
    REQUIRE(a.init("tcp") == UCS_OK);
    REQUIRE(b.init("tcp") == UCS_OK);
    const std::vector<uint8_t> remote = b.address();
    struct {
        std::vector<void *> args;
    } got;
    int handler_arg = 0, user_data = 0;
    auto create = [&](bool with_user_data) {
        ucp_ep_params_t params{};
        params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                            UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
        params.address        = reinterpret_cast<const ucp_address_t *>(remote.data());
        params.err_mode       = UCP_ERR_HANDLING_MODE_PEER;
        params.err_handler.cb = [](void *arg, ucp_ep_h, ucs_status_t) {
            /* A C callback cannot capture: it records through `current`. */
            current->push_back(arg);
        };
        params.err_handler.arg = &handler_arg;
        if (with_user_data) {
            params.field_mask |= UCP_EP_PARAM_FIELD_USER_DATA;
            params.user_data = &user_data;
        }
        ucp_ep_h ep = nullptr;
        REQUIRE(ucp_ep_create(a.worker, &params, &ep) == UCS_OK);
        return ep;
    };
    current       = &got.args;
    ucp_ep_h with = create(true), without = create(false);
    /* Both connected, then the peer goes away. */
    ucp_request_param_t param{};
    for (ucp_ep_h ep : {with, without}) {
        void *req = ucp_ep_flush_nbx(ep, &param);
        REQUIRE(test::poll_until(
            [&] { return (req == nullptr) || (ucp_request_check_status(req) != UCS_INPROGRESS); },
            [&] {
            ucp_worker_progress(a.worker);
            ucp_worker_progress(b.worker);
            }));
        if (req != nullptr) {
            CHECK(ucp_request_check_status(req) == UCS_OK);
            ucp_request_free(req);
        }
    }
    b.close();
    REQUIRE(test::poll_until([&] { return got.args.size() == 2; },
                             [&] { ucp_worker_progress(a.worker); }));
    CHECK(std::count(got.args.begin(), got.args.end(), &user_data) == 1);
    CHECK(std::count(got.args.begin(), got.args.end(), &handler_arg) == 1);
    current = nullptr;
    for (ucp_ep_h ep : {with, without}) {
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
        a.wait(ucp_ep_close_nbx(ep, &param));
    }
}

TEST_CASE("UCX_RNDV_THRESH below the short limit wins, and the printed ranges agree",
          "[ucp_tag_ops]")
{
    env_guard env;
    env.set("UCX_RNDV_THRESH", "4096");  /* self's short limit is ~8k */
    env.set("UCX_ZCOPY_THRESH", "1024"); /* one fallback from 4096 on */
    peer p;
    REQUIRE(p.init("self") == UCS_OK);
    REQUIRE(p.connect(p.address()) == UCS_OK);

    /* The tag ranges ucp_ep_print_info prints follow one another. */
    const std::string info = print_to_string([&](FILE *f) { ucp_ep_print_info(p.ep, f); });
    INFO(info);
    std::istringstream lines(info);
    std::string line;
    bool in_tag            = false;
    uint64_t expected_from = 0;
    unsigned ranges        = 0;
    while (std::getline(lines, line)) {
        if (line.find("tag_send, contiguous data") != std::string::npos) {
            in_tag = true;
            continue;
        }
        unsigned long long from, to;
        char to_text[32];
        if (!in_tag || (std::sscanf(line.c_str(), "# %llu .. %31s", &from, to_text) != 2)) {
            if (in_tag && (ranges > 0)) {
                break; /* past the tag table */
            }
            continue;
        }
        CHECK(from == expected_from);
        ++ranges;
        if (std::string(to_text) == "inf") {
            expected_from = UINT64_MAX;
            break;
        }
        to = std::strtoull(to_text, nullptr, 10);
        CHECK(to >= from);
        expected_from = to + 1;
        if (line.find("eager short") != std::string::npos) {
            CHECK(to == 4095);
        }
    }
    CHECK(ranges >= 2);
    CHECK(expected_from == UINT64_MAX);
    CHECK(info.find("4096 .. inf        rendezvous") != std::string::npos);

    /* And a 5000-byte send is a rendezvous: it waits for its receive,
     * where an eager short send would complete inside the call. */
    std::vector<uint8_t> out(5000, 7), in(5000, 0);
    ucp_request_param_t param{};
    void *send = ucp_tag_send_nbx(p.ep, out.data(), out.size(), 9, &param);
    REQUIRE(send != nullptr);
    REQUIRE(!UCS_PTR_IS_ERR(send));
    for (int i = 0; i < 100; ++i) {
        ucp_worker_progress(p.worker);
    }
    CHECK(ucp_request_check_status(send) == UCS_INPROGRESS);
    CHECK(p.wait(ucp_tag_recv_nbx(p.worker, in.data(), in.size(), 9, ~ucp_tag_t(0), &param)) ==
          UCS_OK);
    CHECK(p.wait(send) == UCS_OK);
    CHECK(in == out);
}

TEST_CASE("ucp_request_query reports status, memory type and a description", "[ucp_tag_ops]")
{
    peer p;
    REQUIRE(p.init("self") == UCS_OK);
    REQUIRE(p.connect(p.address()) == UCS_OK);
    ucp_worker_attr_t wattr{};
    wattr.field_mask = UCP_WORKER_ATTR_FIELD_MAX_INFO_STRING;
    REQUIRE(ucp_worker_query(p.worker, &wattr) == UCS_OK);
    std::vector<char> text(wattr.max_debug_string);

    std::vector<uint8_t> in(100);
    ucp_request_param_t param{};
    void *recv = ucp_tag_recv_nbx(p.worker, in.data(), in.size(), 0x77, ~ucp_tag_t(0), &param);
    REQUIRE(recv != nullptr);
    REQUIRE(!UCS_PTR_IS_ERR(recv));

    ucp_request_attr_t attr{};
    attr.field_mask = UCP_REQUEST_ATTR_FIELD_STATUS | UCP_REQUEST_ATTR_FIELD_MEM_TYPE |
                      UCP_REQUEST_ATTR_FIELD_INFO_STRING | UCP_REQUEST_ATTR_FIELD_INFO_STRING_SIZE;
    attr.debug_string      = text.data();
    attr.debug_string_size = text.size();
    REQUIRE(ucp_request_query(recv, &attr) == UCS_OK);
    CHECK(attr.status == UCS_INPROGRESS);
    CHECK(attr.mem_type == UCS_MEMORY_TYPE_HOST);
    CHECK(std::string(text.data()).find("tag receive") != std::string::npos);
    CHECK(std::string(text.data()).find("in progress") != std::string::npos);

    std::vector<uint8_t> out(100, 5);
    CHECK(p.wait(ucp_tag_send_nbx(p.ep, out.data(), out.size(), 0x77, &param)) == UCS_OK);
    REQUIRE(test::poll_until([&] { return ucp_request_check_status(recv) != UCS_INPROGRESS; },
                             [&] { ucp_worker_progress(p.worker); }));
    REQUIRE(ucp_request_query(recv, &attr) == UCS_OK);
    CHECK(attr.status == UCS_OK);
    CHECK(std::string(text.data()).find("completed") != std::string::npos);
    CHECK(std::string(text.data()).find("tag 0x77, 100 bytes") != std::string::npos);

    /* A small buffer is cut, not overrun; INFO_STRING needs its size. */
    char tiny[8];
    std::memset(tiny, 'x', sizeof(tiny));
    attr.debug_string      = tiny;
    attr.debug_string_size = 4;
    REQUIRE(ucp_request_query(recv, &attr) == UCS_OK);
    CHECK(std::strlen(tiny) == 3);
    CHECK(tiny[5] == 'x');
    attr.field_mask &= ~uint64_t(UCP_REQUEST_ATTR_FIELD_INFO_STRING_SIZE);
    CHECK(ucp_request_query(recv, &attr) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_request_query(nullptr, &attr) == UCS_ERR_INVALID_PARAM);
    ucp_request_free(recv);
}

TEST_CASE("ucp_ep_evaluate_perf estimates from the lanes' model, by protocol", "[ucp_tag_ops]")
{
    for (const char *tls : {"posix,cma", "tcp"}) {
        INFO("UCX_TLS=" << tls);
        peer p;
        REQUIRE(p.init(tls) == UCS_OK);
        REQUIRE(p.connect(p.address()) == UCS_OK);
        auto estimate = [&](size_t size) {
            ucp_ep_evaluate_perf_param_t param{};
            param.field_mask   = UCP_EP_PERF_PARAM_FIELD_MESSAGE_SIZE;
            param.message_size = size;
            ucp_ep_evaluate_perf_attr_t attr{};
            attr.field_mask     = UCP_EP_PERF_ATTR_FIELD_ESTIMATED_TIME;
            attr.estimated_time = -1;
            REQUIRE(ucp_ep_evaluate_perf(p.ep, &param, &attr) == UCS_OK);
            return attr.estimated_time;
        };
        double previous = 0;
        for (size_t size : {size_t(0), size_t(8), size_t(4096), size_t(65536), size_t(1) << 20,
                            size_t(16) << 20}) {
            CAPTURE(size);
            const double t = estimate(size);
            CHECK(t > 0);
            CHECK(t >= previous * 0.99); /* a larger message never looks faster */
            previous = t;
        }
        /* Large messages are bandwidth-bound: 16x the size, ~16x the time. */
        const double ratio = estimate(size_t(64) << 20) / estimate(size_t(4) << 20);
        CHECK(ratio > 8);
        CHECK(ratio < 17);

        ucp_ep_evaluate_perf_param_t no_size{};
        ucp_ep_evaluate_perf_attr_t attr{};
        attr.field_mask = UCP_EP_PERF_ATTR_FIELD_ESTIMATED_TIME;
        CHECK(ucp_ep_evaluate_perf(p.ep, &no_size, &attr) == UCS_ERR_INVALID_PARAM);
        CHECK(ucp_ep_evaluate_perf(nullptr, &no_size, &attr) == UCS_ERR_INVALID_PARAM);
    }
}

TEST_CASE("ucp_ep_modify_nb changes the handler and user data, nothing else", "[ucp_tag_ops]")
{
    peer a, b;
    REQUIRE(a.init("tcp") == UCS_OK);
    REQUIRE(b.init("tcp") == UCS_OK);
    REQUIRE(a.connect(b.address(), UCP_ERR_HANDLING_MODE_PEER) == UCS_OK);
    std::vector<void *> seen;
    int data = 0;
    ucp_ep_params_t params{};
    params.field_mask     = UCP_EP_PARAM_FIELD_ERR_HANDLER | UCP_EP_PARAM_FIELD_USER_DATA;
    params.err_handler.cb = [](void *arg, ucp_ep_h, ucs_status_t) { current->push_back(arg); };
    params.user_data      = &data;
    current               = &seen;
    CHECK(ucp_ep_modify_nb(a.ep, &params) == nullptr); /* done at once */

    ucp_ep_params_t refused{};
    refused.field_mask = UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    CHECK(UCS_PTR_STATUS(ucp_ep_modify_nb(a.ep, &refused)) == UCS_ERR_NOT_IMPLEMENTED);
    refused.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    CHECK(UCS_PTR_STATUS(ucp_ep_modify_nb(a.ep, &refused)) == UCS_ERR_NOT_IMPLEMENTED);
    CHECK(UCS_PTR_STATUS(ucp_ep_modify_nb(nullptr, &params)) == UCS_ERR_INVALID_PARAM);

    /* The new handler and user data are what a failure reaches. */
    ucp_request_param_t param{};
    void *req = ucp_ep_flush_nbx(a.ep, &param);
    REQUIRE(test::poll_until(
        [&] { return (req == nullptr) || (ucp_request_check_status(req) != UCS_INPROGRESS); },
        [&] {
        ucp_worker_progress(a.worker);
        ucp_worker_progress(b.worker);
        }));
    if (req != nullptr) {
        ucp_request_free(req);
    }
    b.close();
    REQUIRE(test::poll_until([&] { return !seen.empty(); },
                             [&] { ucp_worker_progress(a.worker); }));
    CHECK(seen.size() == 1);
    CHECK(seen[0] == &data);
    current = nullptr;
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
            queued.push_back(r); /* b's FIFO is full */
        }
    }
    REQUIRE(!queued.empty());

    const ucp_datatype_t dt = make_identity_generic();
    REQUIRE(dt != 0);
    const generic_counts before = g_generic;
    std::vector<uint8_t> payload(64, 0x5a);
    param.op_attr_mask       = UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype           = dt;
    ucs_status_ptr_t generic = ucp_tag_send_nbx(a.ep, payload.data(), payload.size(), 2, &param);
    REQUIRE(UCS_PTR_IS_PTR(generic));
    queued.push_back(generic);
    REQUIRE(c.connect(b.address()) == UCS_OK); /* its wireup waits for room */

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
    log_capture capture; /* thousands of expected errors */
    for (int i = 0; i < 3000; ++i) {
        std::vector<uint8_t> bad = good;
        int flips                = 1 + int(rng() % 4);
        for (int f = 0; f < flips; ++f) {
            bad[rng() % bad.size()] ^= uint8_t(1u << (rng() % 8));
        }
        if (rng() % 4 == 0) {
            bad.resize(rng() % bad.size()); /* truncated: its header lies */
        }
        /* ucp_ep_create gets only a pointer and trusts the header's length
         * (up to the format's limit): keep that much readable. */
        bad.resize(ucp::address_max_length, 0);
        ucp_ep_h ep = nullptr;
        ucp_ep_params_t params{};
        params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
        params.address    = reinterpret_cast<const ucp_address_t *>(bad.data());
        if (ucp_ep_create(p.worker, &params, &ep) == UCS_OK) {
            ++created; /* a flip in a name or padding may still be valid */
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
    param.datatype     = 5; /* no such class */
    REQUIRE(p.connect(good) == UCS_OK);
    uint8_t byte = 0;
    CHECK(UCS_PTR_IS_ERR(ucp_tag_send_nbx(p.ep, &byte, 1, 0, &param)));
    CHECK(UCS_PTR_IS_ERR(ucp_tag_recv_nbx(p.worker, &byte, 1, 0, 0, &param)));
}

TEST_CASE("a generic datatype that packs nothing fails a multi-fragment send", "[ucp_tag_ops]")
{
    /* Tag, AM and stream share one fragment sender: a fragment that packs
     * no bytes fails the send (it used to spin for ever in tag's loop). */
    env_guard env;
    env.set("UCX_RNDV_THRESH", "inf"); /* eager fragments, whatever the size */
    peer p;
    REQUIRE(p.init("self", UCP_FEATURE_TAG | UCP_FEATURE_AM | UCP_FEATURE_STREAM) == UCS_OK);
    REQUIRE(p.connect(p.address()) == UCS_OK);
    const ucp_datatype_t dt = make_stingy_generic();
    REQUIRE(dt != 0);
    std::vector<uint8_t> payload(256 * 1024, 0x3c); /* many fragments on self */
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    param.datatype     = dt;

    auto outcome = [&](ucs_status_ptr_t request) {
        if (!UCS_PTR_IS_PTR(request)) {
            return UCS_PTR_STATUS(request);
        }
        ucs_status_t status = UCS_INPROGRESS;
        CHECK(test::poll_until(
            [&] { return (status = ucp_request_check_status(request)) != UCS_INPROGRESS; },
            [&] { ucp_worker_progress(p.worker); }));
        if (status != UCS_INPROGRESS) {
            ucp_request_free(request);
        }
        return status;
    };
    const generic_counts before = g_generic;
    SECTION("tag") {
        CHECK(outcome(ucp_tag_send_nbx(p.ep, payload.data(), payload.size(), 7, &param)) ==
              UCS_ERR_IO_ERROR);
    }
    SECTION("active message") {
        ucp_request_param_t am = param;
        am.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
        am.flags = UCP_AM_SEND_FLAG_EAGER;
        CHECK(outcome(ucp_am_send_nbx(p.ep, 5, nullptr, 0, payload.data(), payload.size(), &am)) ==
              UCS_ERR_IO_ERROR);
    }
    SECTION("stream") {
        CHECK(outcome(ucp_stream_send_nbx(p.ep, payload.data(), payload.size(), &param)) ==
              UCS_ERR_IO_ERROR);
    }
    /* The datatype's state was released once. */
    CHECK(g_generic.finishes - before.finishes == g_generic.starts - before.starts);
    ucp_dt_destroy(dt);
}
