/*
 * Protocol selection. For every kind of send an endpoint configuration makes
 * (operation, datatype class, memory type: UCX's v2 selection parameters),
 * message sizes are cut into ranges, and each range lists the protocols that
 * serve it in order of preference. A protocol may decline one message at run
 * time (its buffer cannot be registered, an iov has more entries than one
 * zero-copy fragment takes, a user header does not fit); the next one then
 * serves it, and the last one of every range always can.
 *
 * Tables are built on first use per key, from the limits of the
 * configuration's lanes (ep_thresholds, whose thresholds come from the
 * transports' performance models or the UCX_*_THRESH settings). Every send
 * path picks its protocol here, and ucp_ep_print_info, UCX_PROTO_INFO and
 * ucx_info -e print these same tables.
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

namespace ucp {

/*
 * Message-size limits of the protocols, from the AM lane and the config.
 * Per size: eager short (<= max_eager_short), eager bcopy (below zcopy),
 * eager zcopy (from zcopy), rendezvous (from rndv, which wins over zcopy).
 */
struct ep_thresholds {
    ssize_t max_eager_short;  /* payload bytes that fit am_short with the tag; -1: none */
    size_t max_eager_only;    /* one bcopy fragment with the tag header */
    size_t first_frag;        /* payload of an eager first fragment */
    size_t middle_frag;       /* payload of an eager middle fragment */
    size_t rndv;              /* from this size up: rendezvous (SIZE_MAX: never) */
    size_t sync_first_frag;   /* payload of a sync first fragment */
    /* Eager zero-copy on the AM lane (UCX_ZCOPY_THRESH); zcopy_frag == 0
     * when the lane has no am_zcopy. */
    size_t zcopy;             /* from this size up: eager zcopy (SIZE_MAX: never) */
    size_t zcopy_frag;        /* payload bytes of one tag or stream zcopy fragment */
    size_t am_zcopy_frag;     /* payload bytes of one active-message zcopy fragment */
    size_t am_rndv;           /* active messages: from this size up, rendezvous */
    size_t zcopy_max_hdr;     /* UCP header bytes one am_zcopy carries inline */
    size_t zcopy_max_iov;     /* data entries of one am_zcopy */
    size_t am_max_bcopy;      /* bytes of one am_bcopy, headers included */
    bool   zcopy_needs_memh;  /* the AM lane's md registers zero-copy buffers */
};

namespace proto {

/* Streams go by rendezvous from here (and the rendezvous threshold):
 * smaller sends gain little from one copy less, and a send waiting for a
 * receive or the stage delay (ucp/stream/stream.h) costs more. */
constexpr size_t stream_rndv_min = 128 * 1024;

enum class operation : uint8_t { TAG, TAG_SYNC, AM, STREAM, last };

/* Active-message send flags that change the choice (the key's variant). */
namespace am_variant {
constexpr uint8_t REPLY       = 1u << 0;   /* UCP_AM_SEND_FLAG_REPLY */
constexpr uint8_t FORCE_EAGER = 1u << 1;   /* UCP_AM_SEND_FLAG_EAGER */
constexpr uint8_t FORCE_RNDV  = 1u << 2;   /* UCP_AM_SEND_FLAG_RNDV */
constexpr uint8_t count       = 8;
} // namespace am_variant

/* The datatype class of the send buffer (ucp/dt). */
using dt::dt_class;
constexpr size_t num_dt_classes = 3;
static_assert(size_t(dt_class::generic) == num_dt_classes - 1, "dt classes are indexes");

enum class protocol : uint8_t {
    EAGER_SHORT,         /* one am_short, the UCP header inline */
    EAGER_BCOPY_SINGLE,  /* one am_bcopy */
    EAGER_BCOPY_MULTI,   /* a first and middle am_bcopy fragments */
    EAGER_ZCOPY,         /* am_zcopy fragments from the sender's buffer */
    RNDV,                /* a request to send; the data moves by zero-copy RMA */
    last
};

struct key {
    operation         op;
    uint8_t           variant = 0;   /* am_variant bits for AM, else 0 */
    dt_class          dt      = dt_class::contig;
    ucs_memory_type_t mem_type = UCS_MEMORY_TYPE_HOST;
};

constexpr unsigned max_candidates = unsigned(protocol::last);  /* each at most once */
constexpr unsigned max_ranges     = 12;   /* more than the rules can cut */

struct range {
    size_t   last;                          /* largest size in the range; SIZE_MAX: no end */
    uint8_t  count;                         /* candidates, most preferred first */
    protocol candidates[max_candidates];
};

/* The ranges of one key, ordered by size; no ranges: no protocol serves it. */
struct selection {
    std::array<range, max_ranges> ranges;
    uint8_t                       count = 0;

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

/* What the tables of a configuration are built from. */
struct table_inputs {
    ep_thresholds thresh;
    uint64_t      rndv_mem_types;   /* bit per memory type a rendezvous lane moves */
};

/* The selection tables of one endpoint configuration, built on first use. */
class table {
public:
    explicit table(const table_inputs &in) : in_(in) {}

    const selection &get(const key &k) const;
    const table_inputs &inputs() const { return in_; }

private:
    static constexpr size_t num_keys = size_t(operation::last) * am_variant::count *
                                       num_dt_classes * UCS_MEMORY_TYPE_LAST;

    table_inputs                                         in_;
    mutable std::array<std::unique_ptr<selection>, num_keys> built_;
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

/* How to name what the tables do not know: the AM lane's transport, and
 * the rendezvous schemes (the receiver picks one: pulling, and from
 * rndv_push_from on, pushing or splitting the transfer). */
struct print_names {
    const char *am_tl;
    const char *rndv_get;
    const char *rndv_push;
    size_t     rndv_push_from;   /* SIZE_MAX: never */
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
