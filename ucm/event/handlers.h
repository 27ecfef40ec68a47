/*
 * The registered event handlers and their dispatch.
 *
 * Handlers live in a list sorted by priority. The list also holds one
 * internal entry, at priority 0, that performs the original system call for
 * native events: negative-priority handlers therefore run before the call
 * and the others after it.
 *
 * Dispatch happens inside a dispatch_scope, which takes the list lock for
 * reading and marks the thread as dispatching. A memory call made by a
 * handler finds the mark and goes straight to the system: that prevents
 * recursion and self-deadlock.
 */
#ifndef UCM_EVENT_HANDLERS_H_
#define UCM_EVENT_HANDLERS_H_

#include <ucm/api/ucm.h>

namespace ucm::event {

constexpr int native_events = UCM_EVENT_MMAP | UCM_EVENT_MUNMAP | UCM_EVENT_MREMAP |
                              UCM_EVENT_SHMAT | UCM_EVENT_SHMDT | UCM_EVENT_SBRK |
                              UCM_EVENT_MADVISE | UCM_EVENT_BRK;
constexpr int vm_events       = UCM_EVENT_VM_MAPPED | UCM_EVENT_VM_UNMAPPED;
constexpr int mem_type_events = UCM_EVENT_MEM_TYPE_ALLOC | UCM_EVENT_MEM_TYPE_FREE;
constexpr int all_events      = native_events | vm_events | mem_type_events;
constexpr int flag_bits       = UCM_EVENT_FLAG_NO_INSTALL | UCM_EVENT_FLAG_EXISTING_ALLOC;

/* Whether some user handler wants any of these events (cheap, lock-free). */
bool wanted(int events);

/* True while the calling thread runs event handlers. */
bool in_dispatch();

/* Add a handler. Fails with UCS_ERR_BUSY inside a handler. */
ucs_status_t add_handler(int events, int priority, ucm_event_callback_t cb, void *arg);

/* Remove events from the handlers registered with (cb, arg). Inside a
 * handler the list cannot be edited: the events are cleared at once and
 * the emptied entries are freed by the next add or remove. */
void remove_handler(int events, ucm_event_callback_t cb, void *arg);

class dispatch_scope {
public:
    dispatch_scope();
    ~dispatch_scope();

    dispatch_scope(const dispatch_scope &)            = delete;
    dispatch_scope &operator=(const dispatch_scope &) = delete;

    /* False when the thread was already dispatching: the caller must then
     * perform the plain system call and raise no event. */
    bool active() const { return m_active; }

private:
    bool m_active;
};

/* Run the handlers for one event. Call only inside an active scope. For a
 * native event this also performs the original call (at priority 0), and
 * errno after the scope ends is the one that call left. */
void dispatch(ucm_event_type_t type, ucm_event_t *event);

/* Shorthands for the aggregate events; also inside an active scope. */
void dispatch_vm_mapped(void *address, size_t size);
void dispatch_vm_unmapped(void *address, size_t size);

/* fork() support: keep list edits out across fork() (never the list lock:
 * a dispatching thread may hold one of malloc's locks, which fork() takes
 * after these handlers), then reinitialise the locks in the child, where
 * the other threads' read locks died with them. */
void fork_prepare();
void fork_parent();
void fork_child();

} // namespace ucm::event

#endif
