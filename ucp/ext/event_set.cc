/*
 * What poll sets and wait sets share (see event_set.h).
 */
#include "event_set.h"

#include "cntr.h"

#include <ucp/core/live_handles.h>
#include <ucp/core/ucp_worker.h>
#include <ucs/debug/log.h>

#include <algorithm>

namespace ucp::ext {

namespace {

std::vector<event_set *> *sets_of(const ucp_object_t &object)
{
    switch (object.type) {
    case UCP_OBJECT_WORKER:
        return &static_cast<ucp_worker *>(object.handle)->event_sets;
    case UCP_OBJECT_CNTR:
        return &static_cast<ucp_cntr *>(object.handle)->event_sets;
    default:
        return nullptr;
    }
}

} // namespace

ucs_status_t check_member(ucp_context_h context, const ucp_object_t *object, bool for_wait)
{
    if ((object == nullptr) || (object->handle == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    const ucp_context *owner;
    if (object->type == UCP_OBJECT_WORKER) {
        auto *worker = static_cast<ucp_worker *>(object->handle);
        owner        = &worker->context;
        if (for_wait &&
            (!(worker->context.features & UCP_FEATURE_WAKEUP) || (worker->wakeup == nullptr))) {
            ucs_error("wait set: worker '%s' has no UCP_FEATURE_WAKEUP: nothing to sleep on",
                      worker->name.c_str());
            return UCS_ERR_UNSUPPORTED;
        }
    } else if (object->type == UCP_OBJECT_CNTR) {
        auto *cntr = static_cast<ucp_cntr *>(object->handle);
        if (!live_handles<ucp_cntr>::instance().contains(cntr)) {
            ucs_error("event set: %p is not a live counter", object->handle);
            return UCS_ERR_INVALID_PARAM;
        }
        owner = &cntr->worker->context;
    } else {
        ucs_error("event set: objects of type %d cannot be members", int(object->type));
        return UCS_ERR_INVALID_PARAM;
    }
    if (owner != context) {
        ucs_error("event set: the object belongs to another context");
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

void member_joined(const ucp_object_t &object, event_set *set)
{
    sets_of(object)->push_back(set);
}

void member_left(const ucp_object_t &object, event_set *set)
{
    std::vector<event_set *> *sets = sets_of(object);
    sets->erase(std::remove(sets->begin(), sets->end(), set), sets->end());
}

void member_gone(const ucp_object_t &object, std::vector<event_set *> *sets)
{
    if (!sets->empty()) {
        ucs_warn("%s %p destroyed while in %zu poll or wait sets; it leaves them",
                 (object.type == UCP_OBJECT_WORKER) ? "worker" : "counter", object.handle,
                 sets->size());
    }
    while (!sets->empty()) {
        event_set *set = sets->back();
        sets->pop_back();
        set->forget(object);
    }
}

} // namespace ucp::ext
