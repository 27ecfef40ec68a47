/*
 * Client-server connections: listeners, connection requests, client eps
 * created from a socket address (non-blocking: sends queue until the
 * server answers), rejection, refusal, hostile bytes on the listening port,
 * many clients at once, and tag traffic over the lanes chosen afterwards
 * (tcp or shared memory: the socket address only bootstraps); the
 * connection manager's timers wake a sleeping worker and a wait set.
 */
#include "ucp_peer.h"
#include "ucp_test_util.h"

#include <ucp/api/ucp_ext.h>
#include <ucp/wireup/sockaddr.h>
#include <ucp/wireup/sockaddr_cm.h>
#include <ucp/wireup/sockaddr_frame.h>

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>

using namespace ucp_test;

namespace {

constexpr ucp_tag_t full_mask = ~ucp_tag_t(0);

uint16_t port_of(const sockaddr_storage &addr)
{
    return ntohs(reinterpret_cast<const sockaddr_in *>(&addr)->sin_port);
}

bool same_address(const sockaddr_storage &a, const sockaddr_storage &b)
{
    const auto *x = reinterpret_cast<const sockaddr_in *>(&a);
    const auto *y = reinterpret_cast<const sockaddr_in *>(&b);
    return (a.ss_family == AF_INET) && (b.ss_family == AF_INET) && (x->sin_port == y->sin_port) &&
           (x->sin_addr.s_addr == y->sin_addr.s_addr);
}

/* A server: a peer with a listener on 127.0.0.1 whose requests are queued. */
struct server {
    peer p;
    ucp_listener_h listener = nullptr;
    std::vector<ucp_conn_request_h> requests;
    std::vector<ucp_ep_h> accepted; /* accept_handler mode */
    bool reject_at_once = false;
    unsigned callbacks  = 0;

    ~server()
    {
        for (ucp_ep_h ep : accepted) {
            ucp_request_param_t param{};
            param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
            param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
            p.wait(ucp_ep_close_nbx(ep, &param));
        }
        if (listener != nullptr) {
            ucp_listener_destroy(listener);
        }
    }

    static void on_conn(ucp_conn_request_h request, void *arg)
    {
        auto *self = static_cast<server *>(arg);
        ++self->callbacks;
        if (self->reject_at_once) {
            ucp_listener_reject(self->listener, request);
        } else {
            self->requests.push_back(request);
        }
    }

    static void on_accept(ucp_ep_h ep, void *arg)
    {
        auto *self = static_cast<server *>(arg);
        ++self->callbacks;
        self->accepted.push_back(ep);
    }

    ucs_status_t listen(bool legacy = false, uint16_t port = 0)
    {
        sockaddr_in addr = loopback(port);
        return listen_on(reinterpret_cast<const sockaddr *>(&addr), sizeof(addr), legacy);
    }

    ucs_status_t listen_on(const sockaddr *addr, socklen_t addrlen, bool legacy = false)
    {
        ucp_listener_params_t params{};
        params.field_mask       = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR;
        params.sockaddr.addr    = addr;
        params.sockaddr.addrlen = addrlen;
        if (legacy) {
            params.field_mask |= UCP_LISTENER_PARAM_FIELD_ACCEPT_HANDLER;
            params.accept_handler.cb  = on_accept;
            params.accept_handler.arg = this;
        } else {
            params.field_mask |= UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
            params.conn_handler.cb  = on_conn;
            params.conn_handler.arg = this;
        }
        return ucp_listener_create(p.worker, &params, &listener);
    }

    uint16_t port() const
    {
        ucp_listener_attr_t attr{};
        attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
        if (ucp_listener_query(listener, &attr) != UCS_OK) {
            return 0;
        }
        return port_of(attr.sockaddr);
    }

    ucs_status_t accept(ucp_conn_request_h request, ucp_ep_h *ep_p)
    {
        ucp_ep_params_t params{};
        params.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
        params.conn_request = request;
        params.err_mode     = UCP_ERR_HANDLING_MODE_PEER;
        return ucp_ep_create(p.worker, &params, ep_p);
    }
};

/* Error-handler record of a client ep. */
using failure_log = ucp_test::ep_errors;

/* Creates a client ep to `addr` (returns at once). */
ucs_status_t connect_to(ucp_worker_h worker, const sockaddr *addr, socklen_t addrlen,
                        failure_log *log, ucp_ep_h *ep_p)
{
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_SOCK_ADDR | UCP_EP_PARAM_FIELD_FLAGS |
                        UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    params.flags            = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    params.sockaddr.addr    = addr;
    params.sockaddr.addrlen = addrlen;
    params.err_mode         = UCP_ERR_HANDLING_MODE_PEER;
    if (log != nullptr) {
        params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
        params.err_handler.cb  = failure_log::record;
        params.err_handler.arg = log;
    }
    return ucp_ep_create(worker, &params, ep_p);
}

/* ... to 127.0.0.1:port. */
ucs_status_t connect_to(ucp_worker_h worker, uint16_t port, failure_log *log, ucp_ep_h *ep_p)
{
    sockaddr_in addr = loopback(port);
    return connect_to(worker, reinterpret_cast<const sockaddr *>(&addr), sizeof(addr), log, ep_p);
}

ucs_status_ptr_t send_nb(ucp_ep_h ep, const void *buffer, size_t length, ucp_tag_t tag,
                         bool sync = false)
{
    ucp_request_param_t param{};
    return sync ? ucp_tag_send_sync_nbx(ep, buffer, length, tag, &param) :
                  ucp_tag_send_nbx(ep, buffer, length, tag, &param);
}

/* Status of a request after progressing both workers until it completes. */
ucs_status_t finish(ucs_status_ptr_t req, ucp_worker_h a, ucp_worker_h b = nullptr)
{
    if (req == nullptr) {
        return UCS_OK;
    }
    if (UCS_PTR_IS_ERR(req)) {
        return UCS_PTR_STATUS(req);
    }
    const bool done =
        test::poll_until([&] { return ucp_request_check_status(req) != UCS_INPROGRESS; },
                         [&] {
        ucp_worker_progress(a);
        if (b != nullptr) {
            ucp_worker_progress(b);
        }
        });
    ucs_status_t status = done ? ucp_request_check_status(req) : UCS_ERR_TIMED_OUT;
    if (done) {
        ucp_request_free(req);
    }
    return status;
}

void close_force(peer &p, ucp_ep_h ep)
{
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    p.wait(ucp_ep_close_nbx(ep, &param));
}

std::string ep_info(ucp_ep_h ep)
{
    return print_to_string([ep](FILE *f) { ucp_ep_print_info(ep, f); });
}

const size_t message_sizes[] = {0, 5, 64, 1000, 9000, 70000, 1u << 20};

/* Client child: connects, sends at once (queued while connecting), then
 * receives the server's answers and reports its socket addresses. */
int client_child(int fd, const char *tls)
{
    peer c;
    TEST_CHILD_CHECK(c.init(tls) == UCS_OK);
    uint16_t port;
    TEST_CHILD_CHECK(test::recv_value(fd, &port));
    failure_log log;
    TEST_CHILD_CHECK(connect_to(c.worker, port, &log, &c.ep) == UCS_OK);

    std::vector<std::vector<uint8_t>> out;
    std::vector<ucs_status_ptr_t> reqs;
    for (size_t i = 0; i < std::size(message_sizes); ++i) {
        out.emplace_back(message_sizes[i] + 1);
        fill_pattern(out.back().data(), message_sizes[i], i);
        reqs.push_back(send_nb(c.ep, out.back().data(), message_sizes[i], 100 + i));
        TEST_CHILD_CHECK(!UCS_PTR_IS_ERR(reqs.back()));
    }
    /* The ep is still connecting: the sends cannot have gone out yet. */
    TEST_CHILD_CHECK(reqs[1] != nullptr);
    uint64_t sync_value = 0x5157;
    reqs.push_back(send_nb(c.ep, &sync_value, sizeof(sync_value), 99, true));
    for (ucs_status_ptr_t req : reqs) {
        TEST_CHILD_CHECK(finish(req, c.worker) == UCS_OK);
    }
    std::vector<uint8_t> in(1u << 20);
    for (size_t i = 0; i < std::size(message_sizes); ++i) {
        ucp_tag_recv_info_t info{};
        TEST_CHILD_CHECK(c.recv(in.data(), in.size(), 200 + i, full_mask, &info) == UCS_OK);
        TEST_CHILD_CHECK(info.length == message_sizes[i]);
        TEST_CHILD_CHECK(check_pattern(in.data(), info.length, 1000 + i));
    }
    ucp_ep_attr_t attr{};
    attr.field_mask = UCP_EP_ATTR_FIELD_LOCAL_SOCKADDR | UCP_EP_ATTR_FIELD_REMOTE_SOCKADDR;
    TEST_CHILD_CHECK(ucp_ep_query(c.ep, &attr) == UCS_OK);
    TEST_CHILD_CHECK(port_of(attr.remote_sockaddr) == port);
    TEST_CHILD_CHECK(test::send_value(fd, attr.local_sockaddr));
    TEST_CHILD_CHECK(test::send_value(fd, ep_info(c.ep).size()));
    TEST_CHILD_CHECK(log.calls == 0);
    ucp_request_param_t flush_param{};
    TEST_CHILD_CHECK(c.wait(ucp_ep_flush_nbx(c.ep, &flush_param)) == UCS_OK);
    TEST_CHILD_CHECK(test::sync_peer(fd));
    return 0;
}

/* A raw TCP connection to the listener, for hostile bytes. */
int raw_connect(uint16_t port)
{
    int fd           = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr = loopback(port);
    if ((fd >= 0) && (::connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) != 0)) {
        ::close(fd);
        return -1;
    }
    return fd;
}

