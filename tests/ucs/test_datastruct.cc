#include <catch2/catch.hpp>

#include <ucs/datastruct/arbiter.h>
#include <ucs/datastruct/hash_map.h>
#include <ucs/datastruct/intrusive_list.h>
#include <ucs/datastruct/intrusive_queue.h>
#include <ucs/datastruct/ptr_array.h>
#include <ucs/datastruct/ring_fifo.h>

#include <algorithm>
#include <deque>
#include <list>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

struct item {
    int value = 0;
    ucs::list_link link;
    ucs::queue_elem qelem;
};

using item_list  = ucs::intrusive_list<item, &item::link>;
using item_queue = ucs::intrusive_queue<item, &item::qelem>;

std::vector<item> make_items(int count)
{
    std::vector<item> items(count);
    for (int i = 0; i < count; ++i) {
        items[i].value = i;
    }
    return items;
}

template <typename Container>
std::vector<int> values_of(Container &c)
{
    std::vector<int> values;
    for (const item &it : c) {
        values.push_back(it.value);
    }
    return values;
}

} // namespace

/* ---------------------------------------------------------------- list */

TEST_CASE("list: an empty list has no elements", "[datastruct]")
{
    item_list list;
    CHECK(list.empty());
    CHECK(list.size() == 0);
    CHECK(list.front() == nullptr);
    CHECK(list.back() == nullptr);
    CHECK(list.pop_front() == nullptr);
    CHECK(list.pop_back() == nullptr);
    CHECK(list.begin() == list.end());
}

TEST_CASE("list: push, insert and remove keep the order", "[datastruct]")
{
    auto items = make_items(6);
    item_list list;

    list.push_back(items[2]);
    list.push_back(items[3]);
    list.push_front(items[1]);
    CHECK(values_of(list) == std::vector<int>{1, 2, 3});
    CHECK(list.front() == &items[1]);
    CHECK(list.back() == &items[3]);

    item_list::insert_after(items[3], items[5]);
    item_list::insert_before(items[5], items[4]);
    item_list::insert_before(items[1], items[0]);
    CHECK(values_of(list) == std::vector<int>{0, 1, 2, 3, 4, 5});
    CHECK(list.size() == 6);
    CHECK(list.contains(items[4]));

    item_list::remove(items[3]);
    CHECK_FALSE(list.contains(items[3]));
    CHECK(values_of(list) == std::vector<int>{0, 1, 2, 4, 5});

    CHECK(list.pop_front() == &items[0]);
    CHECK(list.pop_back() == &items[5]);
    CHECK(values_of(list) == std::vector<int>{1, 2, 4});

    /* Backwards through the bidirectional iterator. */
    std::vector<int> reversed;
    for (auto it = list.end(); it != list.begin();) {
        --it;
        reversed.push_back(it->value);
    }
    CHECK(reversed == std::vector<int>{4, 2, 1});

    const item_list &const_list = list;
    int sum                     = 0;
    for (const item &it : const_list) {
        sum += it.value;
    }
    CHECK(sum == 7);
}

TEST_CASE("list: splice moves every element and empties the source", "[datastruct]")
{
    auto items = make_items(6);
    item_list a, b, c;
    a.push_back(items[2]);
    a.push_back(items[3]);
    b.push_back(items[4]);
    b.push_back(items[5]);
    c.push_back(items[0]);
    c.push_back(items[1]);

    a.splice_back(b);
    CHECK(b.empty());
    a.splice_front(c);
    CHECK(c.empty());
    CHECK(values_of(a) == std::vector<int>{0, 1, 2, 3, 4, 5});

    a.splice_back(b); /* empty source: nothing changes */
    CHECK(a.size() == 6);
    CHECK(a.back() == &items[5]);

    item_list moved(std::move(a));
    CHECK(a.empty());
    CHECK(values_of(moved) == std::vector<int>{0, 1, 2, 3, 4, 5});
    /* The moved-to list is a proper circle: its ends link to its own head. */
    item *first = moved.pop_front();
    REQUIRE(first == &items[0]);
    moved.push_back(*first);
    CHECK(values_of(moved) == std::vector<int>{1, 2, 3, 4, 5, 0});
}

TEST_CASE("list: safe iteration may remove the current element", "[datastruct]")
{
    auto items = make_items(10);
    item_list list;
    for (item &it : items) {
        list.push_back(it);
    }

    for (item &it : list.safe()) {
        if (it.value % 2 == 0) {
            list.remove(it);
            it.link = ucs::list_link{}; /* the loop must not need it */
        }
    }
    CHECK(values_of(list) == std::vector<int>{1, 3, 5, 7, 9});

    CHECK(list.remove_if([](item &it) { return it.value > 4; }) == 3);
    CHECK(values_of(list) == std::vector<int>{1, 3});

    for (item &it : list.safe()) {
        list.remove(it);
    }
    CHECK(list.empty());
}

