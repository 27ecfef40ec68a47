/*
 * ucs::callback_queue: scheduled, persistent and one-shot callbacks, in
 * registration order, with changes made from inside dispatch().
 */
#include <ucs/datastruct/callback_queue.h>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

namespace {

struct recorder {
    ucs::callback_queue *queue = nullptr;
    std::vector<std::string> calls;
    unsigned self_id    = ucs::callback_queue::invalid_id;
    int reschedule_left = 0;
};

struct tagged {
    recorder *r;
    std::string name;
};

unsigned note(void *arg)
{
    auto *t = static_cast<tagged *>(arg);
    t->r->calls.push_back(t->name);
    return 1;
}

/* Schedules itself again while reschedule_left > 0. */
unsigned again(void *arg)
{
    auto *r = static_cast<recorder *>(arg);
    r->calls.push_back("again");
    if (r->reschedule_left-- > 0) {
        r->queue->schedule(r->self_id);
    }
    return 1;
}

/* Removes itself when it runs. */
unsigned once_then_remove(void *arg)
{
    auto *r = static_cast<recorder *>(arg);
    r->calls.push_back("gone");
    r->queue->remove(r->self_id);
    return 1;
}

} // namespace

TEST_CASE("scheduled callbacks run once per schedule, in registration order", "[datastruct]")
{
    ucs::callback_queue q;
    recorder r;
    tagged a{&r, "a"}, b{&r, "b"}, c{&r, "c"};
    const unsigned ia = q.add(note, &a);
    const unsigned ib = q.add(note, &b);
    const unsigned ic = q.add(note, &c);
    CHECK(q.idle());
    CHECK(q.dispatch() == 0);

    q.schedule(ic);
    q.schedule(ia);
    q.schedule(ia); /* twice before a dispatch: one run */
    CHECK(!q.idle());
    CHECK(q.scheduled());
    CHECK(q.dispatch() == 2);
    CHECK(r.calls == std::vector<std::string>{"a", "c"});
    CHECK(q.idle());
    CHECK(q.dispatch() == 0);

    q.remove(ib);
    q.schedule(ib); /* removed: scheduling it does nothing */
    CHECK(q.idle());
}

TEST_CASE("a callback that schedules itself runs again at the next dispatch, not this one",
          "[datastruct]")
{
    ucs::callback_queue q;
    recorder r;
    r.queue           = &q;
    r.reschedule_left = 2;
    r.self_id         = q.add(again, &r);
    q.schedule(r.self_id);
    CHECK(q.dispatch() == 1);
    CHECK(q.dispatch() == 1);
    CHECK(q.dispatch() == 1);
    CHECK(q.idle());
    CHECK(q.dispatch() == 0);
    CHECK(r.calls.size() == 3);
}

TEST_CASE("persistent callbacks run on every dispatch but do not count as scheduled work",
          "[datastruct]")
{
    ucs::callback_queue q;
    recorder r;
    tagged p{&r, "p"}, s{&r, "s"};
    const unsigned ip = q.add_persistent(note, &p);
    const unsigned is = q.add(note, &s);
    CHECK(!q.idle());
    CHECK(!q.scheduled()); /* a loop may sleep with only polling work */
    CHECK(q.dispatch() == 1);
    q.schedule(is);
    CHECK(q.scheduled());
    CHECK(q.dispatch() == 2);
    q.remove(ip);
    CHECK(q.idle());
    CHECK(q.dispatch() == 0);
    CHECK(r.calls == std::vector<std::string>{"p", "p", "s"});

    /* Ids are reused after removal. */
    CHECK(q.add(note, &p) == ip);
}

TEST_CASE("one-shot callbacks run once; those added while dispatching wait for the next",
          "[datastruct]")
{
    ucs::callback_queue q;
    recorder r;
    r.queue = &q;
    tagged x{&r, "x"};
    struct adder {
        ucs::callback_queue *q;
        tagged *t;
    } add{&q, &x};
    q.add_oneshot(
        [](void *arg) -> unsigned {
            auto *a = static_cast<adder *>(arg);
            a->t->r->calls.push_back("first");
            a->q->add_oneshot(note, a->t);
            return 1;
        },
        &add);
    CHECK(q.scheduled());
    CHECK(q.dispatch() == 1);
    CHECK(r.calls == std::vector<std::string>{"first"});
    CHECK(q.dispatch() == 1);
    CHECK(r.calls == std::vector<std::string>{"first", "x"});
    CHECK(q.idle());
}

TEST_CASE("a persistent callback may remove itself from inside dispatch", "[datastruct]")
{
    ucs::callback_queue q;
    recorder r;
    r.queue   = &q;
    r.self_id = q.add_persistent(once_then_remove, &r);
    CHECK(q.dispatch() == 1);
    CHECK(q.idle());
    CHECK(q.dispatch() == 0);
    CHECK(r.calls == std::vector<std::string>{"gone"});
}

namespace {

struct adder {
    ucs::callback_queue *queue = nullptr;
    tagged added{nullptr, "added"};
    unsigned ids_added = 0;
};

/* Registers 100 callbacks (the queue grows and moves its elements while
 * this one runs), each scheduled at once. */
unsigned add_many(void *arg)
{
    auto *a = static_cast<adder *>(arg);
    for (int i = 0; i < 100; ++i) {
        a->queue->schedule(a->queue->add(note, &a->added));
        ++a->ids_added;
    }
    return 1;
}

} // namespace

TEST_CASE("a callback that registers many others while dispatching: they run in the same "
          "pass, after it",
          "[datastruct]")
{
    ucs::callback_queue q;
    recorder r;
    adder a;
    a.queue   = &q;
    a.added.r = &r;
    tagged first{&r, "first"};
    const unsigned first_id = q.add(note, &first);
    const unsigned adder_id = q.add(add_many, &a);
    q.schedule(first_id);
    q.schedule(adder_id);
    /* first, the adder, and the 100 it scheduled behind itself. */
    CHECK(q.dispatch() == 102);
    CHECK(a.ids_added == 100);
    REQUIRE(r.calls.size() == 101);
    CHECK(r.calls.front() == "first");
    CHECK(r.calls.back() == "added");
    CHECK(q.idle());
}
