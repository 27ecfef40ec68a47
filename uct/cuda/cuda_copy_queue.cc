#include <uct/cuda/cuda_copy_queue.h>

#include <ucs/debug/log.h>

#include <new>

namespace uct::cuda {

namespace {

/* A flush over several streams: the caller's completion runs once, when
 * the last of the streams' markers completes. */
struct flush_join {
    completion inner;
    completion *user;

    static void done(completion *self)
    {
        auto *join = reinterpret_cast<flush_join*>(self);
        completion *user = join->user;
        const ucs_status_t status = self->status;
        delete join;
        invoke_completion(user, status);
    }
};

} // namespace

copy_queue::~copy_queue()
{
    const driver_api *api = driver();
    if ((api == nullptr) || !started_) {
        return;
    }
    for (lane &l : lanes_) {
        api->cuStreamSynchronize(l.stream);
        for (const pending_op &op : l.pending) {
            api->cuEventDestroy(op.event);
        }
        api->cuStreamDestroy(l.stream);
    }
    for (CUevent event : free_events_) {
        api->cuEventDestroy(event);
    }
}

bool copy_queue::idle() const
{
    for (const lane &l : lanes_) {
        if (!l.pending.empty()) {
            return false;
        }
    }
    return true;
}

ucs_status_t copy_queue::ready()
{
    ucs_status_t status = ensure_context();
    if ((status != UCS_OK) || started_) {
        return status;
    }
    for (lane &l : lanes_) {
        status = check(driver()->cuStreamCreate(&l.stream, CU_STREAM_DEFAULT),
                       "cuStreamCreate");
        if (status != UCS_OK) {
            return status;   /* the ones made are freed with the queue */
        }
    }
    started_ = true;
    return UCS_OK;
}

ucs_status_t copy_queue::record(lane &l, completion *comp)
{
    const driver_api *api = driver();
    CUevent event;
    ucs_status_t status;
    if (!free_events_.empty()) {
        event = free_events_.back();
        free_events_.pop_back();
    } else {
        status = check(api->cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
        if (status != UCS_OK) {
            return status;
        }
    }
    status = check(api->cuEventRecord(event, l.stream), "cuEventRecord");
    if (status != UCS_OK) {
        free_events_.push_back(event);
        return status;
    }
    try {
        l.pending.push_back({event, comp});
    } catch (...) {
        api->cuStreamSynchronize(l.stream);   /* nothing may wait on it later */
        free_events_.push_back(event);
        return UCS_ERR_NO_MEMORY;
    }
    return UCS_OK;
}

/* Makes the target stream wait for what the others hold. */
ucs_status_t copy_queue::wait_for_others(unsigned target)
{
    for (unsigned i = 0; i < num_streams; ++i) {
        lane &other = lanes_[i];
        if ((i == target) || other.pending.empty()) {
            continue;
        }
        ucs_status_t status = record(other, nullptr);
        if (status == UCS_OK) {
            status = check(driver()->cuStreamWaitEvent(lanes_[target].stream,
                                                       other.pending.back().event, 0),
                           "cuStreamWaitEvent");
        }
        if (status != UCS_OK) {
            return status;
        }
    }
    return UCS_OK;
}

ucs_status_t copy_queue::copy(void *dest, const void *src, size_t length)
{
    ucs_status_t status = ready();
    if (status != UCS_OK) {
        return status;
    }
    if (fenced_) {
        status = wait_for_others(current_);
        if (status != UCS_OK) {
            return status;
        }
        fenced_ = false;
    }
    return check(driver()->cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dest),
                                         reinterpret_cast<CUdeviceptr>(src), length,
                                         lanes_[current_].stream),
                 "cuMemcpyAsync");
}

ucs_status_t copy_queue::end_operation(completion *comp)
{
    ucs_status_t status = ready();
    if (status != UCS_OK) {
        return status;
    }
    status = record(lanes_[current_], comp);
    current_ = (current_ + 1) % num_streams;
    return (status == UCS_OK) ? UCS_INPROGRESS : status;
}

ucs_status_t copy_queue::flush(completion *comp)
{
    unsigned busy = 0;
    for (const lane &l : lanes_) {
        busy += !l.pending.empty();
    }
    if (busy == 0) {
        return UCS_OK;
    }
    auto *join = new (std::nothrow) flush_join{{flush_join::done, int(busy), UCS_OK}, comp};
    if (join == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    for (lane &l : lanes_) {
        if (l.pending.empty()) {
            continue;
        }
        ucs_status_t status = record(l, (comp != nullptr) ? &join->inner : nullptr);
        if (status != UCS_OK) {
            /* Markers already queued still complete the join. */
            if (--join->inner.count == 0) {
                delete join;
            }
            return status;
        }
    }
    if (comp == nullptr) {
        delete join;
    }
    return UCS_INPROGRESS;
}

unsigned copy_queue::progress()
{
    unsigned count        = 0;
    const driver_api *api = driver();
    for (lane &l : lanes_) {
        while (!l.pending.empty()) {
            pending_op op   = l.pending.front();
            CUresult result = api->cuEventQuery(op.event);
            if (result == CUDA_ERROR_NOT_READY) {
                break;
            }
            l.pending.pop_front();
            free_events_.push_back(op.event);
            if (op.comp != nullptr) {
                invoke_completion(op.comp, check(result, "cuEventQuery"));
            }
            ++count;
        }
    }
    return count;
}

} // namespace uct::cuda
