/**
 * @file ucp_ext.h
 * @brief Extensions beyond the UCX 1.13 API: completion counters, and
 * operations that count their completion on them.
 *
 * Nothing here changes a type or function of ucp.h: these are new objects
 * with functions of their own, for runtimes that want libfabric-style
 * counters (fi_cntr) on UCP, and for operations that count their
 * completion on them (ucp_ext_request_param_t), triggered operations that
 * start when a counter reaches a threshold, and the worker's deferred work
 * queue of them (ucp_dwq_cancel(), ucp_dwq_flush()); poll sets and wait sets
 * over many workers and counters, with ucp_trywait().
 *
 * A counter lives on one worker. It holds two 64-bit values, a success
 * value and an error value, which the application adds to and sets, and
 * completing operations add to. Values wrap modulo 2^64 on overflow.
 * ucp_cntr_add(), ucp_cntr_set() and their _err forms may be called from
 * any thread; the calls that progress the worker (ucp_cntr_read(),
 * ucp_cntr_wait()) follow the worker's thread mode, and like
 * ucp_worker_progress() must not be called from inside a UCP callback.
 */
#ifndef UCP_EXT_H_
#define UCP_EXT_H_

#include <ucp/api/ucp.h>

#include <poll.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @brief A completion counter (ucp_cntr_create()). */
typedef struct ucp_cntr *ucp_cntr_h;

/** @brief Fields of ucp_cntr_params_t that are set. */
enum ucp_cntr_params_field {
    UCP_CNTR_PARAM_FIELD_FLAGS     = UCS_BIT(0), /**< ucp_cntr_params_t::flags */
    UCP_CNTR_PARAM_FIELD_USER_DATA = UCS_BIT(1)  /**< ucp_cntr_params_t::user_data */
};

/** @brief What a counter counts (ucp_cntr_params_t::flags). */
enum ucp_cntr_flags {
    /** Operations that complete add their byte count instead of 1 (errors
     *  still add 1 to the error value). Without it a counter counts
     *  completions (libfabric's FI_CNTR_EVENTS_COMP and _BYTES). */
    UCP_CNTR_FLAG_EVENTS_BYTES = UCS_BIT(0)
};

/** @brief Arguments of ucp_cntr_create(). */
typedef struct ucp_cntr_params {
    uint64_t field_mask; /**< ucp_cntr_params_field bits of the fields set */
    uint64_t flags;      /**< ucp_cntr_flags bits; 0 if not set */
    void *user_data;     /**< returned by ucp_cntr_query(); NULL if not set */
} ucp_cntr_params_t;

/** @brief Fields of ucp_cntr_attr_t to fill. */
enum ucp_cntr_attr_field {
    UCP_CNTR_ATTR_FIELD_FLAGS     = UCS_BIT(0), /**< ucp_cntr_attr_t::flags */
    UCP_CNTR_ATTR_FIELD_USER_DATA = UCS_BIT(1), /**< ucp_cntr_attr_t::user_data */
    UCP_CNTR_ATTR_FIELD_WORKER    = UCS_BIT(2)  /**< ucp_cntr_attr_t::worker */
};

/** @brief What ucp_cntr_query() reports. */
typedef struct ucp_cntr_attr {
    uint64_t field_mask; /**< ucp_cntr_attr_field bits to fill */
    uint64_t flags;      /**< the flags the counter was created with */
    void *user_data;     /**< the user data it was created with */
    ucp_worker_h worker; /**< the worker it lives on */
} ucp_cntr_attr_t;

/**
 * @brief Creates a counter on @a worker, both values 0.
 *
 * @return UCS_OK; UCS_ERR_INVALID_PARAM for a NULL argument, unknown
 *         field_mask or flags bits; UCS_ERR_NO_MEMORY; UCS_ERR_IO_ERROR
 *         when its event fd cannot be created.
 */
ucs_status_t ucp_cntr_create(ucp_worker_h worker, const ucp_cntr_params_t *params,
                             ucp_cntr_h *cntr_p);

/**
 * @brief Destroys a counter.
 *
 * A counter left when its worker is destroyed is destroyed with it (with a
 * warning). @return UCS_OK; UCS_ERR_INVALID_PARAM for NULL or a handle that
 * is not a live counter (destroyed already); UCS_ERR_BUSY while operations
 * counting on it (ucp_ext_request_param_t) are in flight, while triggered
 * operations wait for it, or from a callback run by its firing.
 */
