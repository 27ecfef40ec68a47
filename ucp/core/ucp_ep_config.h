/*
 * Endpoint configurations: what eps with the same lanes share. The limits
 * of their protocols (ep_thresholds) and the protocol selection table are
 * computed once per distinct lane set, the way UCX numbers its ep_cfg[N];
 * each ep points to its configuration and keeps only fast-path copies.
 */
#ifndef UCP_CORE_UCP_EP_CONFIG_H
#define UCP_CORE_UCP_EP_CONFIG_H

#include <ucp/proto/select.h>

#include <cstdint>
#include <cstdio>
#include <string>

struct ucp_ep;
struct ucp_worker;

namespace ucp {

/* What identifies a configuration: each lane's iface and md, and the roles. */
struct ep_config_key {
    struct lane_key {
        unsigned iface_index;
        unsigned md_index;
        bool operator==(const lane_key &) const = default;
    };
    lane_key lanes[max_lanes]                    = {};
    uint8_t num_lanes                            = 0;
    uint8_t am_lane                              = no_lane;
    uint8_t rndv_lane                            = no_lane;
    uint8_t extra_rndv_lanes                     = 0; /* ucp_ep::extra_rndv_lanes */
    uint8_t rma_lane                             = no_lane;
    uint8_t mem_rndv_lane                        = no_lane;
    bool operator==(const ep_config_key &) const = default;
};

struct ep_config {
    unsigned index; /* ep_cfg[index] in the worker's list */
    ep_config_key key;
    ep_thresholds thresh;
    /* Names for printing: "tcp/lo" per lane, the AM lane's and the
     * rendezvous lane's transports, and whether the latter can push. */
    std::string lane_names[max_lanes];
    std::string am_tl;
    std::string rndv_tl;
    bool rndv_can_push = false;
    bool rndv_splits   = false; /* receivers split transfers from UCX_RNDV_SPLIT_THRESH */
    std::string mem_rndv_tl;    /* empty: no rendezvous of non-host memory */
    proto::table protocols;
    /* The lanes a rendezvous pull is split over, rndv_lane first, then the
     * others fastest first, with each one's bandwidth (its share). */
    uint8_t rndv_rails[max_lanes]   = {};
    double rndv_rail_Bps[max_lanes] = {};
    uint8_t num_rndv_rails          = 0;
};

/*
 * The configuration for `ep`'s lanes (am_ep set, lanes filled): an existing
 * one of the worker's, or a new one (UCX_PROTO_INFO=y prints a new one's
 * table). Also refreshes the ep's fast-path copies.
 */
const ep_config *ep_config_attach(ucp_ep *ep);

/* The configuration's lanes and its protocol tables, for every operation. */
void print_ep_config(const ucp_worker &worker, const ep_config &cfg, FILE *stream);

} // namespace ucp

#endif
