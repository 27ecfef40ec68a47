/*
 * Put and get with completion ids: the target's side, the completion
 * queues and ucp_pwc_probe (see pwc.h).
 */
#include "pwc.h"

#include "cntr.h"
#include "mem_cntr.h"
#include "op_cntr.h"

#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_guard.h>
#include <ucp/core/ucp_request.h>
#include <ucp/core/ucp_worker.h>
#include <ucp/proto/am_handlers.h>
#include <ucp/proto/send_common.h>
#include <ucp/proto/wire.h>
#include <ucs/debug/log.h>

#include <algorithm>
#include <cstring>

namespace ucp::ext {

namespace {

/* A remote id taken from the peer's queue that it counted against its
 * credits (one it asked to count on a counter we do not have did not). */
constexpr unsigned entry_credited = 1u << 31;

size_t pack_credit(void *dest, void *arg)
{
    auto *req  = static_cast<request *>(arg);
    ucp_ep *ep = req->u.send.ep;
    /* What is owed when it goes out: grants asked meanwhile ride along. */
    const wire::pwc_credit_hdr hdr{req->worker->uuid, ep->remote_id, ep->pwc->owed, 0};
    ep->pwc->owed = 0;
    std::memcpy(dest, &hdr, sizeof(hdr));
    return sizeof(hdr);
}

ucs_status_t credit_step(request *req)
{
    const ssize_t packed = req->u.send.ep->am_ep->am_bcopy(wire::AM_PWC_CREDIT, pack_credit, req,
                                                           0);
    if (packed < 0) {
        return ucs_status_t(packed);
    }
    req->u.send.ep->pwc->granting = false;
    send_done(req);
    return UCS_OK;
}

/* Gives the peer its credits back: inline when the lane is free, else
 * through a send request of the ep. */
void send_credits(ucp_ep *ep)
{
    if (lane_free(ep)) {
        const wire::pwc_credit_hdr hdr{ep->worker->uuid, ep->remote_id, ep->pwc->owed, 0};
        const uct::iov part{&hdr, sizeof(hdr), uct::MEM_HANDLE_NULL};
        if (send_inline(ep, wire::AM_PWC_CREDIT, &part, 1, sizeof(hdr)) == UCS_OK) {
            ep->pwc->owed = 0;
            return;
        }
    }
    const ucp_request_param_t param{};
    ep->pwc->granting             = true;
    const ucs_status_ptr_t result = pwc_send_request(ep, wire::AM_PWC_CREDIT, credit_step, &param);
    if (UCS_PTR_IS_PTR(result)) {
        ucp_request_free(result);
    } else if (result != nullptr) {
        /* No memory (the next id taken tries again) or the ep failed. */
        ep->pwc->granting = false;
    }
}

/* Hands the front of `queue` to the caller, written straight into `out`:
 * credits first (a remote one taken lets its peer send more), its id's
 * bytes kept until the next probe. */
void hand_out(pwc_state *st, pwc_queue &queue, ucp_pwc_completion_t *out, ucp_pwc_handler_t handler,
              void *arg)
{
    *out = queue.front();
    queue.pop_front();
    const bool credited = out->flags & entry_credited;
    out->flags &= ~entry_credited;
    if ((&queue == &st->remote) && (out->cid.size != 0)) {
        st->handed_out.emplace_back(static_cast<uint8_t *>(const_cast<void *>(out->cid.data)));
    }
    if (credited && (out->ep != nullptr)) {
        pwc_ids_taken(out->ep, 1);
    }
    if (handler != nullptr) {
        handler(out, arg); /* may post: the entry is off its queue */
    }
}

/* Moves the entries of `ep` to the front of `queue`, at most `max`, the
 * others behind them, each group in its order; how many moved. */
size_t gather_front(pwc_queue &queue, const ucp_ep *ep, size_t max)
{
    pwc_queue others;
    size_t moved = 0;
    for (size_t n = queue.size(); n > 0; --n) {
        const ucp_pwc_completion_t c = queue.front();
        queue.pop_front();
        if ((moved < max) && (c.ep == ep)) {
            queue.push_back(c);
            ++moved;
        } else {
            others.push_back(c);
        }
    }
    for (const ucp_pwc_completion_t &c : others) {
        queue.push_back(c);
    }
    return moved;
}

/* Takes up to `max` completions (some are queued). Out of line: the
 * spinning caller's call stays small. */
__attribute__((noinline)) size_t take_completions(pwc_state *st, unsigned flags, ucp_ep *ep,
                                                  ucp_pwc_handler_t handler, void *arg,
                                                  ucp_pwc_completion_t *completions, size_t max)
{
    size_t count = 0;
    ucp_pwc_completion_t scratch; /* for a handler without an array */
    if (!st->handed_out.empty()) {
        st->handed_out.clear();
    }
    auto take_from = [&](pwc_queue &queue) {
        const size_t take = (ep == nullptr) ? std::min(max - count, queue.size()) :
                                              gather_front(queue, ep, max - count);
        for (size_t i = 0; i < take; ++i, ++count) {
            hand_out(st, queue, (completions != nullptr) ? &completions[count] : &scratch, handler,
                     arg);
        }
    };
    if ((flags & UCP_PWC_PROBE_LOCAL) && !st->local.empty()) {
        take_from(st->local);
    }
    if ((flags & UCP_PWC_PROBE_REMOTE) && !st->remote.empty()) {
        take_from(st->remote);
    }
    return count;
}

ucs_status_t probe_locked(ucp_worker *worker, unsigned flags, ucp_ep *ep, ucp_pwc_handler_t handler,
                          void *arg, ucp_pwc_completion_t *completions, size_t max, size_t *count_p,
                          size_t *pending_p)
{
    pwc_state *st = worker->pwc;
    /* The spinning caller's common case: nothing came. */
    *count_p = ((st != nullptr) && (max != 0) && (!st->local.empty() || !st->remote.empty())) ?
                   take_completions(st, flags, ep, handler, arg, completions, max) :
                   0;
    if (pending_p != nullptr) {
        *pending_p = (st == nullptr)      ? 0 :
                     (ep == nullptr)      ? st->pending :
                     (ep->pwc != nullptr) ? ep->pwc->pending :
                                            0;
    }
    return UCS_OK;
}

} // namespace

void pwc_push_local(ucp_worker *worker, ucp_ep *ep, const ucp_cid_t &cid, unsigned flags,
                    ucs_status_t status)
{
    worker->pwc->local.push_back({UCP_PWC_COMPLETION_LOCAL | flags, status, ep, cid});
}

void pwc_grant_credits(ucp_ep *ep)
{
    if (!ep->pwc->granting && ep->usable()) {
        send_credits(ep);
    }
}

void pwc_ep_destroyed(ucp_ep *ep)
{
    pwc_state *st = ep->worker->pwc;
    if (st != nullptr) {
        for (pwc_queue *queue : {&st->local, &st->remote}) {
            for (ucp_pwc_completion_t &c : *queue) {
                if (c.ep == ep) {
                    c.ep = nullptr;
                }
            }
        }
    }
    delete ep->pwc;
    ep->pwc = nullptr;
}

pwc_state::~pwc_state()
{
    for (const ucp_pwc_completion_t &c : remote) {
        delete[] static_cast<const uint8_t *>(c.cid.data);
    }
}

void pwc_cleanup(ucp_worker *worker)
{
    pwc_state *st = worker->pwc;
    if (st == nullptr) {
        return;
    }
    if (st->remote_cntr != nullptr) {
        --st->remote_cntr->pending_work;
    }
    delete st;
    worker->pwc = nullptr;
}

} // namespace ucp::ext

