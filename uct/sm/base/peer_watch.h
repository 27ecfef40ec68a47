/*
 * Watches the processes behind a shared-memory iface's endpoints, so that a
 * peer that dies is reported within a fraction of a second without any
 * traffic and without any work on the data path.
 *
 * The peers' pidfds sit in one epoll set, which turns readable when any of
 * them exits: while they live nothing happens at all, and check() is one
 * non-blocking epoll_wait. The set can also hold the iface's own event
 * sources (add_event_source), so that it serves as the iface's event fd and
 * a worker sleeping on it wakes up when a peer dies. Peers without a pidfd
 * (see peer_process) are looked at in /proc by check(), at most every
 * FALLBACK_INTERVAL.
 *
 * The iface calls check() at a slow cadence (the layer above decides; see
 * iface::check_peers) and before sleeping (event_arm).
 */
#ifndef UCT_SM_BASE_PEER_WATCH_H
#define UCT_SM_BASE_PEER_WATCH_H

#include <uct/sm/base/peer_process.h>

#include <ucs/type/status.h>

#include <chrono>
#include <vector>

namespace uct::sm {

class peer_watch {
public:
    /* How often peers without a pidfd are read from /proc. */
    static constexpr std::chrono::milliseconds FALLBACK_INTERVAL{500};

    peer_watch()                              = default;
    peer_watch(const peer_watch &)            = delete;
    peer_watch &operator=(const peer_watch &) = delete;
    ~peer_watch();

    ucs_status_t init();

    /* The epoll set: readable when a watched peer exited or an event
     * source is readable. */
    int fd() const { return epfd_; }

    /* An fd of the iface's own (not a peer) that makes fd() readable. */
    ucs_status_t add_event_source(int fd);

    /* Watches `peer` on behalf of `owner` (an ep), until remove(owner) or
     * until check() reports it. The peer must outlive the entry. */
    ucs_status_t add(const peer_process &peer, void *owner);
    void remove(void *owner);

    /* Calls on_exit(owner) for each watched peer found gone, after it has
     * stopped watching it; returns how many. Never blocks. */
    template <typename F>
    unsigned check(F &&on_exit)
    {
        std::vector<void *> gone = collect_gone();
        for (void *owner : gone) {
            on_exit(owner);
        }
        return unsigned(gone.size());
    }

    size_t size() const { return entries_.size(); }

private:
    struct entry {
        const peer_process *peer;
        void *owner;
    };

    std::vector<void *> collect_gone();
    void scan_fallback(std::vector<void *> *gone);
    void erase(size_t index);

    int epfd_ = -1;
    std::vector<entry> entries_;
    unsigned without_pidfd_ = 0;
    std::chrono::steady_clock::time_point next_scan_{};
};

} // namespace uct::sm

#endif
