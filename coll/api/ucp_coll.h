/**
 * @file ucp_coll.h
 * @brief Collective operations over UCP (libucp_coll): teams of endpoints
 * and the nine collectives of libfabric's fi_collective, nonblocking.
 *
 * A layer of its own over the public UCP API, as UCC sits on UCX: nothing
 * in ucp.h changes. Its messages are active messages with a layered id
 * (UCP_EXT_AM_ID_LAYERED, <ucp/api/ucp_ext.h>), so an application's tag
 * receives (wildcards included) and AM handlers never see them. Work is
 * progressed by ucp_worker_progress() of the context's worker, from the
 * worker's callback queue.
 *
 * Order: every member of a team starts the team's collectives in the same
 * order (as MPI asks); several may be outstanding at once, on several teams.
 */
#ifndef UCP_COLL_H_
#define UCP_COLL_H_

#include <ucp/api/ucp.h>

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @brief The collectives of one worker (ucp_coll_context_create()). */
typedef struct ucp_coll_context *ucp_coll_context_h;

/** @brief An ordered group of processes (ucp_team_create_nbx()). */
typedef struct ucp_team *ucp_team_h;

/**
 * @brief Sets up collectives on a worker. Create it before the worker's
 * address is given to peers: a peer's first collective message may arrive
 * as soon as it can reach the worker.
 *
 * @return UCS_OK; UCS_ERR_INVALID_PARAM for NULL; UCS_ERR_ALREADY_EXISTS if
 *         the worker has one.
 */
ucs_status_t ucp_coll_context_create(ucp_worker_h worker, ucp_coll_context_h *context_p);

/**
 * @brief Tears down a context.
 * @return UCS_OK; UCS_ERR_BUSY while it has teams or requests not released
 *         with ucp_coll_request_free().
 */
ucs_status_t ucp_coll_context_destroy(ucp_coll_context_h context);

/** @brief Fields of ucp_team_params_t that are set. */
enum ucp_team_params_field {
    UCP_TEAM_PARAM_FIELD_EPS    = UCS_BIT(0), /**< eps, size, my_rank */
    UCP_TEAM_PARAM_FIELD_KEY    = UCS_BIT(1), /**< key (default 0) */
    UCP_TEAM_PARAM_FIELD_PARENT = UCS_BIT(2)  /**< parent, start, stride, count */
};

/**
 * @brief How a team is made: from endpoints (rank = position), or as the
 * ranks start, start + stride, ... (count of them) of a parent team.
 */
typedef struct ucp_team_params {
    uint64_t field_mask; /**< ucp_team_params_field bits */
    /** The members in rank order; eps[my_rank] is not used (may be NULL). */
    const ucp_ep_h *eps;
    unsigned size;    /**< entries of eps */
    unsigned my_rank; /**< this process's rank */
    /** Equal on all members of a team made from endpoints, and different
     *  from the key of any other such team one of them makes while this one
     *  exists (an MPI runtime's context id). Keys with the top bit set are
     *  reserved for sub-teams. */
    uint64_t key;
    ucp_team_h parent; /**< sub-team: of this team ... */
    unsigned start;    /**< ... the ranks start, */
    unsigned stride;   /**< start + stride, ... (stride >= 1) */
    unsigned count;    /**< count of them */
} ucp_team_params_t;

/**
 * @brief Makes a team: a nonblocking collective of its members, done when
 * all members made it (sizes and keys are checked against each other). A
 * sub-team is made by its members only; the parent's ranks outside it do
 * not take part.
 *
 * @param [in]  context  the collectives of this process's worker.
 * @param [in]  params   the members (ucp_team_params_t).
 * @param [out] team_p   the team, set when the call returns (see below).
 * @param [in]  param    callback (cb.send) and user_data as for ucp_*_nbx.
 * @return NULL when done at once; a request (ucp_coll_request_check_status(),
 *         ucp_coll_request_free()); or an error: UCS_ERR_INVALID_PARAM for
 *         bad parameters (this process not in a sub-range, a key with the
 *         top bit), UCS_ERR_ALREADY_EXISTS for a key in use.
 *         *team_p is usable for collectives once the request completes.
 */
ucs_status_ptr_t ucp_team_create_nbx(ucp_coll_context_h context, const ucp_team_params_t *params,
                                     ucp_team_h *team_p, const ucp_request_param_t *param);

/**
 * @brief Frees a team (locally).
 * @return UCS_OK; UCS_ERR_BUSY while its collectives are outstanding.
 */
ucs_status_t ucp_team_destroy(ucp_team_h team);

/** @brief This process's rank and the team's size. */
ucs_status_t ucp_team_query(ucp_team_h team, unsigned *rank_p, unsigned *size_p);

/** @brief The collectives (fi_collective's, in its order). */
typedef enum ucp_coll_type {
    UCP_COLL_BARRIER,
    UCP_COLL_BCAST,
    UCP_COLL_ALLTOALL,
    UCP_COLL_ALLREDUCE,
    UCP_COLL_ALLGATHER,
    UCP_COLL_REDUCE_SCATTER,
    UCP_COLL_REDUCE,
    UCP_COLL_SCATTER,
    UCP_COLL_GATHER,
    UCP_COLL_LAST
} ucp_coll_type_t;

