/*
 * Intrusive singly-linked queue: O(1) push at either end and pull from the
 * front, one pointer per element. Used for pending and unexpected queues,
 * where elements are mostly appended and consumed in order. Not thread-safe.
 *
 *   struct desc { ...; ucs::queue_elem qelem; };
 *   ucs::intrusive_queue<desc, &desc::qelem> q;
 *   q.push_back(d);
 *   while (desc *d = q.pull_front()) { ... }
 *   for (auto it = q.begin(); it != q.end();) {
 *       if (match(*it)) { desc &d = *it; it = q.erase(it); release(d); }
 *       else { ++it; }
 *   }
 */
#ifndef UCS_DATASTRUCT_INTRUSIVE_QUEUE_H
#define UCS_DATASTRUCT_INTRUSIVE_QUEUE_H

#include <ucs/datastruct/member_offset.h>

#include <cstddef>
#include <iterator>

namespace ucs {

/* Embedded in every element; nullptr next marks the tail. */
struct queue_elem {
    queue_elem *next = nullptr;
};

template <typename T, queue_elem T::*Link>
class intrusive_queue {
public:
    /*
     * Points at the link that points at the current element, so erase() is
     * O(1) without a back pointer. Equal to end() when that link is null,
     * which stays true however the tail moves.
     */
    class iterator {
    public:
        using iterator_category = std::forward_iterator_tag;
        using value_type        = T;
        using difference_type   = std::ptrdiff_t;
        using pointer           = T *;
        using reference         = T &;

        iterator() noexcept = default;
        explicit iterator(queue_elem **pos) noexcept : m_pos(pos) {}

        T &operator*() const noexcept { return *owner_of(*m_pos, Link); }
        T *operator->() const noexcept { return owner_of(*m_pos, Link); }

        iterator &operator++() noexcept
        {
            m_pos = &(*m_pos)->next;
            return *this;
        }
        iterator operator++(int) noexcept
        {
            iterator prev = *this;
            ++*this;
            return prev;
        }
        bool operator==(const iterator &other) const noexcept
        {
            return current() == other.current();
        }

    private:
        friend class intrusive_queue;

        queue_elem *current() const noexcept { return (m_pos == nullptr) ? nullptr : *m_pos; }

        queue_elem **m_pos = nullptr;
    };

    intrusive_queue() noexcept = default;

    /* m_tail may point into the object itself: no implicit copies. */
    intrusive_queue(const intrusive_queue &)            = delete;
    intrusive_queue &operator=(const intrusive_queue &) = delete;

    intrusive_queue(intrusive_queue &&other) noexcept { splice_back(other); }

    intrusive_queue &operator=(intrusive_queue &&other) noexcept
    {
        if (this != &other) {
            clear();
            splice_back(other);
        }
        return *this;
    }

    bool empty() const noexcept { return m_head == nullptr; }

    /* O(n): walks the queue. */
    std::size_t size() const noexcept
    {
        std::size_t count = 0;
        for (const queue_elem *e = m_head; e != nullptr; e = e->next) {
            ++count;
        }
        return count;
    }

    /* Forgets all elements (they are not touched). */
    void clear() noexcept
    {
        m_head = nullptr;
        m_tail = &m_head;
    }

    T *front() noexcept { return empty() ? nullptr : owner_of(m_head, Link); }

    T *back() noexcept
    {
        /* m_tail is the address of the last element's `next` field. */
        return empty() ? nullptr : owner_of(owner_of(m_tail, &queue_elem::next), Link);
    }

    void push_back(T &elem) noexcept
    {
        queue_elem *e = &(elem.*Link);
        e->next       = nullptr;
        *m_tail       = e;
        m_tail        = &e->next;
    }

    void push_front(T &elem) noexcept
    {
        queue_elem *e = &(elem.*Link);
        e->next       = m_head;
        if (m_head == nullptr) {
            m_tail = &e->next;
        }
        m_head = e;
    }

    /* Removes and returns the first element, nullptr when empty. */
    T *pull_front() noexcept
    {
        queue_elem *e = m_head;
        if (e == nullptr) {
            return nullptr;
        }
        m_head = e->next;
        if (m_head == nullptr) {
            m_tail = &m_head;
        }
        return owner_of(e, Link);
    }

    /* Removes the element `it` refers to; returns an iterator to its successor. */
    iterator erase(iterator it) noexcept
    {
        queue_elem *e = *it.m_pos;
        *it.m_pos     = e->next;
        if (m_tail == &e->next) {
            m_tail = it.m_pos;
        }
        return it;
    }

    /* O(n) search; false when the element is not in this queue. */
    bool remove(T &elem) noexcept
    {
        for (iterator it = begin(); it != end(); ++it) {
            if (&*it == &elem) {
                erase(it);
                return true;
            }
        }
        return false;
    }

    /* Removes every element for which pred(T&) is true, in queue order;
     * pred may release the element it returns true for, but must not
     * modify this queue. Returns the count. */
    template <typename Pred>
    std::size_t remove_if(Pred &&pred)
    {
        std::size_t removed = 0;
        queue_elem **pos    = &m_head;
        while (*pos != nullptr) {
            queue_elem *e    = *pos;
            queue_elem *next = e->next; /* read before pred may free e */
            if (pred(*owner_of(e, Link))) {
                *pos = next;
                if (m_tail == &e->next) {
                    m_tail = pos;
                }
                ++removed;
            } else {
                pos = &e->next;
            }
        }
        return removed;
    }

    /* Appends all of `other` in order; `other` becomes empty. */
    void splice_back(intrusive_queue &other) noexcept
    {
        if (other.empty()) {
            return;
        }
        *m_tail = other.m_head;
        m_tail  = other.m_tail;
        other.clear();
    }

    bool contains(const T &elem) const noexcept
    {
        for (const queue_elem *e = m_head; e != nullptr; e = e->next) {
            if (e == &(elem.*Link)) {
                return true;
            }
        }
        return false;
    }

    iterator begin() noexcept { return iterator(&m_head); }
    iterator end() noexcept { return iterator(); }

private:
    queue_elem *m_head  = nullptr;
    queue_elem **m_tail = &m_head; /* the null link to store the next element into */
};

} // namespace ucs

#endif
