/*
 * How an endpoint wakes up the process owning the FIFO it writes to: a
 * datagram to the owner's abstract unix socket, which leaves no file
 * behind. (Whether that process still lives: sm/base/peer_process.h.)
 */
#ifndef UCT_SM_MM_MM_PEER_H
#define UCT_SM_MM_MM_PEER_H

#include <ucs/type/status.h>

#include <cstdint>

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

namespace uct::mm {

/* The abstract socket an iface receives wakeups on: named by pid and id. */
struct wakeup_address {
    sockaddr_un addr;
    socklen_t length;

    static wakeup_address make(uint32_t pid, uint32_t id);
};

/* A bound, non-blocking datagram socket for this process's next iface;
 * returns the fd and its id, or -1. */
int wakeup_socket_open(uint32_t *id_p);

/* Drops queued wakeups so the fd is readable again only for new ones. */
void wakeup_socket_drain(int fd);

/* Best effort: a full queue already means the peer will wake up. */
void wakeup_send(int fd, const wakeup_address &to);

} // namespace uct::mm

#endif
