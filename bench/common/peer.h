/*
 * The other side of a benchmark run on this machine: a forked process (the
 * default) or a thread (for transports that reach only their own process),
 * joined to this side by a socketpair wrapped in an oob channel. This side
 * leads the channel's exchanges.
 */
#ifndef BENCH_COMMON_PEER_H
#define BENCH_COMMON_PEER_H

#include "oob.h"

#include <functional>
#include <memory>
#include <thread>

#include <sys/types.h>

namespace perf {

/* Pins the calling thread; cpu < 0 leaves it alone. False on failure. */
bool pin_to_cpu(int cpu);

class peer {
public:
    using body_fn = std::function<int(oob &channel)>;

    /* Starts `body` in a child process, or in a thread if `as_thread`. */
    peer(bool as_thread, body_fn body);
    ~peer();
    peer(const peer &)            = delete;
    peer &operator=(const peer &) = delete;

    bool started() const { return channel_ != nullptr; }
    oob &channel() { return *channel_; }
    /* Closes our end of the channel (the peer sees EOF) and returns the
     * body's result: 128 + signal if the child was killed. A child still
     * running after `patience_ms` (>= 0) is killed. */
    int join(int patience_ms = -1);

private:
    std::unique_ptr<fd_oob> channel_;
    pid_t pid_ = -1;
    std::thread thread_;
    int thread_result_ = -1;
    bool joined_       = false;
};

} // namespace perf

#endif
