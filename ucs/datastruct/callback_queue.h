/*
 * The deferred work of a progress loop, in the spirit of UCX's callbackq:
 * features register a callback once and schedule it when they have work
 * (out of a transport callback, say, where the work itself cannot be done);
 * dispatch() runs the scheduled ones in registration order. A callback that
 * still has work when it returns schedules itself again. Persistent
 * callbacks (polling work: a connection manager, a collective schedule) run
 * on every dispatch while registered; one-shot callbacks run once.
 *
 * The progress loop's check is idle(): one load. Callbacks may add, remove
 * and schedule (themselves or others) from inside dispatch(), and dispatch
 * may nest (a callback that progresses); not thread-safe: the owner's lock
 * covers it.
 */
#ifndef UCS_DATASTRUCT_CALLBACK_QUEUE_H
#define UCS_DATASTRUCT_CALLBACK_QUEUE_H

#include <ucs/debug/assert.h>

#include <cstddef>
#include <deque>
#include <utility>
#include <vector>

namespace ucs {

class callback_queue {
public:
    /* Returns how much work it did (progress counts it). */
    using callback_t = unsigned (*)(void *arg);

    static constexpr unsigned invalid_id = ~0u;

    /* A callback run by the dispatches after each schedule(id). */
    unsigned add(callback_t cb, void *arg) { return insert(cb, arg, false); }

    /* A callback run by every dispatch until removed. */
    unsigned add_persistent(callback_t cb, void *arg)
    {
        const unsigned id = insert(cb, arg, true);
        ++busy_;
        ++persistent_;
        return id;
    }

    /* Unregisters; a scheduled run that did not happen yet is dropped. */
    void remove(unsigned id)
    {
        ucs_assert(id < elements_.size());
        element &e = elements_[id];
        if (e.cb == nullptr) {
            return;
        }
        busy_ -= unsigned(e.due) + unsigned(e.persistent);
        persistent_ -= unsigned(e.persistent);
        e = element{};
        free_.push_back(id);
    }

    /* The next dispatch runs callback `id` (once, however often scheduled). */
    void schedule(unsigned id)
    {
        ucs_assert(id < elements_.size());
        element &e = elements_[id];
        if (!e.due && (e.cb != nullptr)) {
            e.due = true;
            ++busy_;
        }
    }

    /* Runs `cb(arg)` once, at the next dispatch, after the registered ones. */
    void add_oneshot(callback_t cb, void *arg)
    {
        oneshots_.emplace_back(cb, arg);
        ++busy_;
    }

    /* Nothing scheduled, persistent or one-shot: dispatch would do nothing. */
    bool idle() const { return busy_ == 0; }

    /* Work was scheduled or a one-shot added (persistent callbacks aside):
     * a loop about to sleep must dispatch first. */
    bool scheduled() const { return busy_ > persistent_; }

    unsigned dispatch()
    {
        unsigned count = 0;
        /* By index: callbacks may register more (run from the next dispatch
         * on, or this one if scheduled before the loop reaches them). */
        for (size_t i = 0; i < elements_.size(); ++i) {
            element &e = elements_[i];
            if (e.due) {
                e.due = false;
                --busy_;
            } else if (!e.persistent) {
                continue;
            }
            /* Copies: the callback may add (and move the elements). */
            const callback_t cb = e.cb;
            void *const arg     = e.arg;
            count += cb(arg);
        }
        if (oneshots_.empty()) {
            return count;
        }
        for (size_t n = oneshots_.size(); n > 0; --n) {
            const auto [cb, arg] = oneshots_.front();
            oneshots_.pop_front();
            --busy_;
            count += cb(arg);
        }
        return count;
    }

private:
    struct element {
        callback_t cb   = nullptr;
        void *arg       = nullptr;
        bool due        = false;
        bool persistent = false;
    };

    unsigned insert(callback_t cb, void *arg, bool persistent)
    {
        element e{cb, arg, false, persistent};
        if (!free_.empty()) {
            const unsigned id = free_.back();
            free_.pop_back();
            elements_[id] = e;
            return id;
        }
        elements_.push_back(e);
        return unsigned(elements_.size() - 1);
    }

    /* A vector: the walk on every progress is a pointer increment (a
     * deque's indexing costs a division per element). dispatch() walks by
     * index and keeps no reference across a callback. */
    std::vector<element> elements_;
    std::vector<unsigned> free_;
    std::deque<std::pair<callback_t, void *>> oneshots_;
    unsigned busy_       = 0; /* due + persistent + one-shot */
    unsigned persistent_ = 0;
};

} // namespace ucs

#endif
