/*
 * uct/sm/base: peer_process (pidfd or /proc, start-time check) and
 * peer_watch (the epoll set of the peers' pidfds, /proc scans without).
 */
#include <catch2/catch.hpp>

#include "two_process.h"

#include <uct/sm/base/peer_process.h>
#include <uct/sm/base/peer_watch.h>

#include <ucs/sys/process.h>

#include <chrono>
#include <vector>

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace std::chrono_literals;

namespace {

/* A child that blocks on the test socket until it is killed. */
int wait_forever(int fd)
{
    uint8_t never;
    test::recv_value(fd, &never);
    return 0;
}

/* Waits until the child has exited, without reaping it: a zombie. */
void wait_zombie(pid_t pid)
{
    siginfo_t info{};
    REQUIRE(waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) == 0);
}

bool have_pidfd()
{
    const int fd = ucs::sys::pidfd_open(getpid());
    if (fd < 0) {
        return false;
    }
    ::close(fd);
    return true;
}

} // namespace

TEST_CASE("peer_process: live, dead and reused pids", "[sm]")
{
    for (bool use_pidfd : {true, false}) {
        INFO("pidfd " << use_pidfd);
        uct::sm::peer_process self;
        REQUIRE(self.open(getpid(), use_pidfd) == UCS_OK);
        CHECK(self.alive());
        CHECK((self.pidfd() >= 0) == (use_pidfd && have_pidfd()));
        CHECK(self.verify_start_time(ucs::sys::self_start_time()) == UCS_OK);
        CHECK(self.verify_start_time(0) == UCS_OK); /* unknown: not held against it */
        /* Our pid with another start time: the address named a process
         * that is gone, whose pid we now have. */
        CHECK(self.verify_start_time(ucs::sys::self_start_time() + 1) == UCS_ERR_UNREACHABLE);
        CHECK(self.open(getpid(), use_pidfd) == UCS_ERR_INVALID_PARAM); /* twice */

        uct::sm::peer_process bad;
        CHECK(bad.open(0, use_pidfd) == UCS_ERR_INVALID_PARAM);

        pid_t dead;
        {
            test::child_process gone([](int) { return 0; });
            dead = gone.pid();
            REQUIRE(gone.wait() == 0);
        }
        uct::sm::peer_process reaped;
        CHECK(reaped.open(dead, use_pidfd) == UCS_ERR_UNREACHABLE);

        test::child_process child(wait_forever);
        uct::sm::peer_process zombie;
        REQUIRE(zombie.open(child.pid(), use_pidfd) == UCS_OK);
        CHECK(zombie.alive());
        child.kill(SIGKILL);
        wait_zombie(child.pid());
        CHECK_FALSE(zombie.alive()); /* not reaped, but runs no more */
        CHECK(child.wait() == 128 + SIGKILL);
        CHECK_FALSE(zombie.alive());
    }
}

TEST_CASE("peer_watch reports each dead peer once, and only watched ones", "[sm]")
{
    for (bool use_pidfd : {true, false}) {
        if (use_pidfd && !have_pidfd()) {
            WARN("no pidfds here: only the /proc fallback is tested");
            continue;
        }
        INFO("pidfd " << use_pidfd);
        uct::sm::peer_watch watch;
        REQUIRE(watch.init() == UCS_OK);
        test::child_process a(wait_forever), b(wait_forever), c(wait_forever);
        uct::sm::peer_process pa, pb, pc;
        REQUIRE(pa.open(a.pid(), use_pidfd) == UCS_OK);
        REQUIRE(pb.open(b.pid(), use_pidfd) == UCS_OK);
        REQUIRE(pc.open(c.pid(), use_pidfd) == UCS_OK);
        int owner_a = 0, owner_b = 0, owner_c = 0;
        REQUIRE(watch.add(pa, &owner_a) == UCS_OK);
        REQUIRE(watch.add(pb, &owner_b) == UCS_OK);
        REQUIRE(watch.add(pc, &owner_c) == UCS_OK);
        CHECK(watch.size() == 3);

        std::vector<void *> gone;
        auto collect = [&](void *owner) { gone.push_back(owner); };
        CHECK(watch.check(collect) == 0);
        CHECK_FALSE(test::readable(watch.fd(), 0));

        /* c is no longer watched: its death goes unreported. */
        watch.remove(&owner_c);
        CHECK(watch.size() == 2);
        c.kill(SIGKILL);
        CHECK(c.wait() == 128 + SIGKILL);

        a.kill(SIGKILL);
        wait_zombie(a.pid());
        if (use_pidfd) {
            /* The set wakes a sleeper; one look finds the peer. */
            CHECK(test::readable(watch.fd(), 10000));
            CHECK(watch.check(collect) == 1);
        } else {
            /* /proc is read at most every FALLBACK_INTERVAL. */
            const auto start = std::chrono::steady_clock::now();
            CHECK(test::poll_until([&] { return !gone.empty(); }, [&] { watch.check(collect); },
                                   10s));
            CHECK(std::chrono::steady_clock::now() - start <
                  uct::sm::peer_watch::FALLBACK_INTERVAL + 1s);
        }
        REQUIRE(gone.size() == 1);
        CHECK(gone[0] == &owner_a);
        CHECK(watch.size() == 1);
        /* Reported once: the dead peer left the set. */
        CHECK(watch.check(collect) == 0);
        CHECK_FALSE(test::readable(watch.fd(), 0));
        CHECK(pb.alive());

        /* An event source makes the set readable without being a peer. */
        int pipe_fds[2];
        REQUIRE(pipe(pipe_fds) == 0);
        REQUIRE(watch.add_event_source(pipe_fds[0]) == UCS_OK);
        REQUIRE(write(pipe_fds[1], "x", 1) == 1);
        CHECK(test::readable(watch.fd(), 0));
        CHECK(watch.check(collect) == 0);
        ::close(pipe_fds[0]);
        ::close(pipe_fds[1]);
        CHECK(a.wait() == 128 + SIGKILL);
    }
}
