/*
 * Fuzz target: the tcp transport's receive side (uct/tcp/tcp_conn_rx.cc),
 * fed arbitrary bytes through a real socket: the handshake, frame headers,
 * user active messages, and the transport's own RMA emulation (PUT,
 * GET_REQ, ATOMIC_POST/REQ, FLUSH_REQ against a registered region, the
 * replies, DETACH, CONN_ACCEPT/REJECT).
 *
 * One tcp iface on "lo" (small receive and zero-copy limits, so that short
 * inputs reach the paths of large frames) with a touching handler on every
 * AM id and a region registered at fuzz::region_address. Input: one mode
 * byte, then the bytes the peer sends; every copy of
 * fuzz::region_id_token in them becomes the region's id first, and every
 * copy of fuzz::iface_key_token the iface's key (a handshake without it is
 * refused unread).
 *   mode 0 (acceptor): a plain socket connects to the iface and sends the
 *     bytes (a handshake, then frames), then closes its sending side.
 *   mode 1 (initiator): an ep of the iface connects to a plain listening
 *     socket and issues the requests of tcp_requests.h; the socket reads
 *     its handshake and answers with the bytes (CONN_ACCEPT, then replies
 *     and frames), then closes its sending side.
 * Either way the iface is progressed until the connection is gone.
 * Besides the sanitizers: the iface must notice the peer's close (a
 * connection left open after it, or an ep never told, aborts), and a
 * get_bcopy must get exactly the bytes it asked for.
 */
#include "fuzz_common.h"
#include "tcp_requests.h"

#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <uct/base/uct_worker.h>
#include <uct/tcp/tcp_iface.h>

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;
/* How long the peer waits for the other side: far above what any input needs
 * (milliseconds), so that only a real hang, not a loaded machine, aborts. */
constexpr auto patience = std::chrono::seconds(10);

struct world {
    std::unique_ptr<uct::worker> worker;
    uct::component *component  = nullptr;
    uct::md *md                = nullptr;
    uct::tcp::tcp_iface *iface = nullptr;
    uct::mem_h memh            = nullptr;
    uint64_t region_id         = 0;
    uct::rkey_bundle rkey;
    std::vector<uint8_t> dev_addr;
    uint16_t iface_port  = 0;
    int listen_fd        = -1; /* mode 1's peer */
    uint16_t listen_port = 0;
    uct::ep *failed_ep   = nullptr;
};

world g;

void check(bool ok, const char *what)
{
    if (!ok) {
        std::fprintf(stderr, "fuzz_tcp_rx: %s\n", what);
        std::abort();
    }
}

ucs_status_t touch_handler(void *, void *data, size_t length, unsigned)
{
    fuzz::touch(data, length);
    return UCS_OK;
}

ucs_status_t error_handler(void *, uct::ep *ep, ucs_status_t)
{
    g.failed_ep = ep;
    return UCS_OK;
}

void open_iface()
{
    for (uct::component *c : uct::components()) {
        if (std::strcmp(c->name(), "tcp") == 0) {
            g.component = c;
        }
    }
    check((g.component != nullptr) && (g.component->md_open("tcp", &g.md) == UCS_OK), "tcp md");
    g.worker = std::make_unique<uct::worker>(nullptr, UCS_THREAD_MODE_SINGLE);
    uct::iface_params params;
    params.tl_name     = "tcp";
    params.dev_name    = "lo";
    params.err_handler = error_handler;
    uct::iface *iface;
    check(g.md->iface_open(*g.worker, params, &iface) == UCS_OK, "tcp iface on lo");
    g.iface = static_cast<uct::tcp::tcp_iface *>(iface);
    for (unsigned id = 0; id < uct::AM_ID_MAX; ++id) {
        check(iface->set_am_handler(uct::am_id_t(id), touch_handler, nullptr, 0) == UCS_OK,
              "am handler");
    }
    g.dev_addr.resize(iface->attr().device_addr_len);
    check(iface->get_device_address(g.dev_addr.data()) == UCS_OK, "device address");
    uct::tcp::iface_addr addr;
    check(iface->get_address(&addr) == UCS_OK, "iface address");
    g.iface_port = addr.port;

    check(g.md->mem_reg(fuzz::map_region(), fuzz::region_length, 0, &g.memh) == UCS_OK,
          "region registration");
    uct::tcp::packed_rkey packed;
    check(g.md->mkey_pack(g.memh, &packed) == UCS_OK, "mkey_pack");
    g.region_id = packed.region_id;
    check(g.component->rkey_unpack(&packed, sizeof(packed), &g.rkey) == UCS_OK, "own rkey");

    g.listen_fd = fuzz::listen_loopback(&g.listen_port);
    check(g.listen_fd >= 0, "listening socket");
}

/* The peer's bytes with the tokens replaced by the live region id and the
 * iface's connection key. */
