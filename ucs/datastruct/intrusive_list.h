/*
 * Intrusive circular doubly-linked list. The element embeds a ucs::list_link
 * and the list never allocates: push, insert and remove are a few pointer
 * stores, which is what per-message paths need. Not thread-safe.
 *
 *   struct request { ...; ucs::list_link link; };
 *   ucs::intrusive_list<request, &request::link> queue;
 *   queue.push_back(req);
 *   for (request &r : queue) { ... }
 *   for (request &r : queue.safe()) { if (done(r)) queue.remove(r); }
 */
#ifndef UCS_DATASTRUCT_INTRUSIVE_LIST_H
#define UCS_DATASTRUCT_INTRUSIVE_LIST_H

#include <ucs/datastruct/member_offset.h>

#include <cstddef>
#include <iterator>

namespace ucs {

/* Embedded in every element. Stale after removal until linked again. */
struct list_link {
    list_link *prev = nullptr;
    list_link *next = nullptr;
};

/* Untyped operations on links, shared by the typed list and the arbiter. */
namespace list_ops {

inline void init_head(list_link &head) noexcept
{
    head.prev = &head;
    head.next = &head;
}

inline bool is_empty(const list_link &head) noexcept
{
    return head.next == &head;
}

inline void insert_between(list_link *elem, list_link *prev, list_link *next) noexcept
{
    elem->prev = prev;
    elem->next = next;
    prev->next = elem;
    next->prev = elem;
}

inline void unlink(list_link *elem) noexcept
{
    elem->prev->next = elem->next;
    elem->next->prev = elem->prev;
}

/* Moves every element of `from` (a head) in front of `pos`; `from` ends empty. */
inline void splice_before(list_link *pos, list_link &from) noexcept
{
    if (is_empty(from)) {
        return;
    }
    list_link *first = from.next;
    list_link *last  = from.prev;
    first->prev      = pos->prev;
    pos->prev->next  = first;
    last->next       = pos;
    pos->prev        = last;
    init_head(from);
}

} // namespace list_ops

template <typename T, list_link T::*Link>
class intrusive_list {
    template <bool Const>
    class basic_iterator {
        using link_ptr = std::conditional_t<Const, const list_link *, list_link *>;

    public:
        using iterator_category = std::bidirectional_iterator_tag;
        using value_type        = T;
        using difference_type   = std::ptrdiff_t;
        using pointer           = std::conditional_t<Const, const T *, T *>;
        using reference         = std::conditional_t<Const, const T &, T &>;

        basic_iterator() noexcept = default;
        explicit basic_iterator(link_ptr link) noexcept : m_link(link) {}

        reference operator*() const noexcept { return *owner_of(m_link, Link); }
        pointer operator->() const noexcept { return owner_of(m_link, Link); }

        basic_iterator &operator++() noexcept
        {
            m_link = m_link->next;
            return *this;
        }
        basic_iterator operator++(int) noexcept
        {
            basic_iterator prev = *this;
            ++*this;
            return prev;
        }
        basic_iterator &operator--() noexcept
        {
            m_link = m_link->prev;
            return *this;
        }
        basic_iterator operator--(int) noexcept
        {
            basic_iterator prev = *this;
            --*this;
            return prev;
        }
        bool operator==(const basic_iterator &other) const noexcept = default;

    private:
        link_ptr m_link = nullptr;
    };

    /* Reads the successor before the element is handed out, so the loop body
     * may remove (or even free) the current element. */
    class safe_iterator {
    public:
        using iterator_category = std::forward_iterator_tag;
        using value_type        = T;
        using difference_type   = std::ptrdiff_t;
        using pointer           = T *;
        using reference         = T &;

        safe_iterator() noexcept = default;
        explicit safe_iterator(list_link *link) noexcept : m_link(link), m_next(link->next) {}

        T &operator*() const noexcept { return *owner_of(m_link, Link); }
        T *operator->() const noexcept { return owner_of(m_link, Link); }

        safe_iterator &operator++() noexcept
        {
            m_link = m_next;
            m_next = m_link->next;
            return *this;
        }
        safe_iterator operator++(int) noexcept
        {
            safe_iterator prev = *this;
            ++*this;
            return prev;
        }
        bool operator==(const safe_iterator &other) const noexcept
        {
            return m_link == other.m_link;
        }

