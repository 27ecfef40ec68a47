/*
 * Lane selection: which local ifaces reach a peer, and which of them carry
 * active messages, rendezvous pulls and RMA. Chosen from the transports'
 * performance models, so shared memory wins for a peer on this node, tcp
 * for one elsewhere, and self for this very worker, without naming them.
 * An iface connects to the peer's iface where both can, else to a peer ep
 * (connect-to-ep transports: the lane is p2p, connected in the wireup).
 */
#ifndef UCP_WIREUP_LANE_SELECT_H
#define UCP_WIREUP_LANE_SELECT_H

#include <ucp/core/ucp_address.h>
#include <ucp/core/ucp_ep.h>

struct ucp_worker;

namespace ucp {

struct lane_candidate {
    unsigned iface_index;       /* into ucp_worker::ifaces */
    const address_entry *entry; /* the peer's matching address entry */
    unsigned entry_index;       /* its index in the peer's address */
    bool p2p;                   /* connects to an ep of the peer */
};

struct lane_plan {
    std::vector<lane_candidate> lanes;
    uint8_t am   = no_lane;
    uint8_t rndv = no_lane;
    /* More rendezvous lanes a pull is split over (UCX_MAX_RNDV_LANES):
     * other devices of the rendezvous lane's transport, within
     * UCX_MULTI_LANE_MAX_RATIO of its bandwidth, fastest first. */
    std::vector<uint8_t> rndv_extra;
    uint8_t rma = no_lane;
    /* Rendezvous of memory the host lanes cannot reach (CUDA): an
     * accelerator transport whose md registers it (cuda_ipc). */
    uint8_t mem_rndv = no_lane;
    /* More RMA lanes, one per memory domain that registers memory and is
     * not on a lane above: a key of registered memory (no shared segment)
     * then still finds a lane whose md it has an entry for (ucp/rma). */
    std::vector<uint8_t> rma_extra;
};

/* UCS_ERR_UNREACHABLE when no local iface reaches any entry of `remote`. */
ucs_status_t select_lanes(const ucp_worker &worker, const unpacked_address &remote,
                          lane_plan *plan);

/*
 * The iface to carry the wireup of an ep whose lanes all connect to eps:
 * the connect-to-iface one with am_bcopy and the lowest AM cost that
 * reaches the peer. UCS_ERR_UNREACHABLE when there is none.
 */
ucs_status_t select_aux(const ucp_worker &worker, const unpacked_address &remote,
                        lane_candidate *aux);

} // namespace ucp

#endif
