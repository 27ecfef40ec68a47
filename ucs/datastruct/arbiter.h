/*
 * Fair arbiter for pending operations (the role of UCX's ucs_arbiter).
 *
 * Elements (pending requests) are queued in groups, one group per endpoint;
 * groups that have work are scheduled in an arbiter, one per interface or
 * worker. dispatch() walks the scheduled groups round-robin and offers each
 * group's head element to a callback, whose answer says what to do next:
 *
 *   REMOVE_ELEM    the element is done and no longer queued; go on with the
 *                  group's next element, up to the per-group limit
 *   NEXT_GROUP     keep the element at the head; go to the next group (the
 *                  group keeps its place in the round-robin order)
 *   RESCHED_GROUP  keep the element; the group moves behind all others
 *   DESCHED_GROUP  keep the element; unschedule the group until schedule()
 *   STOP           keep the element; stop. The next dispatch starts here.
 *
 * Nothing allocates; every operation is O(1) except purge and counting.
 * The element is unlinked while its callback runs, so on REMOVE_ELEM the
 * callback may complete, free or re-queue it. During a dispatch callback
 * any group may be pushed to, scheduled or descheduled, including the
 * current one; the current element must not be re-queued unless the
 * callback returns REMOVE_ELEM. Not thread-safe.
 *
 *   ucs::arbiter_elem  in each pending request (init() it once),
 *   ucs::arbiter_group in each endpoint, ucs::arbiter in the interface.
 *   ep->group.push_back(req->elem); iface->arbiter.schedule(ep->group);
 *   iface->arbiter.dispatch(1, [](ucs::arbiter_group &g, ucs::arbiter_elem &e) {
 *       return try_send(e) ? ucs::arbiter_cb_result::REMOVE_ELEM :
 *                            ucs::arbiter_cb_result::DESCHED_GROUP;
 *   });
 */
#ifndef UCS_DATASTRUCT_ARBITER_H
#define UCS_DATASTRUCT_ARBITER_H

#include <ucs/datastruct/intrusive_list.h>
#include <ucs/sys/compiler_def.h>

#include <cstddef>
#include <cstdint>

namespace ucs {

enum class arbiter_cb_result : std::uint8_t {
    REMOVE_ELEM,
    NEXT_GROUP,
    RESCHED_GROUP,
    DESCHED_GROUP,
    STOP,
};

class arbiter_group;

/* Embedded in a pending request; small enough for uct_pending_req_t::priv. */
struct arbiter_elem {
    arbiter_elem *prev   = nullptr;
    arbiter_elem *next   = nullptr;
    arbiter_group *group = nullptr; /* null while not queued */

    /* For elements living in raw memory where no constructor ran. */
    void init() noexcept
    {
        prev  = nullptr;
        next  = nullptr;
        group = nullptr;
    }

    bool is_queued() const noexcept { return group != nullptr; }
};

/* A FIFO of elements; one per endpoint. Must outlive its queued elements'
 * use of it; destroying it unschedules it and detaches its elements. */
class arbiter_group {
public:
    arbiter_group() noexcept                        = default;
    arbiter_group(const arbiter_group &)            = delete;
    arbiter_group &operator=(const arbiter_group &) = delete;

    ~arbiter_group()
    {
        detach_all();
        if (m_state == state::scheduled) {
            list_ops::unlink(&m_sched_link);
        }
    }

    bool empty() const noexcept { return m_head == nullptr; }
    std::size_t size() const noexcept { return m_count; }
    arbiter_elem *head() const noexcept { return m_head; }

    /* Scheduled in an arbiter (or being dispatched right now). */
    bool is_scheduled() const noexcept { return m_state != state::idle; }

    /* `elem` must not be queued anywhere. */
    void push_back(arbiter_elem &elem) noexcept
    {
        elem.prev  = m_tail;
        elem.next  = nullptr;
        elem.group = this;
        if (m_tail != nullptr) {
            m_tail->next = &elem;
        } else {
            m_head = &elem;
        }
        m_tail = &elem;
        ++m_count;
    }

    void push_front(arbiter_elem &elem) noexcept
    {
        elem.prev  = nullptr;
        elem.next  = m_head;
        elem.group = this;
        if (m_head != nullptr) {
            m_head->prev = &elem;
        } else {
            m_tail = &elem;
        }
        m_head = &elem;
        ++m_count;
    }

