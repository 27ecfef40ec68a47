/*
 * The internal part of a UCP request. The pointer an application gets is
 * the start of its request_size area, right after this struct (UCX's
 * layout: runtimes that pass their own memory with UCP_OP_ATTR_FIELD_REQUEST
 * hand us the pointer after request_size bytes reserved for us).
 *
 * Lifetime: a pooled request comes from the worker's pool, whose obj_init
 * ran the context's request_init once on the user area. Completion sets
 * COMPLETED before the callback runs; a request the application released
 * before completion goes back to the pool after the callback.
 */
#ifndef UCP_CORE_UCP_REQUEST_H
#define UCP_CORE_UCP_REQUEST_H

#include <ucp/api/ucp.h>
#include <ucp/core/ucp_buffer_reg.h>
#include <ucp/dt/dt.h>
#include <ucp/tag/tag_match.h>
#include <ucs/debug/log.h>
#include <ucs/memory/mpool.h>
#include <uct/base/uct_md.h>

#include <cstddef>
#include <cstdint>

namespace ucp {

namespace request_flag {
constexpr uint32_t COMPLETED = 1u << 0;
constexpr uint32_t RELEASED  = 1u << 1; /* freed by the user before completion */
constexpr uint32_t EXTERNAL  = 1u << 2; /* the caller's memory: never pooled */
constexpr uint32_t CALLBACK  = 1u << 3;
constexpr uint32_t LEGACY_CB = 1u << 4;  /* pre-nbx callback: no user_data */
constexpr uint32_t RECV      = 1u << 5;  /* tag receive: recv.info is valid */
constexpr uint32_t EXPECTED  = 1u << 6;  /* queued in the tag matcher */
constexpr uint32_t HAS_ID    = 1u << 7;  /* registered for replies from a peer */
constexpr uint32_t PENDING   = 1u << 8;  /* queued on a uct ep's pending queue */
constexpr uint32_t SYNC      = 1u << 9;  /* done only with the peer's reply too (sync, rndv) */
constexpr uint32_t STREAM    = 1u << 10; /* stream receive */
constexpr uint32_t FLUSH     = 1u << 11;
constexpr uint32_t SEND_DONE = 1u << 12; /* every byte handed to the transport */
constexpr uint32_t ACKED     = 1u << 13; /* the peer's reply arrived */
constexpr uint32_t WAITALL   = 1u << 14; /* stream receive: only when full */
constexpr uint32_t RMA       = 1u << 15; /* put/get/atomic: send.rma is valid */
constexpr uint32_t RNDV_SEND = 1u << 16; /* rendezvous send: the receiver may ask for a push */
constexpr uint32_t PUSHING   = 1u << 17; /* rendezvous send writing its part: send.push is valid */
constexpr uint32_t PUSH_FAILED = 1u << 18; /* the ep failed during the push: finish when it ends */
constexpr uint32_t AWAIT_PUSH  = 1u << 19; /* rendezvous receive waiting for the sender's ATP */
constexpr uint32_t ZCOPY       = 1u << 20; /* eager zero-copy send: send.zcopy is valid */
constexpr uint32_t WIREUP      = 1u << 21; /* a wireup message: never held by the proxy */
/* Its messages name the peer's ep (remote_id): waits for the wireup REPLY. */
constexpr uint32_t NAMES_PEER_EP = 1u << 22;
/* What a triggered operation's caller holds (ucp/ext/trigger.h). */
constexpr uint32_t TRIGGERED = 1u << 23;
} // namespace request_flag

struct request;

/* Send-side progress: the protocol step retried from the pending queue. */
using send_step_t = ucs_status_t (*)(request *req);

// clang-format off
/*
 * A put, get or atomic (ucp/rma), with send_state::offset the bytes issued
 * (an emulated get: the bytes arrived). `comp` counts the parts still awaited:
 * one held while fragments are being issued, one per uct operation that
 * returned UCS_INPROGRESS, one per reply expected from the target; the
 * operation is done when it reaches zero.
 */
struct rma_state {
    uct::completion comp;
    uint8_t         *buffer;       /* put source, get destination, atomic result */
    size_t          length;
    uint64_t        remote_addr;
    ucp_rkey        *rkey;
    union {
        uint64_t    value;         /* atomic operand (CSWAP: the swap value) */
        /* A get into device memory over a host path lands in a host bounce
         * buffer (send_state::bounce); at completion it is copied here. */
        uint8_t     *staged_for;
    };
    uint64_t        compare;       /* CSWAP: the compare value; else where the
                                      result of an unfetched swap lands */
    union {
        ucp_send_nbx_callback_t nbx;
        ucp_send_callback_t     legacy;
    } user_cb;                     /* the application's callback, if any */
    uint8_t         kind;          /* ucp::rma::op_kind */
    uint8_t         path;          /* ucp::rma::path */
    uint8_t         lane;
    uint8_t         amo_op;        /* uct::atomic_op */
    uint8_t         size;          /* atomic operand bytes */
    uint8_t         flags;         /* ucp::rma::state_flag */
    uint8_t         staged_type;   /* ucs_memory_type_t of staged_for */
    uint8_t         protocol;      /* ucp::proto::protocol of a lane put or get */
};
// clang-format on

/*
 * The sender's part of a split rendezvous: writing bytes [0, length) of the
 * message into the receiver's buffer. `comp` holds one count while issuing
 * and one per uct put in flight; at zero the ATP goes to the receiver.
 */
struct push_state {
    uct::completion comp;
    uct::rkey_bundle rkey; /* the receiver's buffer, on send.rndv_md */
    uint64_t remote_addr;
    size_t length;
    size_t offset;       /* bytes issued */
    uint64_t rreq_id;    /* what the ATP names */
    uint64_t dest_uuid;  /* the receiver's worker */
    uint64_t dest_ep_id; /* our ep the RTR named: the ATP goes out of it */
};

/*
 * An eager zero-copy send (ucp/proto/eager_zcopy.h). `comp` counts one
 * reference held while fragments are being issued (`issuing`) plus one per
 * fragment the transport still sends from the application's buffer; the
 * send's local part is done when it drops to zero.
 */
struct zcopy_state {
    uct::completion comp;
    uint8_t issuing;
};

struct rndv_md_regs;

struct send_state {
    ucp_ep *ep;
    dt::packer packer;
    ucp_tag_t tag;
    size_t offset; /* bytes handed to the transport so far */
    union {
        uint64_t msg_id; /* multi-fragment eager */
        /* A rendezvous send (request_flag::RNDV_SEND), which is never sent in
         * eager fragments: the buffer on the mds of more rendezvous lanes,
         * whose keys the RTS carries too (ucp/tag/rndv_keys.cc); mostly null. */
        rndv_md_regs *more_regs;
    };
    send_step_t step;
    uct::pending_req pending;
    buffer_reg reg; /* rendezvous, zero-copy: the buffer on rndv_md */
    void *bounce;   /* rendezvous of a non-contiguous buffer */
    unsigned rndv_md;
    uint8_t am_id;       /* stream / active-message sends */
    uint16_t user_am_id; /* ucp_am_send_*: the application's id */
    uint32_t am_flags;
    uint32_t header_length; /* beside am_flags: no padding */
    const void *header;
    union {
        rma_state rma;     /* put/get/atomics (request_flag::RMA) */
        push_state push;   /* rendezvous push (request_flag::PUSHING) */
        zcopy_state zcopy; /* eager zero-copy (request_flag::ZCOPY) */
    };
};

struct rndv_pieces;
struct rndv_rails;

struct recv_state {
    tag::expected_entry expected;
    dt::unpacker unpacker;
    ucp_tag_recv_info_t info; /* sender_tag, length */
    size_t received;          /* bytes placed so far */
    ucs_status_t data_status; /* first unpack error (truncation) */
    uint32_t elem_size;       /* stream receive: completes on whole elements */
    /* Rendezvous pull. */
    ucp_ep *ep;
    uint64_t src_uuid;
    uint64_t src_ep_id; /* our ep the sender named: RTR and ATS go out of it */
    uint64_t remote_req_id;
    uint64_t remote_addr;
    size_t get_length; /* bytes to pull (<= capacity) */
    uct::completion comp;
    uct::rkey_bundle rkey;
    void *bounce; /* from ucs::memtype::bounce_alloc */
    /* How the pull is cut (tag_rndv.cc); null: in one lane's order. */
    union {
        rndv_pieces *pieces; /* with a bounce buffer: pieces moved on as they land */
        rndv_rails *rails;   /* without: a share for each of several lanes */
    };
    /* Split rendezvous: the sender writes [0, push_length) into our buffer,
     * whose key comes from get_reg when held (it covers the whole buffer:
     * one registration), else from push_reg on rkey_md; we pull the rest. */
    buffer_reg push_reg;
    buffer_reg get_reg; /* where we pull to, if rkey_md needs a memh */
    size_t push_length;
    unsigned rkey_md;  /* beside the flags: no padding */
    uint8_t rts_flags; /* wire::rts_flag:: of the offer */
    bool rtr_sent;

