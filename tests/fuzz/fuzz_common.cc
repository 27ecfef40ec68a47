#include "fuzz_common.h"

#include <ucs/debug/log.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace fuzz {

void init_env(const char *tls, const char *const *extra)
{
    const bool verbose = std::getenv("FUZZ_VERBOSE") != nullptr;
    setenv("UCX_LOG_LEVEL", verbose ? "debug" : "fatal", 1);
    setenv("UCX_CONFIG_FILE", "", 1);
    setenv("UCX_TLS", tls, 1);
    for (; (extra != nullptr) && (*extra != nullptr); ++extra) {
        putenv(const_cast<char *>(*extra));
    }
    ucs::log_set_level(verbose ? UCS_LOG_LEVEL_DEBUG : UCS_LOG_LEVEL_FATAL);
}

uint64_t touch(const void *data, size_t length)
{
    const auto *p = static_cast<const volatile uint8_t *>(data);
    uint64_t sum  = 0;
    for (size_t i = 0; i < length; ++i) {
        sum += p[i];
    }
    return sum;
}

bool send_all(int fd, const void *data, size_t length)
{
    const auto *p = static_cast<const uint8_t *>(data);
    while (length > 0) {
        ssize_t n = ::send(fd, p, length, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return false;
        }
        p += n;
        length -= size_t(n);
    }
    return true;
}

bool drain(int fd)
{
    char buf[4096];
    for (;;) {
        ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n > 0) {
            continue;
        }
        if (n == 0) {
            return true;
        }
        if (errno == EINTR) {
            continue;
        }
        return (errno != EAGAIN) && (errno != EWOULDBLOCK);
    }
}

int connect_loopback(uint16_t port)
{
    sockaddr_in addr{};
    addr.sin_family      = AF_INET;
    addr.sin_port        = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int error            = 0;
    for (int attempt = 0; attempt < 8; ++attempt) {
        int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            return -1;
        }
        if (::connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) == 0) {
            return fd;
        }
        error = errno;
        std::fprintf(stderr, "fuzz: connect to port %u failed (attempt %d): %s\n", unsigned(port),
                     attempt + 1, std::strerror(error));
        close_now(fd);
    }
    errno = error;
    return -1;
}

int listen_loopback(uint16_t *port_p)
{
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    sockaddr_in addr{};
    addr.sin_family      = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len        = sizeof(addr);
    if ((::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) != 0) ||
        (::listen(fd, 16) != 0) ||
        (::getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len) != 0)) {
        ::close(fd);
        return -1;
    }
    *port_p = ntohs(addr.sin_port);
    return fd;
}

void close_now(int fd)
{
    const linger now{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &now, sizeof(now));
    ::close(fd);
}

bool wait_readable(int fd, int timeout_ms)
{
    pollfd pfd{fd, POLLIN, 0};
    return ::poll(&pfd, 1, timeout_ms) > 0;
}

void *map_region()
{
    void *p = ::mmap(reinterpret_cast<void *>(region_address), region_length,
                     PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
                     0);
    if (p != reinterpret_cast<void *>(region_address)) {
        std::fprintf(stderr, "fuzz: cannot map the region at %#lx\n",
                     static_cast<unsigned long>(region_address));
        std::abort();
    }
    return p;
}

void replace_all(std::vector<uint8_t> &data, const void *token, const void *value, size_t length)
{
    for (size_t i = 0; i + length <= data.size(); ++i) {
        if (std::memcmp(&data[i], token, length) == 0) {
            std::memcpy(&data[i], value, length);
            i += length - 1;
        }
    }
}

} // namespace fuzz
