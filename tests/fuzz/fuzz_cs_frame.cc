/*
 * Fuzz target: the client-server handshake (ucp/wireup/sockaddr_frame.cc
 * and the connection manager of sockaddr_cm.cc / sockaddr_ep.cc): the
 * frames a client or a server receives on the bootstrap TCP connection
 * before either side knows who the other is.
 *
 * Input: one mode byte, then the peer's bytes.
 *   mode 0, 1: a frame_reader as the server (CONN_REQUEST) or the client
 *     (ACCEPT, REJECT) uses, fed the bytes in chunks of 1 + (second byte
 *     % 64) bytes. A frame it accepts must be whole and its address must
 *     unpack.
 *   mode 2 (server): a plain socket connects to a worker's listener and
 *     sends the bytes; a request that gets through is accepted with
 *     ucp_ep_create (an ep made from the peer's address), then closed.
 *   mode 3 (client): a worker's ep connects to a plain listening socket,
 *     which reads its CONN_REQUEST and answers with the bytes; an ep that
 *     connects gets its lanes from the peer's address, then is closed.
 * The worker (UCX_TLS=self,posix,cma: no lane makes network connections)
 * lives across inputs; what an input creates is closed before the next.
 */
#include "fuzz_common.h"

#include <ucp/api/ucp.h>
#include <ucp/core/ucp_address.h>
#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_worker.h>
#include <ucp/wireup/sockaddr_frame.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;
/* How long the peer waits for the other side: far above what any input needs
 * (milliseconds), so that only a real hang, not a loaded machine, aborts. */
constexpr auto patience = std::chrono::seconds(10);

ucp_worker_h g_worker    = nullptr;
uint16_t g_listener_port = 0;
int g_peer_listen_fd     = -1; /* mode 3's server */
uint16_t g_peer_port     = 0;
std::vector<ucp_conn_request_h> g_requests; /* from the listener */
bool g_ep_failed = false;

void check(bool ok, const char *what)
{
    if (!ok) {
        std::fprintf(stderr, "fuzz_cs_frame: %s\n", what);
        std::abort();
    }
}

void conn_handler(ucp_conn_request_h request, void *)
{
    g_requests.push_back(request);
}

void ep_error(void *, ucp_ep_h, ucs_status_t)
{
    g_ep_failed = true;
}

sockaddr_in loopback(uint16_t port)
{
    sockaddr_in addr{};
    addr.sin_family      = AF_INET;
    addr.sin_port        = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return addr;
}

void close_ep(ucp_ep_h ep)
{
    ucp_request_param_t param{};
    param.op_attr_mask       = UCP_OP_ATTR_FIELD_FLAGS;
    param.flags              = UCP_EP_CLOSE_FLAG_FORCE;
    ucs_status_ptr_t request = ucp_ep_close_nbx(ep, &param);
    const auto deadline      = clock_type::now() + patience;
    while (UCS_PTR_IS_PTR(request) && (ucp_request_check_status(request) == UCS_INPROGRESS)) {
        check(clock_type::now() < deadline, "an ep does not close");
        ucp_worker_progress(g_worker);
    }
    if (UCS_PTR_IS_PTR(request)) {
        ucp_request_free(request);
    }
}

void run_reader(unsigned accepted, const uint8_t *data, size_t size)
{
    if (size < 1) {
        return;
    }
    const size_t chunk = 1 + (data[0] % 64);
    const std::vector<uint8_t> bytes(data + 1, data + size);
    ucp::cs::frame_reader reader(accepted);
    ucs_status_t status = UCS_INPROGRESS;
    size_t offset       = 0;
    while ((status == UCS_INPROGRESS) && (offset < bytes.size())) {
        const size_t n = std::min(chunk, bytes.size() - offset);
        /* Each chunk in an exact-size buffer, as recv() would leave it. */
        const std::vector<uint8_t> piece(bytes.begin() + long(offset),
                                         bytes.begin() + long(offset + n));
        size_t consumed = 0;
        status          = reader.feed(piece.data(), piece.size(), &consumed);
        check(consumed <= n, "the reader consumed more than it was given");
        offset += consumed;
        if ((status == UCS_INPROGRESS) && (consumed < n)) {
            check(false, "the reader stopped early without a verdict");
        }
    }
    if (status != UCS_OK) {
        return;
    }
    const auto &hdr  = reader.header();
    const auto &body = reader.body();
    check(body.size() == hdr.length, "an accepted frame's body is not its length");
    check(accepted & (1u << hdr.type), "a frame of a type not asked for");
    if (hdr.type != ucp::cs::FRAME_REJECT) {
        ucp::unpacked_address addr;
        check(ucp::unpack_address(body.data(), body.size(), &addr) == UCS_OK,
              "an accepted frame carries an address that does not unpack");
    }
}

/* Sends `bytes` on `fd` as the socket takes them, progressing the worker,
 * then closes the sending side; returns once the peer closed `fd` too or
 * done(). */
