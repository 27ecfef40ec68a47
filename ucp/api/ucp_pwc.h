/**
 * @file ucp_pwc.h
 * @brief Put and get with completion identifiers (Photon's PWC), beyond the
 * UCX 1.13 API.
 *
 * A put or get names two completion identifiers (ids): a local one, which
 * the initiator's ucp_pwc_probe() returns when the operation is over (a put's
 * source may be reused, a get's data has landed), and a remote one, which
 * the target's ucp_pwc_probe() returns strictly after the data is visible in
 * its memory (for a get: after the data left it, so the target may reuse
 * it). No second message from the application, and no request to hold: the
 * calls return a status, and completions are found by probing.
 *
 * An id is 8 bytes by value (ucp_cid_t::size 0), or up to
 * UCX_PWC_MAX_ID_SIZE bytes of payload (ucp_cid_t::data, ucp_cid_t::size) that the library
 * copies at the call. A local id is handed back as it was given (the library
 * keeps the pointer and size, not the bytes).
 *
 * Ordering: each remote id comes after its own operation's data; ids of
 * different operations come in the order the operations complete, not of
 * their calls (a small put can overtake a large one before it). The probe
 * returns completions in the order they arrived.
 *
 * Flow control: each endpoint may have UCX_PWC_CREDITS remote ids queued at
 * its target that the target's application has not probed yet. Operations
 * beyond that wait at the initiator, in order, until the target probes; one
 * more window of them is accepted, and beyond that the call answers
 * UCS_ERR_NO_RESOURCE (probe, which progresses, and call again). A remote id
 * that bumps the target's counter (UCP_PWC_FLAG_REMOTE_CNTR) takes no credit,
 * and neither does an operation without one (UCP_PWC_FLAG_NO_RCE).
 *
 * Thread safety follows the worker's thread mode, as for ucp_put_nbx().
 */
#ifndef UCP_PWC_H_
#define UCP_PWC_H_

#include <ucp/api/ucp_ext.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @brief A completion identifier. */
typedef struct ucp_cid {
    uint64_t u64;     /**< the id when size is 0 */
    const void *data; /**< size > 0: the id's bytes */
    size_t size;      /**< 0: the id is u64; else bytes at data */
} ucp_cid_t;

/** @brief Flags of ucp_pwc_put() and ucp_pwc_get(). */
enum ucp_pwc_flags {
    /** No local completion: the initiator's probe does not return this
     *  operation, unless it failed (a failure is never silent). */
    UCP_PWC_FLAG_NO_LCE = UCS_BIT(0),
    /** No remote completion: the target learns nothing. */
    UCP_PWC_FLAG_NO_RCE = UCS_BIT(1),
    /** The remote completion adds 1 to the counter the target bound with
     *  ucp_pwc_bind_cntr() instead of queueing the remote id (the id is
     *  queued when it bound none). Visible after the data, as an id. */
    UCP_PWC_FLAG_REMOTE_CNTR = UCS_BIT(2)
};

/**
 * @brief Writes @a length bytes from @a buffer to @a remote_addr (covered by
 * @a rkey, unpacked on @a ep) with completion ids.
 *
 * @a length 0 is a pure notification: no data moves, @a buffer and @a rkey
 * may be NULL, and the remote id arrives (UCP_PWC_FLAG_NO_RCE with it makes
 * the call a no-op that still reports its local id).
 *
 * Small puts travel as one message holding the data and the id; larger ones
 * as a put and, once the data is at the target, a notification.
 *
 * @return UCS_OK: posted (or done); UCS_ERR_NO_RESOURCE: the target has a
 *         full window of ids not probed and another one waits here; probe
 *         and call again. UCS_ERR_EXCEEDS_LIMIT: an id payload longer than
 *         UCX_PWC_MAX_ID_SIZE. UCS_ERR_INVALID_PARAM: NULL ep, NULL buffer or
 *         rkey with data, unknown flags, a range outside the key, a key
 *         without remote write access. The ep's status when it failed.
 */
ucs_status_t ucp_pwc_put(ucp_ep_h ep, const void *buffer, size_t length, uint64_t remote_addr,
                         ucp_rkey_h rkey, const ucp_cid_t *local_cid, const ucp_cid_t *remote_cid,
                         unsigned flags);

/**
 * @brief Reads @a length bytes from @a remote_addr into @a buffer with
 * completion ids. The local id comes when the data has landed here; the
 * remote id (unless UCP_PWC_FLAG_NO_RCE) is sent to the target after that,
 * telling it its memory may be reused. @a length must not be 0.
 *
 * @return as ucp_pwc_put(); UCS_ERR_INVALID_PARAM also for length 0 and a
 *         key without remote read access.
 */