TEST_CASE("list: elements may be freed while iterating safely", "[datastruct]")
{
    item_list list;
    for (int i = 0; i < 8; ++i) {
        auto *it  = new item;
        it->value = i;
        list.push_back(*it);
    }
    int freed = 0;
    for (item &it : list.safe()) {
        list.remove(it);
        delete &it;
        ++freed;
    }
    CHECK(freed == 8);
    CHECK(list.empty());
}

/* --------------------------------------------------------------- queue */

TEST_CASE("queue: push at both ends and pull from the front", "[datastruct]")
{
    auto items = make_items(5);
    item_queue q;
    CHECK(q.empty());
    CHECK(q.pull_front() == nullptr);
    CHECK(q.front() == nullptr);
    CHECK(q.back() == nullptr);

    q.push_back(items[2]);
    CHECK(q.front() == &items[2]);
    CHECK(q.back() == &items[2]);
    q.push_back(items[3]);
    q.push_front(items[1]);
    q.push_front(items[0]);
    q.push_back(items[4]);
    CHECK(values_of(q) == std::vector<int>{0, 1, 2, 3, 4});
    CHECK(q.size() == 5);
    CHECK(q.back() == &items[4]);

    for (int i = 0; i < 5; ++i) {
        item *it = q.pull_front();
        REQUIRE(it != nullptr);
        CHECK(it->value == i);
    }
    CHECK(q.empty());
    CHECK(q.back() == nullptr);

    /* The tail was reset: a push after draining is the only element. */
    q.push_back(items[3]);
    CHECK(q.front() == &items[3]);
    CHECK(q.back() == &items[3]);

    /* push_front on an empty queue also sets the tail. */
    item_queue q2;
    q2.push_front(items[0]);
    q2.push_back(items[1]);
    CHECK(values_of(q2) == std::vector<int>{0, 1});
}

TEST_CASE("queue: remove any element, including the tail", "[datastruct]")
{
    auto items = make_items(5);
    item_queue q;
    for (item &it : items) {
        q.push_back(it);
    }

    CHECK(q.remove(items[2]));
    CHECK(q.remove(items[4])); /* tail */
    CHECK(q.back() == &items[3]);
    CHECK(q.remove(items[0])); /* head */
    CHECK_FALSE(q.remove(items[0]));
    CHECK(values_of(q) == std::vector<int>{1, 3});

    q.push_back(items[4]);
    CHECK(values_of(q) == std::vector<int>{1, 3, 4});
    CHECK(q.contains(items[3]));
    CHECK_FALSE(q.contains(items[2]));
}

TEST_CASE("queue: erase during iteration keeps head and tail right", "[datastruct]")
{
    auto items = make_items(10);
    item_queue q;
    for (item &it : items) {
        q.push_back(it);
    }

    auto end = q.end(); /* taken once: must stay valid across erases */
    for (auto it = q.begin(); it != end;) {
        if (it->value % 3 != 1) {
            it = q.erase(it);
        } else {
            ++it;
        }
    }
    CHECK(values_of(q) == std::vector<int>{1, 4, 7});
    CHECK(q.back() == &items[7]);

    /* The last element (9) was erased: the tail must have moved back. */
    q.push_back(items[0]);
    CHECK(values_of(q) == std::vector<int>{1, 4, 7, 0});

    for (auto it = q.begin(); it != q.end();) {
        it = q.erase(it);
    }
    CHECK(q.empty());
    q.push_back(items[5]);
    CHECK(q.front() == &items[5]);
    CHECK(q.back() == &items[5]);
}

TEST_CASE("queue: remove_if may free what it removes", "[datastruct]")
{
    item_queue q;
    for (int i = 0; i < 9; ++i) {
        auto *it  = new item;
        it->value = i;
        q.push_back(*it);
    }

    std::size_t removed = q.remove_if([](item &it) {
        if (it.value >= 6) {
            delete &it;
            return true;
        }
        return false;
    });
    CHECK(removed == 3);
    CHECK(values_of(q) == std::vector<int>{0, 1, 2, 3, 4, 5});
    CHECK(q.back()->value == 5);

    item_queue other;
    other.splice_back(q);
    CHECK(q.empty());
    CHECK(other.size() == 6);
    while (item *it = other.pull_front()) {
        delete it;
    }
    CHECK(other.empty());
}

TEST_CASE("queue: random operations agree with std::deque", "[datastruct]")
{
    auto items = make_items(64);
    std::vector<bool> queued(items.size(), false);
    item_queue q;
    std::deque<int> model;
    std::mt19937 rng(12345);

    for (int step = 0; step < 20000; ++step) {
        int idx = static_cast<int>(rng() % items.size());
        switch (rng() % 4) {
        case 0:
            if (!queued[idx]) {
                q.push_back(items[idx]);
                model.push_back(idx);
                queued[idx] = true;
            }
            break;
        case 1:
            if (!queued[idx]) {
                q.push_front(items[idx]);
                model.push_front(idx);
                queued[idx] = true;
            }
            break;
        case 2: {
            item *it = q.pull_front();
            if (model.empty()) {
                REQUIRE(it == nullptr);
            } else {
                REQUIRE(it != nullptr);
                REQUIRE(it->value == model.front());
                queued[model.front()] = false;
                model.pop_front();
            }
            break;
        }
        default:
            REQUIRE(q.remove(items[idx]) == queued[idx]);
            if (queued[idx]) {
                model.erase(std::find(model.begin(), model.end(), idx));
                queued[idx] = false;
            }
            break;
        }
        if (model.empty()) {
            REQUIRE(q.back() == nullptr);
        } else {
            REQUIRE(q.back() == &items[model.back()]);
        }
    }
    CHECK(values_of(q) == std::vector<int>(model.begin(), model.end()));
}

