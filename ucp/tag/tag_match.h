/*
 * The tag-matching engine: the expected queue (posted receives) and the
 * unexpected queue (arrived, unclaimed messages), with MPI ordering: a
 * message matches the earliest-posted receive whose (tag, mask) accepts it,
 * and a receive takes the earliest-arrived message it accepts.
 *
 * Entries are embedded in the caller's objects (a receive request, a message
 * descriptor), so queuing allocates nothing. Receives and messages with an
 * exact tag are also indexed by tag in a hash map, so the common
 * exact-tag case does not walk the queues; the map allocates only when it
 * grows (first use of more distinct tags than ever before), and a bucket is
 * erased as soon as it is empty. Wildcard receives are indexed the same way
 * per mask (up to max_mask_groups distinct masks, by tag & mask), so a
 * message looks at one bucket per mask in use instead of walking every
 * wildcard receive posted before its match (MPI's ANY_SOURCE and ANY_TAG
 * are two masks); receives of further masks wait in a list, in post order.
 * A wildcard receive looking through many unexpected messages does not walk
 * them either: the masks such receives used most recently (up to
 * unexpected_mask_slots) index the unexpected messages by tag & mask too,
 * each index made on first use (one walk) and then kept up to date as
 * messages arrive and leave; other masks walk the arrival order.
 * No locking: the owner (the worker) serializes calls.
 *
 *   ucp::tag::matcher m;
 *   m.add_expected(&req->recv.entry);                  // ucp_tag_recv_nb
 *   expected_entry *e = m.take_expected(msg_tag);     // message arrives
 *   if (e == nullptr) m.add_unexpected(&desc->entry);
 */
#ifndef UCP_TAG_TAG_MATCH_H
#define UCP_TAG_TAG_MATCH_H

#include <ucp/api/ucp_def.h>
#include <ucs/datastruct/hash_map.h>
#include <ucs/datastruct/intrusive_list.h>
#include <ucs/sys/compiler_def.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace ucp::tag {

constexpr ucp_tag_t exact_mask = ~ucp_tag_t(0);

/* Whether a message tagged `msg_tag` is accepted by (recv_tag, recv_mask). */
constexpr bool tag_matches(ucp_tag_t msg_tag, ucp_tag_t recv_tag, ucp_tag_t recv_mask) noexcept
{
    return ((msg_tag ^ recv_tag) & recv_mask) == 0;
}

/* Embedded in a receive request. The caller sets tag and tag_mask; the
 * matcher owns the rest while the entry is queued. */
struct expected_entry {
    ucs::list_link link;
    ucp_tag_t tag;
    ucp_tag_t tag_mask;
    uint64_t sn;   /* post order, assigned by add_expected() */
    uint8_t queue; /* IN_EXACT, IN_WILD_LIST, or its mask group */
};

/* expected_entry::queue: where the matcher keeps it. */
constexpr uint8_t IN_EXACT     = 0xff; /* its tag's bucket */
constexpr uint8_t IN_WILD_LIST = 0xfe; /* the list of unindexed wildcards */

/* Embedded in a message descriptor. The caller sets tag. */
struct unexpected_entry {
    ucs::list_link arrival_link; /* all messages, arrival order */
    ucs::list_link tag_link;     /* messages of this tag, if in_bucket */
    ucs::list_link mask_link0;   /* messages of this tag & mask of slot 0 */
    ucs::list_link mask_link1;   /* ... of slot 1 */
    ucp_tag_t tag;
    bool in_bucket;
    uint8_t in_mask_slots; /* bit i: linked in slot i's index */
};

/* Wildcard masks whose receives find unexpected messages by index. */
constexpr unsigned unexpected_mask_slots = 2;

class matcher {
public:
    /*
     * max_tag_buckets bounds the distinct tags indexed at a time in each
     * queue; entries past it (or when the map cannot grow) are queued
     * unindexed, which keeps results correct and only costs a walk.
     */
    static constexpr unsigned MAX_MASK_GROUPS = 8;
    /* Below this many unexpected messages a wildcard receive walks them:
     * cheaper than making an index. */
    static constexpr size_t MASK_INDEX_MIN_MESSAGES = 64;
    /* Emptied exact-tag buckets (of posted receives, of unexpected
     * messages) kept for their tag's next entry: a ping-pong matches one
     * tag over and over, and keeping its bucket spares a map insert and
     * erase per message. */
    static constexpr size_t MAX_KEPT_EMPTY_BUCKETS = 16;

