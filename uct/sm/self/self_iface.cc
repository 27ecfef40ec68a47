#include <uct/sm/self/self_iface.h>

#include <uct/sm/self/self_ep.h>
#include <uct/sm/self/self_md.h>

#include <ucs/debug/log.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <new>
#include <unistd.h>

namespace uct::self {

namespace {

size_t align_up(size_t value, size_t align)
{
    return (value + align - 1) / align * align;
}

/* Distinct for every iface of the process; the pid tells processes apart. */
uint64_t next_token()
{
    static std::atomic<uint64_t> counter{
        uint64_t(std::chrono::steady_clock::now().time_since_epoch().count())};
    return counter.fetch_add(0x9e3779b97f4a7c15ull, std::memory_order_relaxed);
}

} // namespace

ucs_status_t self_iface::open(self_md &md, uct::worker &worker, const iface_params &params,
                              const self_config &config, uct::iface **iface_p)
{
    ucs_status_t status = validate_self_config(config);
    if (status != UCS_OK) {
        return status;
    }
    if (params.rx_headroom > (1u << 16)) {
        ucs_error("self: rx_headroom %zu is larger than 64k", params.rx_headroom);
        return UCS_ERR_INVALID_PARAM;
    }
    /* The data starts on a cache line; the headroom sits right before it. */
    size_t data_offset = align_up(sizeof(desc) + params.rx_headroom, 64);
    auto *bounce = static_cast<uint8_t *>(std::aligned_alloc(64, align_up(config.seg_size, 64)));
    if (bounce == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    auto *iface = new (std::nothrow) self_iface(md, worker, params, config, data_offset, bounce);
    if (iface == nullptr) {
        std::free(bounce);
        return UCS_ERR_NO_MEMORY;
    }
    *iface_p = iface;
    return UCS_OK;
}

self_iface::self_iface(self_md &md, uct::worker &worker, const iface_params &,
                       const self_config &config, size_t data_offset, uint8_t *bounce) :
    md_(md),
    worker_(worker), config_(config), data_offset_(data_offset),
    pool_(data_offset + config.seg_size + config.am_max_hdr, config.rx_bufs_grow), bounce_(bounce),
    pid_(getpid()), token_(next_token())
{
    const size_t seg = config.seg_size;
    attr_.flags      = iface_flag::AM_SHORT | iface_flag::AM_BCOPY | iface_flag::AM_ZCOPY |
                  iface_flag::PUT_SHORT | iface_flag::PUT_BCOPY | iface_flag::PUT_ZCOPY |
                  iface_flag::GET_BCOPY | iface_flag::GET_ZCOPY | iface_flag::ATOMIC_CPU |
                  iface_flag::PENDING | iface_flag::CONNECT_TO_IFACE | iface_flag::EP_CHECK |
                  iface_flag::CB_SYNC;

    attr_.am.max_short       = seg; /* the 8-byte header included */
    attr_.am.max_bcopy       = seg;
    attr_.am.min_zcopy       = 0;
    attr_.am.max_zcopy       = seg;
    attr_.am.opt_zcopy_align = 1;
    attr_.am.max_iov         = IOV_MAX;
    attr_.am.max_hdr         = config.am_max_hdr;

    attr_.put.max_short       = UINT_MAX;
    attr_.put.max_bcopy       = seg;
    attr_.put.min_zcopy       = 0;
    attr_.put.max_zcopy       = SIZE_MAX;
    attr_.put.opt_zcopy_align = 1;
    attr_.put.max_iov         = IOV_MAX;

    attr_.get.max_bcopy       = SIZE_MAX;
    attr_.get.min_zcopy       = 0;
    attr_.get.max_zcopy       = SIZE_MAX;
    attr_.get.opt_zcopy_align = 1;
    attr_.get.max_iov         = IOV_MAX;

    const uint64_t post = atomic_op_bit(atomic_op::ADD) | atomic_op_bit(atomic_op::AND) |
                          atomic_op_bit(atomic_op::OR) | atomic_op_bit(atomic_op::XOR);
    const uint64_t fetch = post | atomic_op_bit(atomic_op::SWAP) | atomic_op_bit(atomic_op::CSWAP);
    attr_.atomic32_post = attr_.atomic64_post = post;
    attr_.atomic32_fetch = attr_.atomic64_fetch = fetch;

    attr_.device_addr_len      = 0;
    attr_.iface_addr_len       = sizeof(iface_address);
    attr_.ep_addr_len          = 0;
    attr_.perf.latency_s       = 0;
    attr_.perf.send_overhead_s = 10e-9;
    attr_.perf.recv_overhead_s = 0;
    attr_.perf.bandwidth_Bps   = config.bandwidth_Bps;

    worker_.progress_register(this);
}

self_iface::~self_iface()
{
    worker_.progress_unregister(this);
    if (!idle()) {
        ucs_debug("self: closing with %u queued messages and pending requests dropped", queue_len_);
    }
    std::free(bounce_);
}

uct::md &self_iface::owner_md() const
{
    return md_;
}

ucs_status_t self_iface::get_device_address(void *) const
{
    return UCS_OK; /* zero bytes: the iface address says it all */
}

ucs_status_t self_iface::get_address(void *buffer) const
{
    iface_address addr{uint32_t(pid_), 0, token_};
    std::memcpy(buffer, &addr, sizeof(addr));
    return UCS_OK;
}

bool self_iface::is_reachable(const void *, size_t dev_addr_len, const void *iface_addr,
                              size_t iface_addr_len) const
{
    if ((dev_addr_len != 0) || (iface_addr == nullptr) ||
        (iface_addr_len != sizeof(iface_address))) {
        return false;
    }
    iface_address addr;
    std::memcpy(&addr, iface_addr, sizeof(addr));
    /* getpid(), not pid_: a forked child holds a copy of this iface. */
    return (addr.pid == uint32_t(getpid())) && (addr.reserved == 0) && (addr.token == token_);
}

ucs_status_t self_iface::ep_create_connected(const void *dev_addr, size_t dev_addr_len,
                                             const void *iface_addr, size_t iface_addr_len,
                                             uct::ep **ep_p)
{
    if (!is_reachable(dev_addr, dev_addr_len, iface_addr, iface_addr_len)) {
        ucs_debug("self: address is not this iface");
        return UCS_ERR_UNREACHABLE;
    }
    auto *ep = new (std::nothrow) self_ep(*this);
    if (ep == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    *ep_p = ep;
    return UCS_OK;
}

void self_iface::deliver_in_place(am_id_t id, const void *data, size_t length)
{
    ++depth_;
    ucs_status_t status = invoke_am_handler(id, const_cast<void *>(data), length, 0);
    --depth_;
    if (ucs_unlikely(status == UCS_INPROGRESS)) {
        ucs_warn("self: AM handler %u kept data delivered without DESC; ignored", id);
    }
}

void self_iface::enqueue(am_id_t id, desc *d, size_t length)
{
    d->next   = nullptr;
    d->length = uint32_t(length);
    d->id     = id;
    if (queue_tail_ == nullptr) {
        queue_head_ = d;
    } else {
        queue_tail_->next = d;
    }
    queue_tail_ = d;
    ++queue_len_;
}

unsigned self_iface::deliver_queued()
{
    /* Only what is queued now: messages the handlers queue meanwhile wait for
     * the next call, so handlers that keep replying cannot trap us here. */
    unsigned count = 0;
    for (unsigned n = queue_len_; (n > 0) && (queue_head_ != nullptr); --n) {
        desc *d     = queue_head_;
        queue_head_ = d->next;
        if (queue_head_ == nullptr) {
            queue_tail_ = nullptr;
        }
        --queue_len_;
        deliver(d->id, d, d->length);
        ++count;
    }
    return count;
}

unsigned self_iface::dispatch_pending()
{
    unsigned count = 0;
    while ((pending_head_ != nullptr) && (queue_len_ < config_.nested_queue_len)) {
        pending_req *req = pending_head_;
        pending_head_    = link_of(req).next;
        if (pending_head_ == nullptr) {
            pending_tail_ = nullptr;
        }
        ucs_status_t status = req->func(req);
        if ((status == UCS_INPROGRESS) || (status == UCS_ERR_NO_RESOURCE)) {
            /* Stays first in line; try again on the next progress. */
            link_of(req).next = pending_head_;
            pending_head_     = req;
            if (pending_tail_ == nullptr) {
                pending_tail_ = req;
            }
            break;
        }
        ++count;
    }
    return count;
}

unsigned self_iface::progress()
{
    if (ucs_likely(idle()) || (depth_ != 0)) {
        return 0; /* nothing to do, or called from a handler: never nest */
    }
    unsigned count = deliver_queued();
    return count + dispatch_pending();
}

ucs_status_t self_iface::flush_queue()
{
    if (idle()) {
        return UCS_OK;
    }
    if (depth_ == 0) {
        progress();
        if (idle()) {
            return UCS_OK;
        }
    }
    return UCS_ERR_NO_RESOURCE;
}

ucs_status_t self_iface::flush(unsigned, completion *)
{
    return flush_queue();
}

void self_iface::release_am_desc(void *data)
{
    pool_.put(desc_of(data));
}

ucs_status_t self_iface::pending_add(uct::ep *ep, pending_req *req)
{
    if (idle()) {
        return UCS_ERR_BUSY; /* sends would succeed now */
    }
    link_of(req) = pending_link{nullptr, ep};
    if (pending_tail_ == nullptr) {
        pending_head_ = req;
    } else {
        link_of(pending_tail_).next = req;
    }
    pending_tail_ = req;
    return UCS_OK;
}

void self_iface::pending_purge(uct::ep *ep, pending_purge_callback_t cb, void *arg)
{
    pending_req *prev = nullptr;
    for (pending_req *req = pending_head_; req != nullptr;) {
        pending_req *next = link_of(req).next;
        if (link_of(req).owner == ep) {
            if (prev == nullptr) {
                pending_head_ = next;
            } else {
                link_of(prev).next = next;
            }
            if (pending_tail_ == req) {
                pending_tail_ = prev;
            }
            if (cb != nullptr) {
                cb(req, arg);
            }
        } else {
            prev = req;
        }
        req = next;
    }
}

} // namespace uct::self