namespace ucp {

ucs_status_t pwc_handler(void *arg, void *data, size_t length, unsigned)
{
    auto *worker = static_cast<ucp_worker *>(arg);
    ucs::wire_reader r(data, length);
    wire::pwc_hdr hdr;
    if (!r.get(&hdr)) {
        ucs_warn("worker '%s': dropping a short put with completion", worker->name.c_str());
        return UCS_OK;
    }
    ucp_ep *ep         = sender_ep(worker, hdr.ep_id, hdr.src_uuid);
    ext::pwc_state *st = ext::pwc_state_of(worker);
    if ((ep == nullptr) || (st == nullptr)) {
        return UCS_OK;
    }
    const bool credited = !(hdr.flags & (wire::pwc_flag::NO_RCE | wire::pwc_flag::REMOTE_CNTR));
    const uint8_t *id;
    if ((hdr.flags & ~wire::pwc_flag::ALL) || (hdr.id_size > st->max_id_size) ||
        !r.bytes(hdr.id_size, &id) || (!(hdr.flags & wire::pwc_flag::DATA) && !r.at_end())) {
        ucs_error("worker '%s': dropping a malformed put with completion (flags 0x%x, id of "
                  "%u bytes, %zu bytes after it, UCX_PWC_MAX_ID_SIZE %zu)",
                  worker->name.c_str(), hdr.flags, hdr.id_size, r.left(), st->max_id_size);
        return UCS_OK;
    }
    if (hdr.flags & wire::pwc_flag::DATA) {
        const size_t size = r.left();
        region_counter counter;
        if (!worker->context.mapped_regions.contains(worker->rma.region_cache, hdr.address, size,
                                                     hdr.secret, &counter)) {
            ucs_error("worker '%s': refused a put with completion to 0x%llx+%zu outside the "
                      "regions its key opens",
                      worker->name.c_str(), static_cast<unsigned long long>(hdr.address), size);
            if (credited) {
                ext::pwc_ids_taken(ep, 1); /* no id queued: its credit goes back */
            }
            return UCS_OK;
        }
        if (size == sizeof(uint64_t)) {
            /* A word, the common signalled value: no call into memcpy. */
            uint64_t word;
            std::memcpy(&word, r.pos(), sizeof(word));
            std::memcpy(reinterpret_cast<void *>(hdr.address), &word, sizeof(word));
        } else if (size != 0) {
            std::memcpy(reinterpret_cast<void *>(hdr.address), r.pos(), size);
        }
        ext::count_remote(counter, UCP_MEM_CNTR_REMOTE_WRITE, size);
    }
    if (hdr.flags & wire::pwc_flag::NO_RCE) {
        return UCS_OK;
    }
    if ((hdr.flags & wire::pwc_flag::REMOTE_CNTR) && (st->remote_cntr != nullptr)) {
        ucp_cntr_add(st->remote_cntr, 1);
        return UCS_OK;
    }
    ucp_cid_t cid{hdr.cid, nullptr, 0};
    if (hdr.id_size != 0) {
        /* The queue's copy until the probe hands it out. */
        auto *bytes = new (std::nothrow) uint8_t[hdr.id_size];
        if (bytes == nullptr) {
            ucs_error("worker '%s': no memory for a %u-byte completion id; it is lost",
                      worker->name.c_str(), hdr.id_size);
            return UCS_OK;
        }
        std::memcpy(bytes, id, hdr.id_size);
        cid = {hdr.cid, bytes, hdr.id_size};
    }
    st->remote.push_back(
        {UCP_PWC_COMPLETION_REMOTE |
             ((hdr.flags & wire::pwc_flag::GET) ? unsigned(UCP_PWC_COMPLETION_GET) : 0u) |
             (credited ? ext::entry_credited : 0u),
         UCS_OK, ep, cid});
    return UCS_OK;
}

ucs_status_t pwc_credit_handler(void *arg, void *data, size_t length, unsigned)
{
    auto *worker = static_cast<ucp_worker *>(arg);
    ucs::wire_reader r(data, length);
    wire::pwc_credit_hdr hdr;
    if (!r.get(&hdr)) {
        ucs_warn("worker '%s': dropping a short credit grant", worker->name.c_str());
        return UCS_OK;
    }
    ucp_ep *ep = sender_ep(worker, hdr.ep_id, hdr.src_uuid);
    if (ep != nullptr) {
        ext::pwc_credits_returned(ep, hdr.credits);
    }
    return UCS_OK;
}

} // namespace ucp