/* ------------------------------------------------------------ hash map */

TEST_CASE("hash_map: insert, find, erase", "[datastruct]")
{
    ucs::hash_map<std::uint64_t, int> map;
    CHECK(map.empty());
    CHECK(map.find(1) == nullptr);
    CHECK_FALSE(map.erase(1));
    CHECK(map.capacity() == 0); /* nothing allocated until needed */

    auto [value, inserted] = map.insert(1, 10);
    REQUIRE(value != nullptr);
    CHECK(inserted);
    CHECK(*value == 10);

    auto [again, inserted_again] = map.insert(1, 99);
    CHECK_FALSE(inserted_again);
    CHECK(again == value);
    CHECK(*again == 10); /* the old value is kept */

    CHECK(map.emplace(2, 20).second);
    CHECK(map.size() == 2);
    REQUIRE(map.find(2) != nullptr);
    CHECK(*map.find(2) == 20);
    CHECK(map.contains(1));

    int taken = 0;
    CHECK(map.take(2, taken));
    CHECK(taken == 20);
    CHECK_FALSE(map.contains(2));
    CHECK_FALSE(map.take(2, taken));

    CHECK(map.erase(1));
    CHECK(map.empty());
    CHECK(map.find(1) == nullptr);
}

TEST_CASE("hash_map: 100k random inserts and erases agree with "
          "std::unordered_map",
          "[datastruct]")
{
    ucs::hash_map<std::uint64_t, std::uint64_t> map;
    std::unordered_map<std::uint64_t, std::uint64_t> model;
    std::mt19937_64 rng(42);
    constexpr std::uint64_t key_range = 4096;

    for (int step = 0; step < 100000; ++step) {
        std::uint64_t key = rng() % key_range;
        /* Some keys far apart too, to exercise the hash's high bits. */
        if (step % 7 == 0) {
            key <<= 32;
        }
        if (rng() % 2 == 0) {
            std::uint64_t value = rng();
            auto result         = map.insert(key, value);
            auto expected       = model.emplace(key, value);
            REQUIRE(result.first != nullptr);
            REQUIRE(result.second == expected.second);
            REQUIRE(*result.first == expected.first->second);
        } else {
            REQUIRE(map.erase(key) == (model.erase(key) == 1));
        }
        REQUIRE(map.size() == model.size());

        std::uint64_t probe = rng() % key_range;
        auto found          = model.find(probe);
        std::uint64_t *got  = map.find(probe);
        if (found == model.end()) {
            REQUIRE(got == nullptr);
        } else {
            REQUIRE(got != nullptr);
            REQUIRE(*got == found->second);
        }
    }

    /* Every entry is reachable, and iteration yields exactly the model. */
    std::size_t seen = 0;
    for (auto entry : map) {
        auto it = model.find(entry.key);
        REQUIRE(it != model.end());
        CHECK(entry.value == it->second);
        ++seen;
    }
    CHECK(seen == model.size());
    for (const auto &[key, value] : model) {
        REQUIRE(map.find(key) != nullptr);
        CHECK(*map.find(key) == value);
    }

    /* No tombstones: churn never pushed the table past the size needed for
     * the most keys ever live (at most 2 * key_range) at load 0.7. */
    CHECK(map.capacity() <= 16384);
    CHECK(map.size() <= map.max_size_before_grow());
}

TEST_CASE("hash_map: grows at load 0.7 with power-of-two capacity", "[datastruct]")
{
    ucs::hash_map<int, int> map;
    std::size_t last_capacity = 0;
    int growths               = 0;
    for (int i = 0; i < 5000; ++i) {
        REQUIRE(map.insert(i, -i).second);
        std::size_t capacity = map.capacity();
        REQUIRE((capacity & (capacity - 1)) == 0);
        REQUIRE(map.size() * 10 <= capacity * 7);
        if (capacity != last_capacity) {
            ++growths;
            /* It only grew because the previous table was at its limit. */
            if (last_capacity != 0) {
                CHECK((map.size() - 1) * 10 >= last_capacity * 7 - 10);
            }
            last_capacity = capacity;
        }
    }
    CHECK(growths >= 10);
    for (int i = 0; i < 5000; ++i) {
        REQUIRE(map.find(i) != nullptr);
        CHECK(*map.find(i) == -i);
    }
}

