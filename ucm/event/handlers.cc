#include "handlers.h"

#include <ucm/mmap/hooks.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <new>
#include <pthread.h>

namespace ucm::event {

namespace {

struct handler {
    handler *next;
    std::atomic<int> events; /* cleared in place by an in-handler unset */
    int priority;
    ucm_event_callback_t cb;
    void *arg;
};

/* What the calling thread is doing; initial-exec TLS so that touching it
 * never allocates (hooks may run inside another library's allocator). */
struct thread_state {
    unsigned depth;    /* 1 while running handlers */
    bool original_ran; /* the original call ran in this dispatch */
    int original_errno;
};

__attribute__((tls_model("initial-exec"))) thread_local thread_state tls_state;

void original_call_entry(ucm_event_type_t type, ucm_event_t *event, void *)
{
    mm::call_original(type, event);
    tls_state.original_errno = errno;
    tls_state.original_ran   = true;
}

/* Sits at priority 0 and is never removed: user handlers with priority 0
 * are inserted after it, so they see the result as the header promises. */
constinit handler original_entry{nullptr, native_events, 0, original_call_entry, nullptr};

handler *list_head         = &original_entry;
pthread_rwlock_t list_lock = PTHREAD_RWLOCK_INITIALIZER;
/* Held by list editors around their write lock, and by fork(). fork() must
 * not take list_lock itself: a thread inside malloc (holding an arena
 * lock) may be dispatching an unmap, and fork() takes the arena locks
 * after its prepare handlers: it would wait for that thread while the
 * thread waits for it. */
pthread_mutex_t edit_lock = PTHREAD_MUTEX_INITIALIZER;
std::atomic<int> wanted_events{0};

bool is_user_entry(const handler *h)
{
    return h != &original_entry;
}

/* Under the write lock: unlink user entries without events into *garbage
 * and refresh the wanted mask. */
void prune_and_refresh(handler **garbage)
{
    int wanted     = 0;
    handler **link = &list_head;
    while (*link != nullptr) {
        handler *h = *link;
        int events = h->events.load(std::memory_order_relaxed);
        if (is_user_entry(h) && (events == 0)) {
            *link    = h->next;
            h->next  = *garbage;
            *garbage = h;
            continue;
        }
        if (is_user_entry(h)) {
            wanted |= events;
        }
        link = &h->next;
    }
    wanted_events.store(wanted, std::memory_order_release);
}

/* Freed after the lock is dropped: free() may end up in memory hooks. */
void release(handler *garbage)
{
    while (garbage != nullptr) {
        handler *next = garbage->next;
        garbage->~handler();
        free(garbage);
        garbage = next;
    }
}

} // namespace

bool wanted(int events)
{
    return (wanted_events.load(std::memory_order_acquire) & events) != 0;
}

bool in_dispatch()
{
    return tls_state.depth != 0;
}

ucs_status_t add_handler(int events, int priority, ucm_event_callback_t cb, void *arg)
{
    if (in_dispatch()) {
        return UCS_ERR_BUSY; /* we hold the lock for reading */
    }

    void *memory = malloc(sizeof(handler));
    if (memory == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    handler *entry = new (memory) handler{nullptr, events, priority, cb, arg};

    handler *garbage = nullptr;
    pthread_mutex_lock(&edit_lock);
    pthread_rwlock_wrlock(&list_lock);
    handler **link = &list_head;
    while ((*link != nullptr) && ((*link)->priority <= priority)) {
        link = &(*link)->next;
    }
    entry->next = *link;
    *link       = entry;
    prune_and_refresh(&garbage);
    pthread_rwlock_unlock(&list_lock);
    pthread_mutex_unlock(&edit_lock);

    release(garbage);
    return UCS_OK;
}

void remove_handler(int events, ucm_event_callback_t cb, void *arg)
{
    if (in_dispatch()) {
        /* The read lock is ours: clear the bits, leave the entries. */
        for (handler *h = list_head; h != nullptr; h = h->next) {
            if (is_user_entry(h) && (h->cb == cb) && (h->arg == arg)) {
                h->events.fetch_and(~events, std::memory_order_relaxed);
            }
        }
        return;
    }

    handler *garbage = nullptr;
    pthread_mutex_lock(&edit_lock);
    pthread_rwlock_wrlock(&list_lock);
    for (handler *h = list_head; h != nullptr; h = h->next) {
        if (is_user_entry(h) && (h->cb == cb) && (h->arg == arg)) {
            h->events.fetch_and(~events, std::memory_order_relaxed);
        }
    }
    prune_and_refresh(&garbage);
    pthread_rwlock_unlock(&list_lock);
    pthread_mutex_unlock(&edit_lock);

    release(garbage);
}

dispatch_scope::dispatch_scope() : m_active(false)
{
    if (tls_state.depth != 0) {
        return;
    }
    if (pthread_rwlock_rdlock(&list_lock) != 0) {
        return; /* cannot happen in practice; degrade to a plain call */
    }
    tls_state.depth        = 1;
    tls_state.original_ran = false;
    m_active               = true;
}

dispatch_scope::~dispatch_scope()
{
    if (!m_active) {
        return;
    }
    tls_state.depth = 0;
    pthread_rwlock_unlock(&list_lock);
    if (tls_state.original_ran) {
        errno = tls_state.original_errno; /* handlers may have changed it */
    }
}

void dispatch(ucm_event_type_t type, ucm_event_t *event)
{
    for (handler *h = list_head; h != nullptr; h = h->next) {
        if (h->events.load(std::memory_order_relaxed) & type) {
            h->cb(type, event, h->arg);
        }
    }
}

void dispatch_vm_mapped(void *address, size_t size)
{
    ucm_event_t event;
    event.vm_mapped.address = address;
    event.vm_mapped.size    = size;
    dispatch(UCM_EVENT_VM_MAPPED, &event);
}

void dispatch_vm_unmapped(void *address, size_t size)
{
    ucm_event_t event;
    event.vm_unmapped.address = address;
    event.vm_unmapped.size    = size;
    dispatch(UCM_EVENT_VM_UNMAPPED, &event);
}

/* The list is whole while edit_lock is held; dispatching threads only
 * read it, and in the child they are gone: their read locks are dropped by
 * re-initialising the lock. */
void fork_prepare()
{
    pthread_mutex_lock(&edit_lock);
}

void fork_parent()
{
    pthread_mutex_unlock(&edit_lock);
}

void fork_child()
{
    if (!in_dispatch()) { /* else the forking handler still holds its lock */
        list_lock = PTHREAD_RWLOCK_INITIALIZER;
    }
    edit_lock = PTHREAD_MUTEX_INITIALIZER;
}

} // namespace ucm::event
