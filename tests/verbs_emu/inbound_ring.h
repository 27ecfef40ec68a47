/*
 * The owner's side of a QP's inbound ring: a memfd this process creates and
 * maps; senders map it through /proc/<pid>/fd/<fd>. Only the owner
 * consumes, so head is kept locally and only published.
 */
#ifndef VERBS_EMU_INBOUND_RING_H
#define VERBS_EMU_INBOUND_RING_H

#include "ring_format.h"

#include <string>

namespace verbs_emu {

class inbound_ring {
public:
    enum class peek_result { empty, record, corrupt };

    inbound_ring() = default;
    ~inbound_ring() { destroy(); }
    inbound_ring(const inbound_ring &)            = delete;
    inbound_ring &operator=(const inbound_ring &) = delete;

    /* Creates the memfd; 0 or an errno value. The ring is not valid for
     * senders until publish(). */
    int create(size_t capacity);
    /* Stamps the QP number and where arrivals raise events. */
    void publish(uint32_t qpn, uint32_t notify_slot, const std::string &notify_address);
    void destroy();

    int fd() const { return fd_; }

    bool has_records() const;
    /* Copies and checks the record at the head. */
    peek_result peek(record_header *record);
    /* Copies `length` payload bytes of the head record from `offset`. */
    void copy_payload(const record_header &record, size_t offset, void *dst, size_t length) const;
    /* Releases the head record and wakes a sender waiting for room. */
    void pop(const record_header &record);
    /* Drops everything published so far. */
    void discard_all();
    /* Fires the event a stalled sender asked for (room, or readiness). */
    void wake_waiter();

private:
    int fd_                     = -1;
    ring_header *header_        = nullptr;
    uint8_t *data_              = nullptr;
    size_t capacity_            = 0;
    uint64_t head_              = 0;
    uint64_t expected_sequence_ = 0;
    bool resync_                = true; /* accept any sequence (after drops) */
};

/* The ring size for a QP with `max_recv_wr` receives (0 with an SRQ). */
size_t ring_capacity_for(uint32_t max_recv_wr);

} // namespace verbs_emu

#endif