TEST_CASE("hash_map: after reserve, inserts neither allocate nor move", "[datastruct]")
{
    ucs::hash_map<std::uint64_t, std::uint64_t> map;
    REQUIRE(map.reserve(1000) == UCS_OK);
    const std::size_t capacity = map.capacity();
    CHECK(capacity >= 1000 * 10 / 7);
    CHECK(map.max_size_before_grow() >= 1000);

    std::uint64_t *first = map.insert(12345, 1).first;
    REQUIRE(first != nullptr);
    for (std::uint64_t i = 0; i < 999; ++i) {
        REQUIRE(map.insert(i * 7919, i).second);
    }
    CHECK(map.size() == 1000);
    CHECK(map.capacity() == capacity); /* no rehash happened */
    CHECK(map.find(12345) == first);   /* values did not move */
    CHECK(*first == 1);

    /* An impossible reservation fails cleanly and changes nothing. */
    CHECK(map.reserve(~std::size_t(0)) == UCS_ERR_NO_MEMORY);
    CHECK(map.capacity() == capacity);
    CHECK(map.size() == 1000);

    /* reserve below the current size limit is a no-op. */
    REQUIRE(map.reserve(10) == UCS_OK);
    CHECK(map.capacity() == capacity);

    map.clear();
    CHECK(map.empty());
    CHECK(map.capacity() == capacity);
    CHECK(map.find(12345) == nullptr);
}

namespace {
/* Sends every key to slot key % capacity: lets a test build known runs. */
struct identity_hash {
    std::size_t operator()(std::uint64_t key) const noexcept { return key; }
};
} // namespace

TEST_CASE("hash_map: backward shift keeps wrapped probe runs reachable", "[datastruct]")
{
    ucs::hash_map<std::uint64_t, int, identity_hash> map;
    REQUIRE(map.reserve(5) == UCS_OK);
    REQUIRE(map.capacity() == 8);

    /* All home at slot 7: they occupy 7, 0, 1, 2 (wrapping). */
    for (std::uint64_t key : {7u, 15u, 23u, 31u}) {
        REQUIRE(map.insert(key, static_cast<int>(key)).second);
    }
    REQUIRE(map.insert(0, 0).second); /* home 0, displaced to slot 3 */

    CHECK(map.erase(15));
    for (std::uint64_t key : {7u, 23u, 31u, 0u}) {
        REQUIRE(map.find(key) != nullptr);
        CHECK(*map.find(key) == static_cast<int>(key));
    }
    CHECK(map.erase(7));
    CHECK(map.erase(31));
    REQUIRE(map.find(23) != nullptr);
    REQUIRE(map.find(0) != nullptr);
    CHECK(map.size() == 2);
    CHECK(map.capacity() == 8);
}

TEST_CASE("hash_map: erase_if visits every entry once", "[datastruct]")
{
    ucs::hash_map<std::uint64_t, int, identity_hash> map;
    REQUIRE(map.reserve(11) == UCS_OK);
    REQUIRE(map.capacity() == 16);
    /* Runs that wrap around the end of the table. */
    const std::vector<std::uint64_t> keys = {14, 15, 30, 31, 46, 47, 1, 2, 3};
    for (std::uint64_t key : keys) {
        REQUIRE(map.insert(key, 0).second);
    }

    std::multiset<std::uint64_t> visited;
    std::size_t erased = map.erase_if([&](std::uint64_t key, int &value) {
        visited.insert(key);
        ++value;
        return key % 2 == 0;
    });
    CHECK(visited == std::multiset<std::uint64_t>(keys.begin(), keys.end()));
    CHECK(erased == 4);
    CHECK(map.size() == keys.size() - 4);
    for (std::uint64_t key : keys) {
        if (key % 2 == 0) {
            CHECK(map.find(key) == nullptr);
        } else {
            REQUIRE(map.find(key) != nullptr);
            CHECK(*map.find(key) == 1);
        }
    }
}

TEST_CASE("hash_map: string keys and move-only values", "[datastruct]")
{
    ucs::hash_map<std::string, std::unique_ptr<int>> map;
    for (int i = 0; i < 100; ++i) {
        auto result = map.emplace("key" + std::to_string(i), std::make_unique<int>(i));
        REQUIRE(result.second);
    }
    for (int i = 0; i < 100; i += 2) {
        CHECK(map.erase("key" + std::to_string(i)));
    }
    for (int i = 0; i < 100; ++i) {
        auto *value = map.find("key" + std::to_string(i));
        if (i % 2 == 0) {
            CHECK(value == nullptr);
        } else {
            REQUIRE(value != nullptr);
            CHECK(**value == i);
        }
    }

    ucs::hash_map<std::string, std::unique_ptr<int>> moved(std::move(map));
    CHECK(map.empty());
    CHECK(moved.size() == 50);
    REQUIRE(moved.find("key51") != nullptr);
    CHECK(**moved.find("key51") == 51);
}

