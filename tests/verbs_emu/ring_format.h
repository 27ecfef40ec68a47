/*
 * The layout of a QP's inbound ring, shared with other processes: a 4 KiB
 * header page, then a power-of-two circular data area of 64-byte aligned
 * records (a record header, then its payload, which may wrap around the
 * end). Producers (senders, possibly several for UD) serialise on a robust
 * mutex in the header; the owner is the only consumer.
 *
 * Everything in here may have been written by another process: readers
 * validate what they use.
 */
#ifndef VERBS_EMU_RING_FORMAT_H
#define VERBS_EMU_RING_FORMAT_H

#include "notify.h"

#include <atomic>
#include <cstddef>
#include <cstdint>

#include <pthread.h>

namespace verbs_emu {

constexpr uint64_t kRingMagic     = 0x56454d5552494e47ull; /* "VEMURING" */
constexpr uint32_t kRingVersion   = 1;
constexpr size_t kRingHeaderBytes = 4096;
constexpr size_t kRecordAlign     = 64;
constexpr size_t kMinRingBytes    = 256 * 1024;
constexpr size_t kMaxRingBytes    = 8 * 1024 * 1024;
/* Longer sends travel as several records, so a message can be bigger than
 * the ring and the receiver drains while the sender still writes. */
constexpr size_t kMaxFragmentBytes = 64 * 1024;

enum record_opcode : uint16_t {
    kRecordSend     = 1, /* SEND, SEND_WITH_IMM, UD datagrams */
    kRecordWriteImm = 2, /* the receive side of RDMA_WRITE_WITH_IMM */
};

enum record_flags : uint16_t {
    kRecordFirst  = 1 << 0,
    kRecordLast   = 1 << 1,
    kRecordHasImm = 1 << 2,
    kRecordHasGrh = 1 << 3, /* UD: the first 40 payload bytes are a GRH */
};

struct record_header {
    uint32_t size; /* header + payload, a multiple of kRecordAlign */
    uint16_t opcode;
    uint16_t flags;
    uint32_t src_qpn;
    uint32_t imm;            /* network byte order, as posted */
    uint64_t message_length; /* whole message (UD: with the 40-byte GRH area) */
    uint64_t offset;         /* of this fragment within the message */
    uint32_t fragment_length;
    uint16_t src_lid;
    uint16_t unused0;
    uint64_t sequence; /* producers number records 0, 1, 2, ... */
    int32_t src_pid;
    uint32_t unused1[3];
};
static_assert(sizeof(record_header) == kRecordAlign, "record headers never wrap");

struct ring_header {
    uint64_t magic; /* stored last at creation */
    uint32_t version;
    int32_t owner_pid;
    uint32_t qpn;
    uint32_t notify_slot; /* owner's recv CQ arm word */
    uint64_t capacity;    /* data bytes, power of two */
    char notify_address[kNotifyAddressBytes + 1];
    pthread_mutex_t producer_lock;
    alignas(64) std::atomic<uint64_t> tail; /* producers, under the lock */
    uint64_t next_sequence;                 /* under the lock */
    alignas(64) std::atomic<uint64_t> head; /* the owner */
    /* A sender stalled for room asks to be woken through its send CQ. */
    alignas(64) std::atomic<uint32_t> waiter_flag;
    uint32_t waiter_slot;
    char waiter_address[kNotifyAddressBytes + 1];
};
static_assert(sizeof(ring_header) <= kRingHeaderBytes, "header fits its page");

inline size_t record_size_for(size_t payload)
{
    return (sizeof(record_header) + payload + kRecordAlign - 1) & ~(kRecordAlign - 1);
}

} // namespace verbs_emu

#endif