    explicit matcher(size_t max_tag_buckets = SIZE_MAX, unsigned max_mask_groups = MAX_MASK_GROUPS,
                     size_t mask_index_min_messages = MASK_INDEX_MIN_MESSAGES) noexcept :
        m_max_tag_buckets(max_tag_buckets),
        m_max_mask_groups(std::min(max_mask_groups, MAX_MASK_GROUPS)),
        m_mask_index_min_messages(mask_index_min_messages)
    {
    }

    matcher(const matcher &)            = delete;
    matcher &operator=(const matcher &) = delete;

    /* Queues a posted receive after all earlier ones. */
    void add_expected(expected_entry *e) noexcept
    {
        e->sn = m_next_sn++;
        ++m_num_expected;
        if (e->tag_mask == exact_mask) {
            if (expected_list *bucket = kept_bucket_for(m_expected_buckets, m_kept_empty_expected,
                                                        e->tag)) {
                e->queue = IN_EXACT;
                bucket->push_back(*e);
                return;
            }
        } else if (mask_group *g = group_for(e->tag_mask)) {
            if (expected_list *bucket = bucket_for(g->buckets, e->tag & g->mask)) {
                e->queue = uint8_t(g - m_groups);
                ++g->count;
                bucket->push_back(*e);
                return;
            }
        }
        e->queue = IN_WILD_LIST;
        m_expected_wild.push_back(*e);
    }

    /* Removes and returns the earliest-posted receive that accepts `tag`;
     * nullptr if none does. */
    expected_entry *take_expected(ucp_tag_t tag) noexcept
    {
        expected_entry *best = nullptr;
        if (!m_expected_buckets.empty()) {
            expected_list *bucket = m_expected_buckets.find(tag);
            if ((bucket != nullptr) && !bucket->empty()) {
                best = bucket->front();
            }
        }
        /* Each mask in use: the earliest receive of the bucket `tag` falls in. */
        for (unsigned i = 0; ucs_unlikely(i < m_num_groups); ++i) {
            mask_group &g = m_groups[i];
            if (g.count == 0) {
                continue;
            }
            expected_list *bucket = g.buckets.find(tag & g.mask);
            if ((bucket != nullptr) && ((best == nullptr) || (bucket->front()->sn < best->sn))) {
                best = bucket->front();
            }
        }

        /* The wildcard list is in post order: its first match is its
         * earliest, and nothing after the bucket head's sn can win. */
        for (expected_entry &w : m_expected_wild) {
            if ((best != nullptr) && (w.sn > best->sn)) {
                break;
            }
            if (tag_matches(tag, w.tag, w.tag_mask)) {
                best = &w;
                break;
            }
        }

        if (best != nullptr) {
            remove_expected(best);
        }
        return best;
    }

    /* Cancels a queued receive. */
    void remove_expected(expected_entry *e) noexcept
    {
        --m_num_expected;
        expected_list::remove(*e);
        if (e->queue == IN_EXACT) {
            if (unlinked_last(e->link)) {
                bucket_emptied(m_expected_buckets, m_kept_empty_expected, e->tag);
            }
        } else if (e->queue != IN_WILD_LIST) {
            mask_group &g = m_groups[e->queue];
            --g.count;
            if (unlinked_last(e->link)) {
                g.buckets.erase(e->tag & g.mask);
            }
        }
    }

    /* Queues an arrived message after all earlier ones. */
    void add_unexpected(unexpected_entry *u) noexcept
    {
        ++m_num_unexpected;
        m_unexpected.push_back(*u);
        if (tag_list *bucket = kept_bucket_for(m_unexpected_buckets, m_kept_empty_unexpected,
                                               u->tag)) {
            u->in_bucket = true;
            bucket->push_back(*u);
        } else {
            u->in_bucket = false;
            ++m_num_unindexed;
        }
        u->in_mask_slots = 0;
        if (ucs_unlikely(m_mask_slots_used != 0)) {
            index_in_mask_slots(u);
        }
    }

