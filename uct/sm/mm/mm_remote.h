/*
 * A peer's FIFO as one iface sees it: the owner process held (a pidfd), its
 * segment mapped and its header validated once. Every endpoint of the iface
 * to that FIFO shares it, so N endpoints to one peer cost one mapping and
 * one descriptor, not N (a mapping costs its page tables and the pages its
 * first touches fault in: about 40 KB each). The iface keeps the live ones
 * by (owner pid, segment id) and watches their processes; each endpoint
 * copies the geometry into its own send-path cache line.
 */
#ifndef UCT_SM_MM_MM_REMOTE_H
#define UCT_SM_MM_MM_REMOTE_H

#include "mm_address.h"
#include "mm_fifo.h"
#include "mm_peer.h"
#include "mm_segment.h"

#include <uct/sm/base/peer_process.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace uct::mm {

class mm_ep;

/* Where a sender writes, taken from a validated copy of the header. */
struct fifo_geometry {
    uint64_t *tail      = nullptr;
    uint64_t *head      = nullptr;
    uint8_t *elems      = nullptr;
    uint8_t *bufs       = nullptr;
    uint64_t capacity   = 0;
    uint64_t fifo_mask  = 0;
    uint32_t max_inline = 0;
    uint32_t seg_size   = 0;
    uint8_t fifo_shift  = 0;
    uint8_t elem_shift  = 0;
};

class mm_remote {
public:
    /* A peer's FIFO among this iface's remotes: its owner and segment. */
    using key_type = std::pair<uint32_t, uint64_t>;
    static key_type key_of(const iface_address &address)
    {
        return {address.owner_pid, address.segment_id};
    }

    mm_remote(const backend &backend, const iface_address &address);
    ~mm_remote();
    mm_remote(const mm_remote &)            = delete;
    mm_remote &operator=(const mm_remote &) = delete;

    /* Holds the owner, maps its segment, validates the header. */
    ucs_status_t connect();
    /* Another address of the same key names this FIFO only if it says the
     * same about it. */
    bool same_fifo(const iface_address &address) const;

    const fifo_geometry &geometry() const { return geometry_; }
    const sm::peer_process &peer() const { return peer_; }
    const wakeup_address &wakeup() const { return wakeup_; }
    key_type key() const { return key_of(address_); }

    /* The endpoints using it; the iface frees it when the last one goes. */
    std::vector<mm_ep *> eps;
    /* Set once its owner was found gone: no new endpoint joins it. */
    bool dead = false;
    /* Extra holders besides the endpoints (the iface while it fails them). */
    unsigned holds = 0;

private:
    const backend &backend_;
    iface_address address_;
    sm::peer_process peer_;
    void *segment_ = nullptr;
    fifo_geometry geometry_;
    wakeup_address wakeup_{};
};

} // namespace uct::mm

#endif
