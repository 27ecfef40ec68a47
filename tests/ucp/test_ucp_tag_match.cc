/*
 * Tag matching: a randomized model check against an O(n) reference with
 * MPI ordering, and the edge cases of the bucket bookkeeping.
 */
#include <ucp/tag/tag_match.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <random>
#include <set>
#include <vector>

using ucp::tag::exact_mask;
using ucp::tag::expected_entry;
using ucp::tag::matcher;
using ucp::tag::unexpected_entry;

namespace {

struct recv_obj {
    expected_entry entry;
    int id;
};

struct msg_obj {
    unexpected_entry entry;
    int id;
};

recv_obj *recv_of(expected_entry *e)
{
    return reinterpret_cast<recv_obj *>(reinterpret_cast<char *>(e) - offsetof(recv_obj, entry));
}

msg_obj *msg_of(unexpected_entry *u)
{
    return reinterpret_cast<msg_obj *>(reinterpret_cast<char *>(u) - offsetof(msg_obj, entry));
}

int id_of(expected_entry *e)
{
    return (e == nullptr) ? -1 : recv_of(e)->id;
}
int id_of(unexpected_entry *u)
{
    return (u == nullptr) ? -1 : msg_of(u)->id;
}

/* The obvious implementation: vectors in post and arrival order. */
struct reference {
    struct recv {
        ucp_tag_t tag, mask;
        int id;
    };
    struct msg {
        ucp_tag_t tag;
        int id;
    };
    std::vector<recv> expected;
    std::vector<msg> unexpected;

    static bool matches(ucp_tag_t msg_tag, ucp_tag_t tag, ucp_tag_t mask)
    {
        return (msg_tag & mask) == (tag & mask);
    }

    int take_expected(ucp_tag_t msg_tag)
    {
        for (size_t i = 0; i < expected.size(); ++i) {
            if (matches(msg_tag, expected[i].tag, expected[i].mask)) {
                int id = expected[i].id;
                expected.erase(expected.begin() + i);
                return id;
            }
        }
        return -1;
    }

    int find_unexpected(ucp_tag_t tag, ucp_tag_t mask, bool remove)
    {
        for (size_t i = 0; i < unexpected.size(); ++i) {
            if (matches(unexpected[i].tag, tag, mask)) {
                int id = unexpected[i].id;
                if (remove) {
                    unexpected.erase(unexpected.begin() + i);
                }
                return id;
            }
        }
        return -1;
    }
};

const ucp_tag_t tag_set[] = {0,    1, 2, 3, 0x100000000ull, 0x100000001ull, 0x8000000000000002ull,
                             ~0ull};

const ucp_tag_t mask_set[] = {
    exact_mask, exact_mask, exact_mask, exact_mask, 0, 0xffffffffull, 0xffffffff00000000ull,
    1,          ~1ull};

/* Holds the objects so their addresses stay put; ids index them. */
struct arena {
    std::deque<recv_obj> recvs;
    std::deque<msg_obj> msgs;

    recv_obj &new_recv(ucp_tag_t tag, ucp_tag_t mask)
    {
        recv_obj &r      = recvs.emplace_back();
        r.id             = static_cast<int>(recvs.size() - 1);
        r.entry.tag      = tag;
        r.entry.tag_mask = mask;
        return r;
    }

