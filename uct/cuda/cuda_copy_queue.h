/*
 * Asynchronous copies of one iface: cuMemcpyAsync on the iface's streams,
 * and a completion marker after each operation's copies. Operations take
 * the streams in turn, so the copy engines overlap copies of different
 * operations; progress() completes each stream's operations in order as
 * their markers land. A fence orders what follows after everything before
 * it; a flush completes once every stream has drained what it holds.
 *
 * A marker is a sequence number the stream writes into pinned host memory
 * (cuStreamWriteValue32): progress() reads it like any variable. An event
 * instead costs a cuEventQuery per stream and progress call, 1.3 us each on
 * an H200, which bounded a receiver of 1 MiB messages at half the copy
 * rate. Events remain where the driver cannot write values.
 *
 * The streams are ordinary ones, ordered after the legacy default stream's
 * work (see cuda_memtype.h). Created lazily: they need a current context,
 * which the application may make current only after the worker exists.
 */
#ifndef UCT_CUDA_CUDA_COPY_QUEUE_H
#define UCT_CUDA_CUDA_COPY_QUEUE_H

#include <uct/base/uct_types.h>
#include <uct/cuda/cuda_driver.h>

#include <array>
#include <cstdint>
#include <deque>
#include <vector>

namespace uct::cuda {

class copy_queue {
public:
    copy_queue()                              = default;
    copy_queue(const copy_queue &)            = delete;
    copy_queue &operator=(const copy_queue &) = delete;
    /* Waits for the copies still in flight, then frees streams and events. */
    ~copy_queue();

    /* Queues one copy of the current operation. */
    ucs_status_t copy(void *dest, const void *src, size_t length);

    /*
     * Ends the current operation: records an event after its copies, after
     * which `comp` (may be nullptr: a flush waits for it) is invoked from
     * progress(). Returns UCS_INPROGRESS, or an error if the event could
     * not be recorded (the copies may then still land).
     */
    ucs_status_t end_operation(completion *comp);

    /* The next operation's copies start after every copy queued so far. */
    void fence() { fenced_ = true; }

    /* UCS_OK when nothing is in flight; else `comp` is invoked once all
     * that is in flight now has landed, and UCS_INPROGRESS returned. */
    ucs_status_t flush(completion *comp);

    /* Completes the operations whose events fired; returns how many. */
    unsigned progress();

    bool idle() const;

private:
    static constexpr unsigned num_streams = 4;

    struct pending_op {
        CUevent event; /* nullptr: the lane's marker reaching `seq` */
        uint32_t seq;
        completion *comp;
    };

    struct lane {
        CUstream stream        = nullptr;
        CUevent fence_event    = nullptr; /* what a fence waits for */
        uint32_t *marker       = nullptr; /* written by the stream */
        CUdeviceptr marker_dev = 0;
        uint32_t issued        = 0; /* the last marker queued */
        std::deque<pending_op> pending;
    };

    ucs_status_t ready();
    void setup_markers();
    ucs_status_t record(lane &l, completion *comp);
    ucs_status_t record_event(lane &l, completion *comp);
    bool landed(const lane &l, const pending_op &op, CUresult *result) const;
    ucs_status_t wait_for_others(unsigned target);

    std::array<lane, num_streams> lanes_;
    unsigned current_ = 0;     /* the current operation's stream */
    bool started_     = false; /* the streams exist */
    bool fenced_      = false;
    void *markers_    = nullptr; /* pinned: one line per lane */
    bool use_markers_ = false;   /* new operations write markers */
    std::vector<CUevent> free_events_;
};

} // namespace uct::cuda

#endif
