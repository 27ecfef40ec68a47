#include "perf_peer.h"

#include <cerrno>
#include <cstdio>

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace perf {

namespace {

bool write_all(int fd, const void *data, size_t length)
{
    auto *p = static_cast<const uint8_t*>(data);
    while (length > 0) {
        ssize_t n = write(fd, p, length);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        p += n;
        length -= size_t(n);
    }
    return true;
}

bool read_all(int fd, void *data, size_t length)
{
    auto *p = static_cast<uint8_t*>(data);
    while (length > 0) {
        ssize_t n = read(fd, p, length);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        p += n;
        length -= size_t(n);
    }
    return true;
}

} // namespace

bool send_blob(int fd, const std::vector<uint8_t> &blob)
{
    uint32_t length = uint32_t(blob.size());
    return write_all(fd, &length, sizeof(length)) &&
           write_all(fd, blob.data(), blob.size());
}

bool recv_blob(int fd, std::vector<uint8_t> *blob)
{
    uint32_t length;
    if (!read_all(fd, &length, sizeof(length)) || (length > (1u << 20))) {
        return false;
    }
    blob->resize(length);
    return read_all(fd, blob->data(), length);
}

bool send_byte(int fd, uint8_t value)
{
    return write_all(fd, &value, 1);
}

bool recv_byte(int fd, uint8_t *value)
{
    return read_all(fd, value, 1);
}

bool byte_ready(int fd)
{
    struct pollfd pfd = {fd, POLLIN, 0};
    return (poll(&pfd, 1, 0) == 1) && (pfd.revents & (POLLIN | POLLHUP));
}

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

peer::peer(bool as_thread, std::function<int(int fd)> body)
{
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
        std::perror("uct_perf: socketpair");
        return;
    }
    if (as_thread) {
        thread_ = std::thread([this, body, fd = fds[1]] {
            thread_result_ = body(fd);
            close(fd);
        });
        fd_ = fds[0];
        return;
    }
    std::fflush(stdout);
    std::fflush(stderr);
    pid_ = fork();
    if (pid_ < 0) {
        std::perror("uct_perf: fork");
        close(fds[0]);
        close(fds[1]);
        return;
    }
    if (pid_ == 0) {
        close(fds[0]);
        int code = body(fds[1]);
        std::fflush(stdout);
        std::fflush(stderr);
        _exit(code);
    }
    close(fds[1]);
    fd_ = fds[0];
}

int peer::join()
{
    if (joined_) {
        return 0;
    }
    joined_ = true;
    if (thread_.joinable()) {
        /* Closing our end tells a waiting responder to stop. */
        shutdown(fd_, SHUT_WR);
        thread_.join();
        return thread_result_;
    }
    if (pid_ <= 0) {
        return -1;
    }
    shutdown(fd_, SHUT_WR);
    int status = 0;
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
        shutdown(fd_, SHUT_RDWR);
        thread_.join();
    }
    if (fd_ >= 0) {
        close(fd_);
    }
}

} // namespace perf
