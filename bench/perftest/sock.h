/* The TCP connection between a client and a server (-p PORT). */
#ifndef BENCH_PERFTEST_SOCK_H
#define BENCH_PERFTEST_SOCK_H

#include <cstdint>
#include <string>

namespace perftest {

/* Waits for one client on `port`; the connected socket, or -1 with *error.
 * `announce` prints UCX's "Waiting for connection..." lines. */
int accept_client(uint16_t port, bool ipv6, bool announce, std::string *error);

/* Connects to the server, retrying for a few seconds while it is not
 * listening yet (scripts start both sides at once); -1 with *error. */
int connect_server(const std::string &host, uint16_t port, bool ipv6, std::string *error);

} // namespace perftest

#endif
