/*
 * What an endpoint knows about the process owning the FIFO it writes to:
 * whether it is still alive (a pidfd, immune to pid reuse; kill(pid, 0)
 * where pidfds are missing), and how to wake it up (a datagram to the
 * owner's abstract unix socket, which leaves no file behind).
 */
#ifndef UCT_SM_MM_MM_PEER_H
#define UCT_SM_MM_MM_PEER_H

#include <ucs/type/status.h>

#include <cstdint>

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

namespace uct::mm {

class peer_process {
public:
    peer_process() = default;
    peer_process(const peer_process&) = delete;
    peer_process &operator=(const peer_process&) = delete;
    ~peer_process();

    /* UCS_ERR_UNREACHABLE if no such process. */
    ucs_status_t open(pid_t pid);
    bool alive() const;
    pid_t pid() const { return pid_; }

private:
    pid_t pid_ = -1;
    int   pidfd_ = -1;
};

/* The abstract socket an iface receives wakeups on: named by pid and id. */
struct wakeup_address {
    sockaddr_un addr;
    socklen_t   length;

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
