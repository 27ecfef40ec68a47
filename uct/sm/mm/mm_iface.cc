#include "mm_iface.h"

#include "mm_ep.h"
#include "mm_md.h"
#include "mm_node.h"
#include "mm_peer.h"

#include <ucs/debug/log.h>
#include <ucs/sys/process.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <cstring>
#include <new>

#include <unistd.h>

namespace uct::mm {

mm_iface::mm_iface(mm_md &md, uct::worker &worker, const iface_params &params,
                   const mm_config &config) :
    md_(md),
    worker_(worker), backend_(md.seg_backend()), config_(config), err_handler_(params.err_handler),
    err_handler_arg_(params.err_handler_arg)
{
}

ucs_status_t mm_iface::open(mm_md &md, uct::worker &worker, const iface_params &params,
                            const mm_config &config, uct::iface **iface_p)
{
    ucs_status_t status = validate_mm_config(config);
    if (status != UCS_OK) {
        return status;
    }
    auto *iface = new (std::nothrow) mm_iface(md, worker, params, config);
    if (iface == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    status = iface->init();
    if (status != UCS_OK) {
        delete iface;
        return status;
    }
    *iface_p = iface;
    return UCS_OK;
}

ucs_status_t mm_iface::init()
{
    const size_t fifo_size = config_.fifo_size;
    const size_t elem_size = config_.fifo_elem_size;
    const size_t seg_size  = config_.seg_size;
    const size_t total     = fifo_total_size(fifo_size, elem_size, seg_size);

    bounce_.reset(new (std::nothrow) uint8_t[seg_size]);
    if (bounce_ == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }

    ucs_status_t status = backend_.create(align_up(total, page_size()), nullptr, &segment_);
    if (status != UCS_OK) {
        return status;
    }

    /* The whole layout is written before get_address() can hand it out. */
    ctl_                 = static_cast<fifo_ctl *>(segment_.address);
    fifo_header &hdr     = ctl_->header;
    hdr.magic            = FIFO_MAGIC;
    hdr.version          = FIFO_VERSION;
    hdr.owner_pid        = uint32_t(getpid());
    hdr.fifo_size        = uint32_t(fifo_size);
    hdr.elem_size        = uint32_t(elem_size);
    hdr.seg_size         = uint32_t(seg_size);
    hdr.elems_offset     = FIFO_ELEMS_OFFSET;
    hdr.bufs_offset      = fifo_bufs_offset(fifo_size, elem_size);
    hdr.total_size       = total;
    hdr.owner_start_time = ucs::sys::self_start_time();
    ctl_->tail           = 0;
    ctl_->head           = 0;

    auto *base = static_cast<uint8_t *>(segment_.address);
    elems_     = base + FIFO_ELEMS_OFFSET;
    bufs_      = base + hdr.bufs_offset;
    for (size_t i = 0; i < fifo_size; ++i) {
        /* Owner bit set: lap 0 reads every slot as not yet written. */
        elem_word(elems_ + i * elem_size).store(elem_flag::OWNER, std::memory_order_relaxed);
    }
    std::atomic_thread_fence(std::memory_order_release);

    shared_head_      = &ctl_->head;
    elem_shift_       = unsigned(std::countr_zero(elem_size));
    fifo_shift_       = unsigned(std::countr_zero(fifo_size));
    fifo_mask_        = fifo_size - 1;
    release_interval_ = config_.fifo_release_interval;
    rx_max_poll_      = config_.rx_max_poll;
    max_inline_       = uint32_t(elem_size - ELEM_HEADER_SIZE);
    seg_size_         = uint32_t(seg_size);

    wakeup_fd_ = wakeup_socket_open(&wakeup_id_);
    if (wakeup_fd_ < 0) {
        return UCS_ERR_IO_ERROR;
    }
    status = peer_watch_.init();
    if (status == UCS_OK) {
        status = peer_watch_.add_event_source(wakeup_fd_);
    }
    if (status != UCS_OK) {
        return status;
    }

    attr_.flags = iface_flag::AM_SHORT | iface_flag::AM_BCOPY | iface_flag::PENDING |
                  iface_flag::PUT_SHORT | iface_flag::PUT_BCOPY | iface_flag::PUT_ZCOPY |
                  iface_flag::GET_BCOPY | iface_flag::GET_ZCOPY | iface_flag::CONNECT_TO_IFACE |
                  iface_flag::EP_CHECK | iface_flag::ERRHANDLE_PEER_FAILURE | iface_flag::CB_SYNC;
    attr_.event_flags     = event_flag::FD | event_flag::RECV;
    attr_.am.max_short    = max_inline_;
    attr_.am.max_bcopy    = seg_size;
    attr_.put.max_short   = UINT_MAX;
    attr_.put.max_bcopy   = seg_size;
    attr_.put.max_zcopy   = SIZE_MAX;
    attr_.put.max_iov     = 64;
    attr_.get.max_bcopy   = SIZE_MAX;
    attr_.get.max_zcopy   = SIZE_MAX;
    attr_.get.max_iov     = 64;
    attr_.device_addr_len = sizeof(uint64_t);
    attr_.iface_addr_len  = sizeof(iface_address);
    attr_.ep_addr_len     = 0;
    /* Measured with bench/uct_perf on a 2-core VM: ~0.1 us one way; ucp
     * eager messages of 16..256 KiB move 16 GB/s (ucx_perftest tag_lat). */
    attr_.perf.latency_s       = 100e-9;
    attr_.perf.send_overhead_s = 15e-9;
    attr_.perf.recv_overhead_s = 15e-9;
    attr_.perf.bandwidth_Bps   = 16e9;

    worker_.progress_register(this);
    return UCS_OK;
}

mm_iface::~mm_iface()
{
    worker_.progress_unregister(this);
    if (!eps_.empty()) {
        ucs_warn("mm: iface %p destroyed with %zu endpoints still open", this, eps_.size());
    }
    if (wakeup_fd_ >= 0) {
        close(wakeup_fd_);
    }
    backend_.destroy(&segment_);
}

md &mm_iface::owner_md() const
{
    return md_;
}

ucs_status_t mm_iface::get_device_address(void *buffer) const
{
    uint64_t id = node_id();
    std::memcpy(buffer, &id, sizeof(id));
    return UCS_OK;
}

ucs_status_t mm_iface::get_address(void *buffer) const
{
    iface_address addr{};
    addr.owner_pid    = uint32_t(getpid());
    addr.wakeup_id    = wakeup_id_;
    addr.segment_id   = segment_.id;
    addr.segment_size = segment_.size;
    std::memcpy(buffer, &addr, sizeof(addr));
    return UCS_OK;
}

namespace {

/* Parses and sanity-checks a peer's addresses; does not map anything. */
ucs_status_t parse_address(const void *dev_addr, size_t dev_addr_len, const void *iface_addr,
                           size_t iface_addr_len, iface_address *out)
{
    if ((dev_addr == nullptr) || (dev_addr_len != sizeof(uint64_t)) || (iface_addr == nullptr) ||
        (iface_addr_len != sizeof(iface_address))) {
        return UCS_ERR_INVALID_ADDR;
    }
    uint64_t node;
    std::memcpy(&node, dev_addr, sizeof(node));
    if (node != node_id()) {
        return UCS_ERR_UNREACHABLE;
    }
    std::memcpy(out, iface_addr, sizeof(*out));
    if ((out->owner_pid == 0) || (out->owner_pid > INT_MAX) ||
        (out->segment_size < FIFO_ELEMS_OFFSET)) {
        return UCS_ERR_INVALID_ADDR;
    }
    return UCS_OK;
}

} // namespace

bool mm_iface::is_reachable(const void *dev_addr, size_t dev_addr_len, const void *iface_addr,
                            size_t iface_addr_len) const
{
    iface_address addr;
    return (parse_address(dev_addr, dev_addr_len, iface_addr, iface_addr_len, &addr) == UCS_OK) &&
           (addr.segment_size <= backend_.max_size());
}

ucs_status_t mm_iface::ep_create_connected(const void *dev_addr, size_t dev_addr_len,
                                           const void *iface_addr, size_t iface_addr_len, ep **ep_p)
{
    if (ep_p == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    iface_address addr;
    ucs_status_t status = parse_address(dev_addr, dev_addr_len, iface_addr, iface_addr_len, &addr);
    if (status != UCS_OK) {
        return status;
    }
    mm_ep *ep;
    status = mm_ep::create(*this, addr, &ep);
    if (status != UCS_OK) {
        return status;
    }
    *ep_p = ep;
    return UCS_OK;
}

inline void mm_iface::deliver(uint8_t *elem, uint64_t word)
{
    /* The word came from a peer: check the length against our own layout. */
    uint32_t length = elem_length(word);
    if (ucs_likely(!(word & (elem_flag::BCOPY | elem_flag::NOP)))) {
        if (ucs_likely(length <= max_inline_)) {
            invoke_am_handler(am_id_t(elem_am_id(word)), elem + ELEM_HEADER_SIZE, length, 0);
            return;
        }
    } else if (word & elem_flag::NOP) {
        return;
    } else if (length <= seg_size_) {
        invoke_am_handler(am_id_t(elem_am_id(word)), bufs_ + (head_ & fifo_mask_) * seg_size_,
                          length, 0);
        return;
    }
    ucs_warn("mm: dropped an element with a bad length %u", length);
}

unsigned mm_iface::progress()
{
    unsigned count = 0;
    for (;;) {
        uint8_t *elem = elems_ + ((head_ & fifo_mask_) << elem_shift_);
        uint64_t word = elem_word(elem).load(std::memory_order_acquire);
        if (((word ^ (head_ >> fifo_shift_)) & elem_flag::OWNER) != 0) {
            /* Ran dry: let senders see everything we consumed. */
            if (released_ != head_) {
                released_ = head_;
                shared_word(*shared_head_).store(head_, std::memory_order_release);
            }
            break;
        }
        deliver(elem, word);
        ++head_;
        if ((head_ & (release_interval_ - 1)) == 0) {
            released_ = head_;
            shared_word(*shared_head_).store(head_, std::memory_order_release);
        }
        if (++count == rx_max_poll_) {
            break;
        }
    }
    if (ucs_unlikely((pending_eps_ != nullptr) || (failed_eps_ != 0))) {
        count += progress_slow();
    }
    return count;
}

UCS_F_NOINLINE unsigned mm_iface::progress_slow()
{
    unsigned count = 0;
    /* Each ep at most once per call; rotate so all get a first turn. */
    for (unsigned n = pending_ep_count_; (n > 0) && (pending_eps_ != nullptr); --n) {
        mm_ep *ep    = pending_eps_;
        pending_eps_ = ep->pending_next_;
        count += ep->dispatch_pending();
    }
    if (failed_eps_ != 0) {
        count += report_failed_eps();
    }
    return count;
}

unsigned mm_iface::report_failed_eps()
{
    unsigned count = 0;
    while (failed_eps_ != 0) {
        auto it = std::find_if(eps_.begin(), eps_.end(),
                               [](const mm_ep *ep) { return ep->error_queued_; });
        if (it == eps_.end()) {
            failed_eps_ = 0;
            break;
        }
        mm_ep *ep         = *it;
        ep->error_queued_ = false;
        --failed_eps_;
        ++count;
        /* The handler may destroy the ep: touch nothing of it afterwards. */
        if (err_handler_ != nullptr) {
            err_handler_(err_handler_arg_, ep, ep->status());
        } else {
            ucs_error("mm: lost the peer of endpoint %p: %s", ep, ucs_status_string(ep->status()));
        }
    }
    return count;
}

ucs_status_t mm_iface::flush(unsigned flags, completion *)
{
    if ((pending_eps_ != nullptr) && !(flags & flush_flag::CANCEL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    return UCS_OK;
}

ucs_status_t mm_iface::event_fd_get(int *fd_p)
{
    if (fd_p == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    *fd_p = peer_watch_.fd(); /* wakeups and dead peers */
    return UCS_OK;
}

ucs_status_t mm_iface::event_arm(unsigned events)
{
    /* Queued sends and unreported failures need progress(), not a wakeup:
     * nothing would signal the fd for them. A dead peer's pidfd would keep
     * the fd readable: take it out now and report it from progress(). */
    if ((pending_eps_ != nullptr) || (failed_eps_ != 0) || look_for_dead_peers()) {
        return UCS_ERR_BUSY;
    }
    if (!(events & (event_flag::RECV | event_flag::RECV_SIG))) {
        return UCS_OK; /* sends complete at once: nothing to wait for */
    }
    wakeup_socket_drain(wakeup_fd_);
    std::atomic_ref<uint64_t> tail(ctl_->tail);
    uint64_t old = tail.fetch_or(TAIL_ARMED, std::memory_order_acq_rel);
    /* Anything reserved but not consumed was sent before it could see the
     * flag, so it will not signal: report it now instead. */
    if ((old & TAIL_INDEX_MASK) != head_) {
        tail.fetch_and(~TAIL_ARMED, std::memory_order_relaxed);
        return UCS_ERR_BUSY;
    }
    return UCS_OK;
}

bool mm_iface::look_for_dead_peers()
{
    return peer_watch_.check([this](void *owner) {
        remote_failed(static_cast<mm_remote *>(owner));
    }) != 0;
}

unsigned mm_iface::check_peers()
{
    std::vector<mm_remote *> dead;
    peer_watch_.check([&dead](void *owner) {
        auto *remote = static_cast<mm_remote *>(owner);
        ++remote->holds; /* progress() below may close its last ep */
        dead.push_back(remote);
    });
    unsigned count = 0;
    if (!dead.empty()) {
        /* What they published before dying is delivered before their eps
         * fail (bounded: the dead publish nothing more). */
        for (uint64_t n = 0; n <= fifo_mask_;) {
            const unsigned got = progress();
            if (got == 0) {
                break;
            }
            n += got;
            count += got;
        }
        for (mm_remote *remote : dead) {
            remote_failed(remote);
            --remote->holds;
            remote_release(remote);
        }
    }
    return count + ((failed_eps_ != 0) ? report_failed_eps() : 0);
}

ucs_status_t mm_iface::remote_get(const iface_address &address, mm_remote **remote_p)
{
    auto it = remotes_.find(mm_remote::key_of(address));
    if (it != remotes_.end()) {
        mm_remote *remote = it->second;
        if (!remote->same_fifo(address)) {
            /* The owner made a new iface whose segment got the old one's id
             * (a reused fd number): the old remote's eps keep it, new eps
             * get their own. */
            unindex(remote);
        } else if (remote->peer().alive()) {
            *remote_p = remote;
            return UCS_OK;
        } else {
            /* A pid can name a new process once the old one is gone: a remote
             * whose owner died is never joined, even before the watch says so. */
            remote_failed(remote);
        }
    }
    auto remote         = std::make_unique<mm_remote>(backend_, address);
    ucs_status_t status = remote->connect();
    if (status == UCS_OK) {
        status = peer_watch_.add(remote->peer(), remote.get());
    }
    if (status != UCS_OK) {
        return status;
    }
    const mm_remote::key_type key = remote->key();
    *remote_p                     = remote.release();
    remotes_.emplace(key, *remote_p);
    return UCS_OK;
}

void mm_iface::unindex(mm_remote *remote)
{
    auto it = remotes_.find(remote->key());
    if ((it != remotes_.end()) && (it->second == remote)) {
        remotes_.erase(it);
    }
}

void mm_iface::remote_failed(mm_remote *remote)
{
    if (!remote->dead) {
        remote->dead = true;
        peer_watch_.remove(remote);
        unindex(remote);
    }
    for (mm_ep *ep : remote->eps) {
        ep->fail(UCS_ERR_CONNECTION_RESET);
    }
}

void mm_iface::remote_release(mm_remote *remote)
{
    if (!remote->eps.empty() || (remote->holds != 0)) {
        return;
    }
    if (!remote->dead) {
        peer_watch_.remove(remote);
        unindex(remote);
    }
    delete remote;
}

ucs_status_t mm_iface::ep_attach(mm_ep *ep, const iface_address &address)
{
    mm_remote *remote;
    ucs_status_t status = remote_get(address, &remote);
    if (status != UCS_OK) {
        return status;
    }
    remote->eps.push_back(ep);
    ep->join(remote);
    eps_.push_back(ep);
    return UCS_OK;
}

void mm_iface::ep_detach(mm_ep *ep)
{
    pending_ep_unlink(ep);
    if (ep->error_queued_) {
        ep->error_queued_ = false;
        --failed_eps_;
    }
    eps_.erase(std::remove(eps_.begin(), eps_.end(), ep), eps_.end());
    mm_remote *remote = ep->remote_;
    remote->eps.erase(std::remove(remote->eps.begin(), remote->eps.end(), ep), remote->eps.end());
    remote_release(remote);
}

void mm_iface::pending_ep_link(mm_ep *ep)
{
    if (ep->pending_next_ != nullptr) {
        return;
    }
    if (pending_eps_ == nullptr) {
        ep->pending_next_ = ep->pending_prev_ = ep;
        pending_eps_                          = ep;
    } else {
        ep->pending_next_                          = pending_eps_;
        ep->pending_prev_                          = pending_eps_->pending_prev_;
        pending_eps_->pending_prev_->pending_next_ = ep;
        pending_eps_->pending_prev_                = ep;
    }
    ++pending_ep_count_;
}

void mm_iface::pending_ep_unlink(mm_ep *ep)
{
    if (ep->pending_next_ == nullptr) {
        return;
    }
    if (ep->pending_next_ == ep) {
        pending_eps_ = nullptr;
    } else {
        ep->pending_prev_->pending_next_ = ep->pending_next_;
        ep->pending_next_->pending_prev_ = ep->pending_prev_;
        if (pending_eps_ == ep) {
            pending_eps_ = ep->pending_next_;
        }
    }
    ep->pending_next_ = ep->pending_prev_ = nullptr;
    --pending_ep_count_;
}

void mm_iface::ep_failed(mm_ep *ep)
{
    peer_watch_.remove(ep); /* reported once, whoever noticed first */
    if (!ep->error_queued_) {
        ep->error_queued_ = true;
        ++failed_eps_;
    }
}

} // namespace uct::mm
