/*
 * Network interfaces the tcp transport can use: every interface that is up
 * and has an IPv4 address (or, lacking one, a global IPv6 address), with a
 * performance estimate for the upper layers.
 */
#ifndef UCT_TCP_TCP_NETIF_H
#define UCT_TCP_TCP_NETIF_H

#include <uct/tcp/tcp_wire.h>

#include <boost/asio/ip/address.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace uct::tcp {

struct netif {
    std::string name;
    addr_family family;
    uint8_t ip[16]; /* ip_length(family) bytes used */
    bool loopback;
    double bandwidth_Bps;
    double latency_s;
};

/* Interfaces in getifaddrs() order, one entry per name. */
std::vector<netif> discover_netifs();

/* Looks `name` up; false when it is absent or down. */
bool find_netif(const char *name, netif *out);

/* The address of `family` whose ip_length(family) bytes are at `ip`. */
boost::asio::ip::address make_address(addr_family family, const uint8_t *ip);

/* Identifies this host's loopback: the node within its network namespace. */
uint64_t local_host_id();

} // namespace uct::tcp

#endif
