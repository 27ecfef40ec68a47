/*
 * An eventfd used to wake a sleeping thread: signal() from anywhere, the
 * sleeper polls fd() for readability and drain()s it before sleeping again.
 * The fd is non-blocking and close-on-exec.
 */
#ifndef UCS_ASYNC_EVENT_FD_H
#define UCS_ASYNC_EVENT_FD_H

#include <ucs/type/status.h>

#include <atomic>
#include <cstdint>

namespace ucs {

class event_fd {
public:
    event_fd() = default;
    ~event_fd();

    event_fd(event_fd &&other) noexcept;
    event_fd &operator=(event_fd &&other) noexcept;
    event_fd(const event_fd &)            = delete;
    event_fd &operator=(const event_fd &) = delete;

    /* Creates the eventfd; UCS_ERR_ALREADY_EXISTS if already open. */
    ucs_status_t open();

    void close();

    bool is_open() const { return m_fd >= 0; }

    /* -1 until open() succeeds. */
    int fd() const { return m_fd; }

    /* Makes fd() readable. Never blocks: a saturated counter is already
     * readable, so that case is a success too. */
    ucs_status_t signal() const;

    /* Consumes all pending signals; returns how many there were (0 if none). */
    uint64_t drain() const;

    /* drain(), but only when signal() ran since the last call: otherwise a
     * flag says so and no system call is made. signal() sets the flag after
     * its write, so a call between the two misses that signal: only for a
     * caller that then sleeps on the fd itself, where the write is seen
     * (ucp_worker_arm, a wait set). Returns whether there was a signal. */
    bool drain_signalled() const;

private:
    int m_fd = -1;
    mutable std::atomic<bool> m_signalled{false}; /* signal() since drain_signalled() */
};

} // namespace ucs

#endif