ucs_status_t ucp_cntr_destroy(ucp_cntr_h cntr);

/** @brief Fills the fields of @a attr named in its field_mask.
 *  @return UCS_OK; UCS_ERR_INVALID_PARAM for NULL or unknown field bits. */
ucs_status_t ucp_cntr_query(ucp_cntr_h cntr, ucp_cntr_attr_t *attr);

/** @brief Progresses the counter's worker once, then returns the success
 *  value (0 for NULL). */
uint64_t ucp_cntr_read(ucp_cntr_h cntr);

/** @brief The error value, without progress (0 for NULL). */
uint64_t ucp_cntr_read_err(ucp_cntr_h cntr);

/** @brief Adds @a value to the success value (any thread).
 *  @return UCS_OK; UCS_ERR_INVALID_PARAM for NULL. */
ucs_status_t ucp_cntr_add(ucp_cntr_h cntr, uint64_t value);

/** @brief Adds @a value to the error value (any thread). */
ucs_status_t ucp_cntr_add_err(ucp_cntr_h cntr, uint64_t value);

/** @brief Sets the success value (any thread). Setting it below a value it
 *  had does not undo anything that value caused. */
ucs_status_t ucp_cntr_set(ucp_cntr_h cntr, uint64_t value);

/** @brief Sets the error value (any thread). */
ucs_status_t ucp_cntr_set_err(ucp_cntr_h cntr, uint64_t value);

/**
 * @brief Progresses the worker until the success value is at least
 * @a threshold.
 *
 * When progress finds nothing, on a worker with UCP_FEATURE_WAKEUP it
 * yields the core (sched_yield) for up to 50 us, then sleeps on the
 * counter's fd (woken by network events and by changes to the counter from
 * other threads); without the feature it spins on progress.
 *
 * @param cntr        the counter.
 * @param threshold   the success value to wait for.
 * @param timeout_ms  how long to wait; negative: no limit; 0: check once.
 * @return UCS_OK when the value reached @a threshold; UCS_ERR_IO_ERROR when
 *         the error value changed while waiting (an operation counted here
 *         failed: read it with ucp_cntr_read_err()), checked first;
 *         UCS_ERR_TIMED_OUT when @a timeout_ms passed first;
 *         UCS_ERR_INVALID_PARAM for NULL.
 */
ucs_status_t ucp_cntr_wait(ucp_cntr_h cntr, uint64_t threshold, int timeout_ms);

/**
 * @brief A file descriptor for sleeping on the counter with poll or epoll.
 *
 * After ucp_cntr_arm() returned UCS_OK, it becomes readable at the next
 * change of the counter, and, on a worker with UCP_FEATURE_WAKEUP, when the
 * worker has events to progress. Sleep on it only then: changes made while
 * it is not armed do not signal it (they cost no system call). The counter
 * owns the fd.
 * @return UCS_OK; UCS_ERR_INVALID_PARAM for NULL.
 */
ucs_status_t ucp_cntr_get_fd(ucp_cntr_h cntr, int *fd_p);

/**
 * @brief Prepares the counter's fd for sleeping, as ucp_worker_arm() does
 * for the worker's.
 *
 * @return UCS_OK: nothing is pending, sleeping on the fd is safe;
 *         UCS_ERR_BUSY: the counter changed since the last arm, or the
 *         worker has events: progress and check again first;
 *         UCS_ERR_INVALID_PARAM for NULL.
 */
ucs_status_t ucp_cntr_arm(ucp_cntr_h cntr);

/* ----------------------------------------------------------------------
 * Operations that count their completion on counters
 * ---------------------------------------------------------------------- */

/**
 * @brief A bit of ucp_request_param_t::op_attr_mask that UCX 1.13 leaves
 * unused: the param handed to an nbx call is the @a base of a
 * ucp_ext_request_param_t.
 *
 * Taken by ucp_tag_send_nbx(), ucp_tag_send_sync_nbx(), ucp_tag_recv_nbx(),
 * ucp_tag_msg_recv_nbx(), ucp_stream_send_nbx(), ucp_stream_recv_nbx(),
 * ucp_am_send_nbx(), ucp_put_nbx(), ucp_get_nbx(), ucp_atomic_op_nbx(),
 * ucp_ep_flush_nbx() and ucp_worker_flush_nbx() (a flush counts 1 when it
 * completes). ucp_am_recv_data_nbx() and ucp_ep_close_nbx() refuse it
 * (UCS_ERR_UNSUPPORTED) rather than drop the counters silently.
 */