/* Whether the server closed `fd` (EOF or reset) while `s` progresses. */
bool closed_by_server(int fd, server &s, std::vector<uint8_t> *received = nullptr)
{
    return test::poll_until(
        [&] {
        pollfd pfd{fd, POLLIN, 0};
        if (::poll(&pfd, 1, 0) != 1) {
            return false;
        }
        uint8_t buf[256];
        ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n > 0) {
            if (received != nullptr) {
                received->insert(received->end(), buf, buf + n);
            }
            return false;
        }
        return (n == 0) || (errno == ECONNRESET);
        },
        [&] { ucp_worker_progress(s.p.worker); }, std::chrono::seconds(10));
}

std::vector<uint8_t> valid_request(const std::vector<uint8_t> &address)
{
    return ucp::cs::make_frame(ucp::cs::FRAME_CONN_REQUEST, UCS_OK, 0, 0, address.data(),
                               address.size());
}

/* Connects a real client in this process (to 127.0.0.1 or to `addr`);
 * one message each way. */
void check_real_client(server &s, const char *tls, const sockaddr_storage *addr = nullptr)
{
    peer c;
    REQUIRE(c.init(tls) == UCS_OK);
    failure_log log;
    const size_t before = s.requests.size();
    if (addr == nullptr) {
        REQUIRE(connect_to(c.worker, s.port(), &log, &c.ep) == UCS_OK);
    } else {
        REQUIRE(connect_to(c.worker, reinterpret_cast<const sockaddr *>(addr), sizeof(*addr), &log,
                           &c.ep) == UCS_OK);
    }
    CHECK(ep_info(c.ep).find("connecting") != std::string::npos);
    ucp_ep_attr_t name_attr{};
    name_attr.field_mask = UCP_EP_ATTR_FIELD_NAME;
    REQUIRE(ucp_ep_query(c.ep, &name_attr) == UCS_OK);
    /* Named after the address it connects to, until it knows the server. */
    char suffix[16];
    std::snprintf(suffix, sizeof(suffix), ":%u", unsigned(s.port()));
    const std::string port_suffix(suffix);
    const std::string connecting_name = name_attr.name;
    CHECK(connecting_name.size() > port_suffix.size());
    CHECK(connecting_name.compare(connecting_name.size() - port_suffix.size(), port_suffix.size(),
                                  port_suffix) == 0);
    if (addr == nullptr) {
        CHECK(connecting_name == std::string("127.0.0.1").append(port_suffix));
    }
    uint64_t value        = 0xc1;
    ucs_status_ptr_t sreq = send_nb(c.ep, &value, sizeof(value), 1);
    REQUIRE(test::poll_until([&] { return s.requests.size() > before; },
                             [&] {
        ucp_worker_progress(c.worker);
        ucp_worker_progress(s.p.worker);
    }));
    ucp_ep_h sep;
    REQUIRE(s.accept(s.requests.back(), &sep) == UCS_OK);
    uint64_t got = 0;
    ucp_request_param_t param{};
    ucs_status_ptr_t rreq = ucp_tag_recv_nbx(s.p.worker, &got, sizeof(got), 1, full_mask, &param);
    CHECK(finish(sreq, c.worker, s.p.worker) == UCS_OK);
    CHECK(finish(rreq, s.p.worker, c.worker) == UCS_OK);
    CHECK(got == 0xc1);
    value = 0xc2;
    rreq  = ucp_tag_recv_nbx(c.worker, &got, sizeof(got), 2, full_mask, &param);
    CHECK(finish(send_nb(sep, &value, sizeof(value), 2), s.p.worker, c.worker) == UCS_OK);
    CHECK(finish(rreq, c.worker, s.p.worker) == UCS_OK);
    CHECK(got == 0xc2);
    CHECK(log.calls == 0);
    CHECK(ep_info(c.ep).find("connecting") == std::string::npos);
    /* Connected: named after the server's worker. */
    ucp_worker_attr_t wattr{};
    wattr.field_mask = UCP_WORKER_ATTR_FIELD_NAME;
    REQUIRE(ucp_worker_query(s.p.worker, &wattr) == UCS_OK);
    REQUIRE(ucp_ep_query(c.ep, &name_attr) == UCS_OK);
    CHECK(std::string(name_attr.name) == wattr.name);
    close_force(s.p, sep);
}

} // namespace