ucs_status_t ucp_pwc_get(ucp_ep_h ep, void *buffer, size_t length, uint64_t remote_addr,
                         ucp_rkey_h rkey, const ucp_cid_t *local_cid, const ucp_cid_t *remote_cid,
                         unsigned flags);

/** @brief ucp_pwc_completion_t::flags */
enum ucp_pwc_completion_flags {
    UCP_PWC_COMPLETION_LOCAL  = UCS_BIT(0), /**< an operation of ours ended */
    UCP_PWC_COMPLETION_REMOTE = UCS_BIT(1), /**< a peer's operation reached us */
    UCP_PWC_COMPLETION_GET    = UCS_BIT(2)  /**< ... and it was a get */
};

/** @brief A completion ucp_pwc_probe() returns. */
typedef struct ucp_pwc_completion {
    unsigned flags; /**< ucp_pwc_completion_flags */
    /** Local: how the operation ended (UCS_OK, or why it failed; a failed
     *  put or get may have moved some of its data). Remote: UCS_OK. */
    ucs_status_t status;
    /** Local: the operation's ep. Remote: this worker's ep to the source
     *  (NULL if it was destroyed since). */
    ucp_ep_h ep;
    /** Local: the id as given. Remote: by value, or its bytes, valid until
     *  the next ucp_pwc_probe() on this worker. */
    ucp_cid_t cid;
} ucp_pwc_completion_t;

/** @brief Called by ucp_pwc_probe() for each completion it takes. */
typedef void (*ucp_pwc_handler_t)(const ucp_pwc_completion_t *completion, void *arg);

/* clang-format off */
/** @brief Fields of ucp_pwc_probe_params_t that are set. */
enum ucp_pwc_probe_field {
    UCP_PWC_PROBE_FIELD_FLAGS   = UCS_BIT(0), /**< ucp_pwc_probe_params_t::flags */
    UCP_PWC_PROBE_FIELD_EP      = UCS_BIT(1), /**< ucp_pwc_probe_params_t::ep */
    UCP_PWC_PROBE_FIELD_HANDLER = UCS_BIT(2)  /**< ucp_pwc_probe_params_t::handler and
                                                   ucp_pwc_probe_params_t::arg */
};
/* clang-format on */

/** @brief ucp_pwc_probe_params_t::flags: which completions to take. */
enum ucp_pwc_probe_flags {
    UCP_PWC_PROBE_LOCAL  = UCS_BIT(0), /**< our operations' */
    UCP_PWC_PROBE_REMOTE = UCS_BIT(1)  /**< our peers' (both when neither) */
};

/** @brief Arguments of ucp_pwc_probe(). */
typedef struct ucp_pwc_probe_params {
    uint64_t field_mask; /**< ucp_pwc_probe_field bits of the fields set */
    unsigned flags;      /**< ucp_pwc_probe_flags; both if not set */
    /** Only completions of operations on this ep (local), or from the peer
     *  it reaches (remote); all if not set. */
    ucp_ep_h ep;
    ucp_pwc_handler_t handler; /**< called for each completion taken */
    void *arg;                 /**< the handler's argument */
} ucp_pwc_probe_params_t;

/**
 * @brief Progresses @a worker once, then takes up to @a max completions,
 * local ones first, each in the order it happened.
 *
 * Each is copied to @a completions (may be NULL with a handler) and passed
 * to the handler if one is set. Probing lets the peers send more remote ids
 * (it gives credits back), so an application that only probes never blocks
 * its peers for good.
 *
 * @param worker         the worker.
 * @param params         what to take; NULL: every completion, no handler.
 * @param [out] completions  where the taken ones are copied (may be NULL with
 *                       a handler).
 * @param max            most completions to take; 0 only progresses (and
 *                       counts what is pending).
 * @param [out] count_p    how many were taken
 * @param [out] pending_p  if not NULL: operations of this worker (on the ep
 *                         if one is set) not completed yet
 * @return UCS_OK; UCS_ERR_INVALID_PARAM for a NULL worker or count_p, unknown
 *         fields or flags, an ep of another worker, or neither completions
 *         nor a handler with max > 0.
 */
ucs_status_t ucp_pwc_probe(ucp_worker_h worker, const ucp_pwc_probe_params_t *params,
                           ucp_pwc_completion_t *completions, size_t max, size_t *count_p,
                           size_t *pending_p);

/**
 * @brief Makes remote completions sent with UCP_PWC_FLAG_REMOTE_CNTR add 1 to
 * @a cntr (a counter of @a worker) instead of being queued; NULL unbinds.
 * A bound counter cannot be destroyed (UCS_ERR_BUSY) until unbound.
 *
 * @return UCS_OK; UCS_ERR_INVALID_PARAM for a NULL worker or a counter of
 *         another worker.
 */
ucs_status_t ucp_pwc_bind_cntr(ucp_worker_h worker, ucp_cntr_h cntr);

#ifdef __cplusplus
}
#endif

#endif