TEST_CASE("hash: integer keys spread over the low bits", "[datastruct]")
{
    /* Page-aligned addresses differ only above bit 12; a table indexes with
     * the low bits, so the hash must move the difference down. */
    ucs::hash<std::uint64_t> hash;
    std::set<std::size_t> buckets;
    for (std::uint64_t i = 0; i < 1024; ++i) {
        buckets.insert(hash(i << 12) & 1023);
    }
    CHECK(buckets.size() > 512);
    CHECK(hash(12345) == hash(12345));
}

/* ----------------------------------------------------------- ptr array */

TEST_CASE("ptr_array: indices are small and freed ones come back LIFO", "[datastruct]")
{
    int objs[8] = {};
    ucs::ptr_array<int> array;
    unsigned index = 0;

    for (unsigned i = 0; i < 5; ++i) {
        REQUIRE(array.insert(&objs[i], &index) == UCS_OK);
        CHECK(index == i);
    }
    CHECK(array.count() == 5);

    CHECK(array.remove(1) == &objs[1]);
    CHECK(array.remove(3) == &objs[3]);
    CHECK(array.count() == 3);

    REQUIRE(array.insert(&objs[5], &index) == UCS_OK);
    CHECK(index == 3); /* last freed first */
    REQUIRE(array.insert(&objs[6], &index) == UCS_OK);
    CHECK(index == 1);
    REQUIRE(array.insert(&objs[7], &index) == UCS_OK);
    CHECK(index == 5); /* no free slot left: a new one */

    CHECK(array.lookup(3) == &objs[5]);
    CHECK(array.lookup(1) == &objs[6]);
    CHECK(array.lookup(5) == &objs[7]);
    CHECK(array.lookup(0) == &objs[0]);
    CHECK(array.count() == 6);
    CHECK(array.size() == 6);
}

TEST_CASE("ptr_array: invalid indices and arguments fail cleanly", "[datastruct]")
{
    int a = 1, b = 2;
    ucs::ptr_array<int> array;
    unsigned index = 77;

    CHECK(array.lookup(0) == nullptr); /* empty */
    CHECK(array.lookup(~0u) == nullptr);
    CHECK(array.remove(0) == nullptr);

    CHECK(array.insert(nullptr, &index) == UCS_ERR_INVALID_PARAM);
    CHECK(array.insert(&a, nullptr) == UCS_ERR_INVALID_PARAM);
    CHECK(index == 77);
    CHECK(array.count() == 0);

    REQUIRE(array.insert(&a, &index) == UCS_OK);
    REQUIRE(array.insert(&b, &index) == UCS_OK);
    CHECK(array.lookup(2) == nullptr);
    CHECK(array.lookup(1000000) == nullptr);
    CHECK(array.lookup(ucs::ptr_array<int>::invalid_index) == nullptr);

    CHECK(array.remove(0) == &a);
    CHECK(array.lookup(0) == nullptr); /* freed */
    CHECK(array.remove(0) == nullptr); /* twice: no effect */
    CHECK(array.count() == 1);
    CHECK(array.replace(0, &b) == nullptr); /* freed: not replaced */
    CHECK(array.lookup(0) == nullptr);
    CHECK(array.replace(1, nullptr) == nullptr);
    CHECK(array.lookup(1) == &b);
    CHECK(array.replace(1, &a) == &b);
    CHECK(array.lookup(1) == &a);

    /* The freed slot 0 is reused exactly once. */
    REQUIRE(array.insert(&b, &index) == UCS_OK);
    CHECK(index == 0);
    REQUIRE(array.insert(&b, &index) == UCS_OK);
    CHECK(index == 2);
}

TEST_CASE("ptr_array: iteration sees only live entries", "[datastruct]")
{
    std::vector<int> objs(20);
    ucs::ptr_array<int> array;
    REQUIRE(array.reserve(20) == UCS_OK);
    unsigned index;
    for (auto &obj : objs) {
        REQUIRE(array.insert(&obj, &index) == UCS_OK);
    }
    for (unsigned i = 0; i < 20; i += 3) {
        REQUIRE(array.remove(i) != nullptr);
    }

    std::vector<unsigned> seen;
    array.for_each([&](unsigned i, int *value) {
        CHECK(value == &objs[i]);
        seen.push_back(i);
    });
    CHECK(seen.size() == array.count());
    CHECK(seen.size() == 13);
    CHECK(std::is_sorted(seen.begin(), seen.end()));
    for (unsigned i : seen) {
        CHECK(i % 3 != 0);
    }

    /* Removing the current entry from inside for_each is allowed. */
    array.for_each([&](unsigned i, int *) { array.remove(i); });
    CHECK(array.empty());

    array.clear();
    REQUIRE(array.insert(&objs[0], &index) == UCS_OK);
    CHECK(index == 0);
}

/* ------------------------------------------------------------- arbiter */