/** @brief Element types (fi_datatype's, without long double). */
typedef enum ucp_coll_dt {
    UCP_COLL_DT_INT8,
    UCP_COLL_DT_UINT8,
    UCP_COLL_DT_INT16,
    UCP_COLL_DT_UINT16,
    UCP_COLL_DT_INT32,
    UCP_COLL_DT_UINT32,
    UCP_COLL_DT_INT64,
    UCP_COLL_DT_UINT64,
    UCP_COLL_DT_FLOAT,
    UCP_COLL_DT_DOUBLE,
    UCP_COLL_DT_FLOAT_COMPLEX,  /**< two floats: real, imaginary */
    UCP_COLL_DT_DOUBLE_COMPLEX, /**< two doubles */
    UCP_COLL_DT_LAST
} ucp_coll_dt_t;

/**
 * @brief Reductions (fi_op's). Logical ops take nonzero as true and give
 * 0 or 1; bitwise ops are on integers only; MIN and MAX not on complex.
 */
typedef enum ucp_coll_op {
    UCP_COLL_OP_MIN,
    UCP_COLL_OP_MAX,
    UCP_COLL_OP_SUM,
    UCP_COLL_OP_PROD,
    UCP_COLL_OP_LOR,
    UCP_COLL_OP_LAND,
    UCP_COLL_OP_BOR,
    UCP_COLL_OP_BAND,
    UCP_COLL_OP_LXOR,
    UCP_COLL_OP_BXOR,
    UCP_COLL_OP_LAST
} ucp_coll_op_t;

/** @brief ucp_coll_args_t::flags */
enum ucp_coll_flags {
    /** The input is in rbuf (sbuf is ignored): allreduce, reduce at the
     *  root, reduce_scatter (rbuf holds size * count elements, the result
     *  is its first count), allgather (this rank's block of rbuf), alltoall,
     *  gather at the root (its block is in place), scatter at the root (its
     *  block stays in sbuf; rbuf is not written). */
    UCP_COLL_FLAG_IN_PLACE = UCS_BIT(0)
};

/** @brief Fields of ucp_coll_args_t that are set (coll always is). */
enum ucp_coll_args_field {
    UCP_COLL_ARGS_FIELD_ROOT  = UCS_BIT(0), /**< root (default 0) */
    UCP_COLL_ARGS_FIELD_OP    = UCS_BIT(1), /**< op (reductions need it) */
    UCP_COLL_ARGS_FIELD_FLAGS = UCS_BIT(2)  /**< flags */
};

/**
 * @brief One collective. `count` is in elements of `dt`:
 *   - bcast: of buf (rbuf); allreduce, reduce: of sbuf and rbuf;
 *   - allgather, alltoall, scatter, gather, reduce_scatter: of one rank's
 *     block: allgather sbuf count, rbuf size * count; alltoall both
 *     size * count (block i goes to rank i); scatter sbuf (root)
 *     size * count, rbuf count; gather the reverse; reduce_scatter sbuf
 *     size * count, rbuf count (rank i gets block i of the reduction).
 */
typedef struct ucp_coll_args {
    uint64_t field_mask; /**< ucp_coll_args_field bits */
    ucp_coll_type_t coll;
    const void *sbuf;
    void *rbuf;
    size_t count;
    ucp_coll_dt_t dt;
    ucp_coll_op_t op;
    unsigned root;
    uint32_t flags; /**< ucp_coll_flags */
} ucp_coll_args_t;

/**
 * @brief Starts a collective on a team.
 *
 * @param [in] team  a team whose creation completed.
 * @param [in] args  the collective, its buffers, count, type, op and root. *
 * Floating-point results are the same bits on every rank: each element is
 * reduced once, in an order fixed by the algorithm and the ranks, and the
 * result is what travels. (Different algorithms, chosen by size or
 * UCX_COLL_TUNE, may round differently.)
 *
 * @param [in] param cb.send, user_data, UCP_OP_ATTR_FLAG_NO_IMM_CMPL.
 * @return NULL when done at once; a request; or an error status:
 *         UCS_ERR_INVALID_PARAM (bad root, buffers, type), UCS_ERR_UNSUPPORTED
 *         for a (datatype, op) pair that has no meaning (ucp_coll_query()).
 */
ucs_status_ptr_t ucp_coll_nbx(ucp_team_h team, const ucp_coll_args_t *args,
                              const ucp_request_param_t *param);

/** @brief UCS_INPROGRESS, or the final status of a request. */
ucs_status_t ucp_coll_request_check_status(void *request);

/** @brief Releases a request (done or not: a pending one completes unseen). */
void ucp_coll_request_free(void *request);

/** @brief What ucp_coll_query() answers. */
typedef struct ucp_coll_attr {
    ucp_coll_type_t coll; /**< in */
    ucp_coll_dt_t dt;     /**< in */
    ucp_coll_op_t op;     /**< in: reductions */
    int supported;        /**< out: nonzero if the team does it */
    size_t max_count;     /**< out: largest count */
    unsigned max_members; /**< out: largest team */
} ucp_coll_attr_t;

/**
 * @brief fi_query_collective: whether the team does (coll, dt, op).
 * @return UCS_OK (attr->supported says); UCS_ERR_INVALID_PARAM for values
 *         outside the enums.
 */
ucs_status_t ucp_coll_query(ucp_team_h team, ucp_coll_attr_t *attr);

#ifdef __cplusplus
}
#endif

#endif
