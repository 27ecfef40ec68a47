#include <uct/tcp/tcp_sockopt.h>

#include <ucs/debug/log.h>

#include <algorithm>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

namespace uct::tcp {

namespace {

bool set_int(int fd, int level, int name, int value, const char *what)
{
    if (::setsockopt(fd, level, name, &value, sizeof(value)) != 0) {
        ucs_error("tcp: cannot set %s to %d: %m", what, value);
        return false;
    }
    return true;
}

/* With a user timeout and KEEPCNT left to the system, an idle connection is
 * dropped at the first probe time at which a probe went unanswered and
 * nothing arrived for the timeout (what TCP_USER_TIMEOUT did to keepalive). */
int keepalive_count(const tcp_config &c)
{
    if ((c.keepcnt != 0) || (c.user_timeout_ms == 0) || (c.keepidle_s == 0) ||
        (c.keepintvl_s == 0)) {
        return c.keepcnt;
    }
    const long idle_ms     = long(c.keepidle_s) * 1000;
    const long interval_ms = long(c.keepintvl_s) * 1000;
    const long beyond_idle = long(c.user_timeout_ms) - idle_ms;
    const long probes      = (beyond_idle <= interval_ms) ?
                                 1 :
                                 (beyond_idle + interval_ms - 1) / interval_ms;
    return int(std::min(probes, 127L)); /* the kernel's range */
}

} // namespace

ucs_status_t configure_socket(int fd, const tcp_config &c)
{
    bool ok = set_int(fd, IPPROTO_TCP, TCP_NODELAY, c.nodelay ? 1 : 0, "TCP_NODELAY") &&
              ((c.sndbuf == 0) || set_int(fd, SOL_SOCKET, SO_SNDBUF, int(c.sndbuf), "SO_SNDBUF")) &&
              ((c.rcvbuf == 0) || set_int(fd, SOL_SOCKET, SO_RCVBUF, int(c.rcvbuf), "SO_RCVBUF"));
    if (ok && c.keepalive) {
        ok = ((c.keepidle_s == 0) ||
              set_int(fd, IPPROTO_TCP, TCP_KEEPIDLE, c.keepidle_s, "TCP_KEEPIDLE")) &&
             ((c.keepintvl_s == 0) ||
              set_int(fd, IPPROTO_TCP, TCP_KEEPINTVL, c.keepintvl_s, "TCP_KEEPINTVL")) &&
             ((keepalive_count(c) == 0) ||
              set_int(fd, IPPROTO_TCP, TCP_KEEPCNT, keepalive_count(c), "TCP_KEEPCNT")) &&
             set_int(fd, SOL_SOCKET, SO_KEEPALIVE, 1, "SO_KEEPALIVE");
    }
    /* No TCP_USER_TIMEOUT: Linux would also abort a connection whose peer
     * keeps its window closed that long, i.e. a live process that does not
     * read. The user timeout is applied by the iface's ack watch instead
     * (tcp_ack_watch.h). */
    return ok ? UCS_OK : UCS_ERR_IO_ERROR;
}

} // namespace uct::tcp
