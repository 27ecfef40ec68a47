/*
 * ucp_pollset_*: poll sets (ucp/api/ucp_ext.h, event_set.h). A poll
 * progresses each member: a worker reports when its progress did something,
 * a counter when a value moved since it was last reported. A member with
 * events that found no room stays pending and is reported first next time,
 * so nothing is lost when `count` is small; the next poll also starts one
 * member further, so a small `count` does not starve the last members. A
 * counter's check progresses its worker: what that progress finds makes
 * the worker pending when it is a member too (a worker polled before its
 * counter would miss it otherwise).
 */
#include "event_set.h"

#include "cntr.h"

#include <ucp/core/live_handles.h>
#include <ucp/core/ucp_guard.h>
#include <ucp/core/ucp_worker.h>
#include <ucs/debug/log.h>

#include <algorithm>
#include <memory>

struct ucp_pollset final : public ucp::ext::event_set {
    struct member {
        ucp_object_t object;
        void *user_data;
        uint64_t value; /* a counter's values when last reported */
        uint64_t error;
        bool pending; /* had events that did not fit */
    };

    using event_set::event_set;

    /* The member of `object`: at index `hint` unless members moved. */
    member *lookup(const ucp_object_t &object, size_t hint)
    {
        if ((hint < members.size()) && ucp::ext::same_object(members[hint].object, object)) {
            return &members[hint];
        }
        return find(object);
    }

    member *find(const ucp_object_t &object)
    {
        auto it = std::find_if(members.begin(), members.end(), [&](const member &m) {
            return ucp::ext::same_object(m.object, object);
        });
        return (it != members.end()) ? &*it : nullptr;
    }

    void forget(const ucp_object_t &object) override
    {
        members.erase(std::remove_if(
                          members.begin(), members.end(),
                          [&](const member &m) { return ucp::ext::same_object(m.object, object); }),
                      members.end());
    }

    /* A poll's snapshot of the members: an object and its index then. */
    struct slot {
        ucp_object_t object;
        size_t index;
    };

    std::vector<member> members;
    size_t next = 0;           /* the member the next poll starts with */
    std::vector<slot> scratch; /* the snapshot's room, kept between polls */
};

namespace {

using live_pollsets = ucp::live_handles<ucp_pollset>;

/* Progresses the slot's object; its member if it has events to report,
 * else nullptr (also when a callback removed it meanwhile). */
ucp_pollset::member *check(ucp_pollset &set, const ucp_pollset::slot &s)
{
    const ucp_object_t &object = s.object;
    if (object.type == UCP_OBJECT_WORKER) {
        const bool progressed  = ucp_worker_progress(static_cast<ucp_worker *>(object.handle)) != 0;
        ucp_pollset::member *m = set.lookup(object, s.index);
        return ((m != nullptr) && (progressed || m->pending)) ? m : nullptr;
    }
    auto *cntr = static_cast<ucp_cntr *>(object.handle);
    /* ucp_cntr_read's progress, done here: what it finds belongs to the
     * worker, which must not miss it if it is a member too. */
    if (ucp_worker_progress(cntr->worker) != 0) {
        if (ucp_pollset::member *w = set.find({UCP_OBJECT_WORKER, cntr->worker})) {
            w->pending = true;
        }
    }
    const uint64_t value   = cntr->value.load(std::memory_order_acquire);
    const uint64_t error   = cntr->error.load(std::memory_order_acquire);
    ucp_pollset::member *m = set.lookup(object, s.index);
    return ((m != nullptr) && (m->pending || (value != m->value) || (error != m->error))) ? m :
                                                                                            nullptr;
}

void report(ucp_pollset::member *m, void **user_data, int *found)
{
    user_data[(*found)++] = m->user_data;
    m->pending            = false;
    if (m->object.type == UCP_OBJECT_CNTR) {
        auto *cntr = static_cast<ucp_cntr *>(m->object.handle);
        m->value   = cntr->value.load(std::memory_order_acquire);
        m->error   = cntr->error.load(std::memory_order_acquire);
    }
}

} // namespace