    /*
     * The earliest-arrived message accepted by (tag, tag_mask), removed
     * from the queue when `remove`; nullptr if none.
     */
    unexpected_entry *find_unexpected(ucp_tag_t tag, ucp_tag_t tag_mask, bool remove) noexcept
    {
        if (m_num_unexpected == 0) {
            return nullptr; /* the common case of a receive posted in time */
        }
        if ((tag_mask == exact_mask) && (m_num_unindexed == 0)) {
            tag_list *bucket = m_unexpected_buckets.empty() ? nullptr :
                                                              m_unexpected_buckets.find(tag);
            if ((bucket == nullptr) || bucket->empty()) {
                return nullptr;
            }
            unexpected_entry *u = bucket->front();
            if (remove) {
                --m_num_unexpected;
                arrival_list::remove(*u);
                tag_list::remove(*u);
                if (bucket->empty()) {
                    bucket_emptied(m_unexpected_buckets, m_kept_empty_unexpected, tag);
                }
                if (ucs_unlikely(u->in_mask_slots != 0)) {
                    unlink_from_mask_slots(u);
                }
            }
            return u;
        }

        if ((tag_mask != exact_mask) && (tag_mask != 0) &&
            (m_num_unexpected >= m_mask_index_min_messages)) {
            bool indexed        = false;
            unexpected_entry *u = find_by_mask_slot(tag, tag_mask, &indexed);
            if (indexed) {
                if ((u != nullptr) && remove) {
                    remove_unexpected(u);
                }
                return u;
            }
        }

        for (unexpected_entry &u : m_unexpected) {
            if (tag_matches(u.tag, tag, tag_mask)) {
                if (remove) {
                    remove_unexpected(&u);
                }
                return &u;
            }
        }
        return nullptr;
    }

    /* Removes a queued message. */
    void remove_unexpected(unexpected_entry *u) noexcept
    {
        --m_num_unexpected;
        arrival_list::remove(*u);
        if (ucs_unlikely(u->in_mask_slots != 0)) {
            unlink_from_mask_slots(u);
        }
        if (!u->in_bucket) {
            --m_num_unindexed;
            return;
        }
        tag_list::remove(*u);
        if (unlinked_last(u->tag_link)) {
            bucket_emptied(m_unexpected_buckets, m_kept_empty_unexpected, u->tag);
        }
    }

    size_t num_expected() const noexcept { return m_num_expected; }
    size_t num_unexpected() const noexcept { return m_num_unexpected; }

    /* Distinct tags indexed right now (diagnostics and tests). */
    size_t num_expected_buckets() const noexcept
    {
        return m_expected_buckets.size() - m_kept_empty_expected;
    }
    /* Exact-tag buckets, emptied ones kept included. */
    size_t num_expected_bucket_slots() const noexcept { return m_expected_buckets.size(); }
    size_t num_unexpected_bucket_slots() const noexcept { return m_unexpected_buckets.size(); }
    size_t num_unexpected_buckets() const noexcept
    {
        return m_unexpected_buckets.size() - m_kept_empty_unexpected;
    }
    /* Wildcard masks whose unexpected-message index is kept now. */
    unsigned num_unexpected_mask_indexes() const noexcept
    {
        return unsigned(__builtin_popcount(m_mask_slots_used));
    }

    /* Visits queued messages in arrival order; f(unexpected_entry&) must
     * not change the matcher. */
    template <typename F>
    void for_each_unexpected(F &&f)
    {
        for (unexpected_entry &u : m_unexpected) {
            f(u);
        }
    }

    /*
     * Cleanup: empties the unexpected queue, calling f(unexpected_entry*)
     * for each message in arrival order after it left the queue, so f may
     * release it. f must not call the matcher.
     */
    template <typename F>
    void take_all_unexpected(F &&f)
    {
        m_unexpected_buckets.clear();
        m_kept_empty_unexpected = 0;
        for (unsigned i = 0; i < unexpected_mask_slots; ++i) {
            mask_slot_clear(i);
        }
        m_num_unexpected = 0;
        m_num_unindexed  = 0;
        while (unexpected_entry *u = m_unexpected.pop_front()) {
            f(u);
        }
    }

    /*
     * Cleanup: empties the expected queue, calling f(expected_entry*) for
     * each receive after it left the queue (so f may release it), in no
     * particular order. O(n). f must not call the matcher.
     */
    template <typename F>
    void take_all_expected(F &&f)
    {
        for (auto bucket : m_expected_buckets) {
            while (expected_entry *e = bucket.value.pop_front()) {
                --m_num_expected;
                f(e);
            }
        }
        m_expected_buckets.clear();
        m_kept_empty_expected = 0;
        for (unsigned i = 0; i < m_num_groups; ++i) {
            for (auto bucket : m_groups[i].buckets) {
                while (expected_entry *e = bucket.value.pop_front()) {
                    --m_num_expected;
                    f(e);
                }
            }
            m_groups[i].buckets.clear();
            m_groups[i].count = 0;
        }
        while (expected_entry *e = m_expected_wild.pop_front()) {
            --m_num_expected;
            f(e);
        }
    }

private:
    using expected_list = ucs::intrusive_list<expected_entry, &expected_entry::link>;
    using tag_list      = ucs::intrusive_list<unexpected_entry, &unexpected_entry::tag_link>;
    using arrival_list  = ucs::intrusive_list<unexpected_entry, &unexpected_entry::arrival_link>;

