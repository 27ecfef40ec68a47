/*
 * A FIFO of trivially copyable values in one ring that grows by doubling.
 * It allocates nothing until the first push: an empty std::deque allocates
 * about 600 bytes, which per endpoint or connection (a send window, the
 * flushes waiting on it) is most of what an idle one costs. Push and pop
 * are O(1); iteration goes from the front to the back (and may change the
 * values in place).
 *
 *   ucs::ring_fifo<op> ops;
 *   ops.push_back(o);  ...  while (!ops.empty()) { use(ops.front()); ops.pop_front(); }
 */
#ifndef UCS_DATASTRUCT_RING_FIFO_H
#define UCS_DATASTRUCT_RING_FIFO_H

#include <cstddef>
#include <iterator>
#include <memory>
#include <type_traits>

namespace ucs {

template <typename T>
class ring_fifo {
    static_assert(std::is_trivially_copyable_v<T>, "values move by copy when the ring grows");

public:
    template <bool Const>
    class basic_iterator {
        using fifo_ptr = std::conditional_t<Const, const ring_fifo *, ring_fifo *>;

    public:
        using iterator_category = std::forward_iterator_tag;
        using value_type        = T;
        using difference_type   = std::ptrdiff_t;
        using pointer           = std::conditional_t<Const, const T *, T *>;
        using reference         = std::conditional_t<Const, const T &, T &>;

        basic_iterator(fifo_ptr fifo, size_t index) : fifo_(fifo), index_(index) {}
        reference operator*() const { return fifo_->at(index_); }
        pointer operator->() const { return &fifo_->at(index_); }
        basic_iterator &operator++()
        {
            ++index_;
            return *this;
        }
        bool operator==(const basic_iterator &other) const { return index_ == other.index_; }
        bool operator!=(const basic_iterator &other) const { return index_ != other.index_; }

    private:
        fifo_ptr fifo_;
        size_t index_; /* from the front */
    };
    using iterator       = basic_iterator<false>;
    using const_iterator = basic_iterator<true>;

    bool empty() const noexcept { return count_ == 0; }
    size_t size() const noexcept { return count_; }

    T &front() noexcept { return slots_[head_]; }
    const T &front() const noexcept { return slots_[head_]; }
    T &back() noexcept { return slots_[slot(count_ - 1)]; }

    void push_back(const T &value)
    {
        if (count_ == capacity_) {
            grow();
        }
        slots_[slot(count_)] = value;
        ++count_;
    }

    void pop_front() noexcept
    {
        head_ = slot(1);
        --count_;
    }

    /* Forgets every value; the ring is kept for the next pushes. */
    void clear() noexcept { head_ = count_ = 0; }

    const_iterator begin() const { return {this, 0}; }
    const_iterator end() const { return {this, count_}; }
    iterator begin() { return {this, 0}; }
    iterator end() { return {this, count_}; }

private:
    static constexpr size_t first_capacity = 4;

    /* The slot of the value `index` places behind the front (capacity_ is
     * a power of two). */
    size_t slot(size_t index) const noexcept { return (head_ + index) & (capacity_ - 1); }
    const T &at(size_t index) const noexcept { return slots_[slot(index)]; }
    T &at(size_t index) noexcept { return slots_[slot(index)]; }

    void grow()
    {
        const size_t capacity = (capacity_ == 0) ? first_capacity : 2 * capacity_;
        std::unique_ptr<T[]> slots(new T[capacity]);
        for (size_t i = 0; i < count_; ++i) {
            slots[i] = at(i);
        }
        slots_    = std::move(slots);
        capacity_ = capacity;
        head_     = 0;
    }

    std::unique_ptr<T[]> slots_;
    size_t capacity_ = 0;
    size_t head_     = 0;
    size_t count_    = 0;
};

} // namespace ucs

#endif
