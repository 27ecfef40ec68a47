/*
 * Completion counters (ucp/api/ucp_ext.h): two 64-bit values and an
 * eventfd, so that a thread sleeping on the counter's fd wakes up when
 * another thread adds to it. The fd handed out is an epoll set of that
 * eventfd and, on a UCP_FEATURE_WAKEUP worker, the worker's own wakeup fd.
 *
 * The eventfd is written only while a thread may sleep on it: ucp_cntr_arm
 * sets `armed`, and the first change after that signals and clears it. A
 * change counts `changes` first, and arm compares it after setting `armed`
 * (both sequentially consistent): either arm sees the change and answers
 * busy, or the change sees `armed` and signals. So a change costs two
 * atomic operations, not a write(2), while nobody sleeps.
 */
#ifndef UCP_EXT_CNTR_H
#define UCP_EXT_CNTR_H

#include <ucp/api/ucp_ext.h>
#include <ucs/async/event_fd.h>
#include <ucs/datastruct/intrusive_list.h>

#include <atomic>
#include <cstdint>
#include <vector>

struct ucp_mem;

namespace ucp::ext {
class event_set;
/* A triggered operation's place in its counter's queue (the record,
 * ucp/ext/trigger.cc, starts with it). */
struct trigger_entry {
    ucs::list_link link;
    uint64_t threshold;
};
/* Triggered operations waiting for a counter, by threshold; equal
 * thresholds in posting order (ucp/ext/trigger.h). */
using cntr_trigger_queue = ucs::intrusive_list<trigger_entry, &trigger_entry::link>;
} // namespace ucp::ext

struct ucp_cntr {
    ucp_worker *worker = nullptr;
    uint64_t flags     = 0;
    void *user_data    = nullptr;
    std::atomic<uint64_t> value{0};
    std::atomic<uint64_t> error{0};
    ucs::event_fd changed;                 /* signalled by a change while armed */
    std::atomic<uint64_t> changes{0};      /* adds and sets so far */
    std::atomic<uint64_t> seen_changes{0}; /* `changes` at the last arm */
    std::atomic<bool> armed{false};        /* a thread may sleep on the fd */
    int epfd = -1;                         /* ucp_cntr_get_fd */
    /* Operations in flight counting on it, and triggered operations
     * waiting for it, counting on it or updating it. */
    unsigned pending_work = 0;
    ucp::ext::cntr_trigger_queue triggers;
    /* In the worker's list of counters with queued operations; read by
     * updates from any thread, which then wake the worker. */
    std::atomic<bool> has_triggers{false};
    /* Regions whose peers' operations count here (ucp_mem_bind_cntr). */
    std::vector<ucp_mem *> bound_regions;
    /* Poll and wait sets it is in (ucp/ext/event_set.h). */
    std::vector<ucp::ext::event_set *> event_sets;

    ~ucp_cntr();
};

namespace ucp {

/* Destroys the counters an application left on `worker` (warns). */
void cntr_cleanup(ucp_worker *worker);

} // namespace ucp

#endif