TEST_CASE("listener parameters and handles are checked", "[ucp_listener]")
{
    server s;
    REQUIRE(s.p.init("tcp") == UCS_OK);
    sockaddr_in addr = loopback(0);
    ucp_listener_params_t params{};
    ucp_listener_h listener = nullptr;
    CHECK(ucp_listener_create(nullptr, &params, &listener) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_listener_create(s.p.worker, nullptr, &listener) == UCS_ERR_INVALID_PARAM);
    /* No address. */
    params.field_mask      = UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
    params.conn_handler.cb = server::on_conn;
    CHECK(ucp_listener_create(s.p.worker, &params, &listener) == UCS_ERR_INVALID_PARAM);
    /* No handler, then both handlers. */
    params.field_mask       = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR;
    params.sockaddr.addr    = reinterpret_cast<const sockaddr *>(&addr);
    params.sockaddr.addrlen = sizeof(addr);
    CHECK(ucp_listener_create(s.p.worker, &params, &listener) == UCS_ERR_INVALID_PARAM);
    params.field_mask |= UCP_LISTENER_PARAM_FIELD_CONN_HANDLER |
                         UCP_LISTENER_PARAM_FIELD_ACCEPT_HANDLER;
    params.accept_handler.cb = server::on_accept;
    CHECK(ucp_listener_create(s.p.worker, &params, &listener) == UCS_ERR_INVALID_PARAM);
    /* A family we do not listen on, and a short length. */
    params.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
    sockaddr unix_addr{};
    unix_addr.sa_family     = AF_UNIX;
    params.sockaddr.addr    = &unix_addr;
    params.sockaddr.addrlen = sizeof(unix_addr);
    CHECK(ucp_listener_create(s.p.worker, &params, &listener) == UCS_ERR_INVALID_PARAM);
    params.sockaddr.addr    = reinterpret_cast<const sockaddr *>(&addr);
    params.sockaddr.addrlen = 4;
    CHECK(ucp_listener_create(s.p.worker, &params, &listener) == UCS_ERR_INVALID_PARAM);
    CHECK(listener == nullptr);

    /* Stale and foreign handles. */
    ucp_listener_attr_t attr{};
    attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
    CHECK(ucp_listener_query(nullptr, &attr) == UCS_ERR_INVALID_PARAM);
    uint64_t junk[64]   = {};
    auto *fake_listener = reinterpret_cast<ucp_listener_h>(junk);
    auto *fake_request  = reinterpret_cast<ucp_conn_request_h>(junk);
    CHECK(ucp_listener_query(fake_listener, &attr) == UCS_ERR_INVALID_PARAM);
    ucp_listener_destroy(fake_listener); /* ignored */
    ucp_listener_destroy(nullptr);
    REQUIRE(s.listen() == UCS_OK);
    CHECK(ucp_listener_reject(s.listener, fake_request) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_listener_reject(s.listener, nullptr) == UCS_ERR_INVALID_PARAM);
    ucp_conn_request_attr_t rattr{};
    rattr.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR;
    CHECK(ucp_conn_request_query(fake_request, &rattr) == UCS_ERR_INVALID_PARAM);

    /* ep_create: a fake request, both kinds at once, no address, bad family. */
    ucp_ep_h ep = nullptr;
    ucp_ep_params_t eparams{};
    eparams.field_mask   = UCP_EP_PARAM_FIELD_CONN_REQUEST;
    eparams.conn_request = fake_request;
    CHECK(ucp_ep_create(s.p.worker, &eparams, &ep) == UCS_ERR_INVALID_PARAM);
    eparams.field_mask |= UCP_EP_PARAM_FIELD_SOCK_ADDR;
    eparams.sockaddr.addr    = reinterpret_cast<const sockaddr *>(&addr);
    eparams.sockaddr.addrlen = sizeof(addr);
    CHECK(ucp_ep_create(s.p.worker, &eparams, &ep) == UCS_ERR_INVALID_PARAM);
    eparams.field_mask    = UCP_EP_PARAM_FIELD_SOCK_ADDR;
    eparams.sockaddr.addr = nullptr;
    CHECK(ucp_ep_create(s.p.worker, &eparams, &ep) == UCS_ERR_INVALID_PARAM);
    eparams.sockaddr.addr    = &unix_addr;
    eparams.sockaddr.addrlen = sizeof(unix_addr);
    CHECK(ucp_ep_create(s.p.worker, &eparams, &ep) == UCS_ERR_INVALID_PARAM);
    CHECK(ep == nullptr);

    /* An ep that is not client-server has no socket addresses. */
    REQUIRE(s.p.connect(s.p.address()) == UCS_OK);
    ucp_ep_attr_t eattr{};
    eattr.field_mask = UCP_EP_ATTR_FIELD_REMOTE_SOCKADDR;
    CHECK(ucp_ep_query(s.p.ep, &eattr) == UCS_ERR_NOT_CONNECTED);
}

TEST_CASE("port 0 picks a free port; a taken port is refused", "[ucp_listener]")
{
    server a, b, c;
    REQUIRE(a.p.init("tcp") == UCS_OK);
    REQUIRE(b.p.init("tcp") == UCS_OK);
    REQUIRE(c.p.init("tcp") == UCS_OK);
    REQUIRE(a.listen() == UCS_OK);
    REQUIRE(b.listen() == UCS_OK);
    ucp_listener_attr_t attr{};
    attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
    REQUIRE(ucp_listener_query(a.listener, &attr) == UCS_OK);
    CHECK(attr.sockaddr.ss_family == AF_INET);
    CHECK(reinterpret_cast<sockaddr_in *>(&attr.sockaddr)->sin_addr.s_addr ==
          htonl(INADDR_LOOPBACK));
    CHECK(a.port() != 0);
    CHECK(b.port() != 0);
    CHECK(a.port() != b.port());
    CHECK(c.listen(false, a.port()) == UCS_ERR_BUSY);
    CHECK(c.listener == nullptr);
    /* Destroying frees the port for a new listener. */
    const uint16_t port = a.port();
    ucp_listener_destroy(a.listener);
    a.listener = nullptr;
    CHECK(c.listen(false, port) == UCS_OK);
    CHECK(c.port() == port);
    check_real_client(c, "tcp");
}

TEST_CASE("client-server connection carries tag messages both ways (two processes)",
          "[ucp_listener]")
{
    for (const char *tls : {"tcp", "posix,cma", "sysv"}) {
        INFO("UCX_TLS=" << tls);
        server s;
        REQUIRE(s.p.init(tls) == UCS_OK);
        REQUIRE(s.listen() == UCS_OK);
        test::child_process child([tls](int fd) { return client_child(fd, tls); });
        REQUIRE(test::send_value(child.fd(), s.port()));
        REQUIRE(test::poll_until([&] { return !s.requests.empty(); },
                                 [&] { ucp_worker_progress(s.p.worker); }));
        ucp_conn_request_attr_t rattr{};
        rattr.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR;
        REQUIRE(ucp_conn_request_query(s.requests[0], &rattr) == UCS_OK);
        CHECK(rattr.client_address.ss_family == AF_INET);
        CHECK(reinterpret_cast<sockaddr_in *>(&rattr.client_address)->sin_addr.s_addr ==
              htonl(INADDR_LOOPBACK));
        ucp_ep_h ep;
        REQUIRE(s.accept(s.requests[0], &ep) == UCS_OK);
        s.p.ep = ep;
        /* Consumed: the same request cannot be used twice. */
        ucp_ep_h again = nullptr;
        CHECK(s.accept(s.requests[0], &again) == UCS_ERR_INVALID_PARAM);

        /* The lanes are the configured transport, not the bootstrap socket. */
        const std::string tl = std::string(": ") +
                               std::string(tls).substr(0, std::string(tls).find(',')) + "/";
        CHECK(ep_info(ep).find(tl) != std::string::npos);

        std::vector<uint8_t> in(1u << 20);
        for (size_t i = 0; i < std::size(message_sizes); ++i) {
            INFO("size " << message_sizes[i]);
            ucp_tag_recv_info_t info{};
            REQUIRE(s.p.recv(in.data(), in.size(), 100 + i, full_mask, &info) == UCS_OK);
            CHECK(info.length == message_sizes[i]);
            CHECK(check_pattern(in.data(), info.length, i));
        }
        uint64_t sync_value = 0;
        ucp_tag_recv_info_t info{};
        REQUIRE(s.p.recv(&sync_value, sizeof(sync_value), 99, full_mask, &info) == UCS_OK);
        CHECK(sync_value == 0x5157);
        std::vector<std::vector<uint8_t>> out;
        for (size_t i = 0; i < std::size(message_sizes); ++i) {
            out.emplace_back(message_sizes[i] + 1);
            fill_pattern(out.back().data(), message_sizes[i], 1000 + i);
            REQUIRE(s.p.send(out.back().data(), message_sizes[i], 200 + i) == UCS_OK);
        }

        sockaddr_storage client_local{};
        REQUIRE(s.p.recv_value_progress(child.fd(), &client_local));
        ucp_ep_attr_t attr{};
        attr.field_mask = UCP_EP_ATTR_FIELD_LOCAL_SOCKADDR | UCP_EP_ATTR_FIELD_REMOTE_SOCKADDR;
        REQUIRE(ucp_ep_query(ep, &attr) == UCS_OK);
        CHECK(same_address(attr.remote_sockaddr, client_local));
        CHECK(port_of(attr.local_sockaddr) == s.port());
        size_t client_info_length = 0;
        REQUIRE(s.p.recv_value_progress(child.fd(), &client_info_length));
        CHECK(client_info_length > 0);
        REQUIRE(test::sync_peer(child.fd()));
        CHECK(child.wait() == 0);
    }
}

