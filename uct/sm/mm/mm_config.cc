#include "mm_config.h"

#include <ucs/config/registry.h>
#include <ucs/debug/log.h>

#include <bit>

namespace uct::mm {

namespace {

const ucs::config::field mm_fields[] = {
    UCS_CONFIG_FIELD(mm_config, fifo_size, "FIFO_SIZE", "64",
                     "Elements in each receive FIFO (a power of two, 2..65536).",
                     ucs::config::type_size),
    UCS_CONFIG_FIELD(mm_config, fifo_elem_size, "FIFO_ELEM_SIZE", "128",
                     "Bytes per FIFO element (a power of two, 64..4096); all but 8 "
                     "carry inline payload, so this sets the short-message limit.",
                     ucs::config::type_size),
    UCS_CONFIG_FIELD(mm_config, seg_size, "SEG_SIZE", "8k",
                     "Buffered-copy segment per FIFO slot: the largest bcopy message.",
                     ucs::config::type_size),
    UCS_CONFIG_FIELD(mm_config, fifo_release_interval, "FIFO_RELEASE_INTERVAL", "16",
                     "The receiver publishes its read position every this many "
                     "elements, so the shared head line does not bounce per message.",
                     ucs::config::type_size, ucs::config::field_hidden),
    UCS_CONFIG_FIELD(mm_config, rx_max_poll, "RX_MAX_POLL", "16",
                     "Most messages one progress call delivers.", ucs::config::type_uint,
                     ucs::config::field_hidden),
};

} // namespace

/* posix and sysv share one FIFO geometry here; UCX 1.13 names each
 * transport's own (the posix name is read first when both are set). */
constexpr ucs::config::alias mm_aliases[] = {
    {"POSIX_FIFO_SIZE", "MM_FIFO_SIZE"},
    {"SYSV_FIFO_SIZE", "MM_FIFO_SIZE"},
    {"POSIX_FIFO_ELEM_SIZE", "MM_FIFO_ELEM_SIZE"},
    {"SYSV_FIFO_ELEM_SIZE", "MM_FIFO_ELEM_SIZE"},
    {"POSIX_SEG_SIZE", "MM_SEG_SIZE"},
    {"SYSV_SEG_SIZE", "MM_SEG_SIZE"},
    {"POSIX_FIFO_MAX_POLL", "MM_RX_MAX_POLL"},
    {"SYSV_FIFO_MAX_POLL", "MM_RX_MAX_POLL"},
};

/* UCX 1.13's posix and sysv settings with no counterpart here. */
constexpr const char *mm_no_effect[] = {
    "POSIX_HUGETLB_MODE",
    "POSIX_DIR",
    "POSIX_USE_PROC_LINK",
    "POSIX_MAX_SHORT",
    "POSIX_MAX_BCOPY",
    "POSIX_ALLOC",
    "POSIX_FAILURE",
    "POSIX_MAX_NUM_EPS",
    "POSIX_BW",
    "POSIX_FIFO_RELEASE_FACTOR",
    "POSIX_RX_MAX_BUFS",
    "POSIX_RX_BUFS_GROW",
    "POSIX_FIFO_HUGETLB",
    "POSIX_ERROR_HANDLING",
    "SYSV_HUGETLB_MODE",
    "SYSV_MAX_SHORT",
    "SYSV_MAX_BCOPY",
    "SYSV_ALLOC",
    "SYSV_FAILURE",
    "SYSV_MAX_NUM_EPS",
    "SYSV_BW",
    "SYSV_FIFO_RELEASE_FACTOR",
    "SYSV_RX_MAX_BUFS",
    "SYSV_RX_BUFS_GROW",
    "SYSV_FIFO_HUGETLB",
    "SYSV_ERROR_HANDLING",
};

const ucs::config::table mm_config_table = {"Shared memory (posix, sysv) transport",
                                            "MM_",
                                            mm_fields,
                                            sizeof(mm_config),
                                            mm_aliases,
                                            mm_no_effect};
UCS_CONFIG_REGISTER_TABLE(mm_config_table);

ucs_status_t read_mm_config(const char *env_prefix, mm_config *config)
{
    mm_config values;
    ucs_status_t status = ucs::config::fill(&values, mm_config_table, env_prefix);
    if (status != UCS_OK) {
        return status;
    }
    status = validate_mm_config(values);
    if (status == UCS_OK) {
        *config = values;
    }
    ucs::config::release(&values, mm_config_table);
    return status;
}

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
    if ((config.seg_size == 0) || (config.seg_size % 64 != 0) || (config.seg_size > (1u << 20))) {
        ucs_error("mm: UCX_MM_SEG_SIZE=%zu must be a multiple of 64 up to 1 MiB", config.seg_size);
        return UCS_ERR_INVALID_PARAM;
    }
    if (!std::has_single_bit(config.fifo_release_interval) ||
        (config.fifo_release_interval > config.fifo_size / 2)) {
        ucs_error("mm: UCX_MM_FIFO_RELEASE_INTERVAL=%zu must be a power of two "
                  "at most half the FIFO size (%zu)",
                  config.fifo_release_interval, config.fifo_size);
        return UCS_ERR_INVALID_PARAM;
    }
    if (config.rx_max_poll == 0) {
        ucs_error("mm: UCX_MM_RX_MAX_POLL must be at least 1");
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

} // namespace uct::mm