#define UCP_OP_ATTR_FIELD_EXT UCS_BIT(30)

/** @brief Fields of ucp_ext_request_param_t that are set. */
enum ucp_ext_request_param_field {
    UCP_EXT_PARAM_FIELD_CNTR     = UCS_BIT(0), /**< ucp_ext_request_param_t::cntr */
    UCP_EXT_PARAM_FIELD_ERR_CNTR = UCS_BIT(1), /**< ucp_ext_request_param_t::err_cntr */
    /** ucp_ext_request_param_t::trigger_cntr and trigger_threshold: a
     *  triggered operation (below). */
    UCP_EXT_PARAM_FIELD_TRIGGER = UCS_BIT(2)
};

/* clang-format off */
/**
 * @brief An nbx call's parameters with extension fields after them.
 *
 * When the operation completes, successfully or not, inside the call or
 * later, exactly once and before the user's callback runs:
 *  - success adds to @a cntr 1, or with UCP_CNTR_FLAG_EVENTS_BYTES the bytes
 *    moved (sent, received, read, written; an atomic's operand size);
 *  - failure adds 1 to the error value of @a err_cntr, or of @a cntr when
 *    no @a err_cntr is given.
 * Counters must live on the worker of the operation.
 */
typedef struct ucp_ext_request_param {
    ucp_request_param_t base;           /**< UCX 1.13's parameters; set
                                             UCP_OP_ATTR_FIELD_EXT in
                                             base.op_attr_mask */
    uint64_t            ext_field_mask; /**< ucp_ext_request_param_field bits */
    ucp_cntr_h          cntr;           /**< counts successes (and errors
                                             when no err_cntr) */
    ucp_cntr_h          err_cntr;       /**< counts failures */
    ucp_cntr_h          trigger_cntr;   /**< UCP_EXT_PARAM_FIELD_TRIGGER: the
                                             counter whose success value starts
                                             the operation */
    uint64_t            trigger_threshold; /**< ... when it is at least this */
} ucp_ext_request_param_t;
/* clang-format on */

/* ----------------------------------------------------------------------
 * Target-side counting: operations of peers on a memory region
 * ---------------------------------------------------------------------- */

/** @brief Which operations of peers on a region count (ucp_mem_bind_cntr()),
 *  as libfabric's FI_REMOTE_WRITE / FI_REMOTE_READ counters. */
enum ucp_mem_cntr_events {
    UCP_MEM_CNTR_REMOTE_WRITE  = UCS_BIT(0), /**< puts into the region */
    UCP_MEM_CNTR_REMOTE_READ   = UCS_BIT(1), /**< gets from it */
    UCP_MEM_CNTR_REMOTE_ATOMIC = UCS_BIT(2)  /**< atomics on it */
};

/**
 * @brief Counts peers' operations on a region on @a cntr, here, at the
 * target.
 *
 * Each put, get or atomic of a peer on the region adds 1 to the success
 * value (the bytes with UCP_CNTR_FLAG_EVENTS_BYTES) once it is done here:
 * a put's data, or an atomic's result, is in the region before the counter
 * shows it, so ucp_cntr_wait() on it tells the target that data landed.
 * Refused operations (out of bounds, bad key) add nothing.
 *
 * Only keys packed (ucp_rkey_pack()) after the binding say that the region
 * is counted; peers then reach it through this process's CPU in its
 * progress (as for registered memory over tcp), never with direct stores or
 * cma, so that it can count: binding makes the region slower to reach.
 * Keys packed before the binding, and peers of a version that does not
 * know counted keys (they refuse them), do not count. The atomics go
 * through the CPU, so UCX_ATOMIC_MODE=device refuses them.
 *
 * @param memh    a mapped region of host memory.
 * @param cntr    the counter, on any worker of the region's context; NULL
 *                unbinds.
 * @param events  ucp_mem_cntr_events bits; 0 unbinds.
 * @return UCS_OK; UCS_ERR_INVALID_PARAM for a NULL or dead handle, a dead
 *         counter, a counter of another context, unknown bits, or memory
 *         that is not host memory. A bound counter cannot be destroyed
 *         (UCS_ERR_BUSY) until unbound or the region unmapped.
 */