extern "C" {

ucs_status_t ucp_pollset_create(ucp_context_h context, ucp_pollset_h *set_p)
{
    if ((context == nullptr) || (set_p == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    return ucp::guarded("ucp_pollset_create", [&]() {
        auto set = std::make_unique<ucp_pollset>(context);
        live_pollsets::instance().add(set.get());
        *set_p = set.release();
        return UCS_OK;
    });
}

ucs_status_t ucp_pollset_destroy(ucp_pollset_h set)
{
    if ((set == nullptr) || !live_pollsets::instance().contains(set)) {
        ucs_error("ucp_pollset_destroy: %p is not a live poll set", static_cast<void *>(set));
        return UCS_ERR_INVALID_PARAM;
    }
    if (!set->members.empty()) {
        ucs_error("ucp_pollset_destroy: the set still has %zu members", set->members.size());
        return UCS_ERR_BUSY;
    }
    live_pollsets::instance().remove(set);
    delete set;
    return UCS_OK;
}

ucs_status_t ucp_pollset_add(ucp_pollset_h set, const ucp_object_t *object, void *user_data)
{
    if (set == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucs_status_t status = ucp::ext::check_member(set->context(), object, false);
    if (status != UCS_OK) {
        return status;
    }
    if (set->find(*object) != nullptr) {
        return UCS_ERR_ALREADY_EXISTS;
    }
    return ucp::guarded("ucp_pollset_add", [&]() {
        ucp_pollset::member m{*object, user_data, 0, 0, false};
        if (object->type == UCP_OBJECT_CNTR) {
            /* Changes from now on are events. */
            auto *cntr = static_cast<ucp_cntr *>(object->handle);
            m.value    = cntr->value.load(std::memory_order_acquire);
            m.error    = cntr->error.load(std::memory_order_acquire);
        }
        set->members.push_back(m);
        ucp::ext::member_joined(*object, set);
        return UCS_OK;
    });
}

ucs_status_t ucp_pollset_remove(ucp_pollset_h set, const ucp_object_t *object)
{
    if ((set == nullptr) || (object == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (set->find(*object) == nullptr) {
        return UCS_ERR_NO_ELEM;
    }
    set->forget(*object);
    ucp::ext::member_left(*object, set);
    return UCS_OK;
}

int ucp_pollset_poll(ucp_pollset_h set, void **user_data, int count)
{
    if ((set == nullptr) || (count < 0) || ((count > 0) && (user_data == nullptr))) {
        return UCS_ERR_INVALID_PARAM;
    }
    /* The objects now: callbacks run by progress may add or remove members. */
    const size_t size = set->members.size();
    if (size == 0) {
        return 0;
    }
    /* The set's room (a nested poll from a callback finds it taken and
     * makes its own). */
    std::vector<ucp_pollset::slot> slots = std::move(set->scratch);
    slots.clear();
    const size_t start = set->next++ % size;
    for (size_t i = 0; i < size; ++i) {
        const size_t index = (start + i) % size;
        slots.push_back({set->members[index].object, index});
    }
    int found = 0;
    for (const ucp_pollset::slot &s : slots) {
        ucp_pollset::member *m = check(*set, s);
        if (m == nullptr) {
            continue;
        }
        if (found == count) {
            m->pending = true; /* reported by the next poll */
            continue;
        }
        report(m, user_data, &found);
    }
    /* A worker whose event a later member's check found (its counter) is
     * reported now if there is room: a poll that returns 0 must mean that
     * nothing is pending, or the caller may go to sleep over it. */
    for (ucp_pollset::member &m : set->members) {
        if (m.pending && (found < count)) {
            report(&m, user_data, &found);
        }
    }
    set->scratch = std::move(slots);
    return found;
}

} // extern "C"
