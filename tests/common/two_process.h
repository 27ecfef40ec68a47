/*
 * Two-process test support: fork a peer, talk to it over a socketpair to
 * exchange addresses and small results, and collect its exit status.
 * The child must not use Catch2 assertions (they would be reported by the
 * child's copy of the test runner); it returns 0 on success or a non-zero
 * code after printing what went wrong.
 */
#ifndef TESTS_COMMON_TWO_PROCESS_H
#define TESTS_COMMON_TWO_PROCESS_H

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <signal.h>
#include <sys/types.h>

namespace test {

/* Length-prefixed blobs over a socket; false if the peer went away. */
bool send_blob(int fd, const void *data, size_t length);
bool send_blob(int fd, const std::vector<uint8_t> &blob);
bool recv_blob(int fd, std::vector<uint8_t> *blob);

/* A one-byte barrier in both directions. */
bool sync_peer(int fd);

template <typename T>
bool send_value(int fd, const T &value)
{
    return send_blob(fd, &value, sizeof(value));
}

template <typename T>
bool recv_value(int fd, T *value)
{
    std::vector<uint8_t> blob;
    if (!recv_blob(fd, &blob) || (blob.size() != sizeof(T))) {
        return false;
    }
    __builtin_memcpy(value, blob.data(), sizeof(T));
    return true;
}

class child_process {
public:
    /* Forks; the child runs `body(fd)` and exits with its return value. */
    explicit child_process(std::function<int(int fd)> body);
    ~child_process();

    int fd() const { return fd_; }
    pid_t pid() const { return pid_; }

    /* Waits for exit (bounded); returns the exit code, or 128+signal. */
    int wait(std::chrono::milliseconds timeout = std::chrono::seconds(60));
    void kill(int signal = SIGKILL);

private:
    pid_t pid_   = -1;
    int fd_      = -1;
    bool reaped_ = false;
};

/* Whether `fd` becomes readable within `timeout_ms` (0: now, -1: no limit). */
bool readable(int fd, int timeout_ms = 0);

/* Calls `step` until `done` is true or the timeout passes; returns `done()`. */
bool poll_until(const std::function<bool()> &done, const std::function<void()> &step,
                std::chrono::milliseconds timeout = std::chrono::seconds(30));

/* Descriptors this process has open (of the first 4096). */
size_t open_fd_count();

/* For child bodies: prints a failure and returns the code to exit with. */
#define TEST_CHILD_CHECK(_cond) \
    do { \
        if (!(_cond)) { \
            std::fprintf(stderr, "child %s:%d: check failed: %s\n", __FILE__, __LINE__, #_cond); \
            return __LINE__; \
        } \
    } while (0)

} // namespace test

#endif