ucs_status_t ucp_mem_bind_cntr(ucp_mem_h memh, ucp_cntr_h cntr, uint64_t events);

/* ----------------------------------------------------------------------
 * Triggered operations and the deferred work queue
 * ---------------------------------------------------------------------- */

/*
 * An nbx call whose ucp_ext_request_param_t sets UCP_EXT_PARAM_FIELD_TRIGGER
 * is a triggered operation: it is checked and queued now, and started later
 * by the worker's progress, once the success value of trigger_cntr is at
 * least trigger_threshold (unsigned 64-bit comparison; the error value
 * never triggers). Taken by ucp_tag_send_nbx(), ucp_tag_send_sync_nbx(),
 * ucp_tag_recv_nbx(), ucp_stream_send_nbx(), ucp_am_send_nbx(),
 * ucp_put_nbx(), ucp_get_nbx(), ucp_atomic_op_nbx(), ucp_ep_flush_nbx(),
 * ucp_worker_flush_nbx() (it flushes what was outstanding when it starts)
 * and ucp_cntr_op_nbx(); ucp_stream_recv_nbx() and ucp_tag_msg_recv_nbx()
 * refuse it
 * (UCS_ERR_UNSUPPORTED).
 *
 * - The call returns a request (or NULL/an error when the threshold was met
 *   at the call and nothing queued before it on that counter is still
 *   due: it started at once, as the plain call does). The request completes,
 *   with the user's callback and counters, when the started operation does;
 *   ucp_request_check_status(), ucp_request_test() and ucp_request_free()
 *   work on it as on any request.
 * - UCP_OP_ATTR_FIELD_REQUEST gives the memory of that request, as for any
 *   operation; UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL makes a post that cannot
 *   start at once return UCS_ERR_NO_RESOURCE instead of queueing it.
 * - Buffers, headers, datatypes and reply buffers are read when the
 *   operation starts, not when it is posted: the application may fill them
 *   in meanwhile, and must keep them valid until the request completes.
 * - Order: a counter that passes several thresholds at once starts their
 *   operations in threshold order, equal thresholds in posting order. An
 *   operation that finds no transport resources when started waits in its
 *   endpoint's queue, still ahead of the operations started after it.
 * - Operations start from ucp_worker_progress() (and from calls that
 *   progress: ucp_cntr_read(), ucp_cntr_wait()), never inside
 *   ucp_cntr_add() or a completion that adds to a counter. Setting a counter
 *   below a value it had does not undo operations already started.
 * - Endpoints and remote keys must stay valid until the operation starts.
 *   Closing or losing the endpoint completes its queued operations with
 *   UCS_ERR_CANCELED or the endpoint's error; a remote key destroyed first
 *   fails the operation with UCS_ERR_INVALID_PARAM when it fires.
 * - A queued operation that is cancelled (ucp_dwq_cancel(), ucp_dwq_flush(),
 *   ucp_request_cancel(), its endpoint going) completes with that status and
 *   counts as a failure: 1 on the error value of err_cntr (or cntr), so
 *   that an application waiting on a chain of counters unwinds.
 */

/** @brief What ucp_cntr_op_nbx() does to its counter. */
typedef enum ucp_cntr_op {
    UCP_CNTR_OP_ADD,     /**< ucp_cntr_add() */
    UCP_CNTR_OP_SET,     /**< ucp_cntr_set() */
    UCP_CNTR_OP_ADD_ERR, /**< ucp_cntr_add_err() */
    UCP_CNTR_OP_SET_ERR  /**< ucp_cntr_set_err() */
} ucp_cntr_op_t;

/**
 * @brief A counter update as an operation, so that it can be triggered
 * (libfabric's FI_OP_CNTR_ADD and FI_OP_CNTR_SET): chains of counters and
 * operations are built from it.
 *
 * Without a trigger it is done at once and returns NULL. @a param may be
 * NULL; an ucp_ext_request_param_t may give only UCP_EXT_PARAM_FIELD_TRIGGER
 * (the update is its own effect: cntr and err_cntr are refused). The
 * trigger counter must live on @a cntr's worker.
 *
 * @return NULL when done, a request when queued (completes when done, with
 *         the callback of @a param), or UCS_ERR_INVALID_PARAM (NULL or dead
 *         counter, unknown op, counters given).
 */
