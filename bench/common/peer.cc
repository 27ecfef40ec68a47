#include "peer.h"

#include <cerrno>
#include <chrono>
#include <cstdio>

#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace perf {

bool pin_to_cpu(int cpu)
{
    if (cpu < 0) {
        return true;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof(set), &set) == 0;
}

peer::peer(bool as_thread, body_fn body)
{
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
        std::perror("socketpair");
        return;
    }
    if (as_thread) {
        thread_  = std::thread([this, body, fd = fds[1]] {
            fd_oob channel(fd, false);
            thread_result_ = body(channel);
        });
        channel_ = std::make_unique<fd_oob>(fds[0], true);
        return;
    }
    std::fflush(stdout);
    std::fflush(stderr);
    pid_ = fork();
    if (pid_ < 0) {
        std::perror("fork");
        close(fds[0]);
        close(fds[1]);
        return;
    }
    if (pid_ == 0) {
        close(fds[0]);
        int code;
        {
            fd_oob channel(fds[1], false);
            code = body(channel);
        }
        std::fflush(stdout);
        std::fflush(stderr);
        _exit(code);
    }
    close(fds[1]);
    channel_ = std::make_unique<fd_oob>(fds[0], true);
}

int peer::join(int patience_ms)
{
    if (joined_ || !channel_) {
        return joined_ ? 0 : -1;
    }
    joined_ = true;
    channel_->close_write();
    if (thread_.joinable()) {
        thread_.join();
        return thread_result_;
    }
    int status = 0;
    if (patience_ms >= 0) {
        auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(patience_ms);
        for (;;) {
            pid_t done = waitpid(pid_, &status, WNOHANG);
            if (done == pid_) {
                return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            }
            if ((done < 0) && (errno != EINTR)) {
                return -1;
            }
            if (std::chrono::steady_clock::now() >= deadline) {
                kill(pid_, SIGKILL);
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    }
    while ((waitpid(pid_, &status, 0) < 0) && (errno == EINTR)) {
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

peer::~peer()
{
    if (!joined_ && (pid_ > 0)) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
    }
    if (!joined_ && thread_.joinable()) {
        /* Both directions: a thread blocked on the channel wakes up. */
        shutdown(channel_->fd(), SHUT_RDWR);
        thread_.join();
    }
}

} // namespace perf