TEST_CASE("accept_handler gets an ep created for it", "[ucp_listener]")
{
    server s;
    REQUIRE(s.p.init("posix,cma") == UCS_OK);
    REQUIRE(s.listen(true) == UCS_OK);
    peer c;
    REQUIRE(c.init("posix,cma") == UCS_OK);
    failure_log log;
    REQUIRE(connect_to(c.worker, s.port(), &log, &c.ep) == UCS_OK);
    REQUIRE(test::poll_until([&] { return !s.accepted.empty(); },
                             [&] {
        ucp_worker_progress(c.worker);
        ucp_worker_progress(s.p.worker);
    }));
    CHECK(s.requests.empty());
    uint64_t value = 42, got = 0;
    ucp_request_param_t param{};
    ucs_status_ptr_t rreq = ucp_tag_recv_nbx(c.worker, &got, sizeof(got), 3, full_mask, &param);
    CHECK(finish(send_nb(s.accepted[0], &value, sizeof(value), 3), s.p.worker, c.worker) == UCS_OK);
    CHECK(finish(rreq, c.worker, s.p.worker) == UCS_OK);
    CHECK(got == 42);
    CHECK(log.calls == 0);
    CHECK(s.callbacks == 1);
}

TEST_CASE("a rejected connection fails the client ep and its queued sends", "[ucp_listener]")
{
    for (bool at_once : {true, false}) {
        INFO((at_once ? "rejected in the callback" : "rejected later"));
        server s;
        REQUIRE(s.p.init("tcp") == UCS_OK);
        s.reject_at_once = at_once;
        REQUIRE(s.listen() == UCS_OK);
        peer c;
        REQUIRE(c.init("tcp") == UCS_OK);
        failure_log log;
        ucp_ep_h ep;
        REQUIRE(connect_to(c.worker, s.port(), &log, &ep) == UCS_OK);
        uint64_t value        = 1;
        ucs_status_ptr_t sreq = send_nb(ep, &value, sizeof(value), 1);
        REQUIRE(UCS_PTR_IS_PTR(sreq));
        if (!at_once) {
            REQUIRE(test::poll_until([&] { return !s.requests.empty(); },
                                     [&] {
                ucp_worker_progress(c.worker);
                ucp_worker_progress(s.p.worker);
            }));
            REQUIRE(ucp_listener_reject(s.listener, s.requests[0]) == UCS_OK);
            /* Consumed by the reject. */
            CHECK(ucp_listener_reject(s.listener, s.requests[0]) == UCS_ERR_INVALID_PARAM);
        }
        CHECK(finish(sreq, c.worker, s.p.worker) == UCS_ERR_REJECTED);
        CHECK(log.calls == 1);
        CHECK(log.status == UCS_ERR_REJECTED);
        CHECK(s.callbacks == 1);
        ucp_ep_attr_t attr{};
        attr.field_mask = UCP_EP_ATTR_FIELD_REMOTE_SOCKADDR;
        CHECK(ucp_ep_query(ep, &attr) == UCS_ERR_NOT_CONNECTED);
        CHECK(UCS_PTR_STATUS(send_nb(ep, &value, sizeof(value), 1)) == UCS_ERR_REJECTED);
        close_force(c, ep);
        /* The listener keeps serving. */
        s.reject_at_once = false;
        check_real_client(s, "tcp");
    }
}

TEST_CASE("connecting where nobody listens fails the ep through its handler", "[ucp_listener]")
{
    /* A bound socket that does not listen: connections to it are refused. */
    int holder = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(holder >= 0);
    sockaddr_in addr = loopback(0);
    REQUIRE(::bind(holder, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) == 0);
    sockaddr_storage bound{};
    socklen_t len = sizeof(bound);
    REQUIRE(getsockname(holder, reinterpret_cast<sockaddr *>(&bound), &len) == 0);

    peer c;
    REQUIRE(c.init("tcp") == UCS_OK);
    failure_log log;
    ucp_ep_h ep;
    REQUIRE(connect_to(c.worker, port_of(bound), &log, &ep) == UCS_OK);
    uint64_t value        = 1;
    ucs_status_ptr_t sreq = send_nb(ep, &value, sizeof(value), 1);
    REQUIRE(UCS_PTR_IS_PTR(sreq));
    CHECK(finish(sreq, c.worker) == UCS_ERR_NOT_CONNECTED); /* UCX 1.13's status */
    CHECK(log.calls == 1);
    CHECK(log.status == UCS_ERR_NOT_CONNECTED);
    close_force(c, ep);
    ::close(holder);
}

TEST_CASE("closing a client ep while it connects cancels its sends", "[ucp_listener]")
{
    server s;
    REQUIRE(s.p.init("tcp") == UCS_OK);
    REQUIRE(s.listen() == UCS_OK);
    peer c;
    REQUIRE(c.init("tcp") == UCS_OK);
    failure_log log;
    ucp_ep_h ep;
    REQUIRE(connect_to(c.worker, s.port(), &log, &ep) == UCS_OK);
    uint64_t value        = 1;
    ucs_status_ptr_t sreq = send_nb(ep, &value, sizeof(value), 1);
    REQUIRE(UCS_PTR_IS_PTR(sreq));
    close_force(c, ep);
    CHECK(ucp_request_check_status(sreq) == UCS_ERR_CANCELED);
    ucp_request_free(sreq);
    /* The server sees at most a connection that closes early: no crash,
     * and it goes on serving. */
    for (int i = 0; i < 1000; ++i) {
        ucp_worker_progress(c.worker);
        ucp_worker_progress(s.p.worker);
    }
    CHECK(log.calls == 0);
    for (ucp_conn_request_h req : s.requests) {
        CHECK(ucp_listener_reject(s.listener, req) == UCS_OK);
    }
    check_real_client(s, "tcp");

    /* A flush-mode close waits for the queued send, which then goes out. */
    peer d;
    REQUIRE(d.init("tcp") == UCS_OK);
    REQUIRE(connect_to(d.worker, s.port(), &log, &ep) == UCS_OK);
    sreq = send_nb(ep, &value, sizeof(value), 11);
    REQUIRE(UCS_PTR_IS_PTR(sreq));
    ucp_request_param_t cparam{};
    ucs_status_ptr_t creq = ucp_ep_close_nbx(ep, &cparam);
    REQUIRE(UCS_PTR_IS_PTR(creq));
    REQUIRE(test::poll_until([&] { return s.requests.size() == 2; },
                             [&] {
        ucp_worker_progress(d.worker);
        ucp_worker_progress(s.p.worker);
    }));
    ucp_ep_h sep;
    REQUIRE(s.accept(s.requests[1], &sep) == UCS_OK);
    uint64_t got = 0;
    ucp_request_param_t rparam{};
    ucs_status_ptr_t rreq = ucp_tag_recv_nbx(s.p.worker, &got, sizeof(got), 11, full_mask, &rparam);
    CHECK(finish(sreq, d.worker, s.p.worker) == UCS_OK);
    CHECK(finish(creq, d.worker, s.p.worker) == UCS_OK);
    CHECK(finish(rreq, s.p.worker, d.worker) == UCS_OK);
    CHECK(got == 1);
    close_force(s.p, sep);
}

