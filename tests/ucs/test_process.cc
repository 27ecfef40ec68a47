/*
 * ucs/sys/process.h: reading another process's state and start time, and
 * pidfds, on a forked child that lives, becomes a zombie, then is reaped.
 */
#include <catch2/catch.hpp>

#include "two_process.h"

#include <ucs/sys/process.h>

#include <cerrno>
#include <cstring>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using ucs::sys::process_state;

/* A forked child that blocks until it is killed; reaped on destruction. */
struct blocked_child {
    pid_t pid   = -1;
    int hold    = -1; /* the child reads this pipe: it never returns */
    bool reaped = false;

    blocked_child()
    {
        int fds[2];
        REQUIRE(pipe(fds) == 0);
        pid = fork();
        if (pid == 0) {
            ::close(fds[1]);
            char byte;
            (void)!read(fds[0], &byte, 1);
            _exit(0);
        }
        ::close(fds[0]);
        hold = fds[1];
    }

    ~blocked_child()
    {
        if (!reaped) {
            kill(pid, SIGKILL);
            waitpid(pid, nullptr, 0);
        }
        ::close(hold);
    }

    void reap()
    {
        waitpid(pid, nullptr, 0);
        reaped = true;
    }
};

} // namespace

TEST_CASE("process stat lines parse, odd command names included", "[sys]")
{
    /* Fields 3..22: state, then 18 numbers, then the start time. */
    const std::string tail = " 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 424242 99 100\n";
    process_state st{};
    CHECK(ucs::sys::parse_process_stat("123 (bash) S" + tail, &st));
    CHECK(st.start_time == 424242);
    CHECK_FALSE(st.exited);
    CHECK(ucs::sys::parse_process_stat("7 (a) b) (c) Z" + tail, &st));
    CHECK(st.start_time == 424242);
    CHECK(st.exited);
    CHECK(ucs::sys::parse_process_stat("7 (x y) X" + tail, &st));
    CHECK(st.exited);
    CHECK(ucs::sys::parse_process_stat("7 (x) R" + tail, &st));
    CHECK_FALSE(st.exited);

    CHECK_FALSE(ucs::sys::parse_process_stat("", &st));
    CHECK_FALSE(ucs::sys::parse_process_stat("123 bash S 1 2 3", &st));
    CHECK_FALSE(ucs::sys::parse_process_stat("123 (bash) S 1 2 3", &st));
    CHECK_FALSE(ucs::sys::parse_process_stat("123 (bash)", &st));
    CHECK_FALSE(ucs::sys::parse_process_stat(
        "1 (b) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 x", &st));
    CHECK_FALSE(ucs::sys::parse_process_stat(
        "1 (b) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 99999999999999999999999", &st));
}

TEST_CASE("process state and pidfd follow a child through exit and reaping", "[sys]")
{
    process_state self{};
    REQUIRE(ucs::sys::read_process_state(getpid(), &self) == UCS_OK);
    CHECK_FALSE(self.exited);
    CHECK(self.start_time != 0);
    CHECK(ucs::sys::self_start_time() == self.start_time);
    CHECK(ucs::sys::read_process_state(0, &self) == UCS_ERR_INVALID_PARAM);
    CHECK(ucs::sys::read_process_state(getpid(), nullptr) == UCS_ERR_INVALID_PARAM);

    blocked_child child;
    process_state st{};
    REQUIRE(ucs::sys::read_process_state(child.pid, &st) == UCS_OK);
    CHECK_FALSE(st.exited);
    CHECK(st.start_time >= self.start_time);

    const int pidfd = ucs::sys::pidfd_open(child.pid);
    if (pidfd < 0) {
        WARN("pidfd_open: " << strerror(errno) << ": the pidfd checks are skipped");
        CHECK(((errno == ENOSYS) || (errno == EPERM)));
    } else {
        CHECK_FALSE(test::readable(pidfd, 0));
    }

    kill(child.pid, SIGKILL);
    if (pidfd >= 0) {
        CHECK(test::readable(pidfd, 10000)); /* a zombie counts as exited */
    }
    /* Waited for without reaping: a zombie, with its pid and start time. */
    siginfo_t info{};
    REQUIRE(waitid(P_PID, id_t(child.pid), &info, WEXITED | WNOWAIT) == 0);
    REQUIRE(ucs::sys::read_process_state(child.pid, &st) == UCS_OK);
    CHECK(st.exited);
    child.reap();
    CHECK(ucs::sys::read_process_state(child.pid, &st) == UCS_ERR_NO_ELEM);
    if (pidfd >= 0) {
        CHECK(test::readable(pidfd, 0));
        ::close(pidfd);
        errno = 0;
        CHECK(ucs::sys::pidfd_open(child.pid) == -1);
        CHECK(errno == ESRCH);
    }
}

TEST_CASE("a forked child publishes its own start time, not its parent's", "[sys]")
{
    const uint64_t parent = ucs::sys::self_start_time(); /* cached here */
    REQUIRE(parent != 0);
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    const pid_t pid = fork();
    if (pid == 0) {
        process_state st{};
        uint64_t values[2] = {ucs::sys::self_start_time(), 0};
        if (ucs::sys::read_process_state(getpid(), &st) == UCS_OK) {
            values[1] = st.start_time;
        }
        (void)!write(fds[1], values, sizeof(values));
        _exit(0);
    }
    ::close(fds[1]);
    uint64_t values[2] = {0, 1};
    CHECK(read(fds[0], values, sizeof(values)) == ssize_t(sizeof(values)));
    ::close(fds[0]);
    waitpid(pid, nullptr, 0);
    CHECK(values[0] == values[1]);
    CHECK(values[0] >= parent);
}
