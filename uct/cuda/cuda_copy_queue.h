/*
 * Asynchronous copies of one iface: cuMemcpyAsync on the iface's own
 * stream, and an event recorded after each operation's copies. progress()
 * completes operations in order as their events fire. The stream is an
 * ordinary one, ordered after the legacy default stream's work (see
 * cuda_memtype.h). Created lazily (the
 * stream needs a current context, which the application may make current
 * only after the worker exists).
 */
#ifndef UCT_CUDA_CUDA_COPY_QUEUE_H
#define UCT_CUDA_CUDA_COPY_QUEUE_H

#include <uct/base/uct_types.h>
#include <uct/cuda/cuda_driver.h>

#include <deque>
#include <vector>

namespace uct::cuda {

class copy_queue {
public:
    copy_queue() = default;
    copy_queue(const copy_queue &) = delete;
    copy_queue &operator=(const copy_queue &) = delete;
    /* Waits for the copies still in flight, then frees the stream and events. */
    ~copy_queue();

    /* Queues one copy on the stream. */
    ucs_status_t copy(void *dest, const void *src, size_t length);

    /*
     * Ends an operation whose copies were queued: records an event, after
     * which `comp` (may be nullptr: a flush waits for it) is invoked from
     * progress(). Returns UCS_INPROGRESS, or an error if the event could
     * not be recorded (the copies may then still land).
     */
    ucs_status_t end_operation(completion *comp);

    /* UCS_OK when nothing is in flight; else `comp` is invoked once all
     * that is in flight now has landed, and UCS_INPROGRESS returned. */
    ucs_status_t flush(completion *comp);

    /* Completes the operations whose events fired; returns how many. */
    unsigned progress();

    bool idle() const { return pending_.empty(); }

private:
    struct pending_op {
        CUevent    event;
        completion *comp;
    };

    ucs_status_t ready();

    CUstream               stream_ = nullptr;
    std::deque<pending_op> pending_;
    std::vector<CUevent>   free_events_;
};

} // namespace uct::cuda

#endif
