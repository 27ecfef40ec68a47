/*
 * Protocol selection. For every kind of send an endpoint configuration makes
 * (operation, datatype class, memory type: UCX's v2 selection parameters),
 * message sizes are cut into ranges, and each range lists the protocols that
 * serve it in order of preference. A protocol may decline one message at run
 * time (its buffer cannot be registered, an iov has more entries than one
 * zero-copy fragment takes, a user header does not fit); the next one then
 * serves it, and the last one of every range always can (but a lane's
 * atomic in UCX_ATOMIC_MODE=device, which has nothing to fall back to).
 *
 * Tables are built on first use per key, from the limits of the
 * configuration's lanes (ep_thresholds, whose thresholds come from the
 * transports' performance models or the UCX_*_THRESH settings). Every send
 * path picks its protocol here, and ucp_ep_print_info, UCX_PROTO_INFO and
 * ucx_info -e print these same tables.
 *
 * Put, get and atomics are keyed by how the remote key is reached (its
 * `reach`, the key's variant): a lane whose md has an entry in the key,
 * the key's segment mapped into this process, or neither (the target's
 * CPU does it on active messages). Which one a key has is found once per
 * ep and key (ucp/rma/rkey_cache.h); the ranges then come from that lane's
 * limits (rma_lane_limits).
 */
#ifndef UCP_PROTO_SELECT_H
#define UCP_PROTO_SELECT_H

#include <ucp/dt/dt.h>
#include <ucs/debug/assert.h>
#include <ucs/memory/memory_type.h>

#include <sys/types.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

namespace ucp {

constexpr unsigned max_lanes = 8;
constexpr uint8_t no_lane    = 0xff;

/*
 * Message-size limits of the protocols, from the AM lane and the config.
 * Per size: eager short (<= max_eager_short), eager bcopy (below zcopy),
 * eager zcopy (from zcopy), rendezvous (from rndv, which wins over zcopy).
 */
struct ep_thresholds {
    ssize_t max_eager_short; /* payload bytes that fit am_short with the tag; -1: none */
    size_t max_eager_only;   /* one bcopy fragment with the tag header */
    size_t first_frag;       /* payload of an eager first fragment */
    size_t middle_frag;      /* payload of an eager middle fragment */
    size_t rndv;             /* from this size up: rendezvous (SIZE_MAX: never) */
    size_t sync_first_frag;  /* payload of a sync first fragment */
    /* Eager zero-copy on the AM lane (UCX_ZCOPY_THRESH); zcopy_frag == 0
     * when the lane has no am_zcopy. */
    size_t zcopy;          /* from this size up: eager zcopy (SIZE_MAX: never) */
    size_t zcopy_frag;     /* payload bytes of one tag or stream zcopy fragment */
    size_t am_zcopy_frag;  /* payload bytes of one active-message zcopy fragment */
    size_t am_rndv;        /* active messages: from this size up, rendezvous */
    size_t zcopy_max_hdr;  /* UCP header bytes one am_zcopy carries inline */
    size_t zcopy_max_iov;  /* data entries of one am_zcopy */
    size_t am_max_bcopy;   /* bytes of one am_bcopy, headers included */
    bool zcopy_needs_memh; /* the AM lane's md registers zero-copy buffers */
};

namespace proto {

/* Streams go by rendezvous from here (and the rendezvous threshold):
 * smaller sends gain little from one copy less, and a send waiting for a
 * receive or the stage delay (ucp/stream/stream.h) costs more. */
constexpr size_t stream_rndv_min = 128 * 1024;

enum class operation : uint8_t { TAG, TAG_SYNC, AM, STREAM, PUT, GET, AMO, last };

/* The first remote-memory operation: the ones from here on are keyed by reach. */
constexpr operation first_rma_op = operation::PUT;

inline bool is_rma(operation op)
{
    return op >= first_rma_op;
}

/* How put, get and atomics reach a remote key (their key's variant). */
namespace rma_reach {
/* 0 .. max_lanes - 1: that lane of the configuration. */
constexpr uint8_t DIRECT = max_lanes;     /* the key's segment is mapped here */
constexpr uint8_t AM     = max_lanes + 1; /* no lane: emulated over active messages */
constexpr uint8_t count  = max_lanes + 2;
} // namespace rma_reach

/* Active-message send flags that change the choice (the key's variant). */
namespace am_variant {
constexpr uint8_t REPLY       = 1u << 0; /* UCP_AM_SEND_FLAG_REPLY */
constexpr uint8_t FORCE_EAGER = 1u << 1; /* UCP_AM_SEND_FLAG_EAGER */
constexpr uint8_t FORCE_RNDV  = 1u << 2; /* UCP_AM_SEND_FLAG_RNDV */
constexpr uint8_t count       = 8;
} // namespace am_variant

/* The datatype class of the send buffer (ucp/dt). */
using dt::dt_class;
constexpr size_t num_dt_classes = 3;
static_assert(size_t(dt_class::generic) == num_dt_classes - 1, "dt classes are indexes");

enum class protocol : uint8_t {
    EAGER_SHORT,        /* one am_short, the UCP header inline */
    EAGER_BCOPY_SINGLE, /* one am_bcopy */
    EAGER_BCOPY_MULTI,  /* a first and middle am_bcopy fragments */
    EAGER_ZCOPY,        /* am_zcopy fragments from the sender's buffer */
    RNDV,               /* a request to send; the data moves by zero-copy RMA */
    RMA_DIRECT,         /* CPU copies or atomics in the key's segment mapped here */
    RMA_SHORT,          /* one put_short */
    RMA_BCOPY,          /* put/get_bcopy fragments */
    RMA_ZCOPY,          /* put/get_zcopy fragments from/to the buffer in place */
    AMO_LANE,           /* the lane's atomic (declines an op or size it lacks) */
    RMA_EMULATED,       /* active messages; the target's CPU does it */
    last
};

struct key {
    operation op;
    uint8_t variant            = 0; /* am_variant bits for AM, rma_reach for RMA, else 0 */
    dt_class dt                = dt_class::contig;
    ucs_memory_type_t mem_type = UCS_MEMORY_TYPE_HOST;
};

constexpr unsigned max_candidates = unsigned(protocol::last); /* each at most once */
constexpr unsigned max_ranges     = 12;                       /* more than the rules can cut */

struct range {
    size_t last;   /* largest size in the range; SIZE_MAX: no end */
    uint8_t count; /* candidates, most preferred first */
    protocol candidates[max_candidates];
};

/* The ranges of one key, ordered by size; no ranges: no protocol serves it. */
struct selection {
    std::array<range, max_ranges> ranges;
    uint8_t count = 0;

