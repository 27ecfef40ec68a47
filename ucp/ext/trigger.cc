/*
 * Triggered operations, ucp_cntr_op_nbx and the deferred work queue (see
 * trigger.h and ucp/api/ucp_ext.h).
 */
#include "trigger.h"

#include "cntr.h"
#include "op_cntr.h"

#include <ucp/core/live_handles.h>
#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_guard.h>
#include <ucp/core/ucp_request.h>
#include <ucp/core/ucp_rkey.h>
#include <ucp/core/ucp_worker.h>
#include <ucp/proto/send_common.h>
#include <ucs/datastruct/intrusive_list.h>
#include <ucs/debug/log.h>
#include <ucs/type/c_enum.h>

#include <ucs/memory/mpool.h>

#include <algorithm>
#include <atomic>
#include <iterator>
#include <memory>
#include <vector>

namespace ucp::ext {

/* A queued or started triggered operation (its trigger_entry: the place in
 * its trigger counter's queue, and the threshold). From the worker's pool
 * of records: a post allocates nothing else but the caller's request. */
struct trigger_op : trigger_entry {
    op_desc desc;
    start_fn start;
    ucp_request_param_t user; /* the caller's parameters */
    ucp_cntr *cntr;           /* completion counters */
    ucp_cntr *err_cntr;
    ucp_cntr *updates; /* ucp_cntr_op_nbx: the counter it changes */
    ucp_cntr *trigger;
    uint64_t rkeys_destroyed; /* at post: desc.rkey is live while unchanged */
    request *outer;           /* what the caller holds */
    void *inner = nullptr;    /* the started operation's request */
    ucs::list_link ops_link;  /* in trigger_state::ops */
    bool started  = false;
    bool finished = false; /* completed; kept until a cancel batch ends */
};

struct trigger_state {
    /* Counters with queued operations (has_triggers set); nullptr where one
     * was destroyed while firing ran. */
    std::vector<ucp_cntr *> armed;
    /* Queued and started operations (the request their caller holds names
     * its own in request::id). */
    ucs::intrusive_list<trigger_op, &trigger_op::ops_link> ops;
    ucs::mpool records; /* of trigger_op */
    /* Cancel batches running: operations finished meanwhile stay allocated
     * (graveyard) so the batch can tell them from live ones. */
    unsigned batch = 0;
    std::vector<trigger_op *> graveyard;
    unsigned progress_id = ucs::callback_queue::invalid_id;
    bool firing          = false;
    /* A queue may have emptied by a cancel: the next firing call tidies. */
    bool maybe_idle = false;
    /* A counter with queued operations changed (any thread), or a post
     * queued behind due ones: the next firing call looks. Otherwise the
     * call every progress makes while operations wait returns at once. */
    std::atomic<bool> maybe_due{false};
};

namespace {

/* A firing pass that keeps starting operations (counter updates that meet
 * further thresholds) runs again, up to this many times per progress. */
constexpr unsigned max_firing_passes = 64;

/* nullptr when out of memory. */
trigger_state *state_of(ucp_worker *worker)
{
    if (worker->triggers == nullptr) {
        auto st = std::make_unique<trigger_state>();
        ucs::mpool_params params;
        params.name            = "ucp_trigger_ops";
        params.elem_size       = sizeof(trigger_op);
        params.alignment       = alignof(trigger_op);
        params.elems_per_chunk = 64;
        if (st->records.init(params) != UCS_OK) {
            return nullptr;
        }
        worker->triggers = st.release();
    }
    return worker->triggers;
}

void release(trigger_op *op)
{
    op->~trigger_op();
    ucs::mpool::put(op);
}

trigger_op *first_queued(ucp_cntr *c)
{
    return static_cast<trigger_op *>(c->triggers.front());
}

bool due(ucp_cntr *c)
{
    return !c->triggers.empty() &&
           (c->value.load(std::memory_order_seq_cst) >= c->triggers.front()->threshold);
}

/* Behind the operations of its counter with a lower or equal threshold
 * (posting order among equals). Thresholds mostly come in increasing
 * order, and then the walk from the back stops at once. */
void enqueue(ucp_cntr *c, trigger_op *op)
{
    auto pos = c->triggers.end();
    while (pos != c->triggers.begin()) {
        auto before = std::prev(pos);
        if (before->threshold <= op->threshold) {
            break;
        }
        pos = before;
    }
    if (pos == c->triggers.end()) {
        c->triggers.push_back(*op);
    } else {
        cntr_trigger_queue::insert_before(*pos, *op);
    }
}

/* Holds (or lets go of) the counters an operation names. */
void hold_counters(const trigger_op *op, int delta)
{
    for (ucp_cntr *c : {op->cntr, op->err_cntr, op->updates, op->trigger}) {
        if (c != nullptr) {
            c->pending_work += unsigned(delta);
        }
    }
}

void finish(trigger_op *op, ucs_status_t status)
{
    request *outer    = op->outer;
    trigger_state &st = *outer->worker->triggers;
    st.ops.remove(*op);
    if (st.batch != 0) {
        op->finished = true;
        st.graveyard.push_back(op);
    } else {
        release(op);
    }
    request_complete(outer, status);
}

void on_started_send(void *request, ucs_status_t status, void *arg)
{
    auto *op = static_cast<trigger_op *>(arg);
    ucp_request_free(request);
    op->inner = nullptr;
    finish(op, status);
}

void on_started_recv(void *request, ucs_status_t status, const ucp_tag_recv_info_t *info, void *arg)
{
    auto *op = static_cast<trigger_op *>(arg);
    if ((info != nullptr) && (info != &op->outer->u.recv.info)) {
        op->outer->u.recv.info = *info;
    }
    ucp_request_free(request);
    op->inner = nullptr;
    finish(op, status);
}

ucs_status_ptr_t rkey_gone(const ucp_request_param_t *)
{
    return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
}

/* Starts a queued operation (taken off its counter's queue already). */
void start(trigger_op *op)
{
    op->started              = true;
    ucp_request_param_t base = op->user;
    base.op_attr_mask &= ~uint32_t(UCP_OP_ATTR_FIELD_REQUEST | UCP_OP_ATTR_FLAG_NO_IMM_CMPL);
    base.op_attr_mask |= UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    base.user_data = op;
    if (op->desc.kind == op_kind::TAG_RECV) {
        base.cb.recv = on_started_recv;
        base.op_attr_mask |= UCP_OP_ATTR_FIELD_RECV_INFO;
        base.recv_info.tag_info = &op->outer->u.recv.info;
    } else {
        base.cb.send = on_started_send;
    }
    /* Let go after the call (counted() holds the completion counters itself
     * from its start; the trigger was let go when the operation left its
     * queue), from copies: a call never runs its callback inside, but the
     * record is not read after it unless the call returned a request. */
    ucp_cntr *const held[] = {op->cntr, op->err_cntr, op->updates};
    op->trigger            = nullptr;
    const bool rkey_dead   = (op->desc.rkey != nullptr) &&
                           (rkeys_destroyed() != op->rkeys_destroyed) &&
                           !live_handles<ucp_rkey>::instance().contains(op->desc.rkey);
    ucs_status_ptr_t result;
    if (!rkey_dead && (op->cntr == nullptr) && (op->err_cntr == nullptr)) {
        result = op->start(&base); /* nothing to count */
    } else {
        ucp_ext_request_param_t p{};
        p.base = base;
        p.base.op_attr_mask |= UCP_OP_ATTR_FIELD_EXT;
        p.ext_field_mask = ((op->cntr != nullptr) ? UCP_EXT_PARAM_FIELD_CNTR : 0) |
                           ((op->err_cntr != nullptr) ? UCP_EXT_PARAM_FIELD_ERR_CNTR : 0);
        p.cntr     = op->cntr;
        p.err_cntr = op->err_cntr;
        if (rkey_dead) {
            ucs_error("triggered operation %p: its remote key %p was destroyed before it "
                      "started",
                      op->outer->user_ptr(), static_cast<void *>(op->desc.rkey));
            result = counted(op->desc, &p.base, rkey_gone);
        } else {
            result = counted(op->desc, &p.base, op->start);
        }
    }
    for (ucp_cntr *c : held) {
        if (c != nullptr) {
            --c->pending_work;
        }
    }
    if (UCS_PTR_IS_PTR(result)) {
        op->inner = result; /* finishes in on_started_* */
        return;
    }
    finish(op, UCS_PTR_STATUS(result));
}

/* A queued operation that will not start: completes with `status`. */
void cancel(trigger_op *op, ucs_status_t status)
{
    cntr_trigger_queue::remove(*op);
    op->outer->worker->triggers->maybe_idle = true;
    count_failure(op->cntr, op->err_cntr);
    hold_counters(op, -1);
    finish(op, status);
}

/* Drops armed counters whose queues are empty; the progress callback goes
 * with the last. */
void disarm_idle(ucp_worker *worker, trigger_state &st)
{
    auto idle = [](ucp_cntr *c) {
        if ((c != nullptr) && c->triggers.empty()) {
            c->has_triggers.store(false, std::memory_order_relaxed);
            return true;
        }
        return c == nullptr;
    };
    st.armed.erase(std::remove_if(st.armed.begin(), st.armed.end(), idle), st.armed.end());
    if (st.armed.empty() && (st.progress_id != ucs::callback_queue::invalid_id)) {
        worker->progress_queue.remove(st.progress_id);
        st.progress_id = ucs::callback_queue::invalid_id;
    }
}

/* The worker's progress callback (fire_due): starts what is due, counter
 * by counter in threshold order. Not re-entered: a callback that progresses
 * (a fence) leaves firing to the outer call. */
__attribute__((noinline)) unsigned fire_due_slow(ucp_worker *worker, trigger_state &st)
{
    st.firing        = true;
    unsigned started = 0;
    unsigned pass    = 0;
    for (;;) {
        /* By index: operations started here may arm more counters. */
        for (size_t i = 0; i < st.armed.size(); ++i) {
            ucp_cntr *c = st.armed[i];
            if (c == nullptr) {
                continue;
            }
            ++c->pending_work; /* not destroyed by a callback meanwhile */
            while (due(c)) {
                trigger_op *op = first_queued(c);
                cntr_trigger_queue::remove(*op);
                --c->pending_work; /* its hold as trigger */
                st.maybe_idle |= c->triggers.empty();
                start(op);
                ++started;
            }
            --c->pending_work;
        }
        /* Again only if what started (or another thread) changed a counter
         * with queued operations, or posted behind due ones. */
        if (!st.maybe_due.load(std::memory_order_relaxed)) {
            break;
        }
        if (++pass == max_firing_passes) {
            break; /* the flag stays: the next progress goes on */
        }
        st.maybe_due.exchange(false, std::memory_order_acq_rel);
    }
    if (st.maybe_idle) {
        st.maybe_idle = false;
        disarm_idle(worker, st);
    }
    st.firing = false;
    return started;
}

unsigned fire_due(void *arg)
{
    auto *worker      = static_cast<ucp_worker *>(arg);
    trigger_state &st = *worker->triggers;
    /* The common call (every progress of a spinning application while
     * operations wait): nothing changed, nothing due. A plain load first:
     * no locked instruction (a full barrier) on each poll. */
    if (st.firing ||
        (!st.maybe_idle && (!st.maybe_due.load(std::memory_order_relaxed) ||
                            !st.maybe_due.exchange(false, std::memory_order_acq_rel)))) {
        return 0;
    }
    return fire_due_slow(worker, st);
}

void arm(ucp_worker *worker, trigger_state &st, ucp_cntr *c)
{
    if (!c->has_triggers.load(std::memory_order_relaxed)) {
        st.armed.push_back(c);
        c->has_triggers.store(true, std::memory_order_seq_cst); /* see cntr.cc, update */
    }
    if (st.progress_id == ucs::callback_queue::invalid_id) {
        st.progress_id = worker->progress_queue.add_persistent(fire_due, worker);
    }
    /* Posted behind operations already due: the next firing call looks. */
    if (due(c)) {
        st.maybe_due.store(true, std::memory_order_release);
    }
}

/* The request the caller holds for a queued operation. */
request *outer_request(ucp_worker *worker, const ucp_request_param_t *param, op_kind kind)
{
    request *req = send_request_get(worker, param);
    if (req == nullptr) {
        return nullptr;
    }
    req->flags |= request_flag::TRIGGERED;
    if (kind == op_kind::TAG_RECV) {
        req->flags |= request_flag::RECV;
        req->cb.recv     = (param->op_attr_mask & UCP_OP_ATTR_FIELD_CALLBACK) ? param->cb.recv :
                                                                                nullptr;
        req->u.recv.info = {};
    }
    return req;
}

/* The live triggered operation whose caller holds `req`, or nullptr (not
 * a triggered operation's request, or completed). Reads the request as the
 * other ucp_request_* calls do. */
trigger_op *find(ucp_worker *worker, const request *req)
{
    if ((worker->triggers == nullptr) || !(req->flags & request_flag::TRIGGERED) ||
        (req->flags & request_flag::COMPLETED) || (req->worker != worker)) {
        return nullptr;
    }
    auto *op = reinterpret_cast<trigger_op *>(uintptr_t(req->id));
    return ((op != nullptr) && (op->outer == req) && !op->finished) ? op : nullptr;
}

/* The queued operations waiting for `trigger` (all when nullptr). */
std::vector<trigger_op *> queued(ucp_worker *worker, ucp_cntr *trigger)
{
    std::vector<trigger_op *> ops;
    if (worker->triggers == nullptr) {
        return ops;
    }
    for (ucp_cntr *c : worker->triggers->armed) {
        if ((c != nullptr) && ((trigger == nullptr) || (c == trigger))) {
            for (trigger_entry &entry : c->triggers) {
                ops.push_back(static_cast<trigger_op *>(&entry));
            }
        }
    }
    return ops;
}

/* Cancels each operation of `ops` still queued that `pred` selects. The
 * callbacks of the cancelled may post, start or cancel others: records
 * finished meanwhile stay allocated until the batch ends. */
template <typename Pred>
size_t cancel_queued(ucp_worker *worker, const std::vector<trigger_op *> &ops, ucs_status_t status,
                     Pred &&pred)
{
    if (ops.empty()) {
        return 0;
    }
    trigger_state &st = *worker->triggers;
    size_t cancelled  = 0;
    ++st.batch;
    for (trigger_op *op : ops) {
        if (!op->finished && !op->started && pred(*op)) {
            cancel(op, status);
            ++cancelled;
        }
    }
    if (--st.batch == 0) {
        for (trigger_op *op : st.graveyard) {
            release(op);
        }
        st.graveyard.clear();
    }
    return cancelled;
}

ucs_status_ptr_t post_locked(const op_desc &desc, const ucp_ext_request_param_t *ext,
                             const start_fn &start_op)
{
    ucp_worker *worker = desc.worker;
    ucp_cntr *trigger  = ext->trigger_cntr;
    if (trigger == nullptr) {
        ucs_error("UCP_EXT_PARAM_FIELD_TRIGGER: trigger_cntr is NULL");
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    if (!cntr_live_on(trigger, worker, "UCP_EXT_PARAM_FIELD_TRIGGER: trigger_cntr")) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    /* Live now, so that starting needs to look again only if some key was
     * destroyed meanwhile (trigger_op::rkeys_destroyed). */
    const uint64_t rkeys_before = rkeys_destroyed();
    if ((desc.rkey != nullptr) && !live_handles<ucp_rkey>::instance().contains(desc.rkey)) {
        ucs_error("triggered operation: remote key %p is not live", static_cast<void *>(desc.rkey));
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    /* Met already, and nothing due before it: the plain call, now (which
     * checks the other ext fields itself). */
    if ((trigger->value.load(std::memory_order_acquire) >= ext->trigger_threshold) &&
        !due(trigger)) {
        ucp_ext_request_param_t now = *ext;
        now.ext_field_mask &= ~uint64_t(UCP_EXT_PARAM_FIELD_TRIGGER);
        return counted(desc, &now.base, start_op);
    }
    ucp_cntr *cntr, *err_cntr;
    const uint64_t known = UCP_EXT_PARAM_FIELD_CNTR | UCP_EXT_PARAM_FIELD_ERR_CNTR |
                           UCP_EXT_PARAM_FIELD_TRIGGER;
    ucs_status_t status = ext_counters(ext, worker, known, &cntr, &err_cntr);
    if (status != UCS_OK) {
        return UCS_STATUS_PTR(status);
    }
    if (ext->base.op_attr_mask & UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL) {
        return UCS_STATUS_PTR(UCS_ERR_NO_RESOURCE); /* it cannot start now */
    }
    if ((ext->base.op_attr_mask & UCP_OP_ATTR_FIELD_REQUEST) && (ext->base.request == nullptr)) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    trigger_state *st = state_of(worker);
    void *record      = (st != nullptr) ? st->records.get() : nullptr;
    if (record == nullptr) {
        return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    }
    request *outer = outer_request(worker, &ext->base, desc.kind);
    if (outer == nullptr) {
        ucs::mpool::put(record);
        return UCS_STATUS_PTR(UCS_ERR_NO_MEMORY);
    }
    auto *op = new (record) trigger_op{{{}, ext->trigger_threshold},
                                       desc,
                                       start_op,
                                       ext->base,
                                       cntr,
                                       err_cntr,
                                       desc.updates,
                                       trigger,
                                       rkeys_before,
                                       outer,
                                       nullptr,
                                       {},
                                       false,
                                       false};
    op->user.op_attr_mask &= ~uint32_t(UCP_OP_ATTR_FIELD_EXT);
    outer->id = uintptr_t(op); /* no HAS_ID: the field is free */
    st->ops.push_back(*op);
    enqueue(trigger, op);
    hold_counters(op, +1);
    arm(worker, *st, trigger);
    return outer->user_ptr();
}

} // namespace

bool wants_trigger(const ucp_request_param_t *param)
{
    return wants_counting(param) &&
           (reinterpret_cast<const ucp_ext_request_param_t *>(param)->ext_field_mask &
            UCP_EXT_PARAM_FIELD_TRIGGER);
}

ucs_status_ptr_t post_triggered(const op_desc &desc, const ucp_request_param_t *param,
                                start_fn start_op)
{
    if (!desc.can_trigger) {
        ucs_error("UCP_EXT_PARAM_FIELD_TRIGGER: this call cannot be triggered");
        return UCS_STATUS_PTR(UCS_ERR_UNSUPPORTED);
    }
    if (desc.worker == nullptr) {
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    worker_guard guard(desc.worker);
    ucs_status_ptr_t result   = nullptr;
    const ucs_status_t status = guarded("triggered operation", [&]() {
        result = post_locked(desc, reinterpret_cast<const ucp_ext_request_param_t *>(param),
                             start_op);
        return UCS_OK;
    });
    return (status == UCS_OK) ? result : UCS_STATUS_PTR(status);
}

void triggers_counter_changed(ucp_cntr *cntr)
{
    cntr->worker->triggers->maybe_due.store(true, std::memory_order_release);
}

bool triggers_due(const ucp_worker &worker)
{
    if (worker.triggers == nullptr) {
        return false;
    }
    return std::any_of(worker.triggers->armed.begin(), worker.triggers->armed.end(),
                       [](ucp_cntr *c) { return (c != nullptr) && due(c); });
}

void triggers_ep_gone(ucp_ep *ep, ucs_status_t status)
{
    cancel_queued(ep->worker, queued(ep->worker, nullptr), status,
                  [ep](const trigger_op &op) { return op.desc.ep == ep; });
}

void triggers_forget_cntr(ucp_cntr *cntr)
{
    trigger_state *st = cntr->worker->triggers;
    if ((st == nullptr) || !cntr->has_triggers.load(std::memory_order_relaxed)) {
        return;
    }
    auto it = std::find(st->armed.begin(), st->armed.end(), cntr);
    if (it == st->armed.end()) {
        return;
    }
    if (st->firing) {
        *it = nullptr; /* the firing loop walks the vector */
    } else {
        st->armed.erase(it);
    }
}

void trigger_request_cancel(ucp_worker_h worker, request *req)
{
    trigger_op *op = find(worker, req);
    if (op == nullptr) {
        return;
    }
    if (!op->started) {
        cancel(op, UCS_ERR_CANCELED);
    } else if (op->inner != nullptr) {
        ucp_request_cancel(worker, op->inner);
    }
}

void triggers_cleanup(ucp_worker *worker)
{
    trigger_state *st = worker->triggers;
    if (st == nullptr) {
        return;
    }
    if (!st->ops.empty()) {
        ucs_warn("worker '%s' destroyed with %zu triggered operations not completed",
                 worker->name.c_str(), size_t(st->ops.size()));
    }
    for (ucp_cntr *c : st->armed) {
        if (c != nullptr) {
            c->triggers = cntr_trigger_queue();
            c->has_triggers.store(false, std::memory_order_relaxed);
        }
    }
    for (trigger_op &op : st->ops.safe()) {
        st->ops.remove(op);
        hold_counters(&op, -1);
        release(&op);
    }
    if (st->progress_id != ucs::callback_queue::invalid_id) {
        worker->progress_queue.remove(st->progress_id);
    }
    delete st;
    worker->triggers = nullptr;
}

} // namespace ucp::ext

using ucp::ext::trigger_op;

extern "C" {

ucs_status_ptr_t ucp_cntr_op_nbx(ucp_cntr_h cntr, ucp_cntr_op_t op, uint64_t value,
                                 const ucp_request_param_t *param)
{
    if ((cntr == nullptr) || !ucp::live_handles<ucp_cntr>::instance().contains(cntr)) {
        ucs_error("ucp_cntr_op_nbx: %p is not a live counter", static_cast<void *>(cntr));
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    /* A C caller may pass any int: read it as one. */
    const int raw_op = ucs::raw_enum(op);
    if ((raw_op < UCP_CNTR_OP_ADD) || (raw_op > UCP_CNTR_OP_SET_ERR)) {
        ucs_error("ucp_cntr_op_nbx: unknown operation %d", raw_op);
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    auto apply = [cntr, raw_op, value](const ucp_request_param_t *) -> ucs_status_ptr_t {
        switch (raw_op) {
        case UCP_CNTR_OP_ADD:
            return UCS_STATUS_PTR(ucp_cntr_add(cntr, value));
        case UCP_CNTR_OP_SET:
            return UCS_STATUS_PTR(ucp_cntr_set(cntr, value));
        case UCP_CNTR_OP_ADD_ERR:
            return UCS_STATUS_PTR(ucp_cntr_add_err(cntr, value));
        default:
            return UCS_STATUS_PTR(ucp_cntr_set_err(cntr, value));
        }
    };
    if (!ucp::ext::wants_counting(param)) {
        return apply(param);
    }
    const auto *ext = reinterpret_cast<const ucp_ext_request_param_t *>(param);
    if (ext->ext_field_mask & (UCP_EXT_PARAM_FIELD_CNTR | UCP_EXT_PARAM_FIELD_ERR_CNTR)) {
        ucs_error("ucp_cntr_op_nbx: a counter update takes no completion counters");
        return UCS_STATUS_PTR(UCS_ERR_INVALID_PARAM);
    }
    if (!ucp::ext::wants_trigger(param)) {
        return apply(param);
    }
    ucp::ext::op_desc desc{cntr->worker, ucp::ext::op_kind::SEND, nullptr, 0};
    desc.updates = cntr;
    return ucp::ext::post_triggered(desc, param, apply);
}

ucs_status_t ucp_dwq_cancel(ucp_worker_h worker, void *request)
{
    if ((worker == nullptr) || (request == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucp::worker_guard guard(worker);
    trigger_op *op = ucp::ext::find(worker, ucp::request::from_user(request));
    if (op == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (op->started) {
        return UCS_ERR_BUSY;
    }
    ucp::ext::cancel(op, UCS_ERR_CANCELED);
    return UCS_OK;
}

ucs_status_t ucp_dwq_flush(ucp_worker_h worker, ucp_cntr_h trigger_cntr, size_t *cancelled_p)
{
    if (worker == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucp::worker_guard guard(worker);
    if ((trigger_cntr != nullptr) &&
        !ucp::ext::cntr_live_on(trigger_cntr, worker, "ucp_dwq_flush")) {
        return UCS_ERR_INVALID_PARAM;
    }
    /* What is queued now: operations the callbacks of the cancelled ones
     * post stay queued. */
    const size_t cancelled = ucp::ext::cancel_queued(worker, ucp::ext::queued(worker, trigger_cntr),
                                                     UCS_ERR_CANCELED,
                                                     [](const trigger_op &) { return true; });
    if (cancelled_p != nullptr) {
        *cancelled_p = cancelled;
    }
    return UCS_OK;
}

} // extern "C"