ucs_status_ptr_t ucp_cntr_op_nbx(ucp_cntr_h cntr, ucp_cntr_op_t op, uint64_t value,
                                 const ucp_request_param_t *param);

/**
 * @brief Cancels one queued triggered operation (libfabric's
 * FI_CANCEL_WORK).
 *
 * @param worker  the worker it was posted on.
 * @param request what its nbx call returned.
 * @return UCS_OK: it was still queued and is completed now with
 *         UCS_ERR_CANCELED (its callback has run, its error counted);
 *         UCS_ERR_BUSY: it has started already (it runs on; a receive can
 *         still be cancelled with ucp_request_cancel());
 *         UCS_ERR_INVALID_PARAM: NULL, or not a triggered operation of
 *         @a worker that is queued or running (completed already, say).
 */
ucs_status_t ucp_dwq_cancel(ucp_worker_h worker, void *request);

/**
 * @brief Cancels every queued triggered operation of @a worker, or those
 * waiting for @a trigger_cntr (libfabric's FI_FLUSH_WORK), as
 * ucp_dwq_cancel() does each; started ones run on.
 *
 * @param worker        the worker.
 * @param trigger_cntr  NULL: all; else only operations it triggers.
 * @param cancelled_p   if not NULL, how many were cancelled.
 * @return UCS_OK; UCS_ERR_INVALID_PARAM for a NULL worker or a counter that
 *         is not a live counter of @a worker.
 */
ucs_status_t ucp_dwq_flush(ucp_worker_h worker, ucp_cntr_h trigger_cntr, size_t *cancelled_p);

/* ----------------------------------------------------------------------
 * Poll sets, wait sets and trywait
 * ---------------------------------------------------------------------- */

/** @brief A poll set (ucp_pollset_create()). */
typedef struct ucp_pollset *ucp_pollset_h;

/** @brief A wait set (ucp_waitset_create()). */
typedef struct ucp_waitset *ucp_waitset_h;

/** @brief What a ucp_object_t names. */
typedef enum ucp_object_type {
    UCP_OBJECT_WORKER  = 1, /**< a ucp_worker_h */
    UCP_OBJECT_CNTR    = 2, /**< a ucp_cntr_h */
    UCP_OBJECT_WAITSET = 3  /**< a ucp_waitset_h (ucp_trywait() only) */
} ucp_object_type_t;

/** @brief An object that poll sets, wait sets and ucp_trywait() take. */
typedef struct ucp_object {
    ucp_object_type_t type; /**< what @a handle is */
    void *handle;           /**< the worker, counter or wait set */
} ucp_object_t;

/**
 * @brief Creates an empty poll set for objects of @a context (libfabric's
 * fi_poll_open).
 *
 * @return UCS_OK; UCS_ERR_INVALID_PARAM for NULL; UCS_ERR_NO_MEMORY.
 */
ucs_status_t ucp_pollset_create(ucp_context_h context, ucp_pollset_h *set_p);

/** @brief Destroys a poll set. @return UCS_OK; UCS_ERR_BUSY while it has
 *  members; UCS_ERR_INVALID_PARAM for NULL or a set destroyed already. */
ucs_status_t ucp_pollset_destroy(ucp_pollset_h set);

/**
 * @brief Adds a worker or a counter of the set's context, with the user
 * data ucp_pollset_poll() returns for it.
 *
 * @return UCS_OK; UCS_ERR_ALREADY_EXISTS when it is a member already;
 *         UCS_ERR_INVALID_PARAM for NULL, another type, a dead counter or
 *         an object of another context.
 */
ucs_status_t ucp_pollset_add(ucp_pollset_h set, const ucp_object_t *object, void *user_data);

/** @brief Removes a member. @return UCS_OK; UCS_ERR_NO_ELEM when it is not
 *  a member; UCS_ERR_INVALID_PARAM for NULL. */
ucs_status_t ucp_pollset_remove(ucp_pollset_h set, const ucp_object_t *object);

