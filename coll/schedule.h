/*
 * A collective as a schedule: rounds of sends and receives, each round
 * started when the one before it finished (its messages sent and received,
 * and its local step, a reduction or a copy, done). A round's local step
 * is data (struct step), not a closure: building a schedule allocates
 * nothing once the task's arrays have grown. The algorithms
 * (algorithms.cc) only build schedules; context.cc runs them.
 *
 * A message is named by (team key, collective number, sender rank, round
 * index): a rank sends to a peer at most once per round, and the peer
 * receives it in the same round of its own schedule. Messages that come
 * early wait in the context until their round starts.
 *
 * Rounds are per rank, not global steps: a rank starts its next round as
 * soon as its own one is done. The pipelined bcast and reduce
 * (algorithms.cc, chain_pipeline) use that: round r of each rank passes on
 * one segment while the next one comes in, the ranks along the chain at
 * different segments. Their rounds do not wait for their sends
 * (round::detached_sends, the one extension they needed): a round that
 * waited would wait for the next rank to start the same round and pull
 * the segment, a round trip per segment and one segment per link in
 * flight; detached, the head posts every segment at once and each rank
 * waits only for what it receives. Detached sends are counted apart
 * (task::detached) and the task finishes when they completed; their
 * buffers must not change before that.
 */
#ifndef COLL_SCHEDULE_H
#define COLL_SCHEDULE_H

#include "reduce.h"

#include <coll/api/ucp_coll.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

struct ucp_team;

namespace coll {

/* The user header of every collective message (an AM with a layered id). */
struct wire_hdr {
    uint64_t team_key;
    uint64_t seq;   /* the team's collective number; 0: the team's creation */
    uint32_t src;   /* the sender's rank */
    uint32_t round; /* the round of the schedule */
};
static_assert(sizeof(wire_hdr) == 24, "wire_hdr layout");

/* Messages up to this size travel with their header in the data (no user
 * header), so UCP can send them on its short path. */
constexpr size_t inline_max = 104;

struct send_op {
    unsigned peer;
    const void *buf;
    size_t bytes;
    wire_hdr hdr; /* filled when sent; lives until the send completes */
    uint8_t packed[sizeof(wire_hdr) + inline_max]; /* hdr + data, when inline */

    /* packed is written when the message goes out: not zeroed here. */
    send_op(unsigned peer_, const void *buf_, size_t bytes_) :
        peer(peer_), buf(buf_), bytes(bytes_), hdr{}
    {
    }
};

struct recv_op {
    unsigned peer;
    void *buf;
    size_t bytes;
    bool done; /* its message came (a rendezvous one may still be pulled) */
};

// clang-format off
/* What a round does locally once its messages are done. */
struct step {
    enum kind_t : uint8_t {
        NONE,
        REDUCE,       /* dst = fn(lo, hi), count elements */
        COPY,         /* memmove(dst, lo, count bytes) */
        TEAM_CHECK,   /* the two words at hi (a peer's) equal those at lo (ours) */
        BRUCK_SHUFFLE,/* Bruck's alltoall: unpack round `dist`'s blocks (lo) into dst,
                         then pack those of round 2 * dist into hi (none: dist 0) */
        BRUCK_ROTATE  /* Bruck's alltoall: block i of lo to block (rank - i) mod
                         ranks of dst */
    };
    kind_t     kind = NONE;
    reduce_fn  fn = nullptr;
    void       *dst = nullptr;
    const void *lo = nullptr;
    const void *hi = nullptr;
    size_t     count = 0;        /* BRUCK_*: bytes of a block */
    uint32_t   ranks = 0;        /* BRUCK_* */
    uint32_t   rank = 0;         /* BRUCK_ROTATE */
    uint32_t   dist = 0;         /* BRUCK_SHUFFLE */
    // clang-format on

    static step reduce(reduce_fn f, void *d, const void *l, const void *h, size_t n)
    {
        return step{REDUCE, f, d, l, h, n, 0, 0, 0};
    }
    static step copy(void *d, const void *from, size_t bytes)
    {
        return step{COPY, nullptr, d, from, nullptr, bytes, 0, 0, 0};
    }
};

/* A round: its sends and receives are ranges of the task's arrays. */
struct round {
    uint32_t first_send;
    uint32_t nsends;
    uint32_t first_recv;
    uint32_t nrecvs;
    step after;
    bool detached_sends; /* the round is done without waiting for its sends */
};

/* A running collective; the request the application holds. Tasks are
 * pooled by their context: once warm, starting one allocates nothing. */
struct task {
    static constexpr uint32_t live_magic = 0xc011ec71u;

    uint32_t magic        = live_magic;
    ucp_team *team        = nullptr;
    uint64_t seq          = 0;
    const char *algorithm = "";
    std::vector<round> rounds;
    std::vector<send_op> sends;
    std::vector<recv_op> recvs;
    size_t current             = 0;              /* the round running */
    size_t last_message_round  = 0;              /* rounds after it: steps only */
    bool started               = false;          /* its messages were posted */
    unsigned pending           = 0;              /* its operations not done yet */
    unsigned detached          = 0;              /* detached sends not done yet */
    bool queued                = false;          /* on the context's ready list */
    bool advancing             = false;          /* advance() runs it: no finishing inline */
    ucs_status_t status        = UCS_INPROGRESS; /* UCS_INPROGRESS until finished */
    ucs_status_t error         = UCS_OK;         /* the first failure */
    bool user_freed            = false;
    bool peer_aborted          = false; /* a member said it failed */
    uint64_t last_probe_ns     = 0;
    unsigned polls             = 0; /* status checks since the last clock read */
    ucp_send_nbx_callback_t cb = nullptr;
    void *user_data            = nullptr;
    std::unique_ptr<uint8_t[]> scratch; /* the algorithm's own buffers */
    size_t scratch_size = 0;

    /* Ready for another collective; keeps the arrays' and scratch's room. */
    void reset()
    {
        magic     = live_magic;
        team      = nullptr;
        seq       = 0;
        algorithm = "";
        rounds.clear();
        sends.clear();
        recvs.clear();
        current            = 0;
        last_message_round = 0;
        started            = false;
        pending            = 0;
        detached           = 0;
        queued             = false;
        advancing          = false;
        status             = UCS_INPROGRESS;
        error              = UCS_OK;
        user_freed = peer_aborted = false;
        last_probe_ns             = 0;
        polls                     = 0;
        cb                        = nullptr;
        user_data                 = nullptr;
    }

    round &add_round()
    {
        return rounds.emplace_back(round{uint32_t(sends.size()), 0, uint32_t(recvs.size()), 0,
                                         step{}, false});
    }

    /* Sends and receives of `rd`, the last round added. */
    void send(round &rd, unsigned peer, const void *buf, size_t bytes)
    {
        sends.emplace_back(peer, buf, bytes);
        ++rd.nsends;
    }

    void recv(round &rd, unsigned peer, void *buf, size_t bytes)
    {
        recvs.push_back(recv_op{peer, buf, bytes, false});
        ++rd.nrecvs;
    }

    /* Scratch of at least `bytes` (algorithms ask once per collective). */
    uint8_t *make_scratch(size_t bytes)
    {
        if (bytes > scratch_size) {
            scratch.reset(new uint8_t[bytes]);
            scratch_size = bytes;
        }
        return scratch.get();
    }
};

} // namespace coll

#endif