extern "C" {

ucs_status_t ucp_pwc_probe(ucp_worker_h worker, const ucp_pwc_probe_params_t *params,
                           ucp_pwc_completion_t *completions, size_t max, size_t *count_p,
                           size_t *pending_p)
{
    const uint64_t known = UCP_PWC_PROBE_FIELD_FLAGS | UCP_PWC_PROBE_FIELD_EP |
                           UCP_PWC_PROBE_FIELD_HANDLER;
    const uint64_t fields = (params != nullptr) ? params->field_mask : 0;
    const unsigned flags  = (fields & UCP_PWC_PROBE_FIELD_FLAGS) ? params->flags : 0;
    ucp_ep *ep            = (fields & UCP_PWC_PROBE_FIELD_EP) ? params->ep : nullptr;
    const auto handler    = (fields & UCP_PWC_PROBE_FIELD_HANDLER) ? params->handler : nullptr;
    void *arg             = (fields & UCP_PWC_PROBE_FIELD_HANDLER) ? params->arg : nullptr;
    if ((worker == nullptr) || (count_p == nullptr) || (fields & ~known) ||
        (flags & ~unsigned(UCP_PWC_PROBE_LOCAL | UCP_PWC_PROBE_REMOTE)) ||
        ((max > 0) && (completions == nullptr) && (handler == nullptr)) ||
        ((fields & UCP_PWC_PROBE_FIELD_EP) && ((ep == nullptr) || (ep->worker != worker)))) {
        ucs_error("ucp_pwc_probe: invalid arguments");
        return UCS_ERR_INVALID_PARAM;
    }
    const unsigned which = (flags != 0) ? flags : (UCP_PWC_PROBE_LOCAL | UCP_PWC_PROBE_REMOTE);
    /* A progress of the worker, then the queues, under one guard. */
    ucp::worker_guard guard(worker);
    return ucp::guarded("ucp_pwc_probe", [&]() {
        worker->progress_locked();
        return ucp::ext::probe_locked(worker, which, ep, handler, arg, completions, max, count_p,
                                      pending_p);
    });
}

ucs_status_t ucp_pwc_bind_cntr(ucp_worker_h worker, ucp_cntr_h cntr)
{
    if (worker == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucp::worker_guard guard(worker);
    return ucp::guarded("ucp_pwc_bind_cntr", [&]() {
        if ((cntr != nullptr) && !ucp::ext::cntr_live_on(cntr, worker, "ucp_pwc_bind_cntr")) {
            return UCS_ERR_INVALID_PARAM;
        }
        ucp::ext::pwc_state *st = ucp::ext::pwc_state_of(worker);
        if (st == nullptr) {
            return UCS_ERR_NO_MEMORY;
        }
        if (st->remote_cntr != nullptr) {
            --st->remote_cntr->pending_work;
        }
        st->remote_cntr = cntr;
        if (cntr != nullptr) {
            ++cntr->pending_work; /* not destroyed while bound */
        }
        return UCS_OK;
    });
}

} // extern "C"
