/*
 * Tunables of the self (loopback) transport, read from UCX_SELF_* variables
 * (UCX's names and defaults where UCX has the same tunable; the defaults
 * live in the configuration table in self_config.cc). iface_open reads them
 * with the env prefix of its params (UCX_MPI_SELF_SEG_SIZE first).
 */
#ifndef UCT_SM_SELF_SELF_CONFIG_H
#define UCT_SM_SELF_SELF_CONFIG_H

#include <ucs/type/status.h>

#include <cstddef>

namespace uct::self {

struct self_config {
    /*
     * UCX_SELF_SEG_SIZE (8k): the largest active message (am max_bcopy,
     * max_zcopy payload, and max_short with its 8-byte header) and the
     * largest put_bcopy. 64 bytes .. 1 GiB.
     */
    size_t seg_size;

    /* UCX_SELF_AM_MAX_HDR (128): header bytes am_zcopy accepts beside its
     * payload, at most seg_size. */
    size_t am_max_hdr;

    /*
     * UCX_SELF_NESTED_QUEUE_LEN (64): messages sent from inside an AM handler
     * are queued (not delivered recursively) and delivered by progress();
     * when this many are queued further sends return UCS_ERR_NO_RESOURCE.
     */
    unsigned nested_queue_len;

    /* UCX_SELF_RX_BUFS_GROW (16): receive descriptors allocated at a time;
     * 0 lets the transport choose (16). */
    unsigned rx_bufs_grow;

    /*
     * UCX_SELF_KEYLESS_RMA (y): accept RMA and atomics with no remote key
     * (rkey 0 or all ones), unchecked. With a key the access must lie inside
     * the key's region.
     */
    bool keyless_rma;

    /* UCX_SELF_BW (12GBs): bandwidth in the performance model (bytes/s). */
    double bandwidth_Bps;
};

/* The defaults of the UCX_SELF_* table. */
self_config default_self_config();

/*
 * UCX_<env_prefix>_SELF_*, UCX_SELF_*, the config file and the defaults,
 * validated. On a malformed or out-of-range value logs which variable is
 * wrong, leaves *config untouched and returns UCS_ERR_INVALID_PARAM.
 */
ucs_status_t read_self_config(const char *env_prefix, self_config *config);

/* UCS_ERR_INVALID_PARAM (with a message naming the variable) if a field is
 * out of range. */
ucs_status_t validate_self_config(const self_config &config);

} // namespace uct::self

#endif
