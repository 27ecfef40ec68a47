/*
 * Running schedules (context.h): the AM handler of collective messages, the
 * ready list, each task's rounds, failures and the task pool.
 *
 * Where a message goes: the running task of its team and collective number,
 * if that task's current round started and has a receive from the sender
 * that is still open; otherwise it waits in `unexpected` until its round
 * starts, unless its collective already finished here (failed): then it is
 * dropped, as are those waiting when a collective fails, so that their
 * rendezvous senders complete. pending counts a round's receives still
 * open, pulls in flight and sends not completed; detached the sends of
 * rounds that do not wait for them.
 */
#include "context.h"

#include "algorithms.h"

#include <ucs/debug/log.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace coll {

namespace {

constexpr size_t max_pooled_tasks = 64;

void mark_ready(task *t)
{
    ucp_coll_context *ctx = t->team->ctx;
    if (!t->queued) {
        t->queued = true;
        ctx->ready.push_back(t);
    }
    ucp_worker_callback_schedule(ctx->worker, ctx->callback_id);
}

/* The current round's receives, if it started. */
recv_op *current_recvs(task *t, uint32_t *count)
{
    if (!t->started) {
        *count = 0;
        return nullptr;
    }
    const round &rd = t->rounds[t->current];
    *count          = rd.nrecvs;
    return t->recvs.data() + rd.first_recv;
}

/* The receives that will not come now that the task failed. */
void drop_open_recvs(task *t)
{
    uint32_t count;
    recv_op *recvs = current_recvs(t, &count);
    for (uint32_t i = 0; i < count; ++i) {
        if (!recvs[i].done) {
            recvs[i].done = true;
            --t->pending;
        }
    }
}

void fail(task *t, ucs_status_t status)
{
    if (t->error == UCS_OK) {
        t->error = status;
        ucs_debug("team 0x%lx collective %lu (%s): %s", (unsigned long)t->team->key,
                  (unsigned long)t->seq, t->algorithm, ucs_status_string(status));
    }
    drop_open_recvs(t);
}

ucs_status_t run_step(const step &s);
void finish(task *t);

/* One of the round's operations is done. When that ends the last round with
 * messages of a task that is fine and nobody waits for a callback, the task
 * finishes here, inside UCP's callback: the local steps left and the
 * bookkeeping call nothing of UCP, and the progress queue is spared. */
void op_done(task *t, ucs_status_t status)
{
    --t->pending;
    if (status != UCS_OK) {
        fail(t, status);
    }
    if (t->pending != 0) {
        return;
    }
    if (!t->advancing && t->started && (t->error == UCS_OK) && (t->detached == 0) &&
        (t->current >= t->last_message_round) && (t->cb == nullptr) && !t->user_freed) {
        /* The rounds left have local steps only (a rotation, a copy out). */
        ucs_status_t step_status = UCS_OK;
        while ((t->current < t->rounds.size()) && (step_status == UCS_OK)) {
            step_status = run_step(t->rounds[t->current].after);
            ++t->current;
        }
        t->started = false;
        if (step_status != UCS_OK) {
            fail(t, step_status);
        }
        finish(t);
        return;
    }
    mark_ready(t);
}

void send_done(void *request, ucs_status_t status, void *user_data)
{
    ucp_request_free(request);
    op_done(static_cast<task *>(user_data), status);
}

/* A send of a round that did not wait for it: the task waits for it only
 * before it finishes (advance_rounds). */
void detached_send_done(void *request, ucs_status_t status, void *user_data)
{
    ucp_request_free(request);
    task *t = static_cast<task *>(user_data);
    --t->detached;
    if (status != UCS_OK) {
        fail(t, status);
    }
    if ((t->pending == 0) && ((t->detached == 0) || (status != UCS_OK))) {
        mark_ready(t);
    }
}

void recv_data_done(void *request, ucs_status_t status, size_t, void *user_data)
{
    ucp_request_free(request);
    op_done(static_cast<task *>(user_data), status);
}

ucs_status_t check_length(task *t, size_t length, size_t expected)
{
    if (length == expected) {
        return UCS_OK;
    }
    ucs_error("team 0x%lx collective %lu (%s): a %zu-byte message where %zu were expected",
              (unsigned long)t->team->key, (unsigned long)t->seq, t->algorithm, length, expected);
    return UCS_ERR_MESSAGE_TRUNCATED;
}

/* Pulls a rendezvous message into buf; pending counts it while in flight. */
void pull(task *t, void *desc, void *buf, size_t bytes)
{
    ucp_request_param_t param{};
    param.op_attr_mask  = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.recv_am    = recv_data_done;
    param.user_data     = t;
    ucs_status_ptr_t sp = ucp_am_recv_data_nbx(t->team->ctx->worker, desc, buf, bytes, &param);
    if (UCS_PTR_IS_ERR(sp)) {
        fail(t, UCS_PTR_STATUS(sp));
    } else if (sp != nullptr) {
        ++t->pending;
    }
}

void release_arrival(ucp_worker_h worker, const arrival &a)
{
    if (a.small) {
        return;
    }
    if (a.held || a.rndv) {
        ucp_am_data_release(worker, a.data);
    } else {
        std::free(a.data);
    }
}

/* Drops the messages waiting in the context that `match` (of their key). */
template <typename Match>
void forget_messages(ucp_coll_context *ctx, Match &&match)
{
    for (auto it = ctx->unexpected.begin(); it != ctx->unexpected.end();) {
        if (match(it->first)) {
            release_arrival(ctx->worker, it->second);
            it = ctx->unexpected.erase(it);
        } else {
            ++it;
        }
    }
}

/* A message that waited for its round meets its receive. */
void deliver(task *t, recv_op &recv, const arrival &a)
{
    ucp_worker_h worker       = t->team->ctx->worker;
    recv.done                 = true;
    const ucs_status_t status = check_length(t, a.length, recv.bytes);
    if (status != UCS_OK) {
        fail(t, status);
        release_arrival(worker, a);
    } else if (a.rndv) {
        pull(t, a.data, recv.buf, recv.bytes);
    } else {
        if (a.length != 0) {
            std::memcpy(recv.buf, a.payload(), a.length);
        }
        release_arrival(worker, a);
    }
}

void start_round(task *t)
{
    ucp_team *team        = t->team;
    ucp_coll_context *ctx = team->ctx;
    round &rd             = t->rounds[t->current];
    const uint32_t index  = uint32_t(t->current);
    t->started            = true;
    recv_op *recvs        = t->recvs.data() + rd.first_recv;
    for (uint32_t i = 0; i < rd.nrecvs; ++i) {
        recv_op &recv = recvs[i];
        if (!ctx->unexpected.empty()) {
            auto it = ctx->unexpected.find(msg_key{team->key, t->seq, recv.peer, index});
            if (it != ctx->unexpected.end()) {
                deliver(t, recv, it->second);
                ctx->unexpected.erase(it);
                continue;
            }
        }
        ++t->pending; /* open until its message comes */
    }
    ucp_request_param_t param{};
    param.op_attr_mask  = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send       = rd.detached_sends ? detached_send_done : send_done;
    param.user_data     = t;
    unsigned &in_flight = rd.detached_sends ? t->detached : t->pending;
    send_op *sends      = t->sends.data() + rd.first_send;
    for (uint32_t i = 0; (i < rd.nsends) && (t->error == UCS_OK); ++i) {
        send_op &send = sends[i];
        send.hdr      = wire_hdr{team->key, t->seq, team->rank, index};
        ucs_status_ptr_t sp;
        if (send.bytes <= inline_max) {
            /* Header and data in one buffer and no user header: UCP's short
             * path when they fit it. The buffer lives with the task. */
            std::memcpy(send.packed, &send.hdr, sizeof(wire_hdr));
            if (send.bytes != 0) {
                std::memcpy(send.packed + sizeof(wire_hdr), send.buf, send.bytes);
            }
            sp = ucp_am_send_nbx(team->eps[send.peer], am_id, nullptr, 0, send.packed,
                                 sizeof(wire_hdr) + send.bytes, &param);
        } else {
            sp = ucp_am_send_nbx(team->eps[send.peer], am_id, &send.hdr, sizeof(send.hdr), send.buf,
                                 send.bytes, &param);
        }
        if (UCS_PTR_IS_ERR(sp)) {
            fail(t, UCS_PTR_STATUS(sp));
        } else if (sp != nullptr) {
            ++in_flight;
        }
    }
}

ucs_status_t run_step(const step &s)
{
    switch (s.kind) {
    case step::REDUCE:
        s.fn(s.dst, s.lo, s.hi, s.count);
        return UCS_OK;
    case step::COPY:
        if (s.dst != s.lo) {
            std::memmove(s.dst, s.lo, s.count);
        }
        return UCS_OK;
    case step::TEAM_CHECK: {
        const uint64_t *ours   = static_cast<const uint64_t *>(s.lo);
        const uint64_t *theirs = static_cast<const uint64_t *>(s.hi);
        if ((ours[0] != theirs[0]) || (ours[1] != theirs[1])) {
            ucs_error("team 0x%lx: a member made it with size %lu and key 0x%lx, this "
                      "process with size %lu",
                      (unsigned long)ours[1], (unsigned long)theirs[0], (unsigned long)theirs[1],
                      (unsigned long)ours[0]);
            return UCS_ERR_INVALID_PARAM;
        }
        return UCS_OK;
    }
    case step::BRUCK_SHUFFLE: {
        uint8_t *blocks = static_cast<uint8_t *>(s.dst);
        bruck_unpack(blocks, static_cast<const uint8_t *>(s.lo), s.ranks, s.dist, s.count);
        if (2 * s.dist < s.ranks) {
            bruck_pack(static_cast<uint8_t *>(const_cast<void *>(s.hi)), blocks, s.ranks,
                       2 * s.dist, s.count);
        }
        return UCS_OK;
    }
    case step::BRUCK_ROTATE: {
        uint8_t *out          = static_cast<uint8_t *>(s.dst);
        const uint8_t *blocks = static_cast<const uint8_t *>(s.lo);
        for (uint32_t i = 0; i < s.ranks; ++i) {
            std::memcpy(out + ((s.rank + s.ranks - i) % s.ranks) * s.count, blocks + i * s.count,
                        s.count);
        }
        return UCS_OK;
    }
    default:
        return UCS_OK;
    }
}

/* Tells the other members this collective failed here. */
void send_aborts(task *t)
{
    ucp_team *team = t->team;
    ucp_request_param_t param{};
    for (unsigned peer = 0; peer < team->size(); ++peer) {
        if (peer == team->rank) {
            continue;
        }
        team->abort_hdrs.push_back(wire_hdr{team->key, t->seq, team->rank, abort_round});
        ucs_status_ptr_t sp = ucp_am_send_nbx(team->eps[peer], am_id, &team->abort_hdrs.back(),
                                              sizeof(wire_hdr), nullptr, 0, &param);
        if ((sp != nullptr) && !UCS_PTR_IS_ERR(sp)) {
            ucp_request_free(sp); /* the header lives with the team */
        }
    }
}

void finish(task *t)
{
    ucp_team *team = t->team;
    t->status      = t->error;
    --team->active;
    auto it = std::find(team->running.begin(), team->running.end(), t);
    if (it != team->running.end()) {
        team->running.erase(it);
    }
    if ((t->status != UCS_OK) && !t->peer_aborted && (t->seq != 0)) {
        send_aborts(t);
    }
    if (t->status != UCS_OK) {
        /* Never to be received: released, so that the senders of rendezvous
         * ones complete (a pipeline's root may have sent every segment). */
        forget_messages(team->ctx, [t](const msg_key &k) {
            return (k.team_key == t->team->key) && (k.seq == t->seq);
        });
    }
    if (t->seq == 0) {
        team->ready = (t->status == UCS_OK); /* the team's creation */
    }
}

/* The loop of advance(). */
bool advance_rounds(task *t)
{
    while (t->pending == 0) {
        if (t->started) {
            const round &rd = t->rounds[t->current];
            if (t->error == UCS_OK) {
                const ucs_status_t status = run_step(rd.after);
                if (status != UCS_OK) {
                    fail(t, status);
                }
            }
            ++t->current;
            t->started = false;
        }
        if ((t->error != UCS_OK) || (t->current == t->rounds.size())) {
            if (t->detached != 0) {
                return false; /* its buffers are in use until they are sent */
            }
            finish(t);
            return true;
        }
        start_round(t);
    }
    return false;
}

/* Runs rounds until one waits; true when the task finished. */
bool advance(task *t)
{
    t->advancing    = true;
    const bool done = advance_rounds(t);
    t->advancing    = false;
    return done;
}

void notify(task *t)
{
    if (t->cb != nullptr) {
        t->cb(t, t->status, t->user_data);
    }
    if (t->user_freed) {
        task_put(t->team->ctx, t);
    }
}

unsigned progress(void *arg)
{
    ucp_coll_context *ctx = static_cast<ucp_coll_context *>(arg);
    unsigned count        = 0;
    while (!ctx->ready.empty()) {
        task *t = ctx->ready.front();
        ctx->ready.pop_front();
        t->queued = false;
        ++count;
        if ((t->status != UCS_INPROGRESS) || advance(t)) {
            notify(t);
        }
    }
    return count;
}

/* A member failed collective hdr.seq of a team. */
void peer_aborted(ucp_coll_context *ctx, const wire_hdr &hdr)
{
    auto team_it = ctx->teams.find(hdr.team_key);
    if (team_it == ctx->teams.end()) {
        return;
    }
    ucp_team *team = team_it->second;
    task *t        = team->running_task(hdr.seq);
    if (t == nullptr) {
        if (hdr.seq >= team->next_seq) {
            team->aborted.insert(hdr.seq); /* fails when it starts here */
        }
        return;
    }
    if (t->error == UCS_OK) {
        ucs_diag("team 0x%lx collective %lu: rank %u reports it failed", (unsigned long)team->key,
                 (unsigned long)hdr.seq, hdr.src);
        t->peer_aborted = true;
    }
    fail(t, UCS_ERR_REJECTED);
    if (t->pending == 0) {
        mark_ready(t);
    }
}

/* The open receive of a message, or nullptr. */
recv_op *open_recv(ucp_coll_context *ctx, const wire_hdr &hdr, task **t_p)
{
    auto team_it = ctx->teams.find(hdr.team_key);
    if (team_it == ctx->teams.end()) {
        return nullptr;
    }
    task *t = team_it->second->running_task(hdr.seq);
    if ((t == nullptr) || (t->current != hdr.round)) {
        return nullptr;
    }
    uint32_t count;
    recv_op *recvs = current_recvs(t, &count);
    for (uint32_t i = 0; i < count; ++i) {
        if ((recvs[i].peer == hdr.src) && !recvs[i].done) {
            *t_p = t;
            return &recvs[i];
        }
    }
    return nullptr;
}

/* A message of a collective that finished here (one that failed: a
 * collective that succeeded received all its messages). */
bool finished_here(ucp_coll_context *ctx, const wire_hdr &hdr)
{
    auto team_it = ctx->teams.find(hdr.team_key);
    return (team_it != ctx->teams.end()) && (hdr.seq < team_it->second->next_seq) &&
           (team_it->second->running_task(hdr.seq) == nullptr);
}

uint64_t now_ns()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

constexpr uint64_t probe_interval_ns = 100000000; /* 100 ms */
/* Status checks between clock reads: a poll loop checks often, and reading
 * the clock each time cost 10% of an 8-byte allreduce. */
constexpr unsigned polls_per_clock = 256;

} // namespace