namespace {

struct pending_op {
    char name[8] = {};
    ucs::arbiter_elem elem;
};

pending_op *op_of(ucs::arbiter_elem &elem)
{
    return ucs::owner_of(&elem, &pending_op::elem);
}

/* Three endpoints (a, b, c) with four queued operations each. */
struct arbiter_fixture {
    ucs::arbiter arbiter;
    pending_op ops[3][4]; /* outlive the groups they are queued in */
    ucs::arbiter_group groups[3];

    arbiter_fixture()
    {
        for (int g = 0; g < 3; ++g) {
            for (int i = 0; i < 4; ++i) {
                std::snprintf(ops[g][i].name, sizeof(ops[g][i].name), "%c%d", 'a' + g, i);
                groups[g].push_back(ops[g][i].elem);
            }
            arbiter.schedule(groups[g]);
        }
    }

    int group_index(ucs::arbiter_group &group) const { return static_cast<int>(&group - groups); }
};

using result = ucs::arbiter_cb_result;

} // namespace

TEST_CASE("arbiter: round-robin across three groups is fair", "[datastruct]")
{
    arbiter_fixture f;
    CHECK(f.arbiter.num_scheduled() == 3);
    std::vector<std::string> order;
    auto remove_all = [&](ucs::arbiter_group &group, ucs::arbiter_elem &elem) {
        CHECK(elem.group == nullptr); /* unlinked while its callback runs */
        CHECK(op_of(elem)->name[0] == 'a' + f.group_index(group));
        order.push_back(op_of(elem)->name);
        return result::REMOVE_ELEM;
    };

    CHECK(f.arbiter.dispatch(1, remove_all) == 3);
    CHECK(order == std::vector<std::string>{"a0", "b0", "c0"});

    order.clear();
    CHECK(f.arbiter.dispatch(2, remove_all) == 6);
    CHECK(order == std::vector<std::string>{"a1", "a2", "b1", "b2", "c1", "c2"});

    order.clear();
    CHECK(f.arbiter.dispatch(100, remove_all) == 3);
    CHECK(order == std::vector<std::string>{"a3", "b3", "c3"});
    CHECK(f.arbiter.empty());
    for (auto &group : f.groups) {
        CHECK(group.empty());
        CHECK_FALSE(group.is_scheduled());
    }
    CHECK(f.arbiter.dispatch(1, remove_all) == 0);
}

TEST_CASE("arbiter: NEXT_GROUP keeps the element and the group's place", "[datastruct]")
{
    arbiter_fixture f;
    std::vector<std::string> order;
    /* Group a cannot send; the others can. */
    auto cb = [&](ucs::arbiter_group &group, ucs::arbiter_elem &elem) {
        order.push_back(op_of(elem)->name);
        return (f.group_index(group) == 0) ? result::NEXT_GROUP : result::REMOVE_ELEM;
    };

    CHECK(f.arbiter.dispatch(1, cb) == 2);
    CHECK(order == std::vector<std::string>{"a0", "b0", "c0"});
    CHECK(f.groups[0].size() == 4);
    CHECK(f.groups[0].head() == &f.ops[0][0].elem);
    CHECK(f.ops[0][0].elem.is_queued());

    order.clear();
    CHECK(f.arbiter.dispatch(1, cb) == 2);
    CHECK(order == std::vector<std::string>{"a0", "b1", "c1"});
    CHECK(f.arbiter.num_scheduled() == 3);
}

TEST_CASE("arbiter: RESCHED_GROUP moves the group behind the others", "[datastruct]")
{
    arbiter_fixture f;
    std::vector<std::string> order;
    bool first = true;
    auto cb    = [&](ucs::arbiter_group &group, ucs::arbiter_elem &elem) {
        order.push_back(op_of(elem)->name);
        if (first && (f.group_index(group) == 0)) {
            first = false;
            return result::RESCHED_GROUP;
        }
        return result::NEXT_GROUP;
    };

    f.arbiter.dispatch(1, cb);
    CHECK(order == std::vector<std::string>{"a0", "b0", "c0"});
    order.clear();
    f.arbiter.dispatch(1, cb);
    CHECK(order == std::vector<std::string>{"b0", "c0", "a0"});
    CHECK(f.groups[0].size() == 4);
}

TEST_CASE("arbiter: DESCHED_GROUP parks a group until it is scheduled again", "[datastruct]")
{
    arbiter_fixture f;
    std::vector<std::string> order;
    auto cb = [&](ucs::arbiter_group &group, ucs::arbiter_elem &elem) {
        order.push_back(op_of(elem)->name);
        return (f.group_index(group) == 1) ? result::DESCHED_GROUP : result::REMOVE_ELEM;
    };

    CHECK(f.arbiter.dispatch(1, cb) == 2);
    CHECK(order == std::vector<std::string>{"a0", "b0", "c0"});
    CHECK_FALSE(f.groups[1].is_scheduled());
    CHECK(f.groups[1].size() == 4); /* its element stayed */
    CHECK(f.arbiter.num_scheduled() == 2);

    order.clear();
    f.arbiter.dispatch(1, cb);
    CHECK(order == std::vector<std::string>{"a1", "c1"});

    /* Scheduled again: at the end of the round-robin order. */
    f.arbiter.schedule(f.groups[1]);
    f.arbiter.schedule(f.groups[1]); /* twice: no effect */
    CHECK(f.arbiter.num_scheduled() == 3);
    order.clear();
    f.arbiter.dispatch(1, [&](ucs::arbiter_group &, ucs::arbiter_elem &elem) {
        order.push_back(op_of(elem)->name);
        return result::REMOVE_ELEM;
    });
    CHECK(order == std::vector<std::string>{"a2", "c2", "b0"});

    /* desched() from outside a dispatch. */
    f.arbiter.desched(f.groups[0]);
    CHECK_FALSE(f.groups[0].is_scheduled());
    CHECK(f.arbiter.num_scheduled() == 2);
}

