/* Completion queues: a bounded queue of work completions per CQ. Polling
 * is also when the emulated HCA does its work for this process: stalled
 * send queues are retried and inbound rings become receive completions. */
#include "objects.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>

namespace verbs_emu {

void cq_fire_if_armed(emu_cq *cq)
{
    if (cq != nullptr && cq->channel != nullptr && cq->notify_slot != kNoSlot) {
        notify_fire(cq->notify_slot, cq->channel->address.c_str());
    }
}

void cq_push(emu_cq *cq, const cqe_entry &entry)
{
    if (cq->entries.size() >= cq->capacity && !cq->overrun) {
        /* A real CQ overrun is fatal for the CQ; keep the entries (nothing
         * is dropped) but make every later poll fail so the bug shows. */
        cq->overrun = true;
        std::fprintf(stderr, "verbs_emu: CQ %p overrun (%zu entries)\n",
                     static_cast<void *>(&cq->ibv), cq->capacity);
    }
    cq->entries.push_back(entry);
    cq_fire_if_armed(cq);
}

void cq_purge_qp(emu_cq *cq, const emu_qp *qp)
{
    auto &entries = cq->entries;
    entries.erase(std::remove_if(entries.begin(), entries.end(),
                                 [qp](const cqe_entry &e) { return e.qp == qp; }),
                  entries.end());
}

int poll_cq(struct ibv_cq *ibv_cq, int num_entries, struct ibv_wc *wc)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_cq *cq = lookup<emu_cq>(ibv_cq);
    if (cq == nullptr || num_entries < 0 || (num_entries > 0 && wc == nullptr)) {
        return -EINVAL;
    }
    if (cq->overrun) {
        return -EOVERFLOW;
    }
    progress_stalled_send_queues();
    size_t count = cq->recv_qps.size();
    for (size_t i = 0; i < count && cq->entries.size() < cq->capacity; ++i) {
        drain_inbound(cq->recv_qps[(cq->drain_start + i) % count]);
    }
    if (count > 0) {
        cq->drain_start = (cq->drain_start + 1) % count;
    }
    int polled = 0;
    while (polled < num_entries && !cq->entries.empty()) {
        const cqe_entry &entry = cq->entries.front();
        wc[polled++]           = entry.wc;
        if (entry.send_queue) {
            /* the send queue slots up to this WR are free again */
            entry.qp->sq_freed = std::max(entry.qp->sq_freed, entry.sq_seq + 1);
        }
        cq->entries.pop_front();
    }
    return polled;
}

int req_notify_cq(struct ibv_cq *ibv_cq, int solicited_only)
{
    (void)solicited_only; /* every completion counts */
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_cq *cq = lookup<emu_cq>(ibv_cq);
    if (cq == nullptr) {
        return EINVAL;
    }
    if (cq->channel == nullptr) {
        return 0;
    }
    std::atomic<uint64_t> *word = fabric_cq_notify_word(cq->notify_slot);
    if (word == nullptr) {
        return EINVAL;
    }
    uint64_t value = word->load(std::memory_order_acquire);
    if (cq->arm_pending) {
        if (value & 1) {
            return 0; /* still armed */
        }
        /* it fired and the event was not read yet: keep it */
        ++cq->events_pending;
        cq->arm_pending = false;
    }
    ++cq->arm_sequence;
    word->store((cq->arm_sequence << 1) | 1, std::memory_order_release);
    cq->arm_pending = true;
    /* A message that waited for a receive WQE which is there now lands
     * "after" the arming, as an RNR retry would on hardware. */
    for (emu_qp *qp : cq->recv_qps) {
        if (qp_has_deliverable(qp)) {
            cq_fire_if_armed(cq);
            break;
        }
    }
    return 0;
}

} // namespace verbs_emu

using namespace verbs_emu;

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
                             struct ibv_comp_channel *ibv_channel, int comp_vector)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_context *ctx     = lookup<emu_context>(context);
    emu_channel *channel = lookup<emu_channel>(ibv_channel);
    if (ctx == nullptr || cqe < 1 || cqe > 4194303 || comp_vector < 0 ||
        comp_vector >= ctx->ibv.num_comp_vectors ||
        (ibv_channel != nullptr && (channel == nullptr || ibv_channel->context != context))) {
        errno = EINVAL;
        return nullptr;
    }
    auto *cq = new (std::nothrow) emu_cq();
    if (cq == nullptr) {
        errno = ENOMEM;
        return nullptr;
    }
    if (channel != nullptr) {
        int rc = fabric_alloc_cq_notify(&cq->notify_slot);
        if (rc != 0) {
            delete cq;
            errno = rc;
            return nullptr;
        }
        /* continue the slot's arm sequence (see fabric_alloc_cq_notify) */
        cq->arm_sequence = fabric_cq_notify_word(cq->notify_slot)->load() >> 1;
        channel->cqs.push_back(cq);
        ++channel->ibv.refcnt;
    }
    static uint32_t next_handle = 1;
    cq->ctx                     = ctx;
    cq->channel                 = channel;
    cq->capacity                = size_t(cqe);
    cq->ibv.context             = context;
    cq->ibv.channel             = ibv_channel;
    cq->ibv.cq_context          = cq_context;
    cq->ibv.handle              = next_handle++;
    cq->ibv.cqe                 = cqe;
    pthread_mutex_init(&cq->ibv.mutex, nullptr);
    pthread_cond_init(&cq->ibv.cond, nullptr);
    ++ctx->users;
    register_object(cq);
    return &cq->ibv;
}

int ibv_destroy_cq(struct ibv_cq *ibv_cq)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_cq *cq = lookup<emu_cq>(ibv_cq);
    if (cq == nullptr) {
        return EINVAL;
    }
    if (!cq->send_qps.empty() || !cq->recv_qps.empty()) {
        return EBUSY;
    }
    pthread_mutex_lock(&cq->ibv.mutex);
    uint32_t acked = cq->ibv.comp_events_completed;
    pthread_mutex_unlock(&cq->ibv.mutex);
    if (acked != cq->events_reported) {
        /* libibverbs would wait here forever for the missing acks */
        std::fprintf(stderr, "verbs_emu: ibv_destroy_cq with %u unacknowledged events\n",
                     cq->events_reported - acked);
        return EBUSY;
    }
    if (cq->channel != nullptr) {
        auto &cqs = cq->channel->cqs;
        cqs.erase(std::remove(cqs.begin(), cqs.end(), cq), cqs.end());
        --cq->channel->ibv.refcnt;
        fabric_free_cq_notify(cq->notify_slot);
    }
    --cq->ctx->users;
    unregister_object(cq);
    pthread_mutex_destroy(&cq->ibv.mutex);
    pthread_cond_destroy(&cq->ibv.cond);
    delete cq;
    return 0;
}

int ibv_resize_cq(struct ibv_cq *ibv_cq, int cqe)
{
    std::lock_guard<std::mutex> guard(emu_lock());
    emu_cq *cq = lookup<emu_cq>(ibv_cq);
    if (cq == nullptr || cqe < 1 || cqe > 4194303 || size_t(cqe) < cq->entries.size()) {
        return EINVAL;
    }
    cq->capacity = size_t(cqe);
    cq->ibv.cqe  = cqe;
    return 0;
}