void task_probe_peers(task *t)
{
    if ((t->status != UCS_INPROGRESS) || (++t->polls < polls_per_clock)) {
        return;
    }
    t->polls           = 0;
    const uint64_t now = now_ns();
    if (now - t->last_probe_ns < probe_interval_ns) {
        return;
    }
    t->last_probe_ns = now;
    ucp_team *team   = t->team;
    ucp_request_param_t param{};
    uint32_t count;
    const recv_op *recvs = current_recvs(t, &count);
    for (uint32_t i = 0; i < count; ++i) {
        if (recvs[i].done) {
            continue;
        }
        /* A flush fails at once on an endpoint UCP found failed. */
        ucs_status_ptr_t sp = ucp_ep_flush_nbx(team->eps[recvs[i].peer], &param);
        if (UCS_PTR_IS_ERR(sp)) {
            ucs_diag("team 0x%lx collective %lu: rank %u is unreachable: %s",
                     (unsigned long)team->key, (unsigned long)t->seq, recvs[i].peer,
                     ucs_status_string(UCS_PTR_STATUS(sp)));
            fail(t, UCS_PTR_STATUS(sp));
            if (t->pending == 0) {
                mark_ready(t);
            }
            return;
        }
        if (sp != nullptr) {
            ucp_request_free(sp);
        }
    }
}