TEST_CASE("a server asleep on its event fd still drops a client that sends no request",
          "[ucp_listener]")
{
    /* The request timeout is a timer of the connection manager: it must
     * wake a worker that sleeps on ucp_worker_get_efd, not wait for some
     * other event to come by. */
    server s;
    REQUIRE(s.p.init("tcp", UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP) == UCS_OK);
    REQUIRE(s.listen() == UCS_OK);
    ucp::sockaddr_set_request_timeout(s.p.worker, 0.3);
    int efd = -1;
    REQUIRE(ucp_worker_get_efd(s.p.worker, &efd) == UCS_OK);
    const int fd = raw_connect(s.port());
    REQUIRE(fd >= 0);

    const auto start    = std::chrono::steady_clock::now();
    const auto deadline = start + std::chrono::seconds(5);
    bool closed         = false;
    while (!closed && (std::chrono::steady_clock::now() < deadline)) {
        while (ucp_worker_progress(s.p.worker) != 0) {
        }
        ucs_status_t st = ucp_worker_arm(s.p.worker);
        if (st == UCS_ERR_BUSY) {
            continue;
        }
        REQUIRE(st == UCS_OK);
        /* Asleep until the worker's fd or the client's socket says so. */
        pollfd fds[2]   = {{efd, POLLIN, 0}, {fd, POLLIN, 0}};
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        REQUIRE(::poll(fds, 2, int(std::max<int64_t>(left.count(), 0))) >= 0);
        if (fds[1].revents != 0) {
            uint8_t byte;
            closed = ::recv(fd, &byte, 1, MSG_DONTWAIT) <= 0; /* EOF or reset */
        }
    }
    const auto waited = std::chrono::steady_clock::now() - start;
    ::close(fd);
    CHECK(closed);
    CHECK(waited >= std::chrono::milliseconds(250)); /* not before its time */
    CHECK(waited < std::chrono::seconds(3));
    CHECK(s.callbacks == 0);
}

TEST_CASE("a server asleep in a wait set still drops a client that sends no request",
          "[ucp_listener]")
{
    /* The same, asleep in ucp_waitset_wait (ucp_ext.h): the connection
     * manager's timer must wake a wait set that holds the worker. */
    server s;
    REQUIRE(s.p.init("tcp", UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP) == UCS_OK);
    REQUIRE(s.listen() == UCS_OK);
    ucp::sockaddr_set_request_timeout(s.p.worker, 0.3);
    ucp_waitset_h set;
    REQUIRE(ucp_waitset_create(s.p.context, UCP_WAIT_FD, &set) == UCS_OK);
    const ucp_object_t worker{UCP_OBJECT_WORKER, s.p.worker};
    REQUIRE(ucp_waitset_add(set, &worker) == UCS_OK);
    const int fd = raw_connect(s.port());
    REQUIRE(fd >= 0);

    const auto start    = std::chrono::steady_clock::now();
    const auto deadline = start + std::chrono::seconds(5);
    bool closed         = false;
    while (!closed && (std::chrono::steady_clock::now() < deadline)) {
        while (ucp_worker_progress(s.p.worker) != 0) {
        }
        uint8_t byte;
        const ssize_t got = ::recv(fd, &byte, 1, MSG_DONTWAIT);
        closed = (got == 0) || ((got < 0) && (errno != EAGAIN) && (errno != EWOULDBLOCK));
        if (!closed) {
            /* Asleep until the set says the worker has something. */
            (void)ucp_waitset_wait(set, 5000);
        }
    }
    const auto waited = std::chrono::steady_clock::now() - start;
    ::close(fd);
    CHECK(closed);
    CHECK(waited >= std::chrono::milliseconds(250)); /* not before its time */
    CHECK(waited < std::chrono::seconds(3));
    CHECK(ucp_waitset_remove(set, &worker) == UCS_OK);
    CHECK(ucp_waitset_destroy(set) == UCS_OK);
}

TEST_CASE("hostile bytes on the listening port are dropped, the listener goes on", "[ucp_listener]")
{
    server s;
    REQUIRE(s.p.init("tcp") == UCS_OK);
    REQUIRE(s.listen() == UCS_OK);
    s.reject_at_once = true; /* a fuzzed frame that is still valid gets a reject */
    ucp::sockaddr_set_request_timeout(s.p.worker, 0.3);
    peer other;
    REQUIRE(other.init("tcp") == UCS_OK);
    const std::vector<uint8_t> address = other.address();
    const std::vector<uint8_t> good    = valid_request(address);
    std::mt19937 rng(1234);

    using ucp::cs::frame_header;
    auto header_with = [&](auto &&change) {
        std::vector<uint8_t> frame = good;
        frame_header h;
        std::memcpy(&h, frame.data(), sizeof(h));
        change(h);
        std::memcpy(frame.data(), &h, sizeof(h));
        return frame;
    };
    std::vector<std::pair<const char *, std::vector<uint8_t>>> cases;
    std::vector<uint8_t> random_bytes(1000);
    for (auto &b : random_bytes) {
        b = uint8_t(rng());
    }
    cases.emplace_back("random bytes", random_bytes);
    cases.emplace_back("bad magic", header_with([](frame_header &h) { h.magic ^= 1; }));
    cases.emplace_back("bad version", header_with([](frame_header &h) { h.version = 9; }));
    cases.emplace_back("wrong direction",
                       header_with([](frame_header &h) { h.type = ucp::cs::FRAME_ACCEPT; }));
    cases.emplace_back("unknown flags", header_with([](frame_header &h) { h.flags = 0x80; }));
    cases.emplace_back("huge length", header_with([](frame_header &h) { h.length = 0xffffffffu; }));
    std::vector<uint8_t> longer = header_with([](frame_header &h) { h.length += 8; });
    longer.resize(longer.size() + 8);
    cases.emplace_back("length past the address", longer);
    cases.emplace_back("truncated header", std::vector<uint8_t>(good.begin(), good.begin() + 10));
    cases.emplace_back("truncated body", std::vector<uint8_t>(good.begin(), good.end() - 3));
    std::vector<uint8_t> bad_body = good;
    for (size_t i = sizeof(frame_header); i < bad_body.size(); ++i) {
        bad_body[i] = uint8_t(rng());
    }
    cases.emplace_back("garbage address", bad_body);
    cases.emplace_back("nothing", std::vector<uint8_t>());

    for (auto &[name, bytes] : cases) {
        INFO(name);
        int fd = raw_connect(s.port());
        REQUIRE(fd >= 0);
        if (!bytes.empty()) {
            REQUIRE(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == ssize_t(bytes.size()));
        }
        if (std::string(name) == "truncated body") {
            ::shutdown(fd, SHUT_WR); /* the rest never comes */
        }
        std::vector<uint8_t> answer;
        CHECK(closed_by_server(fd, s, &answer));
        CHECK(answer.empty());
        CHECK(s.callbacks == 0);
        ::close(fd);
    }

    /* Idle connections hold no one up: a real client gets through meanwhile,
     * and the idle ones are closed once the request timeout passes. */
    std::vector<int> idle;
    for (int i = 0; i < 20; ++i) {
        idle.push_back(raw_connect(s.port()));
        REQUIRE(idle.back() >= 0);
    }
    ::send(idle[0], good.data(), 7, MSG_NOSIGNAL); /* a partial header */
    s.reject_at_once = false;
    check_real_client(s, "tcp");
    for (int fd : idle) {
        CHECK(closed_by_server(fd, s));
        ::close(fd);
    }

    /* Fuzz: a valid request with a few bytes changed either is refused
     * (connection closed, no callback) or is still valid (then rejected). */
    s.reject_at_once   = true;
    unsigned delivered = 0;
    for (int i = 0; i < 300; ++i) {
        std::vector<uint8_t> frame = good;
        for (int n = 1 + int(rng() % 4); n > 0; --n) {
            frame[rng() % frame.size()] ^= uint8_t(1 + rng() % 255);
        }
        int fd = raw_connect(s.port());
        REQUIRE(fd >= 0);
        ::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL);
        const unsigned before = s.callbacks;
        std::vector<uint8_t> answer;
        CHECK(closed_by_server(fd, s, &answer));
        if (s.callbacks != before) {
            ++delivered;
            CHECK(answer.size() == sizeof(frame_header)); /* the reject */
        } else {
            CHECK(answer.empty());
        }
        ::close(fd);
    }
    INFO("fuzzed requests still valid: " << delivered);
    CHECK(delivered < 300);
    s.reject_at_once = false;
    check_real_client(s, "tcp");
}

