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
        auto *join                = reinterpret_cast<flush_join *>(self);
        completion *user          = join->user;
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
            if (op.event != nullptr) {
                api->cuEventDestroy(op.event);
            }
        }
        if (l.fence_event != nullptr) {
            api->cuEventDestroy(l.fence_event);
        }
        api->cuStreamDestroy(l.stream);
    }
    for (CUevent event : free_events_) {
        api->cuEventDestroy(event);
    }
    if (markers_ != nullptr) {
        api->cuMemFreeHost(markers_);
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
        status = check(driver()->cuStreamCreate(&l.stream, CU_STREAM_DEFAULT), "cuStreamCreate");
        if (status == UCS_OK) {
            status = check(driver()->cuEventCreate(&l.fence_event, CU_EVENT_DISABLE_TIMING),
                           "cuEventCreate");
        }
        if (status != UCS_OK) {
            return status; /* the ones made are freed with the queue */
        }
    }
    setup_markers();
    started_ = true;
    return UCS_OK;
}

/* One cache line of pinned, device-mapped memory per lane for its marker;
 * without it (an old driver, no mapping) the lanes use events. */
void copy_queue::setup_markers()
{
    const driver_api *api = driver();
    constexpr size_t line = 64;
    if ((api->cuStreamWriteValue32 == nullptr) || (api->cuMemHostGetDevicePointer == nullptr) ||
        (api->cuMemHostAlloc(&markers_, line * num_streams, CU_MEMHOSTALLOC_DEVICEMAP) !=
         CUDA_SUCCESS)) {
        markers_ = nullptr;
        return;
    }
    CUdeviceptr base = 0;
    if (api->cuMemHostGetDevicePointer(&base, markers_, 0) != CUDA_SUCCESS) {
        api->cuMemFreeHost(markers_);
        markers_ = nullptr;
        return;
    }
    for (unsigned i = 0; i < num_streams; ++i) {
        lanes_[i].marker = reinterpret_cast<uint32_t *>(static_cast<char *>(markers_) + (i * line));
        *lanes_[i].marker    = 0;
        lanes_[i].marker_dev = base + (i * line);
    }
    use_markers_ = true;
}

ucs_status_t copy_queue::record_event(lane &l, completion *comp)
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
        l.pending.push_back({event, 0, comp});
    } catch (...) {
        api->cuStreamSynchronize(l.stream); /* nothing may wait on it later */
        free_events_.push_back(event);
        return UCS_ERR_NO_MEMORY;
    }
    return UCS_OK;
}

ucs_status_t copy_queue::record(lane &l, completion *comp)
{
    if (!use_markers_) {
        return record_event(l, comp);
    }
    const driver_api *api = driver();
    /* The default flags fence the write after the stream's copies. */
    if (api->cuStreamWriteValue32(l.stream, l.marker_dev, l.issued + 1, 0) != CUDA_SUCCESS) {
        ucs_debug("cuda: the driver cannot write stream markers: completing by events");
        use_markers_ = false; /* markers already queued still land */
        return record_event(l, comp);
    }
    ++l.issued;
    try {
        l.pending.push_back({nullptr, l.issued, comp});
    } catch (...) {
        api->cuStreamSynchronize(l.stream);
        return UCS_ERR_NO_MEMORY;
    }
    return UCS_OK;
}

/* Whether `op` of lane `l` is done; *result says how for an event. */
bool copy_queue::landed(const lane &l, const pending_op &op, CUresult *result) const
{
    if (op.event != nullptr) {
        *result = driver()->cuEventQuery(op.event);
        return *result != CUDA_ERROR_NOT_READY;
    }
    *result = CUDA_SUCCESS;
    /* Wraps around: a marker at or past seq (by less than half the range). */
    return int32_t(__atomic_load_n(l.marker, __ATOMIC_ACQUIRE) - op.seq) >= 0;
}

/* Makes the target stream wait for what the others hold. */
ucs_status_t copy_queue::wait_for_others(unsigned target)
{
    const driver_api *api = driver();
    for (unsigned i = 0; i < num_streams; ++i) {
        lane &other = lanes_[i];
        if ((i == target) || other.pending.empty()) {
            continue;
        }
        /* Re-recording the event later leaves this wait as it was. */
        ucs_status_t status = check(api->cuEventRecord(other.fence_event, other.stream),
                                    "cuEventRecord");
        if (status == UCS_OK) {
            status = check(api->cuStreamWaitEvent(lanes_[target].stream, other.fence_event, 0),
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
    status   = record(lanes_[current_], comp);
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
    unsigned count = 0;
    for (lane &l : lanes_) {
        while (!l.pending.empty()) {
            const pending_op op = l.pending.front();
            CUresult result;
            if (!landed(l, op, &result)) {
                break;
            }
            l.pending.pop_front();
            if (op.event != nullptr) {
                free_events_.push_back(op.event);
            }
            if (op.comp != nullptr) {
                invoke_completion(op.comp, check(result, "cuEventQuery"));
            }
            ++count;
        }
    }
    return count;
}

} // namespace uct::cuda
