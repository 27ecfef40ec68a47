#include <uct/sm/base/peer_watch.h>

#include <ucs/debug/log.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <sys/epoll.h>
#include <unistd.h>

namespace uct::sm {

namespace {

/* epoll data of an event source: a peer's entry is its pidfd (>= 0). */
constexpr uint64_t EVENT_SOURCE = ~uint64_t(0);

} // namespace

peer_watch::~peer_watch()
{
    if (epfd_ >= 0) {
        ::close(epfd_);
    }
}

ucs_status_t peer_watch::init()
{
    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epfd_ < 0) {
        ucs_error("sm: cannot create the peer watch set: %s", strerror(errno));
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

ucs_status_t peer_watch::add_event_source(int fd)
{
    epoll_event ev{};
    ev.events   = EPOLLIN;
    ev.data.u64 = EVENT_SOURCE;
    if (epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
        ucs_error("sm: cannot watch fd %d: %s", fd, strerror(errno));
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

ucs_status_t peer_watch::add(const peer_process &peer, void *owner)
{
    if (peer.pidfd() >= 0) {
        epoll_event ev{};
        ev.events   = EPOLLIN;
        ev.data.u64 = uint64_t(peer.pidfd());
        if (epoll_ctl(epfd_, EPOLL_CTL_ADD, peer.pidfd(), &ev) != 0) {
            ucs_error("sm: cannot watch pid %d: %s", int(peer.pid()), strerror(errno));
            return UCS_ERR_IO_ERROR;
        }
    } else {
        ++without_pidfd_;
    }
    entries_.push_back({&peer, owner});
    return UCS_OK;
}

void peer_watch::erase(size_t index)
{
    const peer_process *peer = entries_[index].peer;
    if (peer->pidfd() >= 0) {
        (void)epoll_ctl(epfd_, EPOLL_CTL_DEL, peer->pidfd(), nullptr);
    } else {
        --without_pidfd_;
    }
    entries_[index] = entries_.back();
    entries_.pop_back();
}

void peer_watch::remove(void *owner)
{
    auto it = std::find_if(entries_.begin(), entries_.end(),
                           [owner](const entry &e) { return e.owner == owner; });
    if (it != entries_.end()) {
        erase(size_t(it - entries_.begin()));
    }
}

std::vector<void *> peer_watch::collect_gone()
{
    std::vector<void *> gone;
    if (entries_.empty()) {
        return gone;
    }
    epoll_event events[16];
    int n;
    do {
        n = epoll_wait(epfd_, events, 16, 0);
        for (int i = 0; i < n; ++i) {
            if (events[i].data.u64 == EVENT_SOURCE) {
                continue;
            }
            const int pidfd = int(events[i].data.u64);
            auto it         = std::find_if(entries_.begin(), entries_.end(),
                                           [pidfd](const entry &e) { return e.peer->pidfd() == pidfd; });
            if (it != entries_.end()) {
                gone.push_back(it->owner);
                erase(size_t(it - entries_.begin()));
            }
        }
        /* A full batch may have left more behind; the event sources alone
         * (level-triggered, at most a few) cannot fill one forever, since
         * each peer found is taken out of the set. */
    } while (n == 16 && !gone.empty());
    if (without_pidfd_ != 0) {
        scan_fallback(&gone);
    }
    return gone;
}

void peer_watch::scan_fallback(std::vector<void *> *gone)
{
    auto now = std::chrono::steady_clock::now();
    if (now < next_scan_) {
        return;
    }
    next_scan_ = now + FALLBACK_INTERVAL;
    for (size_t i = 0; i < entries_.size();) {
        const entry &e = entries_[i];
        if ((e.peer->pidfd() < 0) && !e.peer->alive()) {
            gone->push_back(e.owner);
            erase(i); /* moves the last entry here: look at i again */
        } else {
            ++i;
        }
    }
}

} // namespace uct::sm
