#include "sock.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

namespace perftest {

namespace {

constexpr auto CONNECT_PATIENCE = std::chrono::seconds(10);

/* Barriers are one-byte messages: do not let Nagle hold them back. */
void no_delay(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

std::string errno_text(const char *what)
{
    return std::string(what) + ": " + std::strerror(errno);
}

} // namespace

int accept_client(uint16_t port, bool ipv6, bool announce, std::string *error)
{
    int family = ipv6 ? AF_INET6 : AF_INET;
    int lfd    = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (lfd < 0) {
        *error = errno_text("socket");
        return -1;
    }
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_storage addr = {};
    socklen_t addr_len;
    if (ipv6) {
        auto *a6        = reinterpret_cast<sockaddr_in6 *>(&addr);
        a6->sin6_family = AF_INET6;
        a6->sin6_addr   = in6addr_any;
        a6->sin6_port   = htons(port);
        addr_len        = sizeof(*a6);
    } else {
        auto *a4            = reinterpret_cast<sockaddr_in *>(&addr);
        a4->sin_family      = AF_INET;
        a4->sin_addr.s_addr = htonl(INADDR_ANY);
        a4->sin_port        = htons(port);
        addr_len            = sizeof(*a4);
    }
    if ((bind(lfd, reinterpret_cast<sockaddr *>(&addr), addr_len) != 0) || (listen(lfd, 1) != 0)) {
        *error = errno_text("bind/listen") + " (port " + std::to_string(port) + ")";
        close(lfd);
        return -1;
    }
    if (announce) {
        std::printf("Waiting for connection...\n");
        std::fflush(stdout);
    }
    sockaddr_storage peer = {};
    socklen_t peer_len    = sizeof(peer);
    int fd;
    while (((fd = accept4(lfd, reinterpret_cast<sockaddr *>(&peer), &peer_len, SOCK_CLOEXEC)) <
            0) &&
           (errno == EINTR)) {
    }
    close(lfd);
    if (fd < 0) {
        *error = errno_text("accept");
        return -1;
    }
    no_delay(fd);
    if (announce) {
        char host[NI_MAXHOST] = "?", service[NI_MAXSERV] = "?";
        getnameinfo(reinterpret_cast<sockaddr *>(&peer), peer_len, host, sizeof(host), service,
                    sizeof(service), NI_NUMERICHOST | NI_NUMERICSERV);
        std::printf("Accepted connection from %s:%s\n", host, service);
        std::fflush(stdout);
    }
    return fd;
}

int connect_server(const std::string &host, uint16_t port, bool ipv6, std::string *error)
{
    addrinfo hints    = {};
    hints.ai_family   = ipv6 ? AF_INET6 : AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *list    = nullptr;
    int rc            = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &list);
    if (rc != 0) {
        *error = "cannot resolve '" + host + "': " + gai_strerror(rc);
        return -1;
    }
    auto deadline  = std::chrono::steady_clock::now() + CONNECT_PATIENCE;
    int last_errno = 0;
    for (;;) {
        for (addrinfo *ai = list; ai != nullptr; ai = ai->ai_next) {
            int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (fd < 0) {
                last_errno = errno;
                continue;
            }
            if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
                freeaddrinfo(list);
                no_delay(fd);
                return fd;
            }
            last_errno = errno;
            close(fd);
        }
        if ((last_errno != ECONNREFUSED) || (std::chrono::steady_clock::now() > deadline)) {
            break;
        }
        /* The server may not be listening yet: try again shortly. */
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    *error = "connect to " + host + ":" + std::to_string(port) + ": " + std::strerror(last_errno);
    freeaddrinfo(list);
    return -1;
}

} // namespace perftest