ucs_status_t am_handler(void *arg, const void *header, size_t header_length, void *data,
                        size_t length, const ucp_am_recv_param_t *param)
{
    ucp_coll_context *ctx = static_cast<ucp_coll_context *>(arg);
    const bool rndv       = param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV;
    wire_hdr hdr;
    size_t offset = 0; /* of the payload in data */
    if (header_length == sizeof(wire_hdr)) {
        std::memcpy(&hdr, header, sizeof(hdr));
    } else if ((header_length == 0) && (length >= sizeof(wire_hdr)) && !rndv) {
        std::memcpy(&hdr, data, sizeof(hdr)); /* an inline message */
        offset = sizeof(wire_hdr);
    } else {
        ucs_warn("collectives: dropping a message with a %zu-byte header", header_length);
        return UCS_OK;
    }
    if (hdr.round == abort_round) {
        peer_aborted(ctx, hdr);
        return UCS_OK;
    }
    void *payload = static_cast<uint8_t *>(data) + offset;
    length -= offset;

    task *t       = nullptr;
    recv_op *recv = open_recv(ctx, hdr, &t);
    if (recv != nullptr) {
        recv->done                = true;
        const ucs_status_t status = check_length(t, length, recv->bytes);
        if (status != UCS_OK) {
            op_done(t, status);
            return UCS_OK;
        }
        if (rndv) {
            pull(t, data, recv->buf, recv->bytes); /* counted while in flight */
        } else if (length != 0) {
            std::memcpy(recv->buf, payload, length);
        }
        op_done(t, UCS_OK);
        return UCS_OK;
    }

    if (finished_here(ctx, hdr)) {
        return UCS_OK; /* dropped; the sender of a rendezvous one completes */
    }
    const msg_key key{hdr.team_key, hdr.seq, hdr.src, hdr.round};
    if (ctx->unexpected.count(key) != 0) {
        ucs_warn("collectives: dropping a second message of team 0x%lx collective %lu from "
                 "rank %u round %u",
                 (unsigned long)hdr.team_key, (unsigned long)hdr.seq, hdr.src, hdr.round);
        return UCS_OK;
    }
    arrival &a = ctx->unexpected[key];
    a.length   = length;
    if (!rndv && (length <= inline_max)) {
        a.small = true; /* the common early message: no allocation */
        std::memcpy(a.copy, payload, length);
        return UCS_OK;
    }
    if (rndv || (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_DATA)) {
        a.data   = data;
        a.offset = offset;
        a.rndv   = rndv;
        a.held   = !rndv;
        return UCS_INPROGRESS;
    }
    a.data = std::malloc(length == 0 ? 1 : length);
    if (a.data == nullptr) {
        ctx->unexpected.erase(key);
        ucs_error("collectives: no memory for an early %zu-byte message", length);
        return UCS_OK;
    }
    std::memcpy(a.data, payload, length);
    return UCS_OK;
}