    /* Wildcard receives of one mask, by their tag & mask. */
    struct mask_group {
        ucp_tag_t mask = 0;
        size_t count   = 0; /* receives queued */
        ucs::hash_map<ucp_tag_t, expected_list> buckets;
    };

    /* The group of `mask`: its own, else an empty one (re)assigned to it, or
     * nullptr when max_mask_groups other masks have receives queued. */
    mask_group *group_for(ucp_tag_t mask) noexcept
    {
        mask_group *empty = nullptr;
        for (unsigned i = 0; i < m_num_groups; ++i) {
            if (m_groups[i].mask == mask) {
                return &m_groups[i];
            }
            if ((m_groups[i].count == 0) && (empty == nullptr)) {
                empty = &m_groups[i];
            }
        }
        if ((empty == nullptr) && (m_num_groups < m_max_mask_groups)) {
            empty = &m_groups[m_num_groups++];
        }
        if (empty != nullptr) {
            empty->mask = mask; /* its buckets are all gone with its receives */
        }
        return empty;
    }

    /* The exact-tag bucket of `tag` in `map`, whose emptied buckets are
     * kept (`kept` of them): a kept one, or made if missing and allowed;
     * nullptr if none. */
    template <typename List>
    List *kept_bucket_for(ucs::hash_map<ucp_tag_t, List> &map, size_t &kept, ucp_tag_t tag) noexcept
    {
        if (ucs_unlikely(map.size() - kept >= m_max_tag_buckets)) {
            /* At the limit: only a bucket in use takes more. */
            List *bucket = map.find(tag);
            return ((bucket != nullptr) && !bucket->empty()) ? bucket : nullptr;
        }
        const auto [bucket, made] = map.emplace(tag); /* nullptr: no memory */
        if ((bucket != nullptr) && !made && bucket->empty()) {
            --kept; /* in use again */
        }
        return bucket;
    }

    /* The bucket of `tag` in `map` was emptied: kept for the tag's next
     * entry while few are, else erased. */
    template <typename List>
    void bucket_emptied(ucs::hash_map<ucp_tag_t, List> &map, size_t &kept, ucp_tag_t tag) noexcept
    {
        if (kept < MAX_KEPT_EMPTY_BUCKETS) {
            ++kept;
        } else {
            map.erase(tag);
        }
    }

    /* The bucket of `tag`, made if missing and allowed; nullptr if not. */
    template <typename List>
    List *bucket_for(ucs::hash_map<ucp_tag_t, List> &map, ucp_tag_t tag) noexcept
    {
        if (ucs_likely(map.size() < m_max_tag_buckets)) {
            return map.emplace(tag).first; /* nullptr if it could not grow */
        }
        return map.find(tag);
    }

    /* ---- unexpected messages by tag & mask, per wildcard mask slot ---- */

    using mask_list0 = ucs::intrusive_list<unexpected_entry, &unexpected_entry::mask_link0>;
    using mask_list1 = ucs::intrusive_list<unexpected_entry, &unexpected_entry::mask_link1>;

    /* While in use, every queued message is in one bucket, in arrival order. */
    template <typename List>
    struct mask_index {
        ucp_tag_t mask    = 0;
        uint64_t last_use = 0; /* m_mask_finds then */
        ucs::hash_map<ucp_tag_t, List> buckets;
    };

    /* A slot whose mask was not used for this many wildcard searches of
     * other masks may be given to a new one (no rebuilding back and forth
     * when more masks than slots take turns). */
    static constexpr uint64_t mask_slot_idle_finds = 16;

    /* f(slot's index) for slot i; the two slots differ in type (their link). */
    template <typename F>
    decltype(auto) with_mask_slot(unsigned i, F &&f)
    {
        return (i == 0) ? f(m_mask_index0) : f(m_mask_index1);
    }

    bool mask_slot_add(unsigned i, unexpected_entry *u) noexcept
    {
        return with_mask_slot(i, [&](auto &index) {
            auto *bucket = bucket_for(index.buckets, u->tag & index.mask);
            if (bucket == nullptr) {
                return false;
            }
            bucket->push_back(*u);
            u->in_mask_slots |= uint8_t(1u << i);
            return true;
        });
    }

    void mask_slot_clear(unsigned i) noexcept
    {
        with_mask_slot(i, [&](auto &index) {
            for (auto bucket : index.buckets) {
                while (unexpected_entry *u = bucket.value.pop_front()) {
                    u->in_mask_slots &= uint8_t(~(1u << i));
                }
            }
            index.buckets.clear();
            return true;
        });
        m_mask_slots_used &= uint8_t(~(1u << i));
    }