    msg_obj &new_msg(ucp_tag_t tag)
    {
        msg_obj &m  = msgs.emplace_back();
        m.id        = static_cast<int>(msgs.size() - 1);
        m.entry.tag = tag;
        return m;
    }
};

void check_buckets(const matcher &m, const reference &ref, size_t max_tag_buckets)
{
    std::set<ucp_tag_t> exact_recv_tags, msg_tags;
    for (const auto &r : ref.expected) {
        if (r.mask == exact_mask) {
            exact_recv_tags.insert(r.tag);
        }
    }
    for (const auto &u : ref.unexpected) {
        msg_tags.insert(u.tag);
    }
    /* A bucket exists only for a tag with queued entries. */
    CHECK(m.num_expected_buckets() <= exact_recv_tags.size());
    CHECK(m.num_unexpected_buckets() <= msg_tags.size());
    CHECK(m.num_expected_buckets() <= max_tag_buckets);
    CHECK(m.num_unexpected_buckets() <= max_tag_buckets);
    if (max_tag_buckets == SIZE_MAX) {
        CHECK(m.num_expected_buckets() == exact_recv_tags.size());
        CHECK(m.num_unexpected_buckets() == msg_tags.size());
    }
}

void model_check(uint64_t seed, size_t max_tag_buckets, int operations,
                 unsigned max_mask_groups = matcher::MAX_MASK_GROUPS,
                 size_t mask_index_min    = matcher::MASK_INDEX_MIN_MESSAGES)
{
    INFO("seed " << seed << " max_tag_buckets " << max_tag_buckets << " max_mask_groups "
                 << max_mask_groups << " mask_index_min " << mask_index_min);
    std::mt19937_64 rng(seed);
    auto pick = [&rng](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };

    matcher m(max_tag_buckets, max_mask_groups, mask_index_min);
    reference ref;
    arena objs;
    size_t matched_on_post = 0, matched_on_arrival = 0;

    for (int op = 0; op < operations; ++op) {
        INFO("operation " << op);
        /* Phases tilt toward posts or arrivals so both queues get deep and
         * drain again. */
        bool post_heavy = ((op / 500) % 2) == 0;
        size_t action   = pick(100);
        ucp_tag_t tag   = tag_set[pick(std::size(tag_set))];
        ucp_tag_t mask  = mask_set[pick(std::size(mask_set))];

        if (action < (post_heavy ? 45u : 25u)) {
            /* ucp_tag_recv: the unexpected queue first, else post */
            int want            = ref.find_unexpected(tag, mask, true);
            unexpected_entry *u = m.find_unexpected(tag, mask, true);
            REQUIRE(id_of(u) == want);
            if (u == nullptr) {
                recv_obj &r = objs.new_recv(tag, mask);
                m.add_expected(&r.entry);
                ref.expected.push_back({tag, mask, r.id});
            } else {
                ++matched_on_post;
            }
        } else if (action < 70) {
            /* a message arrives: a posted receive first, else queue it */
            int want          = ref.take_expected(tag);
            expected_entry *e = m.take_expected(tag);
            REQUIRE(id_of(e) == want);
            if (e == nullptr) {
                msg_obj &msg = objs.new_msg(tag);
                m.add_unexpected(&msg.entry);
                ref.unexpected.push_back({tag, msg.id});
            } else {
                ++matched_on_arrival;
            }
        } else if (action < 80) {
            /* cancel a random posted receive */
            if (!ref.expected.empty()) {
                size_t i = pick(ref.expected.size());
                m.remove_expected(&objs.recvs[ref.expected[i].id].entry);
                ref.expected.erase(ref.expected.begin() + i);
            }
        } else if (action < 90) {
            /* probe without removing */
            int want = ref.find_unexpected(tag, mask, false);
            REQUIRE(id_of(m.find_unexpected(tag, mask, false)) == want);
        } else if (action < 95) {
            /* drop a random unexpected message */
            if (!ref.unexpected.empty()) {
                size_t i = pick(ref.unexpected.size());
                m.remove_unexpected(&objs.msgs[ref.unexpected[i].id].entry);
                ref.unexpected.erase(ref.unexpected.begin() + i);
            }
        } else {
            /* the whole unexpected queue, in arrival order */
            std::vector<int> ids;
            m.for_each_unexpected([&ids](unexpected_entry &u) { ids.push_back(id_of(&u)); });
            std::vector<int> want;
            for (const auto &u : ref.unexpected) {
                want.push_back(u.id);
            }
            REQUIRE(ids == want);
        }

        REQUIRE(m.num_expected() == ref.expected.size());
        REQUIRE(m.num_unexpected() == ref.unexpected.size());
        if (op % 64 == 0) {
            check_buckets(m, ref, max_tag_buckets);
        }
    }

    /* The run exercised both match directions. */
    CHECK(matched_on_post > 100);
    CHECK(matched_on_arrival > 100);

    /* Drain: every receive is still matched in post order. */
    while (!ref.expected.empty()) {
        ucp_tag_t tag = tag_set[pick(std::size(tag_set))];
        int want      = ref.take_expected(tag);
        REQUIRE(id_of(m.take_expected(tag)) == want);
        if (want < 0) {
            m.remove_expected(&objs.recvs[ref.expected.front().id].entry);
            ref.expected.erase(ref.expected.begin());
        }
    }
    while (!ref.unexpected.empty()) {
        ucp_tag_t tag = tag_set[pick(std::size(tag_set))];
        int want      = ref.find_unexpected(tag, exact_mask, true);
        REQUIRE(id_of(m.find_unexpected(tag, exact_mask, true)) == want);
        if (want < 0) {
            m.remove_unexpected(&objs.msgs[ref.unexpected.back().id].entry);
            ref.unexpected.pop_back();
        }
    }
    CHECK(m.num_expected() == 0);
    CHECK(m.num_unexpected() == 0);
    CHECK(m.num_expected_buckets() == 0);
    CHECK(m.num_unexpected_buckets() == 0);
}

} // namespace

