/*
 * A sender's view of another QP's inbound ring: mapped once through
 * /proc/<owner>/fd/<fd> and cached per QP number (which changes when the
 * slot is reused). The cache also keeps a pidfd of the owner, so liveness
 * checks are cheap.
 */
#ifndef VERBS_EMU_OUTBOUND_RING_H
#define VERBS_EMU_OUTBOUND_RING_H

#include "fabric.h"
#include "ring_format.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <sys/types.h>
#include <sys/uio.h>

namespace verbs_emu {

/* Bytes of a message in this process's memory, in order. */
using gather_list = std::vector<struct iovec>;

struct outbound_ring {
    uint32_t qpn        = 0;
    pid_t owner         = 0;
    int ring_fd         = -1;
    int pidfd           = -1;
    ring_header *header = nullptr;
    uint8_t *data       = nullptr;
    size_t map_bytes    = 0;
    size_t capacity     = 0; /* checked once at mapping, then ours */
    /* without pidfds liveness costs a /proc read: answer from a recent one */
    std::chrono::steady_clock::time_point checked_at;
    bool alive = true;
};

/* The mapping for QP `qpn` as `view` describes it; nullptr if it cannot be
 * mapped or does not look like that QP's ring. */
outbound_ring *outbound_ring_get(uint32_t qpn, const qp_view &view);

bool outbound_owner_alive(outbound_ring &ring);

enum class produce_status { done, no_room, broken };

/* Appends one record: the header fields of `record` (size, sequence,
 * fragment_length are filled in) and `payload_max` bytes of `source` from
 * `source_offset` if there is room, else as many as fit but at least
 * `payload_min`. `*written` gets the payload bytes stored. A SEND record
 * whose payload ends the message gets kRecordLast. */
produce_status ring_produce(outbound_ring &ring, record_header record, const gather_list &source,
                            uint64_t source_offset, size_t payload_min, size_t payload_max,
                            size_t *written);

/* Whether a record with `payload` bytes fits now (single producer: room
 * can then only grow until it writes). */
bool ring_has_room(const outbound_ring &ring, size_t payload);

/* Asks the ring's owner to fire `slot` at `address` when it frees room. */
void ring_register_waiter(outbound_ring &ring, uint32_t slot, const char *address);

/* Raises the owner's receive-CQ event if that CQ is armed. */
void ring_notify_owner(const outbound_ring &ring);

/* Copies `length` bytes at `offset` of a gathered message. */
void gather_copy(const gather_list &source, uint64_t offset, uint8_t *dst, size_t length);

} // namespace verbs_emu

#endif
