/*
 * The UCP context settings (UCX_TLS, UCX_NET_DEVICES, UCX_RNDV_THRESH, ...)
 * and the ucp_config_t handle the public API hands out.
 */
#ifndef UCP_CORE_UCP_CONFIG_H
#define UCP_CORE_UCP_CONFIG_H

#include <ucp/api/ucp.h>
#include <ucs/config/table.h>
#include <uct/base/uct_types.h>

#include <string>

namespace ucp {

/* Indexed like rndv_scheme_names. */
enum rndv_scheme : unsigned {
    RNDV_SCHEME_AUTO,
    RNDV_SCHEME_GET_ZCOPY,
    RNDV_SCHEME_PUT_ZCOPY,
    RNDV_SCHEME_LAST
};

extern const char *const rndv_scheme_names[RNDV_SCHEME_LAST];

/* UCX_ATOMIC_MODE, indexed like atomic_mode_names. */
enum atomic_mode : unsigned {
    ATOMIC_MODE_CPU,    /* CPU atomics and transports coherent with them */
    ATOMIC_MODE_DEVICE, /* only the transports' device (NIC) atomics */
    ATOMIC_MODE_GUESS,  /* device where a transport has them, else cpu */
    ATOMIC_MODE_LAST
};

extern const char *const atomic_mode_names[ATOMIC_MODE_LAST];

/* Plain settings struct of context_config_table. */
// clang-format off
struct context_config {
    ucs_config_allow_list_t tls;               /* UCX_TLS */
    ucs_config_allow_list_t net_devices;       /* UCX_NET_DEVICES */
    ucs_config_allow_list_t shm_devices;       /* UCX_SHM_DEVICES */
    ucs_config_allow_list_t acc_devices;       /* UCX_ACC_DEVICES */
    ucs_config_allow_list_t self_devices;      /* UCX_SELF_DEVICES */
    int                     warn_invalid_config; /* UCX_WARN_INVALID_CONFIG */
    size_t                  bcopy_thresh;      /* UCX_BCOPY_THRESH */
    size_t                  zcopy_thresh;      /* UCX_ZCOPY_THRESH, size_auto */
    size_t                  rndv_thresh;       /* UCX_RNDV_THRESH, size_auto */
    unsigned                rndv_scheme;       /* UCX_RNDV_SCHEME, ucp::rndv_scheme */
    size_t                  rndv_split_thresh; /* UCX_RNDV_SPLIT_THRESH */
    size_t                  rndv_frag_size;    /* UCX_RNDV_FRAG_SIZE, the host entry */
    unsigned                max_eager_lanes;   /* UCX_MAX_EAGER_LANES */
    unsigned                max_rndv_lanes;    /* UCX_MAX_RNDV_LANES */
    double                  multi_lane_max_ratio; /* UCX_MULTI_LANE_MAX_RATIO */
    size_t                  min_rndv_chunk_size;  /* UCX_MIN_RNDV_CHUNK_SIZE */
    unsigned long           estimated_num_eps; /* UCX_ESTIMATED_NUM_EPS */
    unsigned long           estimated_num_ppn; /* UCX_ESTIMATED_NUM_PPN */
    double                  keepalive_interval;/* UCX_KEEPALIVE_INTERVAL, seconds */
    unsigned                keepalive_num_eps; /* UCX_KEEPALIVE_NUM_EPS */
    double                  immediate_progress_interval; /* UCX_IMMEDIATE_PROGRESS_INTERVAL, s */
    unsigned                max_peer_eps;      /* UCX_MAX_PEER_EPS */
    int                     proto_info;        /* UCX_PROTO_INFO */
    unsigned                atomic_mode;       /* UCX_ATOMIC_MODE, ucp::atomic_mode */
    ucs_ternary_auto_value_t rcache_enable;    /* UCX_RCACHE_ENABLE */
    unsigned long           rcache_max_regions;/* UCX_RCACHE_MAX_REGIONS, ulong_inf */
    size_t                  rcache_max_size;   /* UCX_RCACHE_MAX_SIZE, size_inf */
    size_t                  pwc_max_id_size;   /* UCX_PWC_MAX_ID_SIZE */
    unsigned                pwc_credits;       /* UCX_PWC_CREDITS */
    size_t                  pwc_packed_max;    /* UCX_PWC_PACKED_MAX */
};
// clang-format on

extern const ucs::config::table context_config_table;

/*
 * Whether a transport name passes UCX_TLS. The list may use aliases:
 * "sm"/"shm" = posix,sysv,cma; "mm" = posix,sysv; "^a,b" = all but a and b.
 */
bool tl_allowed(const ucs_config_allow_list_t &tls, const char *tl_name);

/* Whether a device passes the device list of its type (UCX_NET_DEVICES...). */
bool device_allowed(const context_config &config, uct::device_type type, const char *dev_name);

/* The variable name that filters devices of a type: "UCX_NET_DEVICES". */
const char *device_list_var(uct::device_type type);

const char *device_type_name(uct::device_type type);

} // namespace ucp

/* The public handle: settings plus the env prefix they were read with. */
struct ucp_config {
    ucp::context_config values;
    std::string env_prefix; /* "MPI" or "" */
};

#endif
