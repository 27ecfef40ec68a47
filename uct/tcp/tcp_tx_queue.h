/*
 * What a connection still has to write, in order: bytes copied into a
 * linear buffer (frame headers, short and bcopy payloads) with zero-copy
 * segments inserted between them. gather() turns the front of the queue
 * into one scatter list for a single writev; consume() drops what the socket
 * took. Zero-copy segments reference the caller's buffers until they are
 * fully written.
 *
 * The buffer is taken from the iface's pool when a send needs it and goes
 * back as soon as everything in it was written: an idle connection holds
 * none, so thousands of connections cost only as many buffers as are busy
 * at once.
 *
 * Replies to the peer's requests have room of their own, beyond what sends
 * may fill: `reply_slots` zero-copy segments and `reply_bytes` of buffer.
 * A peer never has more requests in flight than that (its window), so a
 * reply can always be queued and the connection never has to stop reading
 * for lack of send room; two peers that did so while waiting on each other
 * to read would stall for good.
 */
#ifndef UCT_TCP_TCP_TX_QUEUE_H
#define UCT_TCP_TCP_TX_QUEUE_H

#include <uct/base/uct_types.h>

#include <uct/tcp/tcp_buffers.h>

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

namespace uct::tcp {

class tx_queue {
public:
    /* Most zero-copy sends one queue holds (bounds the completion batch;
     * replies have no completion). */
    static constexpr unsigned MAX_ZCOPY_SLOTS = 64;
    /* Most scatter entries gathered for one write. */
    static constexpr size_t MAX_GATHER = 64;

    /* `pool`'s buffers hold buffer_size + reply_bytes (at most 4 GiB); it
     * outlives the queue. Slots and max_iov at most 65535. */
    ucs_status_t init(buffer_pool &pool, size_t buffer_size, unsigned zcopy_slots, size_t max_iov,
                      unsigned reply_slots = 0, size_t reply_bytes = 0);

    tx_queue() = default;
    ~tx_queue() { release_buffer(); }
    tx_queue(const tx_queue &)            = delete;
    tx_queue &operator=(const tx_queue &) = delete;

    /* Holds a buffer now (for tests and diagnostics). */
    bool holds_buffer() const { return buf_ != nullptr; }

    bool empty() const { return (head_ == tail_) && (zc_count_ == 0); }
    /* No zero-copy send may be queued now. */
    bool zcopy_full() const { return zc_sends_ == zc_send_limit_; }
    /* A zero-copy send (or reply) may be queued now: not full, and the
     * segment slots exist (made at the first one, so a connection that never
     * sends zero-copy never holds them). */
    bool zcopy_room(bool reply = false)
    {
        if (reply ? reply_zcopy_full() : zcopy_full()) {
            return false;
        }
        return ucs_likely(zc_ != nullptr) || alloc_zcopy_slots();
    }
    /* No zero-copy reply may be queued now (only a peer beyond its window). */
    bool reply_zcopy_full() const { return zc_count_ - zc_sends_ == zc_reply_limit_; }
    /* Zero-copy sends queued: they reference the caller's memory. */
    bool has_zcopy() const { return zc_sends_ > 0; }
    size_t buffered() const { return tail_ - head_; }
    /* Bytes a send may still reserve (after compaction). */
    size_t send_room() const
    {
        return (buffered() < send_capacity_) ? send_capacity_ - buffered() : 0;
    }

    /* Bytes handed to consume() so far; a position in the outgoing stream. */
    uint64_t bytes_sent() const { return sent_; }
    /* The stream position after everything queued now. */
    uint64_t end_position() const;

    /*
     * `length` contiguous bytes at the tail for a send, compacting the
     * buffer if that makes room; nullptr when the buffer is too full.
     * Nothing is queued until commit().
     */
    uint8_t *reserve(size_t length)
    {
        if (ucs_likely((buf_ != nullptr) && (tail_ + length <= send_capacity_))) {
            return buf_ + tail_;
        }
        return reserve_slow(length, send_capacity_);
    }

    /* The same for a reply, which may use the room kept for replies too. */
    uint8_t *reserve_reply(size_t length)
    {
        if (ucs_likely((buf_ != nullptr) && (capacity_ - tail_ >= length))) {
            return buf_ + tail_;
        }
        return reserve_slow(length, capacity_);
    }

    void commit(size_t length) { tail_ += length; }

    /*
     * Queues the caller's buffers after everything committed so far; the
     * caller checked zcopy_room() (a reply: zcopy_room(true), and no
     * completion) and iovcnt <= max_iov. Returns a ticket for
     * set_zcopy_comp().
     */
    uint64_t push_zcopy(const iov *iov, size_t iovcnt, completion *comp, bool reply = false);

    /* Sets the completion of a queued segment; false if it was already written. */
    bool set_zcopy_comp(uint64_t ticket, completion *comp);

    /* Fills `out` with the front of the queue, at most `max` entries and
     * `max_bytes` bytes (the entry that reaches them is cut); returns
     * entries and total bytes. */
    size_t gather(struct iovec *out, size_t max, size_t *total, size_t max_bytes = SIZE_MAX) const;

    /*
     * Drops `length` written bytes. Completions of segments that finished
     * are stored in `done` (MAX_ZCOPY_SLOTS entries) and counted in *ndone;
     * the caller invokes them once its own state is consistent.
     */
    void consume(size_t length, completion **done, unsigned *ndone);

    /* Empties the queue, returning the completions of unsent segments. */
    void clear(completion **done, unsigned *ndone);

private:
    struct zcopy_seg {
        uint64_t insert_at; /* buffered-stream position it follows */
        completion *comp;
        uint32_t iovcnt : 31;
        uint32_t reply : 1; /* counted against the reply slots */
        uint32_t cur;       /* first iov not fully written */
        size_t cur_offset;  /* bytes of iov[cur] already written */
        iov *iovs;          /* max_iov entries owned by the queue */
    };

    uint8_t *reserve_slow(size_t length, size_t limit);
    bool alloc_zcopy_slots();
    /* Back to the pool: nothing buffered refers to it any more. */
    void release_buffer()
    {
        if (buf_ != nullptr) {
            pool_->put(buf_);
            buf_ = nullptr;
        }
    }
    void drop_zc_front();
    zcopy_seg &zc_at(unsigned i) const { return zc_[(zc_first_ + i) % zc_capacity_]; }
    /* Buffered-stream position of buf_[head_]. */
    uint64_t buffered_pos() const { return buf_consumed_; }

    /* 32-bit offsets and counts: a queue per connection, thousands of them. */
    buffer_pool *pool_      = nullptr;
    uint8_t *buf_           = nullptr; /* held while bytes are buffered */
    uint32_t capacity_      = 0;       /* replies included */
    uint32_t send_capacity_ = 0;       /* what sends may fill */
    uint32_t head_ = 0, tail_ = 0;
    uint64_t buf_consumed_ = 0; /* buffered bytes written */
    uint64_t sent_         = 0; /* all bytes written */

    std::unique_ptr<zcopy_seg[]> zc_;
    std::unique_ptr<iov[]> zc_iovs_;
    uint16_t zc_capacity_ = 0;
    uint16_t zc_first_ = 0, zc_count_ = 0;
    uint16_t zc_sends_      = 0; /* zc_count_ less replies */
    uint16_t zc_send_limit_ = 0, zc_reply_limit_ = 0;
    uint16_t max_iov_   = 0;
    uint64_t zc_pushed_ = 0; /* tickets handed out */
};

} // namespace uct::tcp

#endif
