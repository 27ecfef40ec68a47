/*
 * A collective as a schedule: rounds of sends and receives, each round
 * started when the one before it finished (its messages sent and received,
 * and its local step, a reduction or a copy, done). The algorithms
 * (algorithms.cc) only build schedules; context.cc runs them.
 *
 * A message is named by (team key, collective number, sender rank, round
 * index): a rank sends to a peer at most once per round, and the peer
 * receives it in the same round of its own schedule. Messages that come
 * early wait in the context until their round starts.
 */
#ifndef COLL_SCHEDULE_H
#define COLL_SCHEDULE_H

#include <coll/api/ucp_coll.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

struct ucp_team;

namespace coll {

/* The user header of every collective message (an AM with a layered id). */
struct wire_hdr {
    uint64_t team_key;
    uint64_t seq;      /* the team's collective number; 0: the team's creation */
    uint32_t src;      /* the sender's rank */
    uint32_t round;    /* the round of the schedule */
};
static_assert(sizeof(wire_hdr) == 24, "wire_hdr layout");

/* Messages up to this size travel with their header in the data (no user
 * header), so UCP can send them on its short path. */
constexpr size_t inline_max = 104;

struct send_op {
    unsigned   peer;
    const void *buf;
    size_t     bytes;
    wire_hdr   hdr;    /* filled when sent; lives until the send completes */
    uint8_t    packed[sizeof(wire_hdr) + inline_max];   /* hdr + data, when inline */
};

struct recv_op {
    unsigned peer;
    void     *buf;
    size_t   bytes;
};

struct round {
    std::vector<send_op>  sends;
    std::vector<recv_op>  recvs;
    /* Run when the round's messages are done; an error fails the task. */
    std::function<ucs_status_t()> after;
};

/* A running collective; the request the application holds. */
struct task {
    static constexpr uint32_t live_magic = 0xc011ec71u;

    uint32_t                magic = live_magic;
    ucp_team                *team = nullptr;
    uint64_t                seq = 0;
    const char              *algorithm = "";
    std::vector<round>      rounds;
    size_t                  current = 0;     /* the round running */
    unsigned                pending = 0;     /* its operations not done yet */
    bool                    queued = false;  /* on the context's ready list */
    ucs_status_t            status = UCS_INPROGRESS;   /* UCS_INPROGRESS until finished */
    ucs_status_t            error = UCS_OK;            /* the first failure */
    bool                    user_freed = false;
    bool                    notify = false;  /* call cb when done (not done in the call) */
    bool                    peer_aborted = false;   /* a member said it failed */
    uint64_t                last_probe_ns = 0;
    unsigned                polls = 0;    /* status checks since the last clock read */
    ucp_send_nbx_callback_t cb = nullptr;
    void                    *user_data = nullptr;
    std::unique_ptr<uint8_t[]> scratch;      /* the algorithm's own buffers */
    std::function<void(ucs_status_t)> on_done;   /* team creation */

    round &add_round() { return rounds.emplace_back(); }

    /* Scratch of `bytes`, made once per task (algorithms ask once). */
    uint8_t *make_scratch(size_t bytes)
    {
        scratch.reset(new uint8_t[bytes == 0 ? 1 : bytes]);
        return scratch.get();
    }
};

} // namespace coll

#endif