TEST_CASE("arbiter: STOP ends the dispatch and resumes at that group", "[datastruct]")
{
    arbiter_fixture f;
    std::vector<std::string> order;
    bool stop_once = true;
    auto cb        = [&](ucs::arbiter_group &group, ucs::arbiter_elem &elem) {
        order.push_back(op_of(elem)->name);
        if (stop_once && (f.group_index(group) == 1)) {
            stop_once = false;
            return result::STOP;
        }
        return result::REMOVE_ELEM;
    };

    CHECK(f.arbiter.dispatch(1, cb) == 1);
    CHECK(order == std::vector<std::string>{"a0", "b0"}); /* c not reached */
    CHECK(f.groups[1].head() == &f.ops[1][0].elem);

    order.clear();
    CHECK(f.arbiter.dispatch(1, cb) == 3);
    CHECK(order == std::vector<std::string>{"b0", "c0", "a1"});
}

TEST_CASE("arbiter: purge removes chosen elements or the whole group", "[datastruct]")
{
    arbiter_fixture f;

    std::vector<std::string> purged;
    std::size_t removed = f.arbiter.purge(f.groups[0],
                                          [&](ucs::arbiter_group &, ucs::arbiter_elem &elem) {
        purged.push_back(op_of(elem)->name);
        return (op_of(elem)->name[1] % 2 == 0) ? result::REMOVE_ELEM : result::NEXT_GROUP;
    });
    CHECK(removed == 2);
    CHECK(purged == std::vector<std::string>{"a0", "a1", "a2", "a3"});
    CHECK(f.groups[0].size() == 2);
    CHECK(f.groups[0].head() == &f.ops[0][1].elem);
    CHECK_FALSE(f.ops[0][0].elem.is_queued());
    CHECK(f.ops[0][3].elem.is_queued());
    CHECK(f.groups[0].is_scheduled()); /* still has work */

    /* Whole group via callback: it leaves the schedule. */
    CHECK(f.arbiter.purge(f.groups[0], [](ucs::arbiter_group &, ucs::arbiter_elem &) {
        return result::REMOVE_ELEM;
    }) == 2);
    CHECK(f.groups[0].empty());
    CHECK_FALSE(f.groups[0].is_scheduled());

    /* Without a callback. */
    CHECK(f.arbiter.purge(f.groups[2]) == 4);
    CHECK_FALSE(f.ops[2][1].elem.is_queued());
    CHECK_FALSE(f.groups[2].is_scheduled());
    CHECK(f.arbiter.num_scheduled() == 1);

    std::vector<std::string> order;
    f.arbiter.dispatch(10, [&](ucs::arbiter_group &, ucs::arbiter_elem &elem) {
        order.push_back(op_of(elem)->name);
        return result::REMOVE_ELEM;
    });
    CHECK(order == std::vector<std::string>{"b0", "b1", "b2", "b3"});
    CHECK(f.arbiter.empty());
}

TEST_CASE("arbiter: removing single elements, e.g. cancelled requests", "[datastruct]")
{
    arbiter_fixture f;
    ucs::arbiter_group other;
    CHECK_FALSE(other.remove(f.ops[0][1].elem)); /* not its element */
    CHECK(f.groups[0].remove(f.ops[0][1].elem));
    CHECK_FALSE(f.groups[0].remove(f.ops[0][1].elem));
    CHECK(f.groups[0].size() == 3);

    std::vector<std::string> names;
    f.groups[0].for_each([&](ucs::arbiter_elem &e) { names.push_back(op_of(e)->name); });
    CHECK(names == std::vector<std::string>{"a0", "a2", "a3"});

    for (int i : {0, 2, 3}) {
        CHECK(f.groups[0].remove(f.ops[0][i].elem));
    }
    CHECK_FALSE(f.groups[0].is_scheduled()); /* emptied: left the schedule */
    CHECK(f.arbiter.num_scheduled() == 2);

    /* An empty group is never scheduled. */
    f.arbiter.schedule(f.groups[0]);
    CHECK_FALSE(f.groups[0].is_scheduled());
}