TEST_CASE("unanswered requests count against the listener's limit of open connections",
          "[ucp_listener]")
{
    /* An application that never answers must not let unauthenticated
     * clients pile up connections (each one an fd and a request). */
    rlimit files{};
    REQUIRE(getrlimit(RLIMIT_NOFILE, &files) == 0);
    const rlim_t wanted = 4 * ucp::cs::max_handshakes;
    const rlimit saved  = files;
    files.rlim_cur      = std::max(files.rlim_cur, wanted);
    files.rlim_max      = std::max(files.rlim_max, wanted); /* root may raise it */
    INFO("open files: soft " << saved.rlim_cur << ", hard " << saved.rlim_max);
    REQUIRE(setrlimit(RLIMIT_NOFILE, &files) == 0);

    server s;
    REQUIRE(s.p.init("tcp") == UCS_OK);
    REQUIRE(s.listen() == UCS_OK);
    peer other;
    REQUIRE(other.init("tcp") == UCS_OK);
    const std::vector<uint8_t> good = valid_request(other.address());
    std::vector<int> clients;
    const unsigned extra = 8;
    for (unsigned i = 0; i < ucp::cs::max_handshakes + extra; ++i) {
        int fd = raw_connect(s.port());
        REQUIRE(fd >= 0);
        REQUIRE(::send(fd, good.data(), good.size(), MSG_NOSIGNAL) == ssize_t(good.size()));
        clients.push_back(fd);
        if (i < ucp::cs::max_handshakes) {
            /* Delivered one by one, so exactly the first ones get in. */
            REQUIRE(test::poll_until([&] { return s.requests.size() == i + 1; },
                                     [&] { ucp_worker_progress(s.p.worker); }));
        }
    }
    unsigned closed = 0;
    for (unsigned i = ucp::cs::max_handshakes; i < clients.size(); ++i) {
        closed += closed_by_server(clients[i], s);
    }
    CHECK(closed == extra);
    CHECK(s.requests.size() == ucp::cs::max_handshakes);

    /* Answering frees the slots: a real client gets through again. */
    for (ucp_conn_request_h request : s.requests) {
        CHECK(ucp_listener_reject(s.listener, request) == UCS_OK);
    }
    s.requests.clear();
    for (int fd : clients) {
        ::close(fd);
    }
    const unsigned before = s.callbacks;
    int late              = raw_connect(s.port());
    REQUIRE(late >= 0);
    REQUIRE(::send(late, good.data(), good.size(), MSG_NOSIGNAL) == ssize_t(good.size()));
    CHECK(test::poll_until([&] { return s.callbacks == before + 1; },
                           [&] { ucp_worker_progress(s.p.worker); }));
    ::close(late);
    setrlimit(RLIMIT_NOFILE, &saved);
}

TEST_CASE("a server sleeping on its efd wakes for a connection request", "[ucp_listener]")
{
    server s;
    REQUIRE(s.p.init("tcp", UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP) == UCS_OK);
    REQUIRE(s.listen() == UCS_OK);
    int efd;
    REQUIRE(ucp_worker_get_efd(s.p.worker, &efd) == UCS_OK);
    REQUIRE(test::poll_until([&] { return ucp_worker_arm(s.p.worker) == UCS_OK; },
                             [&] { ucp_worker_progress(s.p.worker); }));
    pollfd pfd{efd, POLLIN, 0};
    CHECK(::poll(&pfd, 1, 0) == 0);
    peer c;
    REQUIRE(c.init("tcp") == UCS_OK);
    failure_log log;
    REQUIRE(connect_to(c.worker, s.port(), &log, &c.ep) == UCS_OK);
    /* Only the client progresses; the server just watches its fd. */
    CHECK(test::poll_until([&] { return ::poll(&pfd, 1, 1) == 1; },
                           [&] { ucp_worker_progress(c.worker); }));
    REQUIRE(test::poll_until([&] { return !s.requests.empty(); },
                             [&] {
        ucp_worker_progress(c.worker);
        ucp_worker_progress(s.p.worker);
    }));
    CHECK(ucp_listener_reject(s.listener, s.requests[0]) == UCS_OK);
}

TEST_CASE("workers blocked in ucp_worker_wait wake for a request and for its answer",
          "[ucp_listener]")
{
    server s;
    REQUIRE(s.p.init("tcp", UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP) == UCS_OK);
    REQUIRE(s.listen() == UCS_OK);
    const uint16_t port = s.port();
    REQUIRE(port != 0);

    /* The client sleeps too between its own events: its efd must wake it
     * for the connect, and then for the server's answer. */
    peer c;
    REQUIRE(c.init("tcp", UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP) == UCS_OK);
    int efd;
    REQUIRE(ucp_worker_get_efd(c.worker, &efd) == UCS_OK);
    failure_log log;

    /* The server sleeps in ucp_worker_wait on its own thread, and only
     * progresses when woken; it rejects the request it gets. */
    std::atomic<bool> rescued{false};
    std::atomic<unsigned> waits{0};
    ucs_status_t wait_status = UCS_OK, reject_status = UCS_ERR_NO_MESSAGE;
    std::thread server_thread([&] {
        while (s.requests.empty() && !rescued) {
            wait_status = ucp_worker_wait(s.p.worker);
            if (wait_status != UCS_OK) {
                return;
            }
            ++waits;
            while (ucp_worker_progress(s.p.worker) != 0) {
            }
        }
        if (!s.requests.empty()) {
            reject_status = ucp_listener_reject(s.listener, s.requests[0]);
            while (ucp_worker_progress(s.p.worker) != 0) { /* sends the reject */
            }
        }
    });

    /* No REQUIRE from here to the join: a throw would leave the thread. */
    const ucs_status_t connect_status = connect_to(c.worker, port, &log, &c.ep);
    const auto deadline               = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    bool slept_through                = false; /* a poll that timed out: a missed wakeup */
    ucs_status_t arm_status           = UCS_OK;
    while ((connect_status == UCS_OK) && (log.calls == 0) &&
           (std::chrono::steady_clock::now() < deadline)) {
        arm_status = ucp_worker_arm(c.worker);
        if (arm_status == UCS_OK) {
            pollfd pfd{efd, POLLIN, 0};
            if (::poll(&pfd, 1, 10000) == 0) {
                slept_through = true;
                break;
            }
        } else if (arm_status != UCS_ERR_BUSY) {
            break;
        }
        while (ucp_worker_progress(c.worker) != 0) {
        }
    }
    if (log.calls == 0) {
        rescued = true; /* unblocks the server thread: the test failed */
        ucp_worker_signal(s.p.worker);
    }
    server_thread.join();

    CHECK(connect_status == UCS_OK);
    CHECK((arm_status == UCS_OK || arm_status == UCS_ERR_BUSY));
    CHECK_FALSE(slept_through);
    CHECK_FALSE(rescued);
    CHECK(wait_status == UCS_OK);
    CHECK(waits > 0);
    CHECK(s.requests.size() == 1);
    CHECK(reject_status == UCS_OK);
    CHECK(log.calls == 1);
    CHECK(log.status == UCS_ERR_REJECTED);
}

