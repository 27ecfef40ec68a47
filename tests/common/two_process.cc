#include "two_process.h"

#include <cerrno>
#include <cstring>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace test {

namespace {

bool write_all(int fd, const void *data, size_t length)
{
    auto *p = static_cast<const uint8_t *>(data);
    while (length > 0) {
        /* A peer that died makes this fail with EPIPE, not raise SIGPIPE,
         * which would end the test process without a report. */
        ssize_t n = ::send(fd, p, length, MSG_NOSIGNAL);
        if ((n < 0) && (errno == ENOTSOCK)) {
            n = ::write(fd, p, length);
        }
        if (n < 0 && errno == EINTR) {
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
    auto *p = static_cast<uint8_t *>(data);
    while (length > 0) {
        ssize_t n = ::read(fd, p, length);
        if (n < 0 && errno == EINTR) {
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

bool send_blob(int fd, const void *data, size_t length)
{
    uint64_t len = length;
    return write_all(fd, &len, sizeof(len)) && write_all(fd, data, length);
}

bool send_blob(int fd, const std::vector<uint8_t> &blob)
{
    return send_blob(fd, blob.data(), blob.size());
}

bool recv_blob(int fd, std::vector<uint8_t> *blob)
{
    uint64_t len;
    if (!read_all(fd, &len, sizeof(len)) || (len > (64u << 20))) {
        return false;
    }
    blob->resize(len);
    return read_all(fd, blob->data(), len);
}

bool sync_peer(int fd)
{
    uint8_t token = 0x5a, reply = 0;
    return write_all(fd, &token, 1) && read_all(fd, &reply, 1) && (reply == 0x5a);
}

child_process::child_process(std::function<int(int fd)> body)
{
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) {
        return;
    }
    std::fflush(stdout);
    std::fflush(stderr);
    pid_ = fork();
    if (pid_ == 0) {
        ::close(fds[0]);
        int code = body(fds[1]);
        std::fflush(stdout);
        std::fflush(stderr);
        _exit(code);
    }
    ::close(fds[1]);
    fd_ = fds[0];
}

child_process::~child_process()
{
    if (!reaped_ && (pid_ > 0)) {
        ::kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
    }
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

int child_process::wait(std::chrono::milliseconds timeout)
{
    if (pid_ <= 0) {
        return -1;
    }
    auto deadline = std::chrono::steady_clock::now() + timeout;
    int status    = 0;
    for (;;) {
        pid_t r = waitpid(pid_, &status, WNOHANG);
        if (r == pid_) {
            break;
        }
        if ((r < 0) && (errno != EINTR)) {
            return -1;
        }
        if (std::chrono::steady_clock::now() > deadline) {
            ::kill(pid_, SIGKILL);
            waitpid(pid_, &status, 0);
            reaped_ = true;
            return -2;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    reaped_ = true;
    if (WIFEXITED(status)) {
        return WEXITSTATUS(status);
    }
    return 128 + WTERMSIG(status);
}

void child_process::kill(int signal)
{
    if ((pid_ > 0) && !reaped_) {
        ::kill(pid_, signal);
    }
}

bool readable(int fd, int timeout_ms)
{
    struct pollfd pfd = {fd, POLLIN, 0};
    return ::poll(&pfd, 1, timeout_ms) == 1;
}

bool poll_until(const std::function<bool()> &done, const std::function<void()> &step,
                std::chrono::milliseconds timeout)
{
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) {
            return done();
        }
        step();
    }
    return true;
}

size_t open_fd_count()
{
    size_t n = 0;
    for (int fd = 0; fd < 4096; ++fd) {
        n += (fcntl(fd, F_GETFD) != -1);
    }
    return n;
}

} // namespace test