template <typename Done>
void exchange(int fd, const std::vector<uint8_t> &bytes, Done &&done)
{
    size_t sent         = 0;
    bool shut           = false;
    const auto deadline = clock_type::now() + patience;
    for (;;) {
        check(clock_type::now() < deadline, "the handshake neither ends nor fails");
        ucp_worker_progress(g_worker);
        if (sent < bytes.size()) {
            ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent,
                               MSG_DONTWAIT | MSG_NOSIGNAL);
            if (n > 0) {
                sent += size_t(n);
            } else if ((n < 0) && (errno != EAGAIN) && (errno != EWOULDBLOCK) && (errno != EINTR)) {
                sent = bytes.size();
            }
        } else if (!shut) {
            ::shutdown(fd, SHUT_WR);
            shut = true;
        }
        if (fuzz::drain(fd) || done()) {
            return;
        }
    }
}

void run_server(const uint8_t *data, size_t size)
{
    int fd = fuzz::connect_loopback(g_listener_port);
    check(fd >= 0, "connect to the listener");
    exchange(fd, std::vector<uint8_t>(data, data + size), [] { return !g_requests.empty(); });

    std::vector<ucp_ep_h> eps;
    for (ucp_conn_request_h request : g_requests) {
        ucp_ep_params_t params{};
        params.field_mask   = UCP_EP_PARAM_FIELD_CONN_REQUEST;
        params.conn_request = request;
        ucp_ep_h ep;
        if (ucp_ep_create(g_worker, &params, &ep) == UCS_OK) {
            eps.push_back(ep);
        }
    }
    g_requests.clear();
    /* The answer goes out; the client closes. */
    exchange(fd, {}, [] { return false; });
    fuzz::close_now(fd);
    for (ucp_ep_h ep : eps) {
        close_ep(ep);
    }
}

void run_client(const uint8_t *data, size_t size)
{
    g_ep_failed        = false;
    sockaddr_in server = loopback(g_peer_port);
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_SOCK_ADDR | UCP_EP_PARAM_FIELD_FLAGS |
                        UCP_EP_PARAM_FIELD_ERR_HANDLER | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    params.flags            = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    params.sockaddr.addr    = reinterpret_cast<const sockaddr *>(&server);
    params.sockaddr.addrlen = sizeof(server);
    params.err_mode         = UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb   = ep_error;
    ucp_ep_h ep;
    check(ucp_ep_create(g_worker, &params, &ep) == UCS_OK, "client ep");

    /* The server side: accept, read the whole request, then answer. */
    int fd = -1;
    std::vector<uint8_t> request;
    size_t want         = sizeof(ucp::cs::frame_header);
    const auto deadline = clock_type::now() + patience;
    while (request.size() < want) {
        check(clock_type::now() < deadline, "no connection request from the client");
        ucp_worker_progress(g_worker);
        if (fd < 0) {
            fd = ::accept4(g_peer_listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
            continue;
        }
        uint8_t buf[4096];
        ssize_t n = ::recv(fd, buf, std::min(sizeof(buf), want - request.size()), MSG_DONTWAIT);
        if (n > 0) {
            request.insert(request.end(), buf, buf + n);
            if (request.size() == sizeof(ucp::cs::frame_header)) {
                ucp::cs::frame_header hdr;
                std::memcpy(&hdr, request.data(), sizeof(hdr));
                want += hdr.length;
            }
        }
    }
    exchange(fd, std::vector<uint8_t>(data, data + size),
             [&] { return g_ep_failed || !(ep->flags & ucp::ep_flag::CONNECTING); });
    fuzz::close_now(fd);
    close_ep(ep);
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***)
{
    fuzz::init_env("self,posix,cma");
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_TAG | UCP_FEATURE_AM;
    ucp_context_h context;
    check(ucp_init(&params, nullptr, &context) == UCS_OK, "ucp_init");
    ucp_worker_params_t wparams{};
    check(ucp_worker_create(context, &wparams, &g_worker) == UCS_OK, "worker");

    sockaddr_in any = loopback(0);
    ucp_listener_params_t lparams{};
    lparams.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
    lparams.sockaddr.addr    = reinterpret_cast<const sockaddr *>(&any);
    lparams.sockaddr.addrlen = sizeof(any);
    lparams.conn_handler.cb  = conn_handler;
    ucp_listener_h listener;
    check(ucp_listener_create(g_worker, &lparams, &listener) == UCS_OK, "listener");
    ucp_listener_attr_t attr{};
    attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
    check(ucp_listener_query(listener, &attr) == UCS_OK, "listener query");
    g_listener_port = ntohs(reinterpret_cast<const sockaddr_in *>(&attr.sockaddr)->sin_port);

    g_peer_listen_fd = fuzz::listen_loopback(&g_peer_port);
    check(g_peer_listen_fd >= 0, "peer listening socket");
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    switch (data[0] & 3) {
    case 0:
        run_reader(1u << ucp::cs::FRAME_CONN_REQUEST, data + 1, size - 1);
        break;
    case 1:
        run_reader((1u << ucp::cs::FRAME_ACCEPT) | (1u << ucp::cs::FRAME_REJECT), data + 1,
                   size - 1);
        break;
    case 2:
        run_server(data + 1, size - 1);
        break;
    default:
        run_client(data + 1, size - 1);
        break;
    }
    return 0;
}
