#include <uct/tcp/tcp_tx_queue.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <new>

namespace uct::tcp {

ucs_status_t tx_queue::init(buffer_pool &pool, size_t buffer_size, unsigned zcopy_slots,
                            size_t max_iov, unsigned reply_slots, size_t reply_bytes)
{
    if ((buffer_size == 0) || (zcopy_slots == 0) || (zcopy_slots > MAX_ZCOPY_SLOTS) ||
        (max_iov == 0) || (reply_slots > UINT16_MAX - zcopy_slots) || (max_iov > UINT16_MAX) ||
        (buffer_size > UINT32_MAX) || (reply_bytes > UINT32_MAX - buffer_size)) {
        return UCS_ERR_INVALID_PARAM;
    }
    pool_           = &pool;
    capacity_       = uint32_t(buffer_size + reply_bytes);
    send_capacity_  = uint32_t(buffer_size);
    zc_capacity_    = uint16_t(zcopy_slots + reply_slots);
    zc_send_limit_  = uint16_t(zcopy_slots);
    zc_reply_limit_ = uint16_t(reply_slots);
    max_iov_        = uint16_t(max_iov);
    return UCS_OK;
}

bool tx_queue::alloc_zcopy_slots()
{
    /* Replies need a single iov; the slots are shared, so each gets max_iov. */
    zc_.reset(new (std::nothrow) zcopy_seg[zc_capacity_]);
    zc_iovs_.reset(new (std::nothrow) iov[size_t(zc_capacity_) * max_iov_]);
    if (!zc_ || !zc_iovs_) {
        zc_.reset();
        zc_iovs_.reset();
        return false;
    }
    for (unsigned i = 0; i < zc_capacity_; ++i) {
        zc_[i].iovs = &zc_iovs_[size_t(i) * max_iov_];
    }
    return true;
}

uint8_t *tx_queue::reserve_slow(size_t length, size_t limit)
{
    if (buf_ == nullptr) {
        /* Empty (head_ == tail_ == 0): a buffer from the pool takes it all,
         * unless it is too long for any (then no buffer is taken). */
        if (length > limit) {
            return nullptr;
        }
        buf_ = pool_->get();
        return buf_;
    }
    /* With head_ == 0 nothing can move: the caller's check was final. */
    size_t used = tail_ - head_;
    if ((head_ == 0) || (used > limit) || (limit - used < length)) {
        return nullptr;
    }
    /* Slide the unsent bytes to the front; zero-copy insertion points are
     * stream positions, so they stay valid. */
    std::memmove(buf_, buf_ + head_, used);
    head_ = 0;
    tail_ = used;
    return buf_ + tail_;
}

uint64_t tx_queue::push_zcopy(const iov *iov, size_t iovcnt, completion *comp, bool reply)
{
    zcopy_seg &z = zc_[(zc_first_ + zc_count_) % zc_capacity_];
    z.insert_at  = buf_consumed_ + (tail_ - head_);
    z.comp       = comp;
    z.iovcnt     = uint32_t(iovcnt);
    z.reply      = reply;
    z.cur        = 0;
    z.cur_offset = 0;
    std::copy(iov, iov + iovcnt, z.iovs);
    ++zc_count_;
    zc_sends_ += reply ? 0 : 1;
    return zc_pushed_++;
}

void tx_queue::drop_zc_front()
{
    zc_sends_ -= zc_at(0).reply ? 0 : 1;
    zc_first_ = (zc_first_ + 1) % zc_capacity_;
    --zc_count_;
}

bool tx_queue::set_zcopy_comp(uint64_t ticket, completion *comp)
{
    uint64_t first_ticket = zc_pushed_ - zc_count_;
    if (ticket < first_ticket) {
        return false;
    }
    zc_at(unsigned(ticket - first_ticket)).comp = comp;
    return true;
}

size_t tx_queue::gather(struct iovec *out, size_t max, size_t *total, size_t max_bytes) const
{
    size_t n     = 0;
    size_t bytes = 0;
    uint64_t pos = buf_consumed_;
    size_t off   = head_;

    for (unsigned i = 0; i < zc_count_; ++i) {
        const zcopy_seg &z = zc_at(i);
        if (z.insert_at > pos) {
            if ((n == max) || (bytes >= max_bytes)) {
                *total = bytes;
                return n;
            }
            const size_t len = size_t(z.insert_at - pos);
            if (len > max_bytes - bytes) {
                out[n++] = {buf_ + off, max_bytes - bytes}; /* the budget cuts it */
                *total   = max_bytes;
                return n;
            }
            out[n++] = {buf_ + off, len};
            bytes += len;
            off += len;
            pos = z.insert_at;
        }
        for (uint32_t j = z.cur; j < z.iovcnt; ++j) {
            size_t skip = (j == z.cur) ? z.cur_offset : 0;
            size_t len  = z.iovs[j].length - skip;
            if (len == 0) {
                continue;
            }
            if ((n == max) || (bytes >= max_bytes)) {
                /* Stop inside this segment: nothing after it may go first. */
                *total = bytes;
                return n;
            }
            len      = std::min(len, max_bytes - bytes); /* the budget cuts it */
            out[n++] = {static_cast<uint8_t *>(const_cast<void *>(z.iovs[j].buffer)) + skip, len};
            bytes += len;
        }
    }

    if ((off < tail_) && (n < max) && (bytes < max_bytes)) {
        const size_t len = std::min(size_t(tail_ - off), max_bytes - bytes);
        out[n++]         = {buf_ + off, len};
        bytes += len;
    }
    *total = bytes;
    return n;
}

uint64_t tx_queue::end_position() const
{
    uint64_t end = sent_ + buffered();
    for (unsigned i = 0; i < zc_count_; ++i) {
        const zcopy_seg &z = zc_at(i);
        for (uint32_t j = z.cur; j < z.iovcnt; ++j) {
            end += z.iovs[j].length;
        }
        end -= z.cur_offset;
    }
    return end;
}

void tx_queue::consume(size_t length, completion **done, unsigned *ndone)
{
    sent_ += length;
    for (;;) {
        if ((zc_count_ > 0) && (zc_at(0).insert_at == buf_consumed_)) {
            zcopy_seg &z = zc_at(0);
            while (z.cur < z.iovcnt) {
                size_t left = z.iovs[z.cur].length - z.cur_offset;
                if (left > length) {
                    z.cur_offset += length;
                    length = 0;
                    break;
                }
                length -= left;
                ++z.cur;
                z.cur_offset = 0;
            }
            if (z.cur < z.iovcnt) {
                break;
            }
            if (z.comp != nullptr) {
                done[(*ndone)++] = z.comp;
            }
            drop_zc_front();
            continue;
        }
        if (length == 0) {
            break;
        }
        size_t limit = (zc_count_ > 0) ? size_t(zc_at(0).insert_at - buf_consumed_) :
                                         (tail_ - head_);
        size_t take  = std::min(length, limit);
        if (take == 0) {
            break; /* more than was gathered: cannot happen */
        }
        head_ += take;
        buf_consumed_ += take;
        length -= take;
    }
    if (head_ == tail_) {
        head_ = tail_ = 0;
        release_buffer();
    }
}

void tx_queue::clear(completion **done, unsigned *ndone)
{
    for (unsigned i = 0; i < zc_count_; ++i) {
        if (zc_at(i).comp != nullptr) {
            done[(*ndone)++] = zc_at(i).comp;
        }
    }
    zc_first_ = zc_count_ = zc_sends_ = 0;
    buf_consumed_ += tail_ - head_;
    head_ = tail_ = 0;
    release_buffer();
}

} // namespace uct::tcp
