/*
 * tcp_floor: what the kernel's loopback TCP gives two processes with no
 * library in between, the floor for a tcp transport on this machine.
 *
 * This process listens on 127.0.0.1, a forked peer connects; both sockets
 * are blocking with TCP_NODELAY, the kernel's buffer autotuning left on.
 *   - latency: a ping-pong of SIZE-byte messages (send, then read until the
 *     whole answer is in), one-way = round trip / 2, median of 5 blocks;
 *     once with blocking reads (the process sleeps in recv) and once with
 *     reads that spin (MSG_DONTWAIT until the bytes are there, as a polling
 *     library does): the lower is the floor;
 *   - bandwidth: this side writes ITERS messages of SIZE bytes back to back,
 *     the peer reads them and answers one byte at the end; MB/s (2^20 bytes)
 *     over that time, median of 3 blocks; in each of stream_patterns:
 *     blocking calls of whole messages, calls that spin (a polling library's
 *     pattern), and 256 or 512 KiB writes with reads that wait for 512 KiB
 *     (SO_RCVLOWAT, at most half of what is left: fewer, larger copies, as
 *     tcp's UCX_TCP_TX_BATCH and UCX_TCP_RX_LOWAT do): the fastest is the
 *     floor.
 * bench/compare runs it each round beside `ucx_perftest -t tag_lat/tag_bw`
 * over tcp on both libraries (issue 23's goal: within 1.15x of its latency,
 * >= 0.9x of its bandwidth).
 */
#include "../common/peer.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {

constexpr unsigned LAT_BLOCKS = 5, BW_BLOCKS = 3;

struct options {
    bool latency       = true;
    bool bandwidth     = true;
    size_t lat_size    = 8;
    size_t bw_size     = 1 << 20;
    unsigned lat_iters = 20000;
    unsigned bw_iters  = 200;
    int cpus[2]        = {0, 1};
};

/* `spin`: never sleeps in the kernel, retries while the socket is full;
 * `piece`: at most this many bytes a call (0: all). */
bool send_all(int fd, const uint8_t *p, size_t length, bool spin = false, size_t piece = 0)
{
    while (length > 0) {
        const size_t want = (piece == 0) ? length : std::min(piece, length);
        ssize_t n         = ::send(fd, p, want, MSG_NOSIGNAL | (spin ? MSG_DONTWAIT : 0));
        if (n <= 0) {
            if (spin && (n < 0) && ((errno == EAGAIN) || (errno == EWOULDBLOCK))) {
                continue;
            }
            return false;
        }
        p += n;
        length -= size_t(n);
    }
    return true;
}

/* `spin`: never sleeps in the kernel, retries while nothing has come. */
bool recv_all(int fd, uint8_t *p, size_t length, bool spin = false)
{
    while (length > 0) {
        ssize_t n = ::recv(fd, p, length, spin ? MSG_DONTWAIT : 0);
        if (n <= 0) {
            if (spin && (n < 0) && ((errno == EAGAIN) || (errno == EWOULDBLOCK))) {
                continue;
            }
            return false;
        }
        p += n;
        length -= size_t(n);
    }
    return true;
}

/* Reads `length` bytes, each call waiting (SO_RCVLOWAT) until `lowat` of
 * them, at most half of what is left, have arrived: fewer, larger reads,
 * as tcp's UCX_TCP_RX_LOWAT does. */
bool recv_lowat(int fd, uint8_t *p, size_t length, size_t lowat)
{
    constexpr size_t min_lowat = 64 * 1024;
    int current                = 1;
    bool ok                    = true;
    while (ok && (length > 0)) {
        const size_t half = length / 2;
        const int want    = (half >= min_lowat) ? int(std::min(lowat, half)) : 1;
        if (want != current) {
            setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &want, sizeof(want));
            current = want;
        }
        ssize_t n = ::recv(fd, p, length, 0);
        ok        = (n > 0);
        if (ok) {
            p += n;
            length -= size_t(n);
        }
    }
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &one, sizeof(one));
    return ok;
}

