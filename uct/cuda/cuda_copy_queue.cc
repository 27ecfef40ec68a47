#include <uct/cuda/cuda_copy_queue.h>

#include <ucs/debug/log.h>

namespace uct::cuda {

copy_queue::~copy_queue()
{
    const driver_api *api = driver();
    if ((api == nullptr) || (stream_ == nullptr)) {
        return;
    }
    api->cuStreamSynchronize(stream_);
    for (const pending_op &op : pending_) {
        api->cuEventDestroy(op.event);
    }
    for (CUevent event : free_events_) {
        api->cuEventDestroy(event);
    }
    api->cuStreamDestroy(stream_);
}

ucs_status_t copy_queue::ready()
{
    if (ucs_likely(stream_ != nullptr)) {
        return ensure_context();
    }
    ucs_status_t status = ensure_context();
    if (status != UCS_OK) {
        return status;
    }
    return check(driver()->cuStreamCreate(&stream_, CU_STREAM_DEFAULT), "cuStreamCreate");
}

ucs_status_t copy_queue::copy(void *dest, const void *src, size_t length)
{
    ucs_status_t status = ready();
    if (status != UCS_OK) {
        return status;
    }
    return check(driver()->cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dest),
                                         reinterpret_cast<CUdeviceptr>(src), length, stream_),
                 "cuMemcpyAsync");
}

ucs_status_t copy_queue::end_operation(completion *comp)
{
    ucs_status_t status = ready();
    if (status != UCS_OK) {
        return status;
    }
    const driver_api *api = driver();
    CUevent event;
    if (!free_events_.empty()) {
        event = free_events_.back();
        free_events_.pop_back();
    } else {
        status = check(api->cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
        if (status != UCS_OK) {
            return status;
        }
    }
    status = check(api->cuEventRecord(event, stream_), "cuEventRecord");
    if (status != UCS_OK) {
        free_events_.push_back(event);
        return status;
    }
    pending_.push_back({event, comp});
    return UCS_INPROGRESS;
}

ucs_status_t copy_queue::flush(completion *comp)
{
    if (pending_.empty()) {
        return UCS_OK;
    }
    /* The stream runs in order: the last event fires after all before it. */
    return end_operation(comp);
}

unsigned copy_queue::progress()
{
    unsigned count        = 0;
    const driver_api *api = driver();
    while (!pending_.empty()) {
        pending_op op   = pending_.front();
        CUresult result = api->cuEventQuery(op.event);
        if (result == CUDA_ERROR_NOT_READY) {
            break;
        }
        pending_.pop_front();
        free_events_.push_back(op.event);
        if (op.comp != nullptr) {
            invoke_completion(op.comp, check(result, "cuEventQuery"));
        }
        ++count;
    }
    return count;
}

} // namespace uct::cuda