    /* A receive starts: nothing placed, no error, no pull under way. */
    void start(const ucp_tag_recv_info_t &what)
    {
        info        = what;
        received    = 0;
        data_status = UCS_OK;
        ep          = nullptr;
        bounce      = nullptr;
        pieces      = nullptr;
        rkey        = {};
    }
};

struct flush_state {
    ucp_ep *ep;         /* nullptr: the whole worker */
    unsigned next_lane; /* lanes below this are flushed or in flight */
    uct::completion comp;
    uint32_t close_mode; /* ep close: UCP_EP_CLOSE_MODE_* + 1, 0 = plain flush */
};

struct request {
    uint32_t flags;
    ucs_status_t status;
    union {
        ucp_send_nbx_callback_t send;
        ucp_send_callback_t send_legacy;
        ucp_tag_recv_nbx_callback_t recv;
        ucp_tag_recv_callback_t recv_legacy;
        ucp_stream_recv_nbx_callback_t stream;
        void *any;
    } cb;
    void *user_data;
    ucp_worker_h worker;
    uint64_t id; /* when HAS_ID: what a peer's reply names */
    union u {
        u() {}
        send_state send;
        recv_state recv;
        flush_state flush;
    } u;

    void *user_ptr() { return this + 1; }
    static request *from_user(void *user) { return static_cast<request *>(user) - 1; }
};

static_assert(sizeof(request) % 16 == 0, "user area must stay 16-byte aligned");

/* UCX_LOG_LEVEL=req (builds with assertions; see ucs::max_log_level):
 * one line per event of a request's life, out of line. */
[[gnu::cold, gnu::noinline]] void trace_request(const request *req, const char *event);

inline void trace_request_event(const request *req, const char *event)
{
    if (ucs::log_enabled(UCS_LOG_LEVEL_TRACE_REQ)) {
        trace_request(req, event);
    }
}

/* The initialised internal part a new operation starts from. */
inline void request_reset(request *req, ucp_worker_h worker, uint32_t flags)
{
    req->flags     = flags;
    req->status    = UCS_INPROGRESS;
    req->cb.any    = nullptr;
    req->user_data = nullptr;
    req->worker    = worker;
}

/* The request whose send waits in a pending queue as `p`. */
inline request *request_of_pending(uct::pending_req *p)
{
    return reinterpret_cast<request *>(reinterpret_cast<char *>(p) -
                                       offsetof(request, u.send.pending));
}

/* The caller's request (FIELD_REQUEST) of an operation that completed inside
 * the call on a fast path: completed with UCS_OK, no callback, as the general
 * path leaves it (a runtime may poll it instead of the return value). */
inline void request_mark_done_external(request *req, ucp_worker_h worker)
{
    req->flags  = request_flag::EXTERNAL | request_flag::COMPLETED;
    req->status = UCS_OK;
    req->worker = worker;
}

/*
 * Completes a request: status and COMPLETED first (a callback may test or
 * free it), then the callback, then the pool if the user released it early.
 * Nothing touches the request after the callback unless it was released.
 */
void request_complete(request *req, ucs_status_t status);

/* Returns a completed request to its pool (pooled ones only). */
inline void request_put(request *req)
{
    trace_request_event(req, "released");
    if (!(req->flags & request_flag::EXTERNAL)) {
        ucs::mpool::put(req);
    }
}

} // namespace ucp

#endif