TEST_CASE("a request accepted on another worker; listener destroyed meanwhile", "[ucp_listener]")
{
    server s;
    REQUIRE(s.p.init("posix,cma") == UCS_OK);
    REQUIRE(s.listen() == UCS_OK);
    peer other, c;
    REQUIRE(other.init("posix,cma") == UCS_OK);
    REQUIRE(c.init("posix,cma") == UCS_OK);
    failure_log log;
    REQUIRE(connect_to(c.worker, s.port(), &log, &c.ep) == UCS_OK);
    REQUIRE(test::poll_until([&] { return !s.requests.empty(); },
                             [&] {
        ucp_worker_progress(c.worker);
        ucp_worker_progress(s.p.worker);
    }));
    /* The request outlives its listener. */
    ucp_listener_destroy(s.listener);
    s.listener = nullptr;
    ucp_conn_request_attr_t rattr{};
    rattr.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR;
    CHECK(ucp_conn_request_query(s.requests[0], &rattr) == UCS_OK);
    ucp_ep_params_t params{};
    params.field_mask   = UCP_EP_PARAM_FIELD_CONN_REQUEST;
    params.conn_request = s.requests[0];
    REQUIRE(ucp_ep_create(other.worker, &params, &other.ep) == UCS_OK);
    uint64_t value = 7, got = 0;
    ucp_request_param_t param{};
    ucs_status_ptr_t rreq = ucp_tag_recv_nbx(other.worker, &got, sizeof(got), 4, full_mask, &param);
    ucs_status_ptr_t sreq = send_nb(c.ep, &value, sizeof(value), 4);
    REQUIRE(test::poll_until(
        [&] {
        return (ucp_request_check_status(rreq) != UCS_INPROGRESS) &&
               ((sreq == nullptr) || (ucp_request_check_status(sreq) != UCS_INPROGRESS));
        },
        [&] {
        ucp_worker_progress(c.worker);
        ucp_worker_progress(s.p.worker);
        ucp_worker_progress(other.worker);
    }));
    CHECK(ucp_request_check_status(rreq) == UCS_OK);
    ucp_request_free(rreq);
    if (sreq != nullptr) {
        CHECK(ucp_request_check_status(sreq) == UCS_OK);
        ucp_request_free(sreq);
    }
    CHECK(got == 7);
    CHECK(log.calls == 0);
}

namespace {

/* Child: `workers` workers with `eps` client eps each, all connecting at once;
 * every ep sends its index, every worker then gets one answer per ep. */
int many_clients_child(int fd, unsigned workers, unsigned eps)
{
    uint16_t port;
    TEST_CHILD_CHECK(test::recv_value(fd, &port));
    std::vector<std::unique_ptr<peer>> peers;
    std::vector<std::vector<ucp_ep_h>> client_eps(workers);
    std::vector<uint64_t> values(workers * eps);
    std::vector<ucs_status_ptr_t> reqs;
    for (unsigned w = 0; w < workers; ++w) {
        peers.push_back(std::make_unique<peer>());
        TEST_CHILD_CHECK(peers.back()->init("tcp") == UCS_OK);
        for (unsigned e = 0; e < eps; ++e) {
            ucp_ep_h ep;
            TEST_CHILD_CHECK(connect_to(peers.back()->worker, port, nullptr, &ep) == UCS_OK);
            client_eps[w].push_back(ep);
            values[w * eps + e] = w * eps + e;
            reqs.push_back(send_nb(ep, &values[w * eps + e], sizeof(uint64_t), 500));
            TEST_CHILD_CHECK(!UCS_PTR_IS_ERR(reqs.back()));
        }
    }
    auto progress_all = [&] {
        for (auto &p : peers) {
            ucp_worker_progress(p->worker);
        }
    };
    for (ucs_status_ptr_t req : reqs) {
        if (req != nullptr) {
            TEST_CHILD_CHECK(
                test::poll_until([&] { return ucp_request_check_status(req) != UCS_INPROGRESS; },
                                 progress_all, std::chrono::seconds(60)));
            TEST_CHILD_CHECK(ucp_request_check_status(req) == UCS_OK);
            ucp_request_free(req);
        }
    }
    for (unsigned w = 0; w < workers; ++w) {
        for (unsigned e = 0; e < eps; ++e) {
            uint64_t answer = 0;
            ucp_request_param_t param{};
            ucs_status_ptr_t r = ucp_tag_recv_nbx(peers[w]->worker, &answer, sizeof(answer), 600,
                                                  full_mask, &param);
            TEST_CHILD_CHECK(!UCS_PTR_IS_ERR(r));
            if (r != nullptr) { /* nullptr: it was there already */
                TEST_CHILD_CHECK(
                    test::poll_until([&] { return ucp_request_check_status(r) != UCS_INPROGRESS; },
                                     progress_all, std::chrono::seconds(60)));
                TEST_CHILD_CHECK(ucp_request_check_status(r) == UCS_OK);
                ucp_request_free(r);
            }
            TEST_CHILD_CHECK(answer < workers * eps);
        }
    }
    TEST_CHILD_CHECK(test::sync_peer(fd));
    for (unsigned w = 0; w < workers; ++w) {
        for (ucp_ep_h ep : client_eps[w]) {
            close_force(*peers[w], ep);
        }
    }
    return 0;
}

/* Server callback that accepts inside the callback. */
struct accepting_server {
    ucp_worker_h worker = nullptr;
    std::vector<ucp_ep_h> eps;
    unsigned failures = 0;

    static void on_conn(ucp_conn_request_h request, void *arg)
    {
        auto *self = static_cast<accepting_server *>(arg);
        ucp_ep_params_t params{};
        params.field_mask   = UCP_EP_PARAM_FIELD_CONN_REQUEST;
        params.conn_request = request;
        ucp_ep_h ep;
        if (ucp_ep_create(self->worker, &params, &ep) == UCS_OK) {
            self->eps.push_back(ep);
        } else {
            ++self->failures;
        }
    }
};

} // namespace

TEST_CASE("fifty clients connect at once to one listener", "[ucp_listener]")
{
    constexpr unsigned workers = 5, eps = 10, total = workers * eps;
    peer s;
    REQUIRE(s.init("tcp") == UCS_OK);
    accepting_server acc;
    acc.worker       = s.worker;
    sockaddr_in addr = loopback(0);
    ucp_listener_params_t params{};
    params.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
    params.sockaddr.addr    = reinterpret_cast<const sockaddr *>(&addr);
    params.sockaddr.addrlen = sizeof(addr);
    params.conn_handler.cb  = accepting_server::on_conn;
    params.conn_handler.arg = &acc;
    ucp_listener_h listener;
    REQUIRE(ucp_listener_create(s.worker, &params, &listener) == UCS_OK);
    ucp_listener_attr_t attr{};
    attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
    REQUIRE(ucp_listener_query(listener, &attr) == UCS_OK);

    test::child_process child([](int fd) { return many_clients_child(fd, workers, eps); });
    REQUIRE(test::send_value(child.fd(), port_of(attr.sockaddr)));
    std::vector<bool> seen(total, false);
    for (unsigned i = 0; i < total; ++i) {
        uint64_t value = ~0ull;
        ucp_tag_recv_info_t info{};
        REQUIRE(s.recv(&value, sizeof(value), 500, full_mask, &info) == UCS_OK);
        REQUIRE(value < total);
        CHECK_FALSE(seen[value]);
        seen[value] = true;
    }
    CHECK(acc.eps.size() == total);
    CHECK(acc.failures == 0);
    for (size_t i = 0; i < acc.eps.size(); ++i) {
        uint64_t answer = i;
        ucp_request_param_t sparam{};
        REQUIRE(s.wait(ucp_tag_send_nbx(acc.eps[i], &answer, sizeof(answer), 600, &sparam)) ==
                UCS_OK);
    }
    /* Our answers may still sit in tcp buffers: progress until the child
     * says it has them all. */
    pollfd pfd{child.fd(), POLLIN, 0};
    REQUIRE(test::poll_until([&] { return ::poll(&pfd, 1, 0) == 1; },
                             [&] { ucp_worker_progress(s.worker); }, std::chrono::seconds(120)));
    REQUIRE(test::sync_peer(child.fd()));
    CHECK(child.wait() == 0);
    for (ucp_ep_h ep : acc.eps) {
        close_force(s, ep);
    }
    ucp_listener_destroy(listener);
}

