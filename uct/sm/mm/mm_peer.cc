#include "mm_peer.h"

#include <ucs/debug/log.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include <unistd.h>

namespace uct::mm {

wakeup_address wakeup_address::make(uint32_t pid, uint32_t id)
{
    wakeup_address w{};
    w.addr.sun_family = AF_UNIX;
    /* sun_path[0] == 0: the abstract namespace, nothing in the file system. */
    int n = std::snprintf(w.addr.sun_path + 1, sizeof(w.addr.sun_path) - 1, "ucx-ng-mm-%u-%u", pid,
                          id);
    w.length = socklen_t(offsetof(sockaddr_un, sun_path) + 1 + size_t(n));
    return w;
}

int wakeup_socket_open(uint32_t *id_p)
{
    static std::atomic<uint32_t> next_id{0};

    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        ucs_error("mm: cannot create the wakeup socket: %s", strerror(errno));
        return -1;
    }
    /* A name left by an earlier process with our pid is impossible (it
     * would still be alive), but another iface here could race: retry. */
    for (int attempt = 0; attempt < 16; ++attempt) {
        uint32_t id      = next_id.fetch_add(1);
        wakeup_address w = wakeup_address::make(uint32_t(getpid()), id);
        if (bind(fd, reinterpret_cast<sockaddr *>(&w.addr), w.length) == 0) {
            *id_p = id;
            return fd;
        }
        if (errno != EADDRINUSE) {
            break;
        }
    }
    ucs_error("mm: cannot bind the wakeup socket: %s", strerror(errno));
    close(fd);
    return -1;
}

void wakeup_socket_drain(int fd)
{
    char buf[16];
    while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) >= 0) {
    }
}

void wakeup_send(int fd, const wakeup_address &to)
{
    const char byte = 1;
    sendto(fd, &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL, reinterpret_cast<const sockaddr *>(&to.addr),
           to.length);
}

} // namespace uct::mm