TEST_CASE("matching agrees with a reference model", "[ucp_tag_match]")
{
    model_check(0x7a61, SIZE_MAX, 40000);
    model_check(0x7a62, SIZE_MAX, 40000);
}

TEST_CASE("matching stays correct past the bucket limit", "[ucp_tag_match]")
{
    /* Entries that find no bucket go unindexed; results must not change. */
    model_check(0x7a63, 2, 30000);
    model_check(0x7a64, 0, 20000);
}

TEST_CASE("wildcard receives indexed per mask keep MPI order, past the mask limit too",
          "[ucp_tag_match]")
{
    /* mask_set has 5 wildcard masks: all indexed, some, none. */
    model_check(0x7a65, SIZE_MAX, 40000, matcher::MAX_MASK_GROUPS);
    model_check(0x7a66, SIZE_MAX, 30000, 2);
    model_check(0x7a67, SIZE_MAX, 20000, 0);
    model_check(0x7a68, 2, 20000, 3);
}

TEST_CASE("wildcard receives find unexpected messages through per-mask indexes in arrival order",
          "[ucp_tag_match]")
{
    /* Always indexed (no walk below a size): mask_set's 4 indexable masks
     * take turns in 2 slots, so slots are made, kept, given up and walked
     * past; with few buckets, indexes that cannot grow are dropped. */
    model_check(0x7a69, SIZE_MAX, 40000, matcher::MAX_MASK_GROUPS, 0);
    model_check(0x7a6a, SIZE_MAX, 30000, 2, 0);
    model_check(0x7a6b, 2, 20000, matcher::MAX_MASK_GROUPS, 0);
    model_check(0x7a6c, 0, 20000, matcher::MAX_MASK_GROUPS, 0);
    model_check(0x7a6d, SIZE_MAX, 20000, matcher::MAX_MASK_GROUPS, 16);
}

TEST_CASE("10000 unexpected messages: a wildcard receive takes the earliest it accepts",
          "[ucp_tag_match]")
{
    /* Tags as MPI builds them: the tag in the high half, the source in the low. */
    matcher m;
    arena objs;
    const ucp_tag_t any_source = 0xffffffff00000000ull;
    const ucp_tag_t any_tag    = 0xffffffffull;
    for (uint64_t i = 0; i < 10000; ++i) {
        m.add_unexpected(&objs.new_msg(((i % 100) << 32) | (i % 10)).entry);
    }
    /* Tag 7 from any source: messages 7, 107, 207, ... in arrival order. */
    for (uint64_t i = 7; i < 10000; i += 100) {
        CHECK(id_of(m.find_unexpected(uint64_t(7) << 32, any_source, true)) == int(i));
    }
    CHECK(m.find_unexpected(uint64_t(7) << 32, any_source, true) == nullptr);
    CHECK(m.num_unexpected_mask_indexes() == 1);
    /* Any tag from source 5 gets the other slot; an exact take and a new
     * arrival keep both indexes whole. */
    CHECK(id_of(m.find_unexpected(5, any_tag, false)) == 5);
    CHECK(m.num_unexpected_mask_indexes() == 2);
    CHECK(id_of(m.find_unexpected((uint64_t(5) << 32) | 5, exact_mask, true)) == 5);
    msg_obj &late = objs.new_msg((uint64_t(7) << 32) | 5);
    m.add_unexpected(&late.entry);
    CHECK(id_of(m.find_unexpected(5, any_tag, true)) == 15);
    CHECK(id_of(m.find_unexpected(uint64_t(7) << 32, any_source, true)) == late.id);
    CHECK(m.num_unexpected() == 10000 - 100 - 2);
    /* Everything else in arrival order (mask 0 takes the first). */
    size_t taken = 0;
    while (m.find_unexpected(0, 0, true) != nullptr) {
        ++taken;
    }
    CHECK(taken == 10000 - 100 - 2);
    CHECK(m.num_unexpected_buckets() == 0);
}