    /* A new message goes into every index in use; an index that cannot take
     * it (no bucket) is dropped, as it would be incomplete. */
    void index_in_mask_slots(unexpected_entry *u) noexcept
    {
        for (unsigned i = 0; i < unexpected_mask_slots; ++i) {
            if ((m_mask_slots_used & (1u << i)) && !mask_slot_add(i, u)) {
                mask_slot_clear(i);
            }
        }
    }

    void unlink_from_mask_slots(unexpected_entry *u) noexcept
    {
        for (unsigned i = 0; i < unexpected_mask_slots; ++i) {
            if (!(u->in_mask_slots & (1u << i))) {
                continue;
            }
            with_mask_slot(i, [&](auto &index) {
                using list = std::remove_reference_t<decltype(*index.buckets.find(0))>;
                list::remove(*u);
                const ucp_tag_t key = u->tag & index.mask;
                auto *bucket        = index.buckets.find(key);
                if ((bucket != nullptr) && bucket->empty()) {
                    index.buckets.erase(key);
                }
                return true;
            });
        }
        u->in_mask_slots = 0;
    }

    /* Slot i indexes `mask` now: every queued message, in arrival order. */
    bool mask_slot_build(unsigned i, ucp_tag_t mask) noexcept
    {
        mask_slot_clear(i);
        with_mask_slot(i, [&](auto &index) {
            index.mask = mask;
            return true;
        });
        m_mask_slots_used |= uint8_t(1u << i);
        for (unexpected_entry &u : m_unexpected) {
            if (!mask_slot_add(i, &u)) {
                mask_slot_clear(i);
                return false;
            }
        }
        return true;
    }

    /*
     * The earliest message accepted by (tag, mask) through the mask's index,
     * made for it if a slot is free or idle; *indexed false when no index
     * answered (the caller walks).
     */
    unexpected_entry *find_by_mask_slot(ucp_tag_t tag, ucp_tag_t mask, bool *indexed) noexcept
    {
        ++m_mask_finds;
        int slot = -1, victim = -1;
        uint64_t oldest = UINT64_MAX;
        for (unsigned i = 0; i < unexpected_mask_slots; ++i) {
            const bool used     = m_mask_slots_used & (1u << i);
            const uint64_t last = with_mask_slot(i, [&](auto &index) {
                return (used && (index.mask == mask)) ? UINT64_MAX : index.last_use;
            });
            if (last == UINT64_MAX) {
                slot = int(i);
                break;
            }
            const uint64_t age = used ? last : 0; /* a free slot goes first */
            if (age < oldest) {
                oldest = age;
                victim = int(i);
            }
        }
        if (slot < 0) {
            const bool free_slot = !(m_mask_slots_used & (1u << victim));
            if ((!free_slot && (m_mask_finds - oldest <= mask_slot_idle_finds)) ||
                !mask_slot_build(unsigned(victim), mask)) {
                *indexed = false;
                return nullptr;
            }
            slot = victim;
        }
        *indexed = true;
        return with_mask_slot(unsigned(slot), [&](auto &index) -> unexpected_entry * {
            index.last_use = m_mask_finds;
            auto *bucket   = index.buckets.find(tag & mask);
            return (bucket != nullptr) ? bucket->front() : nullptr;
        });
    }

    /* After unlinking an element: its old neighbours are the same link only
     * when that link is the list head, i.e. the list is now empty. */
    static bool unlinked_last(const ucs::list_link &link) noexcept
    {
        return link.prev == link.next;
    }

    ucs::hash_map<ucp_tag_t, expected_list> m_expected_buckets;
    expected_list m_expected_wild;
    ucs::hash_map<ucp_tag_t, tag_list> m_unexpected_buckets;
    arrival_list m_unexpected;
    uint64_t m_next_sn      = 0;
    size_t m_num_expected   = 0;
    size_t m_num_unexpected = 0;
    size_t m_num_unindexed  = 0; /* unexpected, not in a bucket */
    size_t m_max_tag_buckets;
    size_t m_kept_empty_expected   = 0; /* emptied, in m_expected_buckets */
    size_t m_kept_empty_unexpected = 0; /* emptied, in m_unexpected_buckets */
    unsigned m_max_mask_groups;
    unsigned m_num_groups = 0; /* ever assigned */
    mask_group m_groups[MAX_MASK_GROUPS];
    size_t m_mask_index_min_messages;
    mask_index<mask_list0> m_mask_index0;
    mask_index<mask_list1> m_mask_index1;
    uint8_t m_mask_slots_used = 0; /* bit per slot */
    uint64_t m_mask_finds     = 0; /* indexed searches */
};

} // namespace ucp::tag

#endif
