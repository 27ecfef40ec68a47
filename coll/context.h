/*
 * The collectives of one worker: its teams, the active-message handler that
 * takes every collective message, the messages that came before their
 * round, and the progress callback that runs the schedules (schedule.h).
 *
 * Callbacks of UCP (the AM handler, completions) only record what happened
 * and put the task on the ready list; the worker's progress queue then runs
 * it, so sends are never started from inside a UCP callback (libfabric's
 * coll provider deadlocked doing that, PR #5341).
 */
#ifndef COLL_CONTEXT_H
#define COLL_CONTEXT_H

#include "schedule.h"
#include "select.h"

#include <ucp/api/ucp_ext.h>

#include <deque>
#include <map>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace coll {

/* The layered AM id of collective messages. */
constexpr unsigned am_id = UCP_EXT_AM_ID_LAYERED + 0;

/* wire_hdr::round of a message that says the collective failed at its
 * sender: every member fails it too instead of waiting for ever. */
constexpr uint32_t abort_round = UINT32_MAX;

struct msg_key {
    uint64_t team_key;
    uint64_t seq;
    uint32_t src;
    uint32_t round;

    bool operator==(const msg_key &o) const
    {
        return (team_key == o.team_key) && (seq == o.seq) && (src == o.src) && (round == o.round);
    }
};

struct msg_key_hash {
    size_t operator()(const msg_key &k) const
    {
        uint64_t h = k.team_key * 0x9e3779b97f4a7c15ull;
        h ^= k.seq + 0x632be59bd9b4e019ull + (h << 6) + (h >> 2);
        h ^= (uint64_t(k.src) << 32 | k.round) + (h << 6) + (h >> 2);
        return size_t(h);
    }
};

/* A message that came before its receive was posted. */
struct arrival {
    void *data    = nullptr; /* UCP's descriptor (held), or our copy */
    size_t offset = 0;       /* of the payload in a held descriptor (inline header) */
    size_t length = 0;       /* of the payload */
    bool rndv     = false;   /* data is a rendezvous descriptor */
    bool held     = false;   /* data is UCP's: ucp_am_data_release() */
    bool small    = false;   /* the payload is in `copy` (no allocation) */
    uint8_t copy[inline_max];

    const uint8_t *payload() const
    {
        return small ? copy : static_cast<const uint8_t *>(data) + offset;
    }
};

} // namespace coll

struct ucp_coll_context {
    ucp_worker_h worker  = nullptr;
    unsigned callback_id = 0;
    coll::tuning tune;
    std::unordered_map<uint64_t, ucp_team *> teams; /* by key */
    /* Messages that came before their round started (a running task's
     * current round is where a message looks first: no table of posted
     * receives). */
    std::unordered_map<coll::msg_key, coll::arrival, coll::msg_key_hash> unexpected;
    std::deque<coll::task *> ready;
    std::vector<coll::task *> free_tasks; /* pooled for the next collectives */
    size_t live_tasks = 0;                /* taken from the pool, not released */
};

struct ucp_team {
    ucp_coll_context *ctx = nullptr;
    uint64_t key          = 0;
    unsigned rank         = 0;
    std::vector<ucp_ep_h> eps;             /* by rank; eps[rank] unused */
    uint64_t next_seq = 1;                 /* 0 is the creation */
    unsigned active   = 0;                 /* tasks not finished */
    bool ready        = false;             /* its creation finished well */
    std::vector<coll::task *> running;     /* started, not finished: a few */
    std::unordered_set<uint64_t> aborted;  /* numbers a member failed, not started here */
    std::deque<coll::wire_hdr> abort_hdrs; /* of abort messages in flight */
    /* Sub-teams made of a range, counted per range: their keys. */
    std::map<std::tuple<unsigned, unsigned, unsigned>, uint64_t> subteams_made;

    unsigned size() const { return unsigned(eps.size()); }

    coll::task *running_task(uint64_t seq) const
    {
        for (coll::task *t : running) {
            if (t->seq == seq) {
                return t;
            }
        }
        return nullptr;
    }
};

namespace coll {

/* A task from the context's pool, reset, for `team`. */
task *task_get(ucp_coll_context *ctx, ucp_team *team);

/* Back to the pool (or freed when the pool is full). */
void task_put(ucp_coll_context *ctx, task *t);

/* Frees the pooled tasks (the context goes away). */
void task_pool_clear(ucp_coll_context *ctx);

/* Starts a built task: runs what can run now. Done in the call: true. */
bool task_start(task *t);

/* The task's request as ucp_coll_nbx returns it (frees a task done in the
 * call unless the caller asked for a request). */
ucs_status_ptr_t task_result(task *t, const ucp_request_param_t *param);

/* Takes the callback and user data of a ucp_request_param_t. */
void task_set_callback(task *t, const ucp_request_param_t *param);

/* Every probe_interval at most, a task that waits asks UCP whether the
 * endpoints of the peers it waits for failed (a dead member sends nothing). */
void task_probe_peers(task *t);

/* Drops what waits in the context for this team's messages. */
void forget_team_messages(ucp_coll_context *ctx, uint64_t team_key);
void forget_all_messages(ucp_coll_context *ctx);

/* The handler of collective messages (arg: the context). */
ucs_status_t am_handler(void *arg, const void *header, size_t header_length, void *data,
                        size_t length, const ucp_am_recv_param_t *param);

/* The worker's progress runs the ready tasks (arg: the context). */
unsigned progress_callback(void *arg);

} // namespace coll

#endif