unsigned progress_callback(void *arg)
{
    return progress(arg);
}

task *task_get(ucp_coll_context *ctx, ucp_team *team)
{
    task *t;
    if (ctx->free_tasks.empty()) {
        t = new task();
    } else {
        t = ctx->free_tasks.back();
        ctx->free_tasks.pop_back();
        t->reset();
    }
    t->team = team;
    ++ctx->live_tasks;
    return t;
}

void task_put(ucp_coll_context *ctx, task *t)
{
    t->magic = 0; /* a stale request is told from a live one */
    --ctx->live_tasks;
    if (ctx->free_tasks.size() < max_pooled_tasks) {
        ctx->free_tasks.push_back(t);
    } else {
        delete t;
    }
}

void task_pool_clear(ucp_coll_context *ctx)
{
    for (task *t : ctx->free_tasks) {
        delete t;
    }
    ctx->free_tasks.clear();
}

bool task_start(task *t)
{
    ucp_team *team = t->team;
    ++team->active;
    team->running.push_back(t);
    t->last_message_round = 0;
    for (size_t i = t->rounds.size(); i-- > 0;) {
        if ((t->rounds[i].nsends != 0) || (t->rounds[i].nrecvs != 0)) {
            t->last_message_round = i;
            break;
        }
    }
    if (!team->aborted.empty() && (team->aborted.erase(t->seq) != 0)) {
        t->peer_aborted = true;
        fail(t, UCS_ERR_REJECTED);
    }
    return advance(t);
}

