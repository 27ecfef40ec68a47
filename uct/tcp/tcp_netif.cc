#include <uct/tcp/tcp_netif.h>

#include <ucs/debug/log.h>
#include <ucs/sys/identity.h>

#include <cstdio>
#include <cstring>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

namespace uct::tcp {

namespace {

constexpr double LOOPBACK_BANDWIDTH_BPS    = 10e9;
constexpr double LOOPBACK_LATENCY_S        = 10e-6;
constexpr double NET_DEFAULT_BANDWIDTH_BPS = 10e9 / 8; /* 10 Gb/s when unknown */
constexpr double NET_LATENCY_S             = 20e-6;

/* Link speed in Mb/s from sysfs; 0 when unknown (virtual devices report -1). */
long link_speed_mbps(const std::string &name)
{
    std::string path = "/sys/class/net/" + name + "/speed";
    FILE *f          = std::fopen(path.c_str(), "r");
    if (f == nullptr) {
        return 0;
    }
    long speed = 0;
    if (std::fscanf(f, "%ld", &speed) != 1) {
        speed = 0;
    }
    std::fclose(f);
    return (speed > 0) ? speed : 0;
}

void set_perf(netif *nif)
{
    if (nif->loopback) {
        nif->bandwidth_Bps = LOOPBACK_BANDWIDTH_BPS;
        nif->latency_s     = LOOPBACK_LATENCY_S;
        return;
    }
    long mbps          = link_speed_mbps(nif->name);
    nif->bandwidth_Bps = (mbps > 0) ? (double(mbps) * 1e6 / 8) : NET_DEFAULT_BANDWIDTH_BPS;
    nif->latency_s     = NET_LATENCY_S;
}

/* Link-local IPv6 needs a scope id that means nothing to a peer. */
bool usable_ipv6(const sockaddr_in6 *sa)
{
    return !IN6_IS_ADDR_LINKLOCAL(&sa->sin6_addr) && !IN6_IS_ADDR_MULTICAST(&sa->sin6_addr);
}

} // namespace

std::vector<netif> discover_netifs()
{
    std::vector<netif> result;
    ifaddrs *list = nullptr;
    if (getifaddrs(&list) != 0) {
        ucs_error("getifaddrs() failed: %m");
        return result;
    }

    for (ifaddrs *ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
        if ((ifa->ifa_addr == nullptr) || !(ifa->ifa_flags & IFF_UP) ||
            !(ifa->ifa_flags & IFF_RUNNING) || (std::strlen(ifa->ifa_name) >= IFNAMSIZ)) {
            continue;
        }

        netif nif{};
        nif.name     = ifa->ifa_name;
        nif.loopback = (ifa->ifa_flags & IFF_LOOPBACK) != 0;
        if (ifa->ifa_addr->sa_family == AF_INET) {
            auto *sa   = reinterpret_cast<const sockaddr_in *>(ifa->ifa_addr);
            nif.family = addr_family::IPV4;
            std::memcpy(nif.ip, &sa->sin_addr, 4);
        } else if (ifa->ifa_addr->sa_family == AF_INET6) {
            auto *sa = reinterpret_cast<const sockaddr_in6 *>(ifa->ifa_addr);
            if (!usable_ipv6(sa)) {
                continue;
            }
            nif.family = addr_family::IPV6;
            std::memcpy(nif.ip, &sa->sin6_addr, 16);
        } else {
            continue;
        }
        set_perf(&nif);

        /* One resource per interface; IPv4 wins over IPv6. */
        bool merged = false;
        for (auto &known : result) {
            if (known.name == nif.name) {
                if ((known.family == addr_family::IPV6) && (nif.family == addr_family::IPV4)) {
                    known = nif;
                }
                merged = true;
                break;
            }
        }
        if (!merged) {
            result.push_back(nif);
        }
    }

    freeifaddrs(list);
    return result;
}

bool find_netif(const char *name, netif *out)
{
    if (name == nullptr) {
        return false;
    }
    for (const auto &nif : discover_netifs()) {
        if (nif.name == name) {
            *out = nif;
            return true;
        }
    }
    return false;
}

boost::asio::ip::address make_address(addr_family family, const uint8_t *ip)
{
    if (family == addr_family::IPV4) {
        boost::asio::ip::address_v4::bytes_type bytes;
        std::memcpy(bytes.data(), ip, bytes.size());
        return boost::asio::ip::address_v4(bytes);
    }
    boost::asio::ip::address_v6::bytes_type bytes;
    std::memcpy(bytes.data(), ip, bytes.size());
    return boost::asio::ip::address_v6(bytes);
}

uint64_t local_host_id()
{
    static const uint64_t id = ucs::sys::node_id({ucs::sys::namespace_type::net});
    return id;
}

} // namespace uct::tcp