TEST_CASE("arbiter: callbacks may re-queue, push, schedule and desched", "[datastruct]")
{
    arbiter_fixture f;
    ucs::arbiter_group late;
    pending_op late_op;
    std::snprintf(late_op.name, sizeof(late_op.name), "late");

    std::vector<std::string> order;
    bool late_pushed = false;
    auto cb          = [&](ucs::arbiter_group &group, ucs::arbiter_elem &elem) {
        pending_op *op = op_of(elem);
        order.push_back(op->name);
        int g = (&group == &late) ? 3 : f.group_index(group);
        if (g == 0) {
            /* Moves its element to another group; schedules a new group. */
            f.groups[2].push_back(elem);
            if (!late_pushed) {
                f.arbiter.push_and_schedule(late, late_op.elem);
                late_pushed = true;
            }
            return result::REMOVE_ELEM;
        }
        if (g == 1) {
            /* Deschedules itself mid-dispatch, but this element is done. */
            f.arbiter.desched(group);
            return result::REMOVE_ELEM;
        }
        return result::REMOVE_ELEM;
    };

    CHECK(f.arbiter.dispatch(2, cb) == 6);
    /* a: 2 elements moved to c; b: one, then it was descheduled; c: two of
     * its own; late: scheduled during the dispatch and visited once. */
    CHECK(order == std::vector<std::string>{"a0", "a1", "b0", "c0", "c1", "late"});
    CHECK(f.ops[0][0].elem.group == &f.groups[2]);
    CHECK(f.groups[2].size() == 4); /* c2, c3, a0, a1 */
    CHECK_FALSE(f.groups[1].is_scheduled());
    CHECK(f.groups[1].size() == 3);
    CHECK(late.empty());
    CHECK_FALSE(late.is_scheduled());
    CHECK(f.arbiter.num_scheduled() == 2); /* a and c */
}

TEST_CASE("arbiter: a destroyed group leaves the schedule", "[datastruct]")
{
    ucs::arbiter arbiter;
    pending_op op;
    {
        ucs::arbiter_group group;
        arbiter.push_and_schedule(group, op.elem);
        CHECK(op.elem.is_queued());
        CHECK(arbiter.num_scheduled() == 1);
    }
    CHECK(arbiter.empty());
    CHECK_FALSE(op.elem.is_queued());
    CHECK(arbiter.dispatch(1, [](ucs::arbiter_group &, ucs::arbiter_elem &) {
        return result::REMOVE_ELEM;
    }) == 0);
}

TEST_CASE("arbiter: an element fits in a uct pending request", "[datastruct]")
{
    /* uct_pending_req_t reserves 40 bytes (UCT_PENDING_REQ_PRIV_LEN). */
    STATIC_REQUIRE(sizeof(ucs::arbiter_elem) <= 40);
    /* Elements in raw request memory start with garbage; init() clears it. */
    ucs::arbiter_group group;
    ucs::arbiter_elem elem;
    elem.group = &group;
    elem.next  = &elem;
    CHECK(elem.is_queued());
    elem.init();
    CHECK_FALSE(elem.is_queued());
    CHECK(elem.next == nullptr);
}

/* ---- ring_fifo ---------------------------------------------------------- */

TEST_CASE("ring_fifo: empty until the first push, then FIFO order across growth and wrap",
          "[datastruct]")
{
    struct value {
        uint64_t key;
        uint32_t tag;
    };
    ucs::ring_fifo<value> fifo;
    CHECK(fifo.empty());
    CHECK(fifo.size() == 0);
    CHECK(fifo.begin() == fifo.end());

    /* Against std::deque: random pushes and pops keep the ring wrapping at
     * every capacity it grows through. */
    std::deque<value> model;
    std::mt19937_64 rng(0x51f0);
    uint64_t next = 0;
    for (int step = 0; step < 200000; ++step) {
        const bool push = model.empty() || (rng() % 100 < ((step / 5000) % 2 ? 40u : 60u));
        if (push) {
            const value v{next, uint32_t(next * 7)};
            ++next;
            fifo.push_back(v);
            model.push_back(v);
            REQUIRE(fifo.back().key == v.key);
        } else {
            REQUIRE(fifo.front().key == model.front().key);
            REQUIRE(fifo.front().tag == model.front().tag);
            fifo.pop_front();
            model.pop_front();
        }
        REQUIRE(fifo.size() == model.size());
        if (step % 997 == 0) {
            std::vector<uint64_t> seen, want;
            for (const value &v : std::as_const(fifo)) {
                seen.push_back(v.key);
            }
            for (const value &v : model) {
                want.push_back(v.key);
            }
            REQUIRE(seen == want);
            /* Changed in place through the mutable iteration, wrapped or not. */
            for (value &v : fifo) {
                v.tag ^= 0xffff;
            }
            for (value &v : model) {
                v.tag ^= 0xffff;
            }
        }
    }
    CHECK(model.size() > 1); /* the run ended with values queued */
    fifo.clear();
    CHECK(fifo.empty());
    fifo.push_back({1, 2});
    CHECK(fifo.front().key == 1);
    CHECK(fifo.size() == 1);
}
