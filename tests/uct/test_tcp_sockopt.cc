/*
 * How long a silent tcp peer may go unnoticed: UCX_TCP_KEEPIDLE,
 * KEEPINTVL, KEEPCNT (UCX 1.13's names) become socket options of every
 * connection; USER_TIMEOUT is applied by the ack watch (its verdict is
 * tested here on kernel states) and, for idle connections, through
 * KEEPCNT. The cut-link behaviour itself is tested across two network
 * namespaces (tests/multihost, linkcut-*); a peer that keeps its window
 * closed in test_tcp_fault.cc.
 */
#include <catch2/catch.hpp>

#include "../ucs/config_test_util.h"

#include <uct/tcp/tcp_ack_watch.h>
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
    int value     = -1;
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
    CHECK(c.keepcnt == 0); /* auto: the system's */
    CHECK(c.user_timeout_ms == 1000);

    tcp_socket s;
    REQUIRE(uct::tcp::configure_socket(s.fd, c) == UCS_OK);
    CHECK(get_int(s.fd, SOL_SOCKET, SO_KEEPALIVE) == 1);
    CHECK(get_int(s.fd, IPPROTO_TCP, TCP_KEEPIDLE) == 1);
    CHECK(get_int(s.fd, IPPROTO_TCP, TCP_KEEPINTVL) == 1);
    /* The first unanswered probe ends an idle connection (1 s timeout). */
    CHECK(get_int(s.fd, IPPROTO_TCP, TCP_KEEPCNT) == 1);
    /* Not the kernel's user timeout: it would also end a connection whose
     * peer only keeps its window closed (test_tcp_fault.cc). */
    CHECK(get_int(s.fd, IPPROTO_TCP, TCP_USER_TIMEOUT) == 0);
    CHECK(get_int(s.fd, IPPROTO_TCP, TCP_NODELAY) == 1);
}

TEST_CASE("UCX_TCP_KEEP* reach the socket, UCX_TCP_USER_TIMEOUT the ack watch", "[tcp]")
{
    config_file_scope no_file;
    env_guard env;
    env.set("UCX_TCP_KEEPIDLE", "10s");
    env.set("UCX_TCP_KEEPINTVL", "2500ms"); /* whole seconds, rounded up */
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
    CHECK(get_int(s.fd, IPPROTO_TCP, TCP_USER_TIMEOUT) == 0);

    SECTION("KEEPCNT=auto: the user timeout sets how many probes go unanswered") {
        env.set("UCX_TCP_KEEPCNT", "auto");
        env.set("UCX_TCP_USER_TIMEOUT", "25s"); /* 10 s idle, then 3 s apart: 5 */
        const auto c2 = read_config();
        tcp_socket s2;
        REQUIRE(uct::tcp::configure_socket(s2.fd, c2) == UCS_OK);
        CHECK(get_int(s2.fd, IPPROTO_TCP, TCP_KEEPCNT) == 5);
    }
}

namespace {

/* A kernel state (TCP_INFO) with `last_ack_ms` since the last ack. */
uct::tcp::ack_state state(uint32_t last_ack_ms)
{
    uct::tcp::ack_state s{};
    s.rto_us      = 200000;
    s.last_ack_ms = last_ack_ms;
    return s;
}

} // namespace

TEST_CASE("tcp ack watch: which kernel states mean a silent peer", "[tcp]")
{
    constexpr uint32_t timeout = 1000;

    SECTION("a live peer that keeps its window closed") {
        auto s          = state(1500); /* window probes answered, far apart */
        s.notsent_bytes = 1 << 20;
        CHECK(uct::tcp::ack_pending(s));
        CHECK_FALSE(uct::tcp::peer_silent(s, timeout));
        s.probes = 1; /* its answer to one probe was rate-limited */
        CHECK_FALSE(uct::tcp::peer_silent(s, timeout));
        s.probes      = 2; /* two in a row, but within the rate limit */
        s.last_ack_ms = 1900;
        CHECK_FALSE(uct::tcp::peer_silent(s, timeout));
    }

    SECTION("window probes unanswered for seconds") {
        auto s          = state(2500);
        s.probes        = 2;
        s.notsent_bytes = 4096;
        CHECK(uct::tcp::peer_silent(s, timeout));
    }

    SECTION("a segment lost after a long idle time is not a silent peer") {
        auto s        = state(60000); /* the last ack came a minute ago */
        s.unacked     = 1;
        s.retransmits = 1;
        s.backoff     = 1;
        s.rto_us      = 400000;
        CHECK(uct::tcp::retransmit_wait_ms(s) == 200);
        CHECK_FALSE(uct::tcp::peer_silent(s, timeout));
    }

    SECTION("data retransmitted for longer than the timeout") {
        auto s        = state(1450);
        s.unacked     = 8;
        s.retransmits = 3; /* after 0.2, 0.4 and 0.8 s */
        s.backoff     = 3;
        s.rto_us      = 1600000;
        CHECK(uct::tcp::retransmit_wait_ms(s) == 1400);
        CHECK(uct::tcp::peer_silent(s, timeout));
        CHECK_FALSE(uct::tcp::peer_silent(s, 2000));
        s.last_ack_ms = 900; /* an ack arrived meanwhile */
        CHECK_FALSE(uct::tcp::peer_silent(s, timeout));
    }

    SECTION("nothing left to acknowledge") {
        const auto s = state(5000);
        CHECK_FALSE(uct::tcp::ack_pending(s));
        CHECK_FALSE(uct::tcp::peer_silent(s, timeout));
    }
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
        env.set("UCX_TCP_KEEPCNT", "1000"); /* the kernel takes at most 127 */
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