TEST_CASE("10000 wildcard receives of one mask: the match is the earliest posted, exact or not",
          "[ucp_tag_match]")
{
    /* 10000 wildcard receives of one mask that the message does not match,
     * then one that it does: found through the mask's bucket. */
    matcher m;
    arena objs;
    const ucp_tag_t mask = 0xffffffff00000000ull;
    for (uint64_t i = 0; i < 10000; ++i) {
        m.add_expected(&objs.new_recv((i + 1) << 32, mask).entry);
    }
    recv_obj &target = objs.new_recv(uint64_t(20000) << 32, mask);
    m.add_expected(&target.entry);
    recv_obj &exact_later = objs.new_recv((uint64_t(20000) << 32) | 5, exact_mask);
    m.add_expected(&exact_later.entry);
    /* The earlier-posted wildcard wins over the later exact receive. */
    CHECK(id_of(m.take_expected((uint64_t(20000) << 32) | 5)) == target.id);
    CHECK(id_of(m.take_expected((uint64_t(20000) << 32) | 5)) == exact_later.id);
    CHECK(m.take_expected((uint64_t(20000) << 32) | 5) == nullptr);
    CHECK(m.num_expected() == 10000);
    /* Cancelling them all leaves nothing behind. */
    for (uint64_t i = 0; i < 10000; ++i) {
        m.remove_expected(&objs.recvs[i].entry);
    }
    CHECK(m.num_expected() == 0);
    CHECK(m.take_expected(uint64_t(1) << 32) == nullptr);
}

TEST_CASE("an empty matcher matches nothing", "[ucp_tag_match]")
{
    matcher m;
    CHECK(m.take_expected(0) == nullptr);
    CHECK(m.find_unexpected(0, exact_mask, true) == nullptr);
    CHECK(m.find_unexpected(0, 0, false) == nullptr);
    CHECK(m.num_expected() == 0);
    CHECK(m.num_unexpected() == 0);
    int visits = 0;
    m.for_each_unexpected([&visits](unexpected_entry &) { ++visits; });
    m.take_all_expected([&visits](expected_entry *) { ++visits; });
    m.take_all_unexpected([&visits](unexpected_entry *) { ++visits; });
    CHECK(visits == 0);
}

TEST_CASE("exact and wildcard receives are taken in post order", "[ucp_tag_match]")
{
    matcher m;
    arena objs;
    recv_obj &wild1  = objs.new_recv(0x10, 0xf0); /* accepts 0x10..0x1f */
    recv_obj &exact  = objs.new_recv(0x12, exact_mask);
    recv_obj &wild2  = objs.new_recv(0, 0); /* accepts anything */
    recv_obj &exact2 = objs.new_recv(0x12, exact_mask);
    for (recv_obj *r : {&wild1, &exact, &wild2, &exact2}) {
        m.add_expected(&r->entry);
    }
    CHECK(exact.entry.sn > wild1.entry.sn);
    CHECK(wild2.entry.sn > exact.entry.sn);

    CHECK(m.take_expected(0x12) == &wild1.entry); /* posted first */
    CHECK(m.take_expected(0x12) == &exact.entry); /* bucket head beats wild2 */
    CHECK(m.take_expected(0x12) == &wild2.entry);
    CHECK(m.num_expected_buckets() == 1);
    CHECK(m.take_expected(0x13) == nullptr); /* only exact2 is left */
    CHECK(m.take_expected(0x12) == &exact2.entry);
    CHECK(m.num_expected_buckets() == 0); /* empty bucket erased */
    CHECK(m.num_expected() == 0);
}