std::vector<uint8_t> peer_bytes(const uint8_t *data, size_t size)
{
    std::vector<uint8_t> bytes(data, data + size);
    const uint64_t token = fuzz::region_id_token;
    fuzz::replace_all(bytes, &token, &g.region_id, sizeof(token));
    fuzz::replace_all(bytes, fuzz::iface_key_token, &g.iface->key(), sizeof(fuzz::iface_key_token));
    return bytes;
}

/*
 * Progresses the iface while sending `bytes` on `fd` as the socket takes
 * them, then closes the sending side; drains whatever the iface sends.
 * Returns when done() or the socket saw the iface close it; false when
 * that took longer than `patience`.
 */
template <typename Done>
bool exchange(int fd, const std::vector<uint8_t> &bytes, Done &&done)
{
    size_t sent = 0;
    bool shut = false, closed = false;
    const auto deadline = clock_type::now() + patience;
    while (clock_type::now() < deadline) {
        g.worker->progress();
        if (sent < bytes.size()) {
            ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent,
                               MSG_DONTWAIT | MSG_NOSIGNAL);
            if (n > 0) {
                sent += size_t(n);
            } else if ((n < 0) && (errno != EAGAIN) && (errno != EWOULDBLOCK) && (errno != EINTR)) {
                sent = bytes.size(); /* the iface closed: nothing more goes */
            }
        } else if (!shut) {
            ::shutdown(fd, SHUT_WR);
            shut = true;
        }
        closed = closed || fuzz::drain(fd);
        if (shut && (closed || done())) {
            return true;
        }
    }
    return false;
}

void run_acceptor(const std::vector<uint8_t> &bytes)
{
    int fd = fuzz::connect_loopback(g.iface_port);
    check(fd >= 0, "connect to the iface");
    const bool finished = exchange(fd, bytes, [] { return false; });
    check(finished, "the iface kept the connection open after the peer closed it");
    fuzz::close_now(fd);
}

void run_initiator(const std::vector<uint8_t> &bytes)
{
    g.failed_ep = nullptr;
    uct::tcp::iface_addr addr{}; /* the peer is a plain socket: any key */
    addr.port   = g.listen_port;
    uct::ep *ep = nullptr;
    check(g.iface->ep_create_connected(g.dev_addr.data(), g.dev_addr.size(), &addr, sizeof(addr),
                                       &ep) == UCS_OK,
          "ep to the peer");
    auto requests = std::make_unique<fuzz::tcp_requests>();
    check(requests->issue(*ep, g.rkey.rkey), "requests refused");

    /* The peer accepts and reads the handshake before it answers. */
    int fd = -1;
    uint8_t hs[sizeof(uct::tcp::handshake)];
    size_t got          = 0;
    const auto deadline = clock_type::now() + patience;
    while ((got < sizeof(hs)) && (clock_type::now() < deadline)) {
        g.worker->progress();
        if (fd < 0) {
            fd = ::accept4(g.listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
            continue;
        }
        ssize_t n = ::recv(fd, hs + got, sizeof(hs) - got, MSG_DONTWAIT);
        if (n > 0) {
            got += size_t(n);
        }
    }
    check(got == sizeof(hs), "no handshake from the ep");

    const bool finished = exchange(fd, bytes, [] { return g.failed_ep != nullptr; });
    check(finished, "the ep was not told that its peer closed the connection");
    delete ep;
    fuzz::close_now(fd);
    /* A rejected ep may have connected again meanwhile: nobody answers. */
    int stale;
    while ((stale = ::accept4(g.listen_fd, nullptr, nullptr, SOCK_NONBLOCK)) >= 0) {
        fuzz::close_now(stale);
    }
    const auto end = clock_type::now() + patience;
    while ((g.iface->num_connections() > 0) && (clock_type::now() < end)) {
        g.worker->progress();
    }
    check(g.iface->num_connections() == 0, "a connection outlived its ep and its peer");
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***)
{
    static const char *const extra[] = {
        "UCX_TCP_RX_SEG_SIZE=1k", /* frames beyond 1 KiB take the large-frame paths */
        "UCX_TCP_MAX_ZCOPY=256k", /* bounds what a frame may announce */
        nullptr,
    };
    fuzz::init_env("tcp", extra);
    open_iface();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    const std::vector<uint8_t> bytes = peer_bytes(data + 1, size - 1);
    if (data[0] & 1) {
        run_initiator(bytes);
    } else {
        run_acceptor(bytes);
    }
    /* Nothing of this input stays: every connection is gone. */
    const auto end = clock_type::now() + patience;
    while ((g.iface->num_connections() > 0) && (clock_type::now() < end)) {
        g.worker->progress();
    }
    check(g.iface->num_connections() == 0, "a connection outlived its input");
    return 0;
}
