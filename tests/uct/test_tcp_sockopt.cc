/*
 * How long a silent tcp peer may go unnoticed: UCX_TCP_KEEPIDLE,
 * KEEPINTVL, KEEPCNT (UCX 1.13's names) and USER_TIMEOUT become socket
 * options of every connection. The cut-link behaviour itself is tested
 * across two network namespaces (tests/multihost, linkcut-*).
 */
#include <catch2/catch.hpp>

#include "../ucs/config_test_util.h"

#include <uct/tcp/tcp_config.h>
#include <uct/tcp/tcp_sockopt.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

namespace {

using config_test::config_file_scope;
using config_test::env_guard;

uct::tcp::tcp_config read_config()
{
    uct::tcp::tcp_config c = uct::tcp::default_tcp_config();
    REQUIRE(uct::tcp::read_tcp_config("", &c) == UCS_OK);
    return c;
}

int get_int(int fd, int level, int name)
{
    int value = -1;
    socklen_t len = sizeof(value);
    REQUIRE(::getsockopt(fd, level, name, &value, &len) == 0);
    return value;
}

struct tcp_socket {
    tcp_socket() : fd(::socket(AF_INET, SOCK_STREAM, 0)) { REQUIRE(fd >= 0); }
    ~tcp_socket() { ::close(fd); }
    int fd;
};

} // namespace

TEST_CASE("tcp peer-failure settings: defaults detect a silent peer in seconds", "[tcp]")
{
    config_file_scope no_file;
    const auto c = read_config();
    CHECK(c.keepalive);
    CHECK(c.keepidle_s == 1);
    CHECK(c.keepintvl_s == 1);
    CHECK(c.keepcnt == 0);            /* auto: the system's */
    CHECK(c.user_timeout_ms == 1000);

    tcp_socket s;
    REQUIRE(uct::tcp::configure_socket(s.fd, c) == UCS_OK);
    CHECK(get_int(s.fd, SOL_SOCKET, SO_KEEPALIVE) == 1);
    CHECK(get_int(s.fd, IPPROTO_TCP, TCP_KEEPIDLE) == 1);
    CHECK(get_int(s.fd, IPPROTO_TCP, TCP_KEEPINTVL) == 1);
    CHECK(get_int(s.fd, IPPROTO_TCP, TCP_USER_TIMEOUT) == 1000);
    CHECK(get_int(s.fd, IPPROTO_TCP, TCP_NODELAY) == 1);
}

TEST_CASE("UCX_TCP_KEEP* and UCX_TCP_USER_TIMEOUT reach the socket", "[tcp]")
{
    config_file_scope no_file;
    env_guard env;
    env.set("UCX_TCP_KEEPIDLE", "10s");
    env.set("UCX_TCP_KEEPINTVL", "2500ms");   /* whole seconds, rounded up */
    env.set("UCX_TCP_KEEPCNT", "5");
    env.set("UCX_TCP_USER_TIMEOUT", "250ms");
    const auto c = read_config();
    CHECK(c.keepidle_s == 10);
    CHECK(c.keepintvl_s == 3);
    CHECK(c.keepcnt == 5);
    CHECK(c.user_timeout_ms == 250);

    tcp_socket s;
    REQUIRE(uct::tcp::configure_socket(s.fd, c) == UCS_OK);
    CHECK(get_int(s.fd, SOL_SOCKET, SO_KEEPALIVE) == 1);
    CHECK(get_int(s.fd, IPPROTO_TCP, TCP_KEEPIDLE) == 10);
    CHECK(get_int(s.fd, IPPROTO_TCP, TCP_KEEPINTVL) == 3);
    CHECK(get_int(s.fd, IPPROTO_TCP, TCP_KEEPCNT) == 5);
    CHECK(get_int(s.fd, IPPROTO_TCP, TCP_USER_TIMEOUT) == 250);
}

TEST_CASE("UCX_TCP_KEEP*=inf turns keepalive off, auto keeps system values", "[tcp]")
{
    config_file_scope no_file;
    env_guard env;
    const char *names[] = {"UCX_TCP_KEEPIDLE", "UCX_TCP_KEEPINTVL", "UCX_TCP_KEEPCNT"};
    for (const char *name : names) {
        DYNAMIC_SECTION(name << "=inf") {
            env.set(name, "inf");
            env.set("UCX_TCP_USER_TIMEOUT", "auto");
            const auto c = read_config();
            CHECK_FALSE(c.keepalive);
            CHECK(c.user_timeout_ms == 0);
            tcp_socket s;
            REQUIRE(uct::tcp::configure_socket(s.fd, c) == UCS_OK);
            CHECK(get_int(s.fd, SOL_SOCKET, SO_KEEPALIVE) == 0);
            CHECK(get_int(s.fd, IPPROTO_TCP, TCP_USER_TIMEOUT) == 0);
        }
    }

    SECTION("auto and out-of-range values") {
        tcp_socket fresh;
        const int system_idle = get_int(fresh.fd, IPPROTO_TCP, TCP_KEEPIDLE);
        env.set("UCX_TCP_KEEPIDLE", "auto");
        env.set("UCX_TCP_KEEPCNT", "1000");        /* the kernel takes at most 127 */
        env.set("UCX_TCP_USER_TIMEOUT", "inf");
        const auto c = read_config();
        CHECK(c.keepalive);
        CHECK(c.keepidle_s == 0);
        CHECK(c.keepcnt == 127);
        CHECK(c.user_timeout_ms == 0);
        tcp_socket s;
        REQUIRE(uct::tcp::configure_socket(s.fd, c) == UCS_OK);
        CHECK(get_int(s.fd, SOL_SOCKET, SO_KEEPALIVE) == 1);
        CHECK(get_int(s.fd, IPPROTO_TCP, TCP_KEEPIDLE) == system_idle);
        CHECK(get_int(s.fd, IPPROTO_TCP, TCP_KEEPCNT) == 127);
    }
}