    /* The range holding `length`; count != 0. */
    const range &find(size_t length) const
    {
        /* The last range ends at SIZE_MAX: the search stops inside. */
        ucs_assert((count > 0) && (ranges[count - 1].last == SIZE_MAX));
        const range *r = ranges.data();
        while (length > r->last) {
            ++r;
        }
        return *r;
    }
};

/*
 * What one lane offers put and get (uct iface attributes; a size of 0:
 * not offered), and from which size they go by zero copy where both a
 * copy and a zero-copy call exist.
 */
struct rma_lane_limits {
    ssize_t put_short  = -1; /* bytes of one put_short; -1: none */
    size_t put_bcopy   = 0;
    size_t put_zcopy   = 0;
    size_t get_bcopy   = 0;
    size_t get_zcopy   = 0;
    size_t zcopy       = SIZE_MAX; /* UCX_ZCOPY_THRESH, or the md's model */
    uint64_t mem_types = 0;        /* local memory types its md reaches */
    bool amo           = false;    /* atomics of the context's atomic mode */
};

/* What the tables of a configuration are built from. */
struct table_inputs {
    ep_thresholds thresh;
    uint64_t rndv_mem_types; /* bit per memory type a rendezvous lane moves */
    std::array<rma_lane_limits, max_lanes> rma_lanes = {};
    /* UCX_ATOMIC_MODE=cpu: CPU atomics (a mapped segment, the target's CPU)
     * may serve atomics; device: only a lane's. */
    bool amo_cpu = true;
};

/* The selection tables of one endpoint configuration, built on first use. */
class table {
public:
    explicit table(const table_inputs &in) : in_(in) {}

    const selection &get(const key &k) const;
    const table_inputs &inputs() const { return in_; }

private:
    static constexpr size_t num_send_keys = size_t(first_rma_op) * am_variant::count *
                                            num_dt_classes * UCS_MEMORY_TYPE_LAST;
    /* RMA: contiguous data only. */
    static constexpr size_t num_rma_keys = (size_t(operation::last) - size_t(first_rma_op)) *
                                           rma_reach::count * UCS_MEMORY_TYPE_LAST;

    static size_t key_index(const key &k);

    table_inputs in_;
    mutable std::array<std::unique_ptr<selection>, num_send_keys + num_rma_keys> built_;
};

/*
 * The step of the first protocol of the range holding `length` that takes
 * the message: `start(p)` returns its step, or nullptr when p declines.
 * nullptr: no protocol serves the key (a memory type nothing moves).
 *
 * Memory the CPU cannot touch (CUDA) has no short or zero-copy eager
 * protocol: bcopy fragments are staged through the memory type's copier
 * (dt.h), and a rendezvous needs a lane for that memory (cuda_ipc).
 */
template <typename Start>
auto select_first(const selection &sel, size_t length, Start &&start)
    -> decltype(start(protocol::last))
{
    if (sel.count == 0) {
        return nullptr;
    }
    const range &r = sel.find(length);
    for (uint8_t i = 0; i < r.count; ++i) {
        if (auto step = start(r.candidates[i])) {
            return step;
        }
    }
    return nullptr;
}

/* How to name what the tables do not know: the AM lane's transport, the
 * rendezvous schemes (the receiver picks one: pulling, and from
 * rndv_push_from on, pushing or splitting the transfer), and the lanes. */
struct print_names {
    const char *am_tl;
    const char *rndv_get;
    const char *rndv_push;
    size_t rndv_push_from;         /* SIZE_MAX: never */
    const std::string *lane_names; /* max_lanes of them, "tcp/lo" */
};

/* One size range of a table: "#   from .. to   text". */
void print_range(FILE *stream, size_t from, size_t to, const char *text);

/* The table of `k`, one line per range (two where zcopy fragments start). */
void print(FILE *stream, const table &t, const key &k, const print_names &names);

/* The rules, for one key (exposed for tests). */
void build(const table_inputs &in, const key &k, selection *out);

const char *operation_name(operation op);
const char *dt_class_name(dt_class dt);

} // namespace proto

} // namespace ucp

#endif