TEST_CASE("cancelling receives keeps the buckets consistent", "[ucp_tag_match]")
{
    matcher m;
    arena objs;
    std::vector<recv_obj *> rs;
    for (int i = 0; i < 3; ++i) {
        rs.push_back(&objs.new_recv(7, exact_mask));
        m.add_expected(&rs.back()->entry);
    }
    recv_obj &other = objs.new_recv(8, exact_mask);
    m.add_expected(&other.entry);
    CHECK(m.num_expected_buckets() == 2);

    m.remove_expected(&rs[1]->entry); /* middle */
    CHECK(m.num_expected_buckets() == 2);
    m.remove_expected(&rs[0]->entry); /* head */
    CHECK(m.num_expected_buckets() == 2);
    CHECK(m.take_expected(7) == &rs[2]->entry);
    CHECK(m.num_expected_buckets() == 1);
    m.remove_expected(&other.entry); /* the only one of its tag */
    CHECK(m.num_expected_buckets() == 0);
    CHECK(m.take_expected(8) == nullptr);

    /* A cancelled entry can be posted again, and goes last. */
    recv_obj &late = objs.new_recv(7, exact_mask);
    m.add_expected(&late.entry);
    m.add_expected(&rs[0]->entry);
    CHECK(m.take_expected(7) == &late.entry);
    CHECK(m.take_expected(7) == &rs[0]->entry);
}

TEST_CASE("unexpected messages are found in arrival order", "[ucp_tag_match]")
{
    matcher m;
    arena objs;
    msg_obj &a = objs.new_msg(0x105);
    msg_obj &b = objs.new_msg(0x205);
    msg_obj &c = objs.new_msg(0x105);
    for (msg_obj *x : {&a, &b, &c}) {
        m.add_unexpected(&x->entry);
    }
    CHECK(m.num_unexpected_buckets() == 2);

    CHECK(m.find_unexpected(0x005, 0xff, false) == &a.entry); /* probe */
    CHECK(m.num_unexpected() == 3);
    CHECK(m.find_unexpected(0x205, exact_mask, true) == &b.entry);
    CHECK(m.num_unexpected_buckets() == 1);
    CHECK(m.find_unexpected(0x205, exact_mask, false) == nullptr);
    CHECK(m.find_unexpected(0x000, 0xf00, true) == nullptr); /* wrong bits */
    CHECK(m.find_unexpected(0x105, exact_mask, true) == &a.entry);
    m.remove_unexpected(&c.entry);
    CHECK(m.num_unexpected() == 0);
    CHECK(m.num_unexpected_buckets() == 0);
}

TEST_CASE("buckets do not accumulate over many distinct tags", "[ucp_tag_match]")
{
    matcher m;
    arena objs;
    /* One tag at a time, each used once: the bucket count stays at 1 and
     * the map stops growing. */
    for (ucp_tag_t tag = 0; tag < 5000; ++tag) {
        recv_obj &r = objs.new_recv(tag << 20, exact_mask);
        m.add_expected(&r.entry);
        msg_obj &u = objs.new_msg(tag << 21);
        m.add_unexpected(&u.entry);
        REQUIRE(m.num_expected_buckets() == 1);
        REQUIRE(m.num_unexpected_buckets() == 1);
        REQUIRE(m.take_expected(tag << 20) == &r.entry);
        REQUIRE(m.find_unexpected(tag << 21, exact_mask, true) == &u.entry);
    }
    CHECK(m.num_expected_buckets() == 0);
    CHECK(m.num_unexpected_buckets() == 0);
    /* Emptied buckets kept for their tag's next receive are bounded. */
    CHECK(m.num_expected_bucket_slots() <= matcher::MAX_KEPT_EMPTY_BUCKETS);
    CHECK(m.num_unexpected_bucket_slots() <= matcher::MAX_KEPT_EMPTY_BUCKETS);
}