    private:
        list_link *m_link = nullptr;
        list_link *m_next = nullptr;
    };

    class safe_range {
    public:
        explicit safe_range(list_link &head) noexcept : m_head(head) {}
        safe_iterator begin() const noexcept { return safe_iterator(m_head.next); }
        safe_iterator end() const noexcept { return safe_iterator(&m_head); }

    private:
        list_link &m_head;
    };

public:
    using value_type     = T;
    using iterator       = basic_iterator<false>;
    using const_iterator = basic_iterator<true>;

    intrusive_list() noexcept { list_ops::init_head(m_head); }

    /* The head is the circle's sentinel: copying would alias elements. */
    intrusive_list(const intrusive_list &)            = delete;
    intrusive_list &operator=(const intrusive_list &) = delete;

    intrusive_list(intrusive_list &&other) noexcept
    {
        list_ops::init_head(m_head);
        splice_back(other);
    }

    intrusive_list &operator=(intrusive_list &&other) noexcept
    {
        if (this != &other) {
            list_ops::init_head(m_head); /* elements we held are dropped */
            splice_back(other);
        }
        return *this;
    }

    bool empty() const noexcept { return list_ops::is_empty(m_head); }

    /* O(n): walks the list. */
    std::size_t size() const noexcept
    {
        std::size_t count = 0;
        for (const list_link *l = m_head.next; l != &m_head; l = l->next) {
            ++count;
        }
        return count;
    }

    T *front() noexcept { return empty() ? nullptr : elem_of(m_head.next); }
    T *back() noexcept { return empty() ? nullptr : elem_of(m_head.prev); }

    void push_front(T &elem) noexcept
    {
        list_ops::insert_between(&(elem.*Link), &m_head, m_head.next);
    }

    void push_back(T &elem) noexcept
    {
        list_ops::insert_between(&(elem.*Link), m_head.prev, &m_head);
    }

    /* `pos` must be linked in this list. */
    static void insert_after(T &pos, T &elem) noexcept
    {
        list_link *p = &(pos.*Link);
        list_ops::insert_between(&(elem.*Link), p, p->next);
    }

    static void insert_before(T &pos, T &elem) noexcept
    {
        list_link *p = &(pos.*Link);
        list_ops::insert_between(&(elem.*Link), p->prev, p);
    }

    /* `elem` must be linked in this list; static since no head is needed. */
    static void remove(T &elem) noexcept { list_ops::unlink(&(elem.*Link)); }

    T *pop_front() noexcept
    {
        T *elem = front();
        if (elem != nullptr) {
            remove(*elem);
        }
        return elem;
    }

    T *pop_back() noexcept
    {
        T *elem = back();
        if (elem != nullptr) {
            remove(*elem);
        }
        return elem;
    }

    /* Appends all of `other` (keeping its order); `other` becomes empty. */
    void splice_back(intrusive_list &other) noexcept
    {
        list_ops::splice_before(&m_head, other.m_head);
    }

    /* Prepends all of `other` (keeping its order); `other` becomes empty. */
    void splice_front(intrusive_list &other) noexcept
    {
        list_ops::splice_before(m_head.next, other.m_head);
    }

    /* Removes every element for which pred(T&) is true; returns how many.
     * pred may free the element it returns true for. */
    template <typename Pred>
    std::size_t remove_if(Pred &&pred)
    {
        std::size_t removed = 0;
        for (T &elem : safe()) {
            if (pred(elem)) {
                remove(elem);
                ++removed;
            }
        }
        return removed;
    }

    /* O(n) membership test, meant for assertions and tests. */
    bool contains(const T &elem) const noexcept
    {
        for (const list_link *l = m_head.next; l != &m_head; l = l->next) {
            if (l == &(elem.*Link)) {
                return true;
            }
        }
        return false;
    }

    iterator begin() noexcept { return iterator(m_head.next); }
    iterator end() noexcept { return iterator(&m_head); }
    const_iterator begin() const noexcept { return const_iterator(m_head.next); }
    const_iterator end() const noexcept { return const_iterator(&m_head); }

    /* Range whose loop body may remove the current element. */
    safe_range safe() noexcept { return safe_range(m_head); }

    static T *elem_of(list_link *link) noexcept { return owner_of(link, Link); }

private:
    list_link m_head;
};

} // namespace ucs

#endif