    /* Takes `elem` out of this group (e.g. a cancelled request); false when
     * it is not queued here. An emptied group leaves its schedule. */
    bool remove(arbiter_elem &elem) noexcept
    {
        if (elem.group != this) {
            return false;
        }
        unlink(elem);
        if (empty() && (m_state == state::scheduled)) {
            list_ops::unlink(&m_sched_link);
            m_state = state::idle;
        }
        return true;
    }

    /* Calls f(arbiter_elem&) for each element, head first; f must not
     * change the group. */
    template <typename F>
    void for_each(F &&f) const
    {
        for (arbiter_elem *e = m_head; e != nullptr; e = e->next) {
            f(*e);
        }
    }

private:
    friend class arbiter;

    enum class state : std::uint8_t {
        idle,           /* not in any schedule */
        scheduled,      /* m_sched_link is in an arbiter's (or dispatch's) list */
        dispatching,    /* its callback is running; link is free */
        desched_wanted, /* desched() called from its own callback */
    };

    void unlink(arbiter_elem &elem) noexcept
    {
        if (elem.prev != nullptr) {
            elem.prev->next = elem.next;
        } else {
            m_head = elem.next;
        }
        if (elem.next != nullptr) {
            elem.next->prev = elem.prev;
        } else {
            m_tail = elem.prev;
        }
        elem.group = nullptr;
        --m_count;
    }

    void detach_all() noexcept
    {
        for (arbiter_elem *e = m_head; e != nullptr; e = e->next) {
            e->group = nullptr;
        }
        m_head  = nullptr;
        m_tail  = nullptr;
        m_count = 0;
    }

    static arbiter_group *of_link(list_link *link) noexcept
    {
        return owner_of(link, &arbiter_group::m_sched_link);
    }

    arbiter_elem *m_head = nullptr;
    arbiter_elem *m_tail = nullptr;
    std::size_t m_count  = 0;
    list_link m_sched_link;
    std::uint32_t m_epoch = 0; /* last dispatch that visited this group */
    state m_state         = state::idle;
};

class arbiter {
public:
    arbiter() noexcept { list_ops::init_head(m_sched); }
    arbiter(const arbiter &)            = delete;
    arbiter &operator=(const arbiter &) = delete;

    ~arbiter()
    {
        while (!list_ops::is_empty(m_sched)) {
            arbiter_group *group = arbiter_group::of_link(m_sched.next);
            list_ops::unlink(&group->m_sched_link);
            group->m_state = arbiter_group::state::idle;
        }
    }

    /* No group is scheduled. */
    bool empty() const noexcept { return list_ops::is_empty(m_sched); }

    /* Scheduled groups, O(n); for diagnostics and tests. */
    std::size_t num_scheduled() const noexcept
    {
        std::size_t count = 0;
        for (const list_link *l = m_sched.next; l != &m_sched; l = l->next) {
            ++count;
        }
        return count;
    }

    /* Adds a non-empty group at the end of the round-robin order; no-op if
     * it is empty or already scheduled. */
    void schedule(arbiter_group &group) noexcept
    {
        using state = arbiter_group::state;
        if (group.m_state == state::desched_wanted) {
            group.m_state = state::dispatching; /* its dispatch keeps it */
        } else if ((group.m_state == state::idle) && !group.empty()) {
            list_ops::insert_between(&group.m_sched_link, m_sched.prev, &m_sched);
            group.m_state = state::scheduled;
        }
    }

    /* Takes the group out of the schedule; its elements stay queued. */
    void desched(arbiter_group &group) noexcept
    {
        using state = arbiter_group::state;
        if (group.m_state == state::scheduled) {
            list_ops::unlink(&group.m_sched_link);
            group.m_state = state::idle;
        } else if (group.m_state == state::dispatching) {
            group.m_state = state::desched_wanted;
        }
    }

    /* Convenience for the common "queue and make sure it runs" step. */
    void push_and_schedule(arbiter_group &group, arbiter_elem &elem) noexcept
    {
        group.push_back(elem);
        schedule(group);
    }