TEST_CASE("a tag posted and matched over and over keeps its bucket", "[ucp_tag_match]")
{
    matcher m;
    arena objs;
    for (int round = 0; round < 100; ++round) {
        recv_obj &r = objs.new_recv(0x77, exact_mask);
        m.add_expected(&r.entry);
        REQUIRE(m.num_expected_buckets() == 1);
        REQUIRE(m.take_expected(0x78) == nullptr);
        REQUIRE(m.take_expected(0x77) == &r.entry);
        REQUIRE(m.take_expected(0x77) == nullptr); /* the kept bucket is empty */
        REQUIRE(m.num_expected_buckets() == 0);
        REQUIRE(m.num_expected_bucket_slots() == 1); /* kept, not erased and made again */
    }
    /* A cancel empties it the same way; the next post of the tag reuses it. */
    recv_obj &a = objs.new_recv(0x77, exact_mask);
    m.add_expected(&a.entry);
    m.remove_expected(&a.entry);
    CHECK(m.num_expected() == 0);
    CHECK(m.take_expected(0x77) == nullptr);
    recv_obj &b = objs.new_recv(0x77, exact_mask);
    m.add_expected(&b.entry);
    CHECK(m.num_expected_bucket_slots() == 1);
    CHECK(m.take_expected(0x77) == &b.entry);

    /* The same for a tag's unexpected messages, taken by an exact receive
     * or removed as a wildcard one's match. */
    for (int round = 0; round < 100; ++round) {
        msg_obj &u = objs.new_msg(0x99);
        m.add_unexpected(&u.entry);
        REQUIRE(m.num_unexpected_buckets() == 1);
        if (round % 2 == 0) {
            REQUIRE(m.find_unexpected(0x99, exact_mask, true) == &u.entry);
        } else {
            REQUIRE(m.find_unexpected(0, 0, true) == &u.entry);
        }
        REQUIRE(m.find_unexpected(0x99, exact_mask, false) == nullptr);
        REQUIRE(m.num_unexpected_buckets() == 0);
        REQUIRE(m.num_unexpected_bucket_slots() == 1);
    }
}

TEST_CASE("cleanup takes every queued entry", "[ucp_tag_match]")
{
    matcher m(3);
    arena objs;
    std::set<int> posted, arrived;
    for (int i = 0; i < 50; ++i) {
        recv_obj &r = objs.new_recv(static_cast<ucp_tag_t>(i % 7), (i % 5) ? exact_mask : 0xff);
        m.add_expected(&r.entry);
        posted.insert(r.id);
        msg_obj &u = objs.new_msg(static_cast<ucp_tag_t>(100 + i % 9));
        m.add_unexpected(&u.entry);
        arrived.insert(u.id);
    }

    std::set<int> taken;
    m.take_all_expected([&taken](expected_entry *e) { CHECK(taken.insert(id_of(e)).second); });
    CHECK(taken == posted);
    CHECK(m.num_expected() == 0);
    CHECK(m.num_expected_buckets() == 0);
    CHECK(m.take_expected(3) == nullptr);

    std::vector<int> order;
    m.take_all_unexpected([&order](unexpected_entry *u) { order.push_back(id_of(u)); });
    CHECK(order == std::vector<int>(arrived.begin(), arrived.end()));
    CHECK(m.num_unexpected() == 0);
    CHECK(m.num_unexpected_buckets() == 0);
    CHECK(m.find_unexpected(100, exact_mask, false) == nullptr);
    CHECK(m.find_unexpected(100, 0, false) == nullptr);

    /* The matcher is usable again. */
    msg_obj &again = objs.new_msg(100);
    m.add_unexpected(&again.entry);
    CHECK(m.find_unexpected(100, exact_mask, true) == &again.entry);
}

TEST_CASE("queues survive bucket map growth and shifts", "[ucp_tag_match]")
{
    /* Many live buckets at once: growth moves every list head, erases
     * shift neighbours back; the entries must stay linked in order. */
    std::mt19937_64 rng(0x7a65);
    matcher m;
    arena objs;
    const int num_tags = 3000;
    for (int round = 0; round < 3; ++round) {
        for (int tag = 0; tag < num_tags; ++tag) {
            m.add_expected(&objs.new_recv(tag, exact_mask).entry);
            m.add_unexpected(&objs.new_msg(tag).entry);
        }
    }
    CHECK(m.num_expected_buckets() == num_tags);
    CHECK(m.num_unexpected_buckets() == num_tags);

    std::vector<int> tags;
    for (int round = 0; round < 3; ++round) {
        for (int tag = 0; tag < num_tags; ++tag) {
            tags.push_back(tag);
        }
    }
    std::shuffle(tags.begin(), tags.end(), rng);
    std::vector<int> taken(num_tags, 0);
    for (int tag : tags) {
        /* the k-th take of a tag gets the k-th post / arrival of it */
        int want = taken[tag]++ * num_tags + tag;
        REQUIRE(id_of(m.take_expected(tag)) == want);
        REQUIRE(id_of(m.find_unexpected(tag, exact_mask, true)) == want);
    }
    CHECK(m.num_expected_buckets() == 0);
    CHECK(m.num_unexpected_buckets() == 0);
    CHECK(m.num_expected() == 0);
    CHECK(m.num_unexpected() == 0);
}