void task_set_callback(task *t, const ucp_request_param_t *param)
{
    if (param == nullptr) {
        return;
    }
    if (param->op_attr_mask & UCP_OP_ATTR_FIELD_CALLBACK) {
        t->cb = param->cb.send;
    }
    if (param->op_attr_mask & UCP_OP_ATTR_FIELD_USER_DATA) {
        t->user_data = param->user_data;
    }
}

ucs_status_ptr_t task_result(task *t, const ucp_request_param_t *param)
{
    if (t->status == UCS_INPROGRESS) {
        return t;
    }
    if ((param != nullptr) && (param->op_attr_mask & UCP_OP_ATTR_FLAG_NO_IMM_CMPL)) {
        mark_ready(t); /* the callback runs from progress, as a request's would */
        return t;
    }
    const ucs_status_t status = t->status;
    task_put(t->team->ctx, t);
    return (status == UCS_OK) ? nullptr : UCS_STATUS_PTR(status);
}

void forget_team_messages(ucp_coll_context *ctx, uint64_t team_key)
{
    forget_messages(ctx, [team_key](const msg_key &k) { return k.team_key == team_key; });
}

void forget_all_messages(ucp_coll_context *ctx)
{
    for (auto &entry : ctx->unexpected) {
        release_arrival(ctx->worker, entry.second);
    }
    ctx->unexpected.clear();
}

} // namespace coll
