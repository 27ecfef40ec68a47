/*
 * An mm endpoint: the peer's FIFO mapped here, plus a private copy of its
 * geometry taken (after validation) when connecting, so nothing the peer
 * writes later can steer our stores outside its segment.
 *
 * Send: reserve an index with a CAS on the peer's tail (refusing to pass
 * the released head by more than the FIFO size), write the payload, publish
 * the element word with release. The CAS also reads the receiver's "armed"
 * flag; the one sender that clears it sends the wakeup.
 *
 * am_bcopy's pack callback writes straight into the peer's slot buffer and
 * must not write more than attr().am.max_bcopy (a longer result is refused,
 * but the bytes are already written). put/get (short, bcopy, zcopy) are
 * memory copies through a key from mm_component::rkey_unpack, complete when
 * they return; any range outside the key's region is UCS_ERR_INVALID_ADDR,
 * more iov entries than attr().put/get.max_iov UCS_ERR_INVALID_PARAM.
 * After the peer is found dead AM sends, pending_add() and flush() return
 * UCS_ERR_CONNECTION_RESET and pending_purge() hands back what was queued
 * (put/get still copy: the key keeps the orphaned region mapped).
 */
#ifndef UCT_SM_MM_MM_EP_H
#define UCT_SM_MM_MM_EP_H

#include "mm_fifo.h"
#include "mm_iface.h"
#include "mm_remote.h"

#include <uct/base/uct_iface.h>
#include <chrono>

namespace uct::mm {

class mm_ep final : public uct::ep {
public:
    static ucs_status_t create(mm_iface &iface, const iface_address &address, mm_ep **ep_p);
    ~mm_ep() override;

    ucs_status_t am_short(am_id_t id, uint64_t header, const void *payload,
                          unsigned length) override;
    /* Gathered straight into the slot (the base would gather on the stack first). */
    ucs_status_t am_short_iov(am_id_t id, const iov *iov, size_t iovcnt) override;
    ssize_t am_bcopy(am_id_t id, pack_callback_t pack, void *arg, unsigned flags) override;

    ucs_status_t put_short(const void *buffer, unsigned length, uint64_t remote_addr,
                           rkey_t rkey) override;
    ssize_t put_bcopy(pack_callback_t pack, void *arg, uint64_t remote_addr, rkey_t rkey) override;
    ucs_status_t put_zcopy(const iov *iov, size_t iovcnt, uint64_t remote_addr, rkey_t rkey,
                           completion *comp) override;
    ucs_status_t get_bcopy(unpack_callback_t unpack, void *arg, size_t length, uint64_t remote_addr,
                           rkey_t rkey, completion *comp) override;
    ucs_status_t get_zcopy(const iov *iov, size_t iovcnt, uint64_t remote_addr, rkey_t rkey,
                           completion *comp) override;

    ucs_status_t pending_add(pending_req *req, unsigned flags) override;
    void pending_purge(pending_purge_callback_t cb, void *arg) override;

    ucs_status_t flush(unsigned flags, completion *comp) override;
    ucs_status_t check(unsigned flags, completion *comp) override;

    /* For the iface. */
    unsigned dispatch_pending();
    bool has_pending() const { return pending_head_ != nullptr; }
    ucs_status_t status() const { return status_; }

private:
    friend class mm_iface;

    explicit mm_ep(mm_iface &iface);
    /* Joins `remote` (the iface calls it): its geometry into our cache line. */
    void join(mm_remote *remote);

    /* Reserves the next index; false when the FIFO is full. */
    bool reserve(uint64_t *index_p, bool *armed_p)
    {
        std::atomic_ref<uint64_t> tail(*tail_);
        uint64_t value = tail.load(std::memory_order_relaxed);
        for (;;) {
            uint64_t index = value & TAIL_INDEX_MASK;
            if (ucs_unlikely(index - cached_head_ >= capacity_) && !refresh_head(index)) {
                return false;
            }
            /* Writing index + 1 also clears the armed flag we may have seen. */
            if (ucs_likely(tail.compare_exchange_weak(value, index + 1,
                                                      std::memory_order_relaxed))) {
                *index_p = index;
                *armed_p = (value & TAIL_ARMED) != 0;
                return true;
            }
        }
    }

    bool refresh_head(uint64_t index)
    {
        /* Acquire: the receiver is done reading the slots it released. */
        cached_head_ = shared_word(*head_).load(std::memory_order_acquire);
        return index - cached_head_ < capacity_;
    }

    bool has_room()
    {
        uint64_t index = shared_word(*tail_).load(std::memory_order_relaxed) & TAIL_INDEX_MASK;
        return (index - cached_head_ < capacity_) || refresh_head(index);
    }

    uint8_t *elem_at(uint64_t index) const
    {
        return elems_ + ((index & fifo_mask_) << elem_shift_);
    }

    void publish(uint8_t *elem, uint64_t index, uint64_t flags, am_id_t id, uint32_t length)
    {
        uint64_t parity = (index >> fifo_shift_) & 1;
        elem_word(elem).store(make_elem_word(parity, flags, id, length), std::memory_order_release);
    }

    /* Reserves a slot, lets fill(payload) write `length` bytes inline and
     * publishes it: the short sends. */
    template <typename Fill>
    ucs_status_t send_inline(am_id_t id, uint32_t length, Fill &&fill);

    ucs_status_t full_status();
    void wake_peer();
    void fail(ucs_status_t status);

    /* Send path state: one cache line. */
    uint64_t *tail_       = nullptr; /* in the peer's segment */
    uint64_t *head_       = nullptr; /* in the peer's segment */
    uint8_t *elems_       = nullptr;
    uint8_t *bufs_        = nullptr;
    uint64_t cached_head_ = 0; /* last head we read from the peer */
    uint64_t capacity_    = 0; /* fifo size; 0 once the ep failed */
    uint64_t fifo_mask_   = 0;
    uint32_t max_inline_  = 0;
    uint32_t seg_size_    = 0;
    uint8_t fifo_shift_   = 0;
    uint8_t elem_shift_   = 0;

    mm_iface &iface_;
    ucs_status_t status_ = UCS_OK;
    mm_remote *remote_   = nullptr; /* the peer's FIFO, shared with its other eps */
    std::chrono::steady_clock::time_point next_peer_check_{};

    /* Pending requests: singly linked through pending_req::priv. */
    pending_req *pending_head_ = nullptr;
    pending_req *pending_tail_ = nullptr;
    /* Links in the iface's circular list of eps with pending requests. */
    mm_ep *pending_next_ = nullptr;
    mm_ep *pending_prev_ = nullptr;
    bool error_queued_   = false;
};

} // namespace uct::mm

#endif