    /*
     * Offers the head elements of the scheduled groups to
     * cb(arbiter_group&, arbiter_elem&) -> arbiter_cb_result, as described
     * at the top of this file. Each group is visited at most once per call
     * and gets at most `per_group_limit` REMOVE_ELEM results (0 counts as 1).
     * Returns the number of elements removed.
     */
    template <typename Callback>
    std::size_t dispatch(unsigned per_group_limit, Callback &&cb)
    {
        using state = arbiter_group::state;
        if (empty()) {
            return 0;
        }
        if (per_group_limit == 0) {
            per_group_limit = 1;
        }

        const std::uint32_t epoch = ++m_epoch;
        list_link visited, resched; /* keep their order; rejoin at the end */
        list_ops::init_head(visited);
        list_ops::init_head(resched);
        std::size_t total_removed = 0;

        while (!list_ops::is_empty(m_sched)) {
            arbiter_group *group = arbiter_group::of_link(m_sched.next);
            list_ops::unlink(&group->m_sched_link);
            if (group->m_epoch == epoch) {
                /* Visited, descheduled and scheduled again in this call. */
                list_ops::insert_between(&group->m_sched_link, visited.prev, &visited);
                continue;
            }
            group->m_epoch = epoch;
            group->m_state = state::dispatching;

            arbiter_cb_result result = arbiter_cb_result::REMOVE_ELEM;
            unsigned removed         = 0;
            while (!group->empty() && (removed < per_group_limit) &&
                   (group->m_state == state::dispatching)) {
                arbiter_elem *elem = group->m_head;
                group->unlink(*elem);
                result = cb(*group, *elem);
                if (result == arbiter_cb_result::REMOVE_ELEM) {
                    ++removed;
                } else {
                    group->push_front(*elem);
                    break;
                }
            }
            total_removed += removed;

            if ((group->m_state == state::desched_wanted) || group->empty() ||
                (result == arbiter_cb_result::DESCHED_GROUP)) {
                group->m_state = state::idle;
            } else {
                group->m_state = state::scheduled;
                list_link *before;
                if (result == arbiter_cb_result::RESCHED_GROUP) {
                    before = &resched;
                } else if (result == arbiter_cb_result::STOP) {
                    before = m_sched.next; /* resume here next time */
                } else {
                    before = &visited;
                }
                list_ops::insert_between(&group->m_sched_link, before->prev, before);
            }

            if (result == arbiter_cb_result::STOP) {
                break;
            }
        }

        list_ops::splice_before(&m_sched, visited);
        list_ops::splice_before(&m_sched, resched);
        return total_removed;
    }

    /*
     * Calls cb(arbiter_group&, arbiter_elem&) for every element of the
     * group, head first; elements for which it returns REMOVE_ELEM are
     * removed (and may be freed by cb), the others stay in order. cb must
     * not change the group. An emptied group leaves the schedule.
     * Returns the number removed.
     */
    template <typename Callback>
    std::size_t purge(arbiter_group &group, Callback &&cb)
    {
        std::size_t removed = 0;
        arbiter_elem *kept  = nullptr; /* last element that stays */
        arbiter_elem *elem  = group.m_head;
        while (elem != nullptr) {
            arbiter_elem *next = elem->next;
            group.unlink(*elem);
            if (cb(group, *elem) == arbiter_cb_result::REMOVE_ELEM) {
                ++removed;
            } else {
                insert_after(group, kept, *elem);
                kept = elem;
            }
            elem = next;
        }
        desched_if_empty(group);
        return removed;
    }

    /* Removes every element of the group without a callback. */
    std::size_t purge(arbiter_group &group) noexcept
    {
        std::size_t removed = group.size();
        group.detach_all();
        desched_if_empty(group);
        return removed;
    }

private:
    static void insert_after(arbiter_group &group, arbiter_elem *pos, arbiter_elem &elem) noexcept
    {
        if (pos == nullptr) {
            group.push_front(elem);
            return;
        }
        elem.prev  = pos;
        elem.next  = pos->next;
        elem.group = &group;
        if (pos->next != nullptr) {
            pos->next->prev = &elem;
        } else {
            group.m_tail = &elem;
        }
        pos->next = &elem;
        ++group.m_count;
    }

    /* A group being dispatched is left to its dispatch, which drops it if
     * it ends up empty. */
    void desched_if_empty(arbiter_group &group) noexcept
    {
        if (group.empty() && (group.m_state == arbiter_group::state::scheduled)) {
            desched(group);
        }
    }

    list_link m_sched; /* scheduled groups, next to dispatch first */
    std::uint32_t m_epoch = 0;
};

} // namespace ucs

#endif
