#include <uct/tcp/tcp_sockopt.h>

#include <ucs/debug/log.h>

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
             ((c.keepcnt == 0) ||
              set_int(fd, IPPROTO_TCP, TCP_KEEPCNT, c.keepcnt, "TCP_KEEPCNT")) &&
             set_int(fd, SOL_SOCKET, SO_KEEPALIVE, 1, "SO_KEEPALIVE");
    }
    /* Only effective once connected (tcp(7)): connection setup keeps the
     * kernel's SYN retries. */
    if (ok && (c.user_timeout_ms > 0)) {
        ok = set_int(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, int(c.user_timeout_ms),
                     "TCP_USER_TIMEOUT");
    }
    return ok ? UCS_OK : UCS_ERR_IO_ERROR;
}

} // namespace uct::tcp