/* One-way latency of a ping-pong, median of blocks; false if it broke. */
bool ping_pong(const options &opts, int fd, bool leader, bool spin, std::vector<uint8_t> &buffer,
               double *lat_us)
{
    using clock = std::chrono::steady_clock;
    std::vector<double> blocks;
    for (unsigned block = 0; block <= LAT_BLOCKS; ++block) { /* block 0 warms up */
        const unsigned n = (block == 0) ? opts.lat_iters / 10 + 1 : opts.lat_iters;
        const auto start = clock::now();
        for (unsigned i = 0; i < n; ++i) {
            if (leader ? !(send_all(fd, buffer.data(), opts.lat_size) &&
                           recv_all(fd, buffer.data(), opts.lat_size, spin)) :
                         !(recv_all(fd, buffer.data(), opts.lat_size, spin) &&
                           send_all(fd, buffer.data(), opts.lat_size))) {
                return false;
            }
        }
        const std::chrono::duration<double, std::micro> us = clock::now() - start;
        if (block > 0) {
            blocks.push_back(us.count() / (2.0 * n));
        }
    }
    std::sort(blocks.begin(), blocks.end());
    *lat_us = blocks[blocks.size() / 2];
    return true;
}

/* A stream of SIZE-byte messages, MB/s, median of blocks; false if it
 * broke. `spin`: both sides poll (MSG_DONTWAIT) and the writer hands the
 * kernel `piece` bytes a call, as a polling library does (tcp's
 * UCX_TCP_TX_BATCH, 256 KiB). */
bool stream(const options &opts, int fd, bool leader, bool spin, size_t piece, size_t lowat,
            std::vector<uint8_t> &buffer, double *bw_mbps)
{
    using clock = std::chrono::steady_clock;
    std::vector<double> blocks;
    uint8_t ack = 1;
    for (unsigned block = 0; block <= BW_BLOCKS; ++block) {
        const unsigned n = (block == 0) ? opts.bw_iters / 10 + 1 : opts.bw_iters;
        const auto start = clock::now();
        for (unsigned i = 0; i < n; ++i) {
            if (!(leader      ? send_all(fd, buffer.data(), opts.bw_size, spin, piece) :
                  (lowat > 0) ? recv_lowat(fd, buffer.data(), opts.bw_size, lowat) :
                                recv_all(fd, buffer.data(), opts.bw_size, spin))) {
                return false;
            }
        }
        if (!(leader ? recv_all(fd, &ack, 1, spin) : send_all(fd, &ack, 1))) {
            return false;
        }
        const std::chrono::duration<double> s = clock::now() - start;
        if (block > 0) {
            blocks.push_back(double(opts.bw_size) * n / s.count() / double(1 << 20));
        }
    }
    std::sort(blocks.begin(), blocks.end());
    *bw_mbps = blocks[blocks.size() / 2];
    return true;
}

/* The stream patterns tried; the fastest is the floor. */
struct stream_pattern {
    const char *name;
    bool spin;    /* both sides poll (MSG_DONTWAIT) */
    size_t piece; /* the writer's bytes a call (0: the whole message) */
    size_t lowat; /* the reader waits for this much (SO_RCVLOWAT; 0: no) */
};
constexpr size_t KiB                       = 1024;
constexpr stream_pattern stream_patterns[] = {
    {"blocking whole writes", false, 0, 0},
    {"spinning 256 KiB writes and reads", true, 256 * KiB, 0},
    {"256 KiB writes, 512 KiB low-water reads", false, 256 * KiB, 512 * KiB},
    {"512 KiB writes, 512 KiB low-water reads", false, 512 * KiB, 512 * KiB},
};
constexpr unsigned num_patterns = std::size(stream_patterns);

/* Both sides run the same sequence; `leader` is the listening side.
 * lat_us[0]: blocking reads, lat_us[1]: spinning reads; bw_mbps[i]: the
 * stream with stream_patterns[i]. */
bool run(const options &opts, int fd, bool leader, double lat_us[2], double *bw_mbps)
{
    std::vector<uint8_t> buffer(std::max(opts.lat_size, opts.bw_size), 0x5a);
    if (opts.latency && !(ping_pong(opts, fd, leader, false, buffer, &lat_us[0]) &&
                          ping_pong(opts, fd, leader, true, buffer, &lat_us[1]))) {
        return false;
    }
    for (unsigned i = 0; opts.bandwidth && (i < num_patterns); ++i) {
        const stream_pattern &sp = stream_patterns[i];
        if (!stream(opts, fd, leader, sp.spin, sp.piece, sp.lowat, buffer, &bw_mbps[i])) {
            return false;
        }
    }
    return true;
}

