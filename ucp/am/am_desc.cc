/*
 * Active-message descriptors: a pool of single-fragment-sized ones (the
 * common case, no allocation per message) and malloc'ed ones for
 * reassembled messages beyond that size.
 */
#include "am.h"

#include <ucp/proto/am_handlers.h>
#include <ucp/proto/wire.h>
#include <ucs/debug/log.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>

namespace ucp {

namespace {

/* Larger transport segments get malloc'ed descriptors instead. */
constexpr size_t pool_room_max = 64 * 1024;

size_t desc_alignment(const ucp_worker *worker)
{
    return std::max<size_t>(alignof(am_desc), worker->am_alignment);
}

} // namespace

am_worker *am_worker_get(ucp_worker *worker)
{
    if (worker->am_state != nullptr) {
        return worker->am_state;
    }
    auto state       = std::make_unique<am_worker>();
    size_t max_bcopy = 0;
    for (const worker_iface &wi : worker->ifaces) {
        max_bcopy = std::max(max_bcopy, wi.iface->attr().am.max_bcopy);
    }
    /* Room for the largest single fragment plus the alignment slack. */
    state->pool_room = std::min(max_bcopy, pool_room_max) +
                       (desc_alignment(worker) - alignof(am_desc));
    ucs::mpool_params params;
    params.name            = "ucp_am_desc";
    params.elem_size       = sizeof(am_desc) + state->pool_room;
    params.alignment       = alignof(am_desc);
    params.elems_per_chunk = 16;
    if (state->desc_pool.init(params) != UCS_OK) {
        return nullptr;
    }
    worker->am_state = state.release();
    return worker->am_state;
}

am_desc *am_desc_alloc(ucp_worker *worker, size_t data_length, size_t extra)
{
    am_worker *state   = worker->am_state;
    const size_t align = desc_alignment(worker);
    /* Lengths come from peers: refuse what cannot be a real message. */
    size_t room;
    if ((state == nullptr) || (extra > wire::max_message_length) ||
        !ucs::alloc_size(align - alignof(am_desc) + extra, data_length, wire::max_message_length,
                         &room)) {
        return nullptr;
    }
    void *base;
    bool pooled = (room <= state->pool_room);
    if (pooled) {
        base = state->desc_pool.get();
    } else {
        base = std::aligned_alloc(alignof(am_desc),
                                  (sizeof(am_desc) + room + alignof(am_desc) - 1) &
                                      ~(alignof(am_desc) - 1));
    }
    if (base == nullptr) {
        return nullptr;
    }
    const uintptr_t data = (reinterpret_cast<uintptr_t>(base) + sizeof(am_desc) + align - 1) &
                           ~uintptr_t(align - 1);
    auto *desc   = new (reinterpret_cast<void *>(data - sizeof(am_desc))) am_desc{};
    desc->magic  = am_desc_magic;
    desc->pooled = pooled;
    desc->base   = base;
    return desc;
}

am_desc *am_desc_of(void *data)
{
    if ((data == nullptr) || (reinterpret_cast<uintptr_t>(data) % alignof(am_desc) != 0)) {
        return nullptr;
    }
    auto *desc = reinterpret_cast<am_desc *>(data) - 1;
    return (desc->magic == am_desc_magic) ? desc : nullptr;
}

void am_desc_free(am_desc *desc)
{
    void *base  = desc->base;
    bool pooled = desc->pooled;
    desc->magic = 0; /* a second release finds no descriptor */
    desc->~am_desc();
    if (pooled) {
        ucs::mpool::put(base);
    } else {
        std::free(base);
    }
}

void am_desc_consume(am_desc *desc)
{
    if (desc->state == am_desc_state::IN_HANDLER) {
        desc->state = am_desc_state::CONSUMED; /* freed when the handler returns */
        return;
    }
    am_desc_free(desc);
}

void am_cleanup(ucp_worker *worker)
{
    am_worker *state = worker->am_state;
    if (state == nullptr) {
        return;
    }
    for (auto &entry : state->partial) {
        am_desc_free(entry.second);
    }
    /* Descriptors the application still holds are reported by the pool. */
    delete state;
    worker->am_state = nullptr;
}

} // namespace ucp
