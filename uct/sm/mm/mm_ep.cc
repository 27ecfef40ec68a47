#include "mm_ep.h"

#include "mm_md.h"

#include <ucs/debug/log.h>

#include <cstdint>
#include <cstring>
#include <new>

namespace uct::mm {

namespace {

/* pending_req::priv holds the next request of the queue. */
pending_req *&pending_next(pending_req *req)
{
    static_assert(sizeof(pending_req *) <= sizeof(req->priv));
    return *reinterpret_cast<pending_req **>(req->priv);
}

/* How often a sender facing a full FIFO asks whether its owner still lives:
 * a syscall, so not on every retry. */
constexpr auto PEER_CHECK_INTERVAL = std::chrono::milliseconds(1);

} // namespace

mm_ep::mm_ep(mm_iface &iface) : uct::ep(iface), iface_(iface)
{
}

ucs_status_t mm_ep::create(mm_iface &iface, const iface_address &address, mm_ep **ep_p)
{
    auto *ep = new (std::nothrow) mm_ep(iface);
    if (ep == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    ucs_status_t status = iface.ep_attach(ep, address);
    if (status != UCS_OK) {
        delete ep;
        return status;
    }
    *ep_p = ep;
    return UCS_OK;
}

void mm_ep::join(mm_remote *remote)
{
    const fifo_geometry &g = remote->geometry();
    remote_                = remote;
    tail_                  = g.tail;
    head_                  = g.head;
    elems_                 = g.elems;
    bufs_                  = g.bufs;
    fifo_mask_             = g.fifo_mask;
    fifo_shift_            = g.fifo_shift;
    elem_shift_            = g.elem_shift;
    max_inline_            = g.max_inline;
    seg_size_              = g.seg_size;
    capacity_              = g.capacity;
    cached_head_           = shared_word(*head_).load(std::memory_order_acquire);
}

mm_ep::~mm_ep()
{
    if (remote_ != nullptr) {
        iface_.ep_detach(this);
    }
}

template <typename Fill>
ucs_status_t mm_ep::send_inline(am_id_t id, uint32_t length, Fill &&fill)
{
    uint64_t index;
    bool armed;
    if (ucs_unlikely(!reserve(&index, &armed))) {
        return full_status();
    }
    uint8_t *elem = elem_at(index);
    fill(elem + ELEM_HEADER_SIZE);
    publish(elem, index, 0, id, length);
    if (ucs_unlikely(armed)) {
        wake_peer();
    }
    return UCS_OK;
}

ucs_status_t mm_ep::am_short(am_id_t id, uint64_t header, const void *payload, unsigned length)
{
    /* The 8-byte header travels inline too: it counts against max_short. */
    if (ucs_unlikely((length > max_inline_ - sizeof(header)) || (id >= AM_ID_MAX))) {
        return UCS_ERR_INVALID_PARAM;
    }
    return send_inline(id, uint32_t(length + sizeof(header)), [&](uint8_t *out) {
        std::memcpy(out, &header, sizeof(header));
        if (length != 0) {
            std::memcpy(out + sizeof(header), payload, length);
        }
    });
}

ucs_status_t mm_ep::am_short_iov(am_id_t id, const iov *iov, size_t iovcnt)
{
    size_t length = 0;
    for (size_t i = 0; i < iovcnt; ++i) {
        if (ucs_unlikely((iov[i].length > max_inline_ - length) ||
                         ((iov[i].length != 0) && (iov[i].buffer == nullptr)))) {
            return UCS_ERR_INVALID_PARAM;
        }
        length += iov[i].length;
    }
    /* The first 8 bytes are the header word, as am_short's. */
    if (ucs_unlikely((length < sizeof(uint64_t)) || (id >= AM_ID_MAX))) {
        return UCS_ERR_INVALID_PARAM;
    }
    return send_inline(id, uint32_t(length), [&](uint8_t *out) {
        for (size_t i = 0; i < iovcnt; ++i) {
            if (iov[i].length != 0) {
                std::memcpy(out, iov[i].buffer, iov[i].length);
                out += iov[i].length;
            }
        }
    });
}

ssize_t mm_ep::am_bcopy(am_id_t id, pack_callback_t pack, void *arg, unsigned)
{
    if (ucs_unlikely(id >= AM_ID_MAX)) {
        return UCS_ERR_INVALID_PARAM;
    }
    uint64_t index;
    bool armed;
    if (ucs_unlikely(!reserve(&index, &armed))) {
        return full_status();
    }
    size_t length = pack(bufs_ + (index & fifo_mask_) * seg_size_, arg);
    uint8_t *elem = elem_at(index);
    if (ucs_unlikely(length > seg_size_)) {
        /* The slot is ours now: hand it back so the receiver moves on. */
        publish(elem, index, elem_flag::NOP, 0, 0);
        ucs_error("mm: am_bcopy packed %zu bytes, more than max_bcopy %u", length, seg_size_);
        return UCS_ERR_INVALID_PARAM;
    }
    publish(elem, index, elem_flag::BCOPY, id, uint32_t(length));
    if (ucs_unlikely(armed)) {
        wake_peer();
    }
    return ssize_t(length);
}

UCS_F_NOINLINE ucs_status_t mm_ep::full_status()
{
    if (status_ != UCS_OK) {
        return status_;
    }
    auto now = std::chrono::steady_clock::now();
    if (now >= next_peer_check_) {
        next_peer_check_ = now + PEER_CHECK_INTERVAL;
        if (!remote_->peer().alive()) {
            fail(UCS_ERR_CONNECTION_RESET);
            return status_;
        }
    }
    return UCS_ERR_NO_RESOURCE;
}

UCS_F_NOINLINE void mm_ep::wake_peer()
{
    wakeup_send(iface_.wakeup_fd(), remote_->wakeup());
}

void mm_ep::fail(ucs_status_t status)
{
    if (status_ != UCS_OK) {
        return;
    }
    ucs_debug("mm: peer %d of ep %p is gone: %s", int(remote_->peer().pid()), this,
              ucs_status_string(status));
    status_   = status;
    capacity_ = 0; /* every send now takes the slow path and sees status_ */
    iface_.pending_ep_unlink(this);
    iface_.ep_failed(this);
}

ucs_status_t mm_ep::put_short(const void *buffer, unsigned length, uint64_t remote_addr,
                              rkey_t rkey)
{
    uint8_t *dest = rkey_translate(rkey, remote_addr, length);
    if (ucs_unlikely(dest == nullptr)) {
        return UCS_ERR_INVALID_ADDR;
    }
    std::memcpy(dest, buffer, length);
    return UCS_OK;
}

ssize_t mm_ep::put_bcopy(pack_callback_t pack, void *arg, uint64_t remote_addr, rkey_t rkey)
{
    /* pack() may write up to max_bcopy: in place when that much fits before
     * the region ends, else into a bounce buffer so its length is checked
     * before anything lands in the peer's memory. */
    size_t max_bcopy = iface_.attr().put.max_bcopy;
    uint8_t *dest    = rkey_translate(rkey, remote_addr, max_bcopy);
    if (ucs_likely(dest != nullptr)) {
        return ssize_t(pack(dest, arg));
    }
    if (rkey_translate(rkey, remote_addr, 0) == nullptr) {
        return UCS_ERR_INVALID_ADDR;
    }
    uint8_t *bounce = iface_.bounce_buffer();
    size_t length   = pack(bounce, arg);
    dest            = rkey_translate(rkey, remote_addr, length);
    if ((length > max_bcopy) || (dest == nullptr)) {
        return UCS_ERR_INVALID_ADDR;
    }
    std::memcpy(dest, bounce, length);
    return ssize_t(length);
}

namespace {

size_t iov_total(const iov *iov, size_t iovcnt)
{
    /* SIZE_MAX on overflow: no region is that long, so the bounds check fails. */
    size_t total = 0;
    for (size_t i = 0; i < iovcnt; ++i) {
        if (iov[i].length > SIZE_MAX - total) {
            return SIZE_MAX;
        }
        total += iov[i].length;
    }
    return total;
}

} // namespace

ucs_status_t mm_ep::put_zcopy(const iov *iov, size_t iovcnt, uint64_t remote_addr, rkey_t rkey,
                              completion *)
{
    if (ucs_unlikely(iovcnt > iface_.attr().put.max_iov)) {
        return UCS_ERR_INVALID_PARAM;
    }
    /* The peer's memory is mapped here: one copy, done when we return. */
    uint8_t *dest = rkey_translate(rkey, remote_addr, iov_total(iov, iovcnt));
    if (ucs_unlikely(dest == nullptr)) {
        return UCS_ERR_INVALID_ADDR;
    }
    for (size_t i = 0; i < iovcnt; ++i) {
        std::memcpy(dest, iov[i].buffer, iov[i].length);
        dest += iov[i].length;
    }
    return UCS_OK;
}

ucs_status_t mm_ep::get_bcopy(unpack_callback_t unpack, void *arg, size_t length,
                              uint64_t remote_addr, rkey_t rkey, completion *)
{
    const uint8_t *src = rkey_translate(rkey, remote_addr, length);
    if (ucs_unlikely(src == nullptr)) {
        return UCS_ERR_INVALID_ADDR;
    }
    unpack(arg, src, length);
    return UCS_OK;
}

ucs_status_t mm_ep::get_zcopy(const iov *iov, size_t iovcnt, uint64_t remote_addr, rkey_t rkey,
                              completion *)
{
    if (ucs_unlikely(iovcnt > iface_.attr().get.max_iov)) {
        return UCS_ERR_INVALID_PARAM;
    }
    const uint8_t *src = rkey_translate(rkey, remote_addr, iov_total(iov, iovcnt));
    if (ucs_unlikely(src == nullptr)) {
        return UCS_ERR_INVALID_ADDR;
    }
    for (size_t i = 0; i < iovcnt; ++i) {
        std::memcpy(const_cast<void *>(iov[i].buffer), src, iov[i].length);
        src += iov[i].length;
    }
    return UCS_OK;
}

ucs_status_t mm_ep::pending_add(pending_req *req, unsigned)
{
    if (status_ != UCS_OK) {
        return status_;
    }
    /* Queue behind earlier requests even if there is room, to keep order. */
    if ((pending_head_ == nullptr) && has_room()) {
        return UCS_ERR_BUSY;
    }
    pending_next(req) = nullptr;
    if (pending_head_ == nullptr) {
        pending_head_ = req;
        iface_.pending_ep_link(this);
    } else {
        pending_next(pending_tail_) = req;
    }
    pending_tail_ = req;
    return UCS_OK;
}

void mm_ep::pending_purge(pending_purge_callback_t cb, void *arg)
{
    pending_req *req = pending_head_;
    pending_head_ = pending_tail_ = nullptr;
    iface_.pending_ep_unlink(this);
    while (req != nullptr) {
        pending_req *next = pending_next(req);
        if (cb != nullptr) {
            cb(req, arg);
        }
        req = next;
    }
}

unsigned mm_ep::dispatch_pending()
{
    unsigned count = 0;
    while (pending_head_ != nullptr) {
        if (!has_room()) {
            full_status(); /* notices a dead peer, rate-limited */
            break;
        }
        pending_req *req    = pending_head_;
        ucs_status_t status = req->func(req);
        if (status == UCS_ERR_NO_RESOURCE) {
            break;
        }
        ++count;
        if (status == UCS_INPROGRESS) {
            break; /* stays first; others get their turn */
        }
        if (pending_head_ == req) { /* func may have purged the queue */
            pending_head_ = pending_next(req);
            if (pending_head_ == nullptr) {
                pending_tail_ = nullptr;
            }
        }
    }
    if (pending_head_ == nullptr) {
        iface_.pending_ep_unlink(this);
    }
    return count;
}

ucs_status_t mm_ep::flush(unsigned flags, completion *)
{
    if (status_ != UCS_OK) {
        return status_;
    }
    if ((pending_head_ != nullptr) && !(flags & flush_flag::CANCEL)) {
        return UCS_ERR_NO_RESOURCE;
    }
    /* Sends are complete when they return: the data is in the peer's memory. */
    return UCS_OK;
}

ucs_status_t mm_ep::check(unsigned, completion *)
{
    if ((status_ == UCS_OK) && !remote_->peer().alive()) {
        fail(UCS_ERR_CONNECTION_RESET); /* reported from progress() */
    }
    return UCS_OK;
}

} // namespace uct::mm