/**
 * @brief Progresses every member and returns the user data of those with
 * events (libfabric's fi_poll).
 *
 * A worker has events when its progress did something (completions,
 * incoming messages); a counter when its success or error value changed
 * since it was last reported. There may be false positives, never false
 * negatives: a member with events that did not fit in @a count is reported
 * by the next call.
 *
 * @param set        the poll set.
 * @param user_data  room for @a count user data.
 * @param count      how many fit.
 * @return how many were written (0: nothing happened), or a negative
 *         ucs_status_t (UCS_ERR_INVALID_PARAM for NULL or a negative count).
 */
int ucp_pollset_poll(ucp_pollset_h set, void **user_data, int count);

/** @brief The native object a wait set sleeps on (libfabric's wait_obj). */
typedef enum ucp_wait_obj {
    UCP_WAIT_UNSPEC = 0, /**< the library's choice: UCP_WAIT_FD here */
    UCP_WAIT_FD,         /**< one fd, for select, poll or epoll (ucp_waitset_get_fd()) */
    UCP_WAIT_POLLFD,     /**< the members' own fds (ucp_waitset_get_pollfd()) */
    UCP_WAIT_YIELD       /**< no fd: ucp_waitset_wait() checks and yields the core */
} ucp_wait_obj_t;

/**
 * @brief Creates an empty wait set for objects of @a context.
 *
 * Members are added and removed at any time, also while another thread
 * waits (unlike libfabric, where they join at creation).
 *
 * @return UCS_OK; UCS_ERR_INVALID_PARAM for NULL or an unknown kind;
 *         UCS_ERR_IO_ERROR when the fds cannot be made.
 */
ucs_status_t ucp_waitset_create(ucp_context_h context, ucp_wait_obj_t wait_obj,
                                ucp_waitset_h *set_p);

/** @brief Destroys a wait set. @return UCS_OK; UCS_ERR_BUSY while it has
 *  members; UCS_ERR_INVALID_PARAM for NULL or a set destroyed already. */
ucs_status_t ucp_waitset_destroy(ucp_waitset_h set);

/**
 * @brief Adds a worker (created with UCP_FEATURE_WAKEUP in its context) or
 * a counter of the set's context. A waiting thread sees it from its next
 * round (the set is signalled).
 *
 * @return UCS_OK; UCS_ERR_ALREADY_EXISTS; UCS_ERR_UNSUPPORTED for a worker
 *         without UCP_FEATURE_WAKEUP; UCS_ERR_INVALID_PARAM for NULL,
 *         another type, a dead counter or an object of another context.
 */
ucs_status_t ucp_waitset_add(ucp_waitset_h set, const ucp_object_t *object);

/** @brief Removes a member. @return UCS_OK; UCS_ERR_NO_ELEM when it is not
 *  a member; UCS_ERR_INVALID_PARAM for NULL. */
ucs_status_t ucp_waitset_remove(ucp_waitset_h set, const ucp_object_t *object);

/**
 * @brief Sleeps until a member may have work, the set is signalled, or
 * @a timeout_ms passes (libfabric's fi_wait).
 *
 * It does not progress the members: it returns so that the caller does
 * (ucp_pollset_poll(), ucp_worker_progress()). Every round first checks the
 * members as ucp_trywait() does, so an event that came before the sleep is
 * never slept through.
 *
 * @return UCS_OK: a member may have work or the set was signalled;
 *         UCS_ERR_TIMED_OUT; UCS_ERR_INVALID_PARAM for NULL.
 */
ucs_status_t ucp_waitset_wait(ucp_waitset_h set, int timeout_ms);

/** @brief Wakes a thread in ucp_waitset_wait() (or makes the next one
 *  return at once); any thread. @return UCS_OK; UCS_ERR_INVALID_PARAM. */
ucs_status_t ucp_waitset_signal(ucp_waitset_h set);

/**
 * @brief The one fd of a UCP_WAIT_FD (or UNSPEC) set: readable when a member
 * may have work or the set was signalled. Sleep on it only after
 * ucp_trywait() on the set returned UCS_OK. The set owns the fd.
 *
 * @return UCS_OK; UCS_ERR_UNSUPPORTED for another kind of set;
 *         UCS_ERR_INVALID_PARAM for NULL.
 */
ucs_status_t ucp_waitset_get_fd(ucp_waitset_h set, int *fd_p);

