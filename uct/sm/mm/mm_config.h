/*
 * Tunables of the shared-memory (mm) transports. Each field is named after
 * the UCX variable it will be read from once the configuration registry is
 * wired in; until then iface_open takes default_mm_config().
 */
#ifndef UCT_SM_MM_MM_CONFIG_H
#define UCT_SM_MM_MM_CONFIG_H

#include <ucs/type/status.h>

#include <cstddef>

namespace uct::mm {

struct mm_config {
    /* UCX_MM_FIFO_SIZE: receive FIFO elements, a power of two (2..65536). */
    size_t fifo_size = 64;

    /* UCX_MM_FIFO_ELEM_SIZE: bytes per FIFO element, a power of two in
     * [64, 4096]; the element header takes 8, the rest is inline payload,
     * so am.max_short = fifo_elem_size - 8. */
    size_t fifo_elem_size = 128;

    /* UCX_MM_SEG_SIZE: the bcopy buffer of each FIFO slot, so am.max_bcopy
     * (and put/get max_bcopy). Multiple of 64, at most 1 MiB. */
    size_t seg_size = 8192;

    /* UCX_MM_FIFO_RELEASE_INTERVAL: the receiver tells senders how far it
     * has read every this many elements (and when it runs dry), so the
     * shared head line does not bounce on every message. Power of two,
     * at most fifo_size / 2. */
    size_t fifo_release_interval = 16;

    /* UCX_MM_RX_MAX_POLL: most messages one progress() call delivers. */
    unsigned rx_max_poll = 16;
};

/* The documented defaults above. */
mm_config default_mm_config();

/* UCX_MM_* (after UCX_<env_prefix>_MM_*), validated; defaults where unset. */
ucs_status_t read_mm_config(const char *env_prefix, mm_config *config);

/* UCS_ERR_INVALID_PARAM (with a message) if a field is out of range. */
ucs_status_t validate_mm_config(const mm_config &config);

} // namespace uct::mm

#endif
