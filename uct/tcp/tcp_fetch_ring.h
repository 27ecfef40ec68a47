/*
 * Requests an endpoint waits on a reply for (gets, fetching atomics,
 * flushes). The target answers in request order, so a ring suffices and a
 * reply must match the oldest entry's sequence number and kind: anything
 * else is a protocol error. Entries live in a fixed array allocated on first
 * use, nothing per request.
 */
#ifndef UCT_TCP_TCP_FETCH_RING_H
#define UCT_TCP_TCP_FETCH_RING_H

#include <uct/base/uct_types.h>

#include <cstdint>
#include <memory>
#include <new>

namespace uct::tcp {

enum class fetch_kind : uint8_t { GET_BCOPY, GET_ZCOPY, ATOMIC, FLUSH };

struct fetch_op {
    static constexpr size_t MAX_IOV = 8;

    uint64_t seq;
    fetch_kind kind;
    uint8_t atomic_size;
    uint32_t iovcnt;
    uint64_t length; /* data bytes a GET reply must carry */
    completion *comp;
    unpack_callback_t unpack; /* GET_BCOPY */
    void *arg;                /* GET_BCOPY: unpack argument; ATOMIC: result */
    iov iovs[MAX_IOV];        /* GET_ZCOPY destinations */
};

class fetch_ring {
public:
    bool empty() const { return count_ == 0; }
    /* Not yet allocated counts as room: ensure() runs before push(). */
    bool full() const { return (capacity_ > 0) && (count_ == capacity_); }
    unsigned size() const { return count_; }

    /* Allocates the entries on first use (`capacity` at most 65535, as
     * UCX_TCP_RMA_OUTSTANDING is); false when out of memory. */
    bool ensure(unsigned capacity)
    {
        if (ops_) {
            return true;
        }
        ucs_assert((capacity > 0) && (capacity <= UINT16_MAX));
        ops_.reset(new (std::nothrow) fetch_op[capacity]);
        if (!ops_) {
            return false;
        }
        capacity_ = uint16_t(capacity);
        return true;
    }

    /* A new entry with its sequence number set; the caller checked !full(). */
    fetch_op &push()
    {
        ucs_assert(!full() && (capacity_ > 0));
        fetch_op &op = ops_[(first_ + count_) % capacity_];
        ++count_;
        op.seq = ++last_seq_;
        return op;
    }

    /* Removes the newest entry again (its request could not be queued). */
    void unpush()
    {
        --count_;
        --last_seq_;
    }

    fetch_op &front()
    {
        ucs_assert(count_ > 0);
        return ops_[first_];
    }
    const fetch_op &front() const
    {
        ucs_assert(count_ > 0);
        return ops_[first_];
    }
    /* The newest entry (the ring is not empty). */
    fetch_op &back() { return ops_[(first_ + count_ - 1) % capacity_]; }

    /* Sequence number of the newest entry pushed (0: none yet). */
    uint64_t last_seq() const { return last_seq_; }

    void clear() { first_ = count_ = 0; }

    void pop_front()
    {
        ucs_assert(count_ > 0);
        first_ = (first_ + 1) % capacity_;
        --count_;
    }

private:
    std::unique_ptr<fetch_op[]> ops_;
    /* 16 bits: a ring in every connection, thousands of them. */
    uint16_t capacity_ = 0;
    uint16_t first_ = 0, count_ = 0;
    uint64_t last_seq_ = 0;
};

} // namespace uct::tcp

#endif
