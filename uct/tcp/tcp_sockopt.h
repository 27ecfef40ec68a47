/*
 * The socket options every tcp connection gets from the UCX_TCP_* settings:
 * Nagle, buffer sizes, and how long a silent peer may stay unnoticed
 * (keepalive probes while idle; while data is unacknowledged the iface's
 * ack watch, tcp_ack_watch.h: without them a cut cable or a vanished host is
 * noticed after ~15 minutes of retransmissions, or never on an idle
 * connection).
 */
#ifndef UCT_TCP_TCP_SOCKOPT_H
#define UCT_TCP_TCP_SOCKOPT_H

#include <uct/tcp/tcp_config.h>

#include <ucs/type/status.h>

namespace uct::tcp {

/* Logs and returns UCS_ERR_IO_ERROR when the kernel refuses an option. */
ucs_status_t configure_socket(int fd, const tcp_config &config);

} // namespace uct::tcp

#endif
