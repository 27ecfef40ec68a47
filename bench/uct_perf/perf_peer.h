/*
 * The responder side of a run: a forked process (the default) or a thread
 * (loopback), joined to the initiator by a socketpair that carries addresses,
 * keys and "done" markers. Nothing timed goes through the socket.
 */
#ifndef BENCH_UCT_PERF_PERF_PEER_H
#define BENCH_UCT_PERF_PERF_PEER_H

#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include <sys/types.h>

namespace perf {

bool send_blob(int fd, const std::vector<uint8_t> &blob);
bool recv_blob(int fd, std::vector<uint8_t> *blob);
bool send_byte(int fd, uint8_t value);
bool recv_byte(int fd, uint8_t *value);
/* True if a byte can be read now (no wait). */
bool byte_ready(int fd);

/* Pins the calling thread; cpu < 0 leaves it alone. False on failure. */
bool pin_to_cpu(int cpu);

class peer {
public:
    /* Starts `body(fd)` in a child process, or in a thread if `as_thread`. */
    peer(bool as_thread, std::function<int(int fd)> body);
    ~peer();

    bool started() const { return fd_ >= 0; }
    int fd() const { return fd_; }
    /* The body's return value (128 + signal if a child died). */
    int join();

private:
    int         fd_ = -1;
    pid_t       pid_ = -1;
    std::thread thread_;
    int         thread_result_ = -1;
    bool        joined_ = false;
};

} // namespace perf

#endif
