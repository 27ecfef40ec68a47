#include "mm_config.h"

#include <ucs/debug/log.h>

#include <bit>

namespace uct::mm {

mm_config default_mm_config()
{
    return mm_config{};
}

ucs_status_t validate_mm_config(const mm_config &config)
{
    if (!std::has_single_bit(config.fifo_size) || (config.fifo_size < 2) ||
        (config.fifo_size > 65536)) {
        ucs_error("mm: UCX_MM_FIFO_SIZE=%zu must be a power of two in [2, 65536]",
                  config.fifo_size);
        return UCS_ERR_INVALID_PARAM;
    }
    if (!std::has_single_bit(config.fifo_elem_size) || (config.fifo_elem_size < 64) ||
        (config.fifo_elem_size > 4096)) {
        ucs_error("mm: UCX_MM_FIFO_ELEM_SIZE=%zu must be a power of two in [64, 4096]",
                  config.fifo_elem_size);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((config.seg_size == 0) || (config.seg_size % 64 != 0) ||
        (config.seg_size > (1u << 20))) {
        ucs_error("mm: UCX_MM_SEG_SIZE=%zu must be a multiple of 64 up to 1 MiB",
                  config.seg_size);
        return UCS_ERR_INVALID_PARAM;
    }
    if (!std::has_single_bit(config.fifo_release_interval) ||
        (config.fifo_release_interval > config.fifo_size / 2)) {
        ucs_error("mm: UCX_MM_FIFO_RELEASE_INTERVAL=%zu must be a power of two "
                  "at most half the FIFO size (%zu)", config.fifo_release_interval,
                  config.fifo_size);
        return UCS_ERR_INVALID_PARAM;
    }
    if (config.rx_max_poll == 0) {
        ucs_error("mm: UCX_MM_RX_MAX_POLL must be at least 1");
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

} // namespace uct::mm