TEST_CASE("an IPv6 listener serves IPv6 clients", "[ucp_listener]")
{
    server s;
    REQUIRE(s.p.init("tcp") == UCS_OK);
    sockaddr_in6 addr{};
    addr.sin6_family    = AF_INET6;
    addr.sin6_addr      = in6addr_loopback;
    ucs_status_t status = s.listen_on(reinterpret_cast<const sockaddr *>(&addr), sizeof(addr));
    if (status != UCS_OK) {
        WARN("no IPv6 loopback here (" << ucs_status_string(status) << "): skipped");
        return;
    }
    ucp_listener_attr_t attr{};
    attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
    REQUIRE(ucp_listener_query(s.listener, &attr) == UCS_OK);
    REQUIRE(attr.sockaddr.ss_family == AF_INET6);
    CHECK(reinterpret_cast<sockaddr_in6 *>(&attr.sockaddr)->sin6_port != 0);
    check_real_client(s, "tcp", &attr.sockaddr);
}

TEST_CASE("the handshake frame reader validates every byte", "[ucp_listener]")
{
    using namespace ucp::cs;
    peer p;
    REQUIRE(p.init("tcp") == UCS_OK);
    const std::vector<uint8_t> address = p.address();
    const std::vector<uint8_t> good    = valid_request(address);
    const unsigned requests            = 1u << FRAME_CONN_REQUEST;

    /* One byte at a time: complete only at the last byte. */
    frame_reader reader(requests);
    for (size_t i = 0; i < good.size(); ++i) {
        size_t used         = 0;
        ucs_status_t status = reader.feed(&good[i], 1, &used);
        CHECK(used == 1);
        REQUIRE(status == ((i + 1 == good.size()) ? UCS_OK : UCS_INPROGRESS));
    }
    CHECK(reader.body() == address);
    /* Bytes after the frame are not taken. */
    frame_reader whole(requests);
    std::vector<uint8_t> longer = good;
    longer.push_back(0);
    size_t used = 0;
    CHECK(whole.feed(longer.data(), longer.size(), &used) == UCS_OK);
    CHECK(used == good.size());
    /* The wrong direction, and a reject without a reason. */
    frame_reader client(1u << FRAME_ACCEPT | 1u << FRAME_REJECT);
    CHECK(client.feed(good.data(), good.size(), &used) == UCS_ERR_INVALID_PARAM);
    std::vector<uint8_t> reject = make_frame(FRAME_REJECT, UCS_OK, 0, 0, nullptr, 0);
    frame_reader client2(1u << FRAME_ACCEPT | 1u << FRAME_REJECT);
    CHECK(client2.feed(reject.data(), reject.size(), &used) == UCS_ERR_INVALID_PARAM);
    reject = make_frame(FRAME_REJECT, UCS_ERR_REJECTED, 0, 0, nullptr, 0);
    frame_reader client3(1u << FRAME_ACCEPT | 1u << FRAME_REJECT);
    CHECK(client3.feed(reject.data(), reject.size(), &used) == UCS_OK);
    CHECK(client3.header().status == UCS_ERR_REJECTED);

    /* Random streams never make a frame, and never read past what they got. */
    std::mt19937 rng(99);
    for (int i = 0; i < 2000; ++i) {
        std::vector<uint8_t> bytes(rng() % 300);
        for (auto &b : bytes) {
            b = uint8_t(rng());
        }
        if (!bytes.empty() && (i % 2 == 0)) {
            /* Half of them with a valid prefix, to get past the magic. */
            std::memcpy(bytes.data(), good.data(), std::min(bytes.size(), size_t(8)));
        }
        frame_reader r(requests);
        ucs_status_t status = r.feed(bytes.data(), bytes.size(), &used);
        CHECK(status != UCS_OK);
        CHECK(used <= bytes.size());
    }
}

TEST_CASE("client id and local address reach the server's connection request", "[ucp_listener]")
{
    server s;
    REQUIRE(s.p.init("tcp") == UCS_OK);
    REQUIRE(s.listen() == UCS_OK);
    peer c;
    REQUIRE(c.init("tcp") == UCS_OK);
    ucp_worker_params_t wparams{};
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_CLIENT_ID;
    wparams.client_id  = 0xfeedbeef12ull;
    ucp_worker_h worker;
    REQUIRE(ucp_worker_create(c.context, &wparams, &worker) == UCS_OK);

    sockaddr_in remote = loopback(s.port());
    sockaddr_in local  = loopback(0);
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_SOCK_ADDR | UCP_EP_PARAM_FIELD_FLAGS |
                        UCP_EP_PARAM_FIELD_LOCAL_SOCK_ADDR;
    params.flags         = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER | UCP_EP_PARAMS_FLAGS_SEND_CLIENT_ID;
    params.sockaddr.addr = reinterpret_cast<const sockaddr *>(&remote);
    params.sockaddr.addrlen       = sizeof(remote);
    params.local_sockaddr.addr    = reinterpret_cast<const sockaddr *>(&local);
    params.local_sockaddr.addrlen = sizeof(local);
    ucp_ep_h ep;
    REQUIRE(ucp_ep_create(worker, &params, &ep) == UCS_OK);
    REQUIRE(test::poll_until([&] { return !s.requests.empty(); },
                             [&] {
        ucp_worker_progress(worker);
        ucp_worker_progress(s.p.worker);
    }));
    ucp_conn_request_attr_t rattr{};
    rattr.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR |
                       UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ID;
    REQUIRE(ucp_conn_request_query(s.requests[0], &rattr) == UCS_OK);
    CHECK(rattr.client_id == 0xfeedbeef12ull);
    ucp_ep_attr_t attr{};
    attr.field_mask = UCP_EP_ATTR_FIELD_LOCAL_SOCKADDR;
    REQUIRE(ucp_ep_query(ep, &attr) == UCS_OK);
    CHECK(same_address(attr.local_sockaddr, rattr.client_address));
    CHECK(ucp_listener_reject(s.listener, s.requests[0]) == UCS_OK);
    /* The reject fails the ep: it has no connection to report any more. */
    REQUIRE(test::poll_until([&] { return ucp_ep_query(ep, &attr) == UCS_ERR_NOT_CONNECTED; },
                             [&] {
        ucp_worker_progress(worker);
        ucp_worker_progress(s.p.worker);
    }));
    close_force(c, ep);
    ucp_worker_destroy(worker);
}

TEST_CASE("a worker connects to its own listener", "[ucp_listener]")
{
    for (const char *tls : {"self", "tcp", "posix,cma"}) {
        INFO("UCX_TLS=" << tls);
        server s;
        REQUIRE(s.p.init(tls) == UCS_OK);
        REQUIRE(s.listen() == UCS_OK);
        failure_log log;
        ucp_ep_h client;
        REQUIRE(connect_to(s.p.worker, s.port(), &log, &client) == UCS_OK);
        std::vector<uint8_t> out(70000), in(70000);
        fill_pattern(out.data(), out.size(), 5);
        ucs_status_ptr_t sreq = send_nb(client, out.data(), out.size(), 8);
        REQUIRE(test::poll_until([&] { return !s.requests.empty(); },
                                 [&] { ucp_worker_progress(s.p.worker); }));
        ucp_ep_h server_ep;
        REQUIRE(s.accept(s.requests[0], &server_ep) == UCS_OK);
        ucp_tag_recv_info_t info{};
        REQUIRE(s.p.recv(in.data(), in.size(), 8, full_mask, &info) == UCS_OK);
        CHECK(info.length == out.size());
        CHECK(check_pattern(in.data(), in.size(), 5));
        CHECK(finish(sreq, s.p.worker) == UCS_OK);
        uint64_t value = 3, got = 0;
        REQUIRE(finish(send_nb(server_ep, &value, sizeof(value), 9), s.p.worker) == UCS_OK);
        REQUIRE(s.p.recv(&got, sizeof(got), 9, full_mask, &info) == UCS_OK);
        CHECK(got == 3);
        CHECK(log.calls == 0);
        close_force(s.p, client);
        close_force(s.p, server_ep);
    }
}
