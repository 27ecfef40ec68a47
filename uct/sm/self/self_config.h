/*
 * Tunables of the self (loopback) transport. Each field is named after the
 * UCX environment variable it will be read from once the configuration
 * registry is wired in; until then iface_open takes default_self_config().
 */
#ifndef UCT_SM_SELF_SELF_CONFIG_H
#define UCT_SM_SELF_SELF_CONFIG_H

#include <cstddef>

namespace uct::self {

struct self_config {
    /*
     * UCX_SELF_SEG_SIZE: the largest active message (am max_bcopy and
     * max_zcopy payload; max_short is this minus the 8-byte header) and
     * the largest put_bcopy.
     */
    size_t seg_size = 8192;

    /* UCX_SELF_AM_MAX_HDR: header bytes am_zcopy accepts beside its payload. */
    size_t am_max_hdr = 128;

    /*
     * UCX_SELF_NESTED_QUEUE_LEN: messages sent from inside an AM handler are
     * queued (not delivered recursively) and delivered by progress(); when
     * this many are queued further sends return UCS_ERR_NO_RESOURCE.
     */
    unsigned nested_queue_len = 64;

    /* UCX_SELF_RX_BUFS_GROW: receive descriptors allocated at a time. */
    unsigned rx_bufs_grow = 16;

    /*
     * UCX_SELF_KEYLESS_RMA: accept RMA and atomics with no remote key (rkey 0
     * or all ones), unchecked. With a key the access must lie inside the
     * key's region.
     */
    bool keyless_rma = true;

    /* UCX_SELF_BW: bandwidth in the performance model (bytes/s). */
    double bandwidth_Bps = 12.0e9;
};

/* The documented defaults above. */
self_config default_self_config();

} // namespace uct::self

#endif
