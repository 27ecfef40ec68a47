/*
 * Put and get with completion ids: the initiator's side (see pwc.h).
 */
#include "pwc.h"


#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_guard.h>
#include <ucp/core/ucp_request.h>
#include <ucp/core/ucp_rkey.h>
#include <ucp/core/ucp_worker.h>
#include <ucp/proto/send_common.h>
#include <ucp/proto/wire.h>
#include <ucp/rma/rma.h>
#include <ucs/debug/log.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>

namespace ucp::ext {

/* Largest message sent inline (a FIFO element's worth). */
constexpr size_t max_inline_message = 128;

enum class pwc_kind : uint8_t { PUT, GET };

/* One put or get with completion ids, from its call to its local completion. */
struct pwc_op {
    ucp_worker *worker;
    ucp_ep *ep;
    pwc_kind kind;
    uint8_t *buffer;
    size_t length;
    uint64_t remote_addr;
    ucp_rkey *rkey;
    uint64_t secret; /* the key's, for the packed path */
    ucp_cid_t local_cid;
    uint64_t remote_u64;
    std::vector<uint8_t> remote_payload; /* an id of bytes, copied at the call */
    unsigned flags;                      /* ucp_pwc_flags */
    bool takes_credit;                   /* the target queues its id */
    bool credit_taken = false;
    bool packed; /* the data travels with the id */
};

/* The ep sends now: wired up, nothing queued before. */
bool lane_free(const ucp_ep *ep)
{
    return (ep->flags & ep_flag::READY) && (ep->num_pending == 0) && !ep->held();
}

ucs_status_t send_inline(ucp_ep *ep, uint8_t am_id, const uct::iov *parts, size_t count,
                         size_t size)
{
    const uct::iface_attr &attr = ep->am_ep->owner().attr();
    if (!(attr.flags & uct::iface_flag::AM_SHORT) || (size > attr.am.max_short) ||
        (size > max_inline_message)) {
        return UCS_ERR_UNSUPPORTED;
    }
    return ep->am_ep->am_short_iov(am_id, parts, count);
}

namespace {

bool wants_remote(const pwc_op *op)
{
    return !(op->flags & UCP_PWC_FLAG_NO_RCE);
}

void start_waiting(ucp_ep *ep);

void complete(pwc_op *op, ucs_status_t status)
{
    std::unique_ptr<pwc_op> owned(op);
    ucp_ep *ep     = op->ep;
    pwc_peer *peer = ep->pwc;
    --peer->pending;
    --op->worker->pwc->pending;
    if (!(op->flags & UCP_PWC_FLAG_NO_LCE) || (status != UCS_OK)) {
        pwc_push_local(op->worker, ep, op->local_cid,
                       (op->kind == pwc_kind::GET) ? unsigned(UCP_PWC_COMPLETION_GET) : 0u, status);
    }
    /* The id goes out last: a failed operation's never reached the target,
     * so its credit comes back. */
    if ((status != UCS_OK) && op->credit_taken) {
        peer->credits = std::min(peer->credits + 1, op->worker->pwc->window);
        if (ep->usable()) {
            start_waiting(ep);
        }
    }
}

/* Puts up to this size travel with their id even where the target's memory
 * is mapped here (measured on shared memory: one message of the data and the
 * id beats a copy and a message up to about there). */
constexpr size_t packed_over_direct = 128;

/* Where `remote_addr` is mapped in this process, or nullptr (a posix or
 * sysv segment of the peer: a CPU copy reaches it, visible at once). */
uint8_t *direct_target(ucp_ep *ep, ucp_rkey *rkey, uint64_t remote_addr)
{
    return (rma::cache_of(ep, rkey).direct != nullptr) ? rma::direct_address(rkey, remote_addr) :
                                                         nullptr;
}

/* ---- the AM_PWC message ---- */

/* What an AM_PWC carries, from an operation or from a call's arguments. */
struct message {
    wire::pwc_hdr hdr;
    const void *id;   /* hdr.id_size bytes */
    const void *data; /* DATA: `length` bytes */
    size_t length;
};

uint8_t wire_flags(unsigned flags, pwc_kind kind, bool packed)
{
    return ((flags & UCP_PWC_FLAG_NO_RCE) ? wire::pwc_flag::NO_RCE : 0) |
           ((flags & UCP_PWC_FLAG_REMOTE_CNTR) ? wire::pwc_flag::REMOTE_CNTR : 0) |
           ((kind == pwc_kind::GET) ? wire::pwc_flag::GET : 0) |
           (packed ? wire::pwc_flag::DATA : 0);
}

size_t pack_message(void *dest, void *arg)
{
    const auto *m = static_cast<const message *>(arg);
    auto *out     = static_cast<uint8_t *>(dest);
    std::memcpy(out, &m->hdr, sizeof(m->hdr));
    size_t size = sizeof(m->hdr);
    if (m->hdr.id_size != 0) {
        std::memcpy(out + size, m->id, m->hdr.id_size);
        size += m->hdr.id_size;
    }
    if (m->hdr.flags & wire::pwc_flag::DATA) {
        std::memcpy(out + size, m->data, m->length);
        size += m->length;
    }
    return size;
}

size_t packed_size(const message &m)
{
    return sizeof(m.hdr) + m.hdr.id_size + ((m.hdr.flags & wire::pwc_flag::DATA) ? m.length : 0);
}

/* Sends `m` now: inline when the lane takes it, else copied by the lane.
 * >= 0 when sent. */
ssize_t send_now(ucp_ep *ep, const message &m)
{
    const bool data           = m.hdr.flags & wire::pwc_flag::DATA;
    const uct::iov parts[]    = {{&m.hdr, sizeof(m.hdr), uct::MEM_HANDLE_NULL},
                                 {m.id, m.hdr.id_size, uct::MEM_HANDLE_NULL},
                                 {m.data, data ? m.length : 0, uct::MEM_HANDLE_NULL}};
    const ucs_status_t status = send_inline(ep, wire::AM_PWC, parts, 3, packed_size(m));
    if (status != UCS_ERR_UNSUPPORTED) {
        return status;
    }
    return ep->am_ep->am_bcopy(wire::AM_PWC, pack_message, const_cast<message *>(&m), 0);
}

/* The AM_PWC of an operation. */
message message_of(const pwc_op *op)
{
    message m{};
    m.hdr.src_uuid = op->worker->uuid;
    m.hdr.ep_id    = op->ep->remote_id;
    m.hdr.cid      = op->remote_u64;
    m.hdr.id_size  = uint32_t(op->remote_payload.size());
    m.hdr.flags    = wire_flags(op->flags, op->kind, op->packed);
    m.id           = op->remote_payload.data();
    if (op->packed) {
        m.hdr.address = op->remote_addr;
        m.hdr.secret  = op->secret;
        m.length      = op->length;
        m.data        = op->buffer;
    }
    return m;
}

/* The AM_PWC of a send request (whose user data is the operation). */
size_t pack_pwc(void *dest, void *arg)
{
    message m = message_of(static_cast<const pwc_op *>(static_cast<request *>(arg)->user_data));
    return pack_message(dest, &m);
}

ucs_status_t pwc_step(request *req)
{
    const ssize_t packed = req->u.send.ep->am_ep->am_bcopy(wire::AM_PWC, pack_pwc, req, 0);
    if (packed < 0) {
        return ucs_status_t(packed); /* NO_RESOURCE: retried from the pending queue */
    }
    send_done(req);
    return UCS_OK;
}

void on_message_sent(void *, ucs_status_t status, void *arg)
{
    complete(static_cast<pwc_op *>(arg), status);
}

/* The AM_PWC, through a send request of the ep (queued behind a busy lane
 * or an ep not wired up yet; failed with the ep). */
void send_message(pwc_op *op)
{
    if (lane_free(op->ep)) {
        const ssize_t sent = send_now(op->ep, message_of(op));
        if (sent != UCS_ERR_NO_RESOURCE) {
            complete(op, (sent < 0) ? ucs_status_t(sent) : UCS_OK);
            return;
        }
    }
    ucp_request_param_t param{};
    param.op_attr_mask            = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send                 = on_message_sent;
    param.user_data               = op;
    const ucs_status_ptr_t result = pwc_send_request(op->ep, wire::AM_PWC, pwc_step, &param);
    if (UCS_PTR_IS_PTR(result)) {
        ucp_request_free(result); /* the callback completes the operation */
    } else {
        complete(op, UCS_PTR_STATUS(result));
    }
}

/* ---- the put and get steps ---- */

using next_step = void (*)(pwc_op *op, ucs_status_t status);

/* Runs `next` when the nbx call's operation is over: now, or from its callback. */
void then(pwc_op *op, ucs_status_ptr_t result, next_step next)
{
    if (UCS_PTR_IS_PTR(result)) {
        ucp_request_free(result);
        return;
    }
    next(op, UCS_PTR_STATUS(result));
}

template <next_step Next>
void call_next(void *, ucs_status_t status, void *arg)
{
    Next(static_cast<pwc_op *>(arg), status);
}

template <next_step Next>
ucp_request_param_t param_for(pwc_op *op)
{
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send      = call_next<Next>;
    param.user_data    = op;
    return param;
}

void after_flush(pwc_op *op, ucs_status_t status)
{
    if (status != UCS_OK) {
        complete(op, status);
    } else {
        send_message(op); /* the data is at the target: the id follows */
    }
}

void after_data(pwc_op *op, ucs_status_t status)
{
    if ((status != UCS_OK) || !wants_remote(op)) {
        complete(op, status);
        return;
    }
    if (op->kind == pwc_kind::GET) {
        send_message(op); /* the data left the target: it may reuse it */
        return;
    }
    /* A put completes when its source may be reused; the flush, when the
     * data is in the target's memory. */
    const ucp_request_param_t param = param_for<after_flush>(op);
    then(op, ucp_ep_flush_nbx(op->ep, &param), after_flush);
}

void start(pwc_op *op)
{
    if (op->takes_credit) {
        --op->ep->pwc->credits;
        op->credit_taken = true;
    }
    if (op->packed || (op->length == 0)) {
        if ((op->length == 0) && !wants_remote(op)) {
            complete(op, UCS_OK); /* nothing to move, nobody to tell */
        } else {
            send_message(op);
        }
        return;
    }
    if (op->kind == pwc_kind::PUT) {
        if (uint8_t *direct = direct_target(op->ep, op->rkey, op->remote_addr)) {
            std::memcpy(direct, op->buffer, op->length);
            std::atomic_thread_fence(std::memory_order_release); /* data before id */
            op->length = 0;
            if (wants_remote(op)) {
                send_message(op); /* visible already: no flush */
            } else {
                complete(op, UCS_OK);
            }
            return;
        }
    }
    const ucp_request_param_t param = param_for<after_data>(op);
    if (op->kind == pwc_kind::PUT) {
        then(op, ucp_put_nbx(op->ep, op->buffer, op->length, op->remote_addr, op->rkey, &param),
             after_data);
    } else {
        then(op, ucp_get_nbx(op->ep, op->buffer, op->length, op->remote_addr, op->rkey, &param),
             after_data);
    }
}

/* Starts waiting operations while credits last (or until one needs none
 * and others wait behind it: order is kept). */
void start_waiting(ucp_ep *ep)
{
    pwc_peer *peer = ep->pwc;
    while (!peer->waiting.empty()) {
        pwc_op *op = peer->waiting.front();
        if (op->takes_credit && (peer->credits == 0)) {
            return;
        }
        peer->waiting.pop_front();
        start(op);
    }
}

/* The checks of a call's arguments that need no state. */
ucs_status_t check_args(pwc_kind kind, const void *buffer, size_t length, uint64_t remote_addr,
                        ucp_rkey *rkey, const ucp_cid_t *remote_cid, unsigned flags)
{
    const unsigned known = UCP_PWC_FLAG_NO_LCE | UCP_PWC_FLAG_NO_RCE | UCP_PWC_FLAG_REMOTE_CNTR;
    if (flags & ~known) {
        ucs_error("pwc: unknown flags 0x%x", flags & ~known);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((remote_cid != nullptr) && (remote_cid->size != 0) && (remote_cid->data == nullptr)) {
        ucs_error("pwc: a remote id of %zu bytes at NULL", remote_cid->size);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((kind == pwc_kind::GET) && (length == 0)) {
        ucs_error("ucp_pwc_get: a get of 0 bytes");
        return UCS_ERR_INVALID_PARAM;
    }
    if (length == 0) {
        return UCS_OK;
    }
    if ((buffer == nullptr) || (rkey == nullptr)) {
        ucs_error("pwc: %zu bytes with a NULL %s", length, (buffer == nullptr) ? "buffer" : "rkey");
        return UCS_ERR_INVALID_PARAM;
    }
    if (!rkey->covers(remote_addr, length)) {
        ucs_error("pwc: 0x%llx+%zu is outside the remote key's region",
                  static_cast<unsigned long long>(remote_addr), length);
        return UCS_ERR_INVALID_PARAM;
    }
    const uint8_t access = (kind == pwc_kind::PUT) ? rkey_access::WRITE : rkey_access::READ;
    if (!rkey->allows(access)) {
        ucs_error("pwc: the remote key does not allow remote %s",
                  (kind == pwc_kind::PUT) ? "writes" : "reads");
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

ucs_status_t post_locked(ucp_ep *ep, pwc_kind kind, void *buffer, size_t length,
                         uint64_t remote_addr, ucp_rkey *rkey, const ucp_cid_t *local_cid,
                         const ucp_cid_t *remote_cid, unsigned flags)
{
    if (!ep->usable()) {
        return ep->status;
    }
    pwc_state *st = pwc_state_of(ep->worker);
    if (st == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    const bool remote = !(flags & UCP_PWC_FLAG_NO_RCE);
    if (remote && (remote_cid != nullptr) && (remote_cid->size > st->max_id_size)) {
        ucs_error("pwc: a remote id of %zu bytes; UCX_PWC_MAX_ID_SIZE is %zu", remote_cid->size,
                  st->max_id_size);
        return UCS_ERR_EXCEEDS_LIMIT;
    }
    pwc_peer *peer = pwc_peer_of(ep);
    if (peer == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    const size_t id_size = (remote && (remote_cid != nullptr)) ? remote_cid->size : 0;
    /* A remote id counted on the target's counter takes no place in its
     * queue (one queued there for want of a counter gives no credit back). */
    const bool takes_credit   = remote && !(flags & UCP_PWC_FLAG_REMOTE_CNTR);
    const size_t message_size = sizeof(wire::pwc_hdr) + id_size + length; /* if packed */
    /* The target's memory mapped here: a copy into it, then the id. Small
     * puts still travel with the id (one message beats a copy and one). */
    uint8_t *direct   = ((kind == pwc_kind::PUT) && (length > packed_over_direct)) ?
                            direct_target(ep, rkey, remote_addr) :
                            nullptr;
    const bool packed = (kind == pwc_kind::PUT) && (length != 0) && (length <= st->packed_max) &&
                        ((direct == nullptr) || (length <= packed_over_direct)) &&
                        (message_size <= ep->am_ep->owner().attr().am.max_bcopy);
    const bool must_wait = !peer->waiting.empty() || (takes_credit && (peer->credits == 0));
    if (must_wait && (peer->waiting.size() >= st->window)) {
        return UCS_ERR_NO_RESOURCE; /* the target's queue and ours are full */
    }
    /* The common small case: one message now, no record (its local part is
     * done when the lane took a copy). */
    const bool copies_now = (direct != nullptr) && !packed;
    if (!must_wait && (packed || copies_now || ((length == 0) && remote)) && lane_free(ep)) {
        if (copies_now) {
            std::memcpy(direct, buffer, length);
            std::atomic_thread_fence(std::memory_order_release); /* data before id */
            if (!remote) {
                if (!(flags & UCP_PWC_FLAG_NO_LCE)) {
                    pwc_push_local(ep->worker, ep,
                                   (local_cid != nullptr) ? *local_cid : ucp_cid_t{}, 0, UCS_OK);
                }
                return UCS_OK;
            }
            length = 0; /* what is left is the id */
        }
        message m{};
        m.hdr.src_uuid = ep->worker->uuid;
        m.hdr.ep_id    = ep->remote_id;
        m.hdr.cid      = (remote && (remote_cid != nullptr)) ? remote_cid->u64 : 0;
        m.hdr.id_size  = uint32_t(id_size);
        m.hdr.flags    = wire_flags(flags, kind, packed);
        m.id           = (id_size != 0) ? remote_cid->data : nullptr;
        if (packed) {
            m.hdr.address = remote_addr;
            m.hdr.secret  = rkey->secret;
            m.length      = length;
            m.data        = buffer;
        }
        const ssize_t sent = send_now(ep, m);
        if (sent >= 0) {
            if (takes_credit) {
                --peer->credits;
            }
            if (!(flags & UCP_PWC_FLAG_NO_LCE)) {
                pwc_push_local(ep->worker, ep, (local_cid != nullptr) ? *local_cid : ucp_cid_t{}, 0,
                               UCS_OK);
            }
            return UCS_OK;
        }
        if ((sent != UCS_ERR_NO_RESOURCE) && !copies_now) {
            return ucs_status_t(sent);
        }
        /* The data is in place already: the id goes as an operation (which
         * also reports a failure). */
    }
    auto op         = std::make_unique<pwc_op>();
    op->worker      = ep->worker;
    op->ep          = ep;
    op->kind        = kind;
    op->buffer      = static_cast<uint8_t *>(buffer);
    op->length      = length;
    op->remote_addr = remote_addr;
    op->rkey        = rkey;
    op->secret      = (rkey != nullptr) ? rkey->secret : 0;
    op->local_cid   = (local_cid != nullptr) ? *local_cid : ucp_cid_t{};
    op->flags       = flags;
    if (remote && (remote_cid != nullptr)) {
        op->remote_u64 = remote_cid->u64;
        if (id_size != 0) {
            const auto *bytes = static_cast<const uint8_t *>(remote_cid->data);
            op->remote_payload.assign(bytes, bytes + id_size);
        }
    }
    op->takes_credit = takes_credit;
    op->packed       = packed;
    ++peer->pending;
    ++st->pending;
    pwc_op *raw = op.release();
    if (must_wait) {
        peer->waiting.push_back(raw);
    } else {
        start(raw);
    }
    return UCS_OK;
}

ucs_status_t post(ucp_ep *ep, pwc_kind kind, void *buffer, size_t length, uint64_t remote_addr,
                  ucp_rkey *rkey, const ucp_cid_t *local_cid, const ucp_cid_t *remote_cid,
                  unsigned flags)
{
    if (ep == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucs_status_t status = check_args(kind, buffer, length, remote_addr, rkey, remote_cid, flags);
    if (status != UCS_OK) {
        return status;
    }
    worker_guard guard(ep->worker);
    return guarded((kind == pwc_kind::PUT) ? "ucp_pwc_put" : "ucp_pwc_get", [&]() {
        return post_locked(ep, kind, buffer, length, remote_addr, rkey, local_cid, remote_cid,
                           flags);
    });
}

} // namespace

ucs_status_ptr_t pwc_send_request(ucp_ep *ep, uint8_t am_id, send_step_t step,
                                  const ucp_request_param_t *param)
{
    request *req = send_request_get(ep->worker, param);
    if (req == nullptr) {
        return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    }
    send_state &s = req->u.send;
    s.ep          = ep;
    s.bounce      = nullptr;
    s.reg         = {};
    s.offset      = 0;
    s.am_id       = am_id;
    (void)s.packer.start(ucp_dt_make_contig(1), nullptr, 0);
    s.step = step;
    req->flags |= request_flag::NAMES_PEER_EP; /* the header names the peer's ep */
    return send_request_start(req, param);
}

pwc_state *pwc_state_make(ucp_worker *worker)
{
    if (worker->pwc == nullptr) {
        auto *st = new (std::nothrow) pwc_state;
        if (st == nullptr) {
            return nullptr;
        }
        const auto &cfg = worker->context.config;
        st->max_id_size = cfg.pwc_max_id_size;
        st->window      = std::max(cfg.pwc_credits, 1u);
        st->grant_batch = std::max(st->window / 2, 1u);
        st->packed_max  = cfg.pwc_packed_max;
        worker->pwc     = st;
    }
    return worker->pwc;
}

pwc_peer *pwc_peer_make(ucp_ep *ep)
{
    if (ep->pwc == nullptr) {
        pwc_state *st = pwc_state_of(ep->worker);
        if (st == nullptr) {
            return nullptr;
        }
        ep->pwc = new (std::nothrow) pwc_peer;
        if (ep->pwc != nullptr) {
            ep->pwc->credits = st->window;
        }
    }
    return ep->pwc;
}

void pwc_credits_returned(ucp_ep *ep, unsigned credits)
{
    pwc_peer *peer = pwc_peer_of(ep);
    if (peer == nullptr) {
        return;
    }
    /* More than we spent would be a peer's error: a window at most. */
    peer->credits = std::min(peer->credits + credits, ep->worker->pwc->window);
    start_waiting(ep);
}

void pwc_ep_gone(ucp_ep *ep, ucs_status_t status)
{
    if (ep->pwc == nullptr) {
        return;
    }
    std::deque<pwc_op *> waiting;
    waiting.swap(ep->pwc->waiting);
    for (pwc_op *op : waiting) {
        complete(op, status);
    }
}

} // namespace ucp::ext

extern "C" {

ucs_status_t ucp_pwc_put(ucp_ep_h ep, const void *buffer, size_t length, uint64_t remote_addr,
                         ucp_rkey_h rkey, const ucp_cid_t *local_cid, const ucp_cid_t *remote_cid,
                         unsigned flags)
{
    return ucp::ext::post(ep, ucp::ext::pwc_kind::PUT, const_cast<void *>(buffer), length,
                          remote_addr, rkey, local_cid, remote_cid, flags);
}

ucs_status_t ucp_pwc_get(ucp_ep_h ep, void *buffer, size_t length, uint64_t remote_addr,
                         ucp_rkey_h rkey, const ucp_cid_t *local_cid, const ucp_cid_t *remote_cid,
                         unsigned flags)
{
    return ucp::ext::post(ep, ucp::ext::pwc_kind::GET, buffer, length, remote_addr, rkey, local_cid,
                          remote_cid, flags);
}

} // extern "C"