/** @brief The fds of a UCP_WAIT_POLLFD set (libfabric's fi_wait_pollfd). */
typedef struct ucp_waitset_pollfd {
    uint64_t change_index; /**< out: moves whenever the set of fds changes */
    size_t nfds;           /**< in: room in @a fds; out: how many there are */
    struct pollfd *fds;    /**< out: fd and POLLIN of each */
} ucp_waitset_pollfd_t;

/**
 * @brief Fills @a pollfd with the set's fds: its members' own (a worker's
 * ucp_worker_get_efd(), a counter's ucp_cntr_get_fd()) and its signal fd.
 *
 * A caller keeps the array while change_index stays the same (nfds = 0 asks
 * for the index alone) and, like the FD kind, sleeps on it only after
 * ucp_trywait() on the set returned UCS_OK.
 *
 * @return UCS_OK; UCS_ERR_BUFFER_TOO_SMALL with nfds set to the number
 *         needed (change_index filled too); UCS_ERR_UNSUPPORTED for
 *         another kind of set; UCS_ERR_INVALID_PARAM for NULL.
 */
ucs_status_t ucp_waitset_get_pollfd(ucp_waitset_h set, ucp_waitset_pollfd_t *pollfd);

/**
 * @brief Says whether sleeping on the objects' fds is safe now (libfabric's
 * fi_trywait; ucp_worker_arm() for many workers and counters at once).
 *
 * Workers are armed (ucp_worker_arm()), counters armed (ucp_cntr_arm()), and
 * a wait set checks its members and consumes its signal.
 *
 * @return UCS_OK: nothing pending, sleep; UCS_ERR_BUSY: some object has work
 *         (or a set was signalled): progress and call again before
 *         sleeping; UCS_ERR_INVALID_PARAM for NULL, an unknown type or a
 *         worker without UCP_FEATURE_WAKEUP.
 */
ucs_status_t ucp_trywait(const ucp_object_t *objects, size_t count);

/**
 * @brief Active-message ids for libraries layered over UCP (collectives):
 * UCP_EXT_AM_ID_LAYERED + n, n < UCP_EXT_AM_ID_LAYERED_COUNT.
 *
 * ucp_worker_set_am_recv_handler() and ucp_am_send_nbx() take them as they
 * take an application's id. UCX 1.13's ids are 16-bit: an application's id
 * never equals a layered one, so a layer's messages reach only its own
 * handlers, and the application's never reach them.
 */
#define UCP_EXT_AM_ID_LAYERED 0x10000u
/** @brief How many layered active-message ids there are. */
#define UCP_EXT_AM_ID_LAYERED_COUNT 256u

/**
 * @brief Work that a worker's progress runs when it is scheduled: returns
 * how much it did (counted in ucp_worker_progress()'s result).
 */
typedef unsigned (*ucp_worker_callback_t)(void *arg);

/**
 * @brief Registers a callback on the worker's progress queue (UCX's
 * callbackq), for libraries layered over UCP: ucp_worker_callback_schedule()
 * makes the next ucp_worker_progress() run it once. The callback runs
 * inside progress, so it may start operations (unlike a completion
 * callback, it is not nested in another UCP call); work left over is
 * scheduled again by the callback. A scheduled callback keeps
 * ucp_worker_arm() from reporting the worker idle.
 *
 * @return UCS_OK with the id in *id_p; UCS_ERR_INVALID_PARAM for NULL.
 */
ucs_status_t ucp_worker_callback_add(ucp_worker_h worker, ucp_worker_callback_t cb, void *arg,
                                     unsigned *id_p);

/**
 * @brief Makes the next progress of the worker run callback `id` once,
 * however often it was scheduled meanwhile. Follows the worker's thread
 * mode; may be called from a UCP callback.
 *
 * @return UCS_OK; UCS_ERR_INVALID_PARAM for an id this API did not give.
 */
ucs_status_t ucp_worker_callback_schedule(ucp_worker_h worker, unsigned id);

/**
 * @brief Unregisters callback `id`; a scheduled run that did not happen
 * yet is dropped.
 *
 * @return UCS_OK; UCS_ERR_INVALID_PARAM for an id this API did not give.
 */
ucs_status_t ucp_worker_callback_remove(ucp_worker_h worker, unsigned id);

#ifdef __cplusplus
}
#endif

#endif
