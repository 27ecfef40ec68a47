/*
 * Poll sets and wait sets (ucp/api/ucp_ext.h): what they share. Both hold
 * workers and counters of one context; the objects know the sets they are
 * in, so that a counter in a set cannot be destroyed (UCS_ERR_BUSY) and an
 * object that goes anyway (a worker destroyed, its counters with it)
 * leaves its sets first.
 *
 * Neither set locks its poll or wait against itself: one thread polls a
 * poll set, one waits on a wait set. A wait set's members may be added
 * and removed by another thread while one waits (they are under the set's
 * lock, and the waiter is signalled).
 */
#ifndef UCP_EXT_EVENT_SET_H
#define UCP_EXT_EVENT_SET_H

#include <ucp/api/ucp_ext.h>

#include <vector>

struct ucp_worker;
struct ucp_cntr;

namespace ucp::ext {

class event_set {
public:
    explicit event_set(ucp_context_h context) : context_(context) {}
    virtual ~event_set() = default;

    ucp_context_h context() const { return context_; }

    /* The object goes (its worker is destroyed): drop it without touching
     * it beyond its fd. */
    virtual void forget(const ucp_object_t &object) = 0;

private:
    ucp_context_h context_;
};

/* Checks an object for a set of `context` (workers of a wait set need
 * UCP_FEATURE_WAKEUP). */
ucs_status_t check_member(ucp_context_h context, const ucp_object_t *object, bool for_wait);

/* Bookkeeping on the object (its list of sets). */
void member_joined(const ucp_object_t &object, event_set *set);
void member_left(const ucp_object_t &object, event_set *set);

/* The object goes: every set it is in forgets it (with a warning). */
void member_gone(const ucp_object_t &object, std::vector<event_set *> *sets);

inline bool same_object(const ucp_object_t &a, const ucp_object_t &b)
{
    return (a.type == b.type) && (a.handle == b.handle);
}

} // namespace ucp::ext

#endif