void set_nodelay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int run_peer(const options &opts, perf::oob &channel)
{
    perf::pin_to_cpu(opts.cpus[1]);
    uint16_t port;
    if (!channel.recv(&port, sizeof(port))) {
        return 1;
    }
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family      = AF_INET;
    addr.sin_port        = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if ((fd < 0) || (::connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) != 0)) {
        std::perror("tcp_floor (peer): connect");
        return 1;
    }
    set_nodelay(fd);
    double lat[2], bw[num_patterns];
    const bool ok = run(opts, fd, false, lat, bw);
    ::close(fd);
    return ok ? 0 : 1;
}

void usage()
{
    std::fprintf(stderr,
                 "usage: tcp_floor [-t lat|bw|both] [-s LAT_SIZE] [-S BW_SIZE] [-n LAT_ITERS] "
                 "[-N BW_ITERS] [-c CPU0,CPU1]\n"
                 "  defaults: both, 8 B ping-pong x 20000, 1 MiB stream x 200, CPUs 0,1\n");
}

int parse(int argc, char **argv, options *opts)
{
    int c;
    while ((c = getopt(argc, argv, "t:s:S:n:N:c:h")) != -1) {
        switch (c) {
        case 't':
            opts->latency   = (std::strcmp(optarg, "bw") != 0);
            opts->bandwidth = (std::strcmp(optarg, "lat") != 0);
            if (std::strcmp(optarg, "lat") && std::strcmp(optarg, "bw") &&
                std::strcmp(optarg, "both")) {
                usage();
                return 2;
            }
            break;
        case 's':
        case 'S':
        case 'n':
        case 'N': {
            char *end;
            unsigned long v = std::strtoul(optarg, &end, 10);
            if ((*end != '\0') || (v == 0) || (v > (1ul << 30))) {
                usage();
                return 2;
            }
            if (c == 's') {
                opts->lat_size = v;
            } else if (c == 'S') {
                opts->bw_size = v;
            } else if (c == 'n') {
                opts->lat_iters = unsigned(v);
            } else {
                opts->bw_iters = unsigned(v);
            }
            break;
        }
        case 'c':
            if (std::sscanf(optarg, "%d,%d", &opts->cpus[0], &opts->cpus[1]) != 2) {
                usage();
                return 2;
            }
            break;
        default:
            usage();
            return 2;
        }
    }
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    options opts;
    int code = parse(argc, argv, &opts);
    if (code != 0) {
        return code;
    }
    int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family      = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length     = sizeof(addr);
    if ((listener < 0) || (::bind(listener, reinterpret_cast<sockaddr *>(&addr), length) != 0) ||
        (::listen(listener, 1) != 0) ||
        (::getsockname(listener, reinterpret_cast<sockaddr *>(&addr), &length) != 0)) {
        std::perror("tcp_floor: listen");
        return 1;
    }
    perf::peer peer(false, [&opts](perf::oob &channel) { return run_peer(opts, channel); });
    if (!peer.started()) {
        return 1;
    }
    perf::pin_to_cpu(opts.cpus[0]);
    const uint16_t port = ntohs(addr.sin_port);
    int fd = peer.channel().send(&port, sizeof(port)) ? ::accept(listener, nullptr, nullptr) : -1;
    ::close(listener);
    double lat[2] = {0, 0}, bw[num_patterns] = {};
    bool ok = (fd >= 0);
    if (ok) {
        set_nodelay(fd);
        ok = run(opts, fd, true, lat, bw);
        ::close(fd);
    }
    const int peer_code = peer.join(10000);
    if (!ok || (peer_code != 0)) {
        std::fprintf(stderr, "tcp_floor: %s\n", ok ? "the peer failed" : "the run failed");
        return 1;
    }
    std::printf("# tcp_floor: loopback TCP on 127.0.0.1, TCP_NODELAY, CPUs %d,%d\n", opts.cpus[0],
                opts.cpus[1]);
    if (opts.latency) {
        std::printf("latency_us %.4f (%zu B one-way, the lower of blocking %.4f and "
                    "spinning %.4f; median of %u blocks of %u)\n",
                    std::min(lat[0], lat[1]), opts.lat_size, lat[0], lat[1], LAT_BLOCKS,
                    opts.lat_iters);
    }
    if (opts.bandwidth) {
        const double best = *std::max_element(bw, bw + num_patterns);
        std::printf("bandwidth_MBps %.1f (%zu B messages, the fastest pattern; median of %u "
                    "blocks of %u)\n",
                    best, opts.bw_size, BW_BLOCKS, opts.bw_iters);
        for (unsigned i = 0; i < num_patterns; ++i) {
            std::printf("#   %-42s %.1f MB/s\n", stream_patterns[i].name, bw[i]);
        }
    }
    return 0;
}
