/*
 * The receive FIFO every mm iface owns, as laid out in its shared segment:
 *
 *   line 0   header: written once by the owner before it hands out its address
 *   line 1   tail:   next index to reserve, bumped by senders with a CAS; the
 *                    top bit is the receiver's "armed for wakeup" flag
 *   line 2   head:   first index the receiver has not released yet, published
 *                    lazily so that line rarely moves between caches
 *   elements fifo_size power-of-two slots of elem_size bytes (cache-line
 *            aligned): an 8-byte word then inline payload
 *   buffers  one seg_size bcopy buffer per slot, reused with its slot
 *
 * A slot for index i is ready when the owner bit of its word equals the lap
 * parity (i / fifo_size) & 1. Slots start with the bit set, which lap 0 reads
 * as "not yet". The sender writes the payload and then stores the whole word
 * with release semantics, so the receiver learns kind, id and length from the
 * one load that tells it the element is there.
 *
 * Versioning: a sender reads the header and checks FIFO_VERSION before it
 * writes anything. The header, the control block, the element word and the
 * layout offsets are frozen by it: changing one requires bumping
 * FIFO_VERSION.
 */
#ifndef UCT_SM_MM_MM_FIFO_H
#define UCT_SM_MM_MM_FIFO_H

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace uct::mm {

constexpr size_t CACHE_LINE = 64;

constexpr uint64_t FIFO_MAGIC   = 0x4f464946676e786dull; /* "mxngFIFO" */
constexpr uint32_t FIFO_VERSION = 2;

/* Tail word: the index, and the flag a receiver sets before sleeping. */
constexpr uint64_t TAIL_ARMED      = 1ull << 63;
constexpr uint64_t TAIL_INDEX_MASK = TAIL_ARMED - 1;

/* Element word: bits 0-7 flags, 8-15 AM id, 32-63 payload length. */
namespace elem_flag {
constexpr uint64_t OWNER = 1u << 0; /* lap parity of the index it carries */
constexpr uint64_t BCOPY = 1u << 1; /* payload in the slot's bcopy buffer */
constexpr uint64_t NOP   = 1u << 2; /* reserved slot a failed send gave back */
} // namespace elem_flag

constexpr size_t ELEM_HEADER_SIZE = sizeof(uint64_t);
/* Frozen, with the element word's bits: changing them requires bumping FIFO_VERSION. */
static_assert(ELEM_HEADER_SIZE == 8, "the element word precedes the inline payload");

// clang-format off
struct alignas(CACHE_LINE) fifo_header {
    uint64_t magic;
    uint32_t version;
    uint32_t owner_pid;
    uint32_t fifo_size;       /* elements, power of two */
    uint32_t elem_size;       /* bytes, power of two, >= CACHE_LINE */
    uint32_t seg_size;        /* bytes per bcopy buffer */
    uint32_t reserved;
    uint64_t elems_offset;
    uint64_t bufs_offset;
    uint64_t total_size;      /* bytes the layout needs */
    uint64_t owner_start_time; /* ucs::sys::self_start_time() of the owner:
                                  tells a reused pid from the owner */
};
// clang-format on

/* Frozen: changing it requires bumping FIFO_VERSION, which senders check; magic and
 * version never move, so a sender of any version can refuse the FIFO. */
static_assert(sizeof(fifo_header) == CACHE_LINE, "the header is one cache line");
static_assert((offsetof(fifo_header, version) == 8) && (offsetof(fifo_header, fifo_size) == 16) &&
                  (offsetof(fifo_header, elems_offset) == 32) &&
                  (offsetof(fifo_header, owner_start_time) == 56),
              "fifo header layout");

struct fifo_ctl {
    fifo_header header;
    alignas(CACHE_LINE) uint64_t tail;
    alignas(CACHE_LINE) uint64_t head;
};

constexpr size_t FIFO_ELEMS_OFFSET = 4 * CACHE_LINE;
/* Frozen: changing it requires bumping FIFO_VERSION, which senders check. */
static_assert((offsetof(fifo_ctl, tail) == CACHE_LINE) &&
                  (offsetof(fifo_ctl, head) == 2 * CACHE_LINE),
              "control block layout");
static_assert(sizeof(fifo_ctl) <= FIFO_ELEMS_OFFSET, "control block too big");
static_assert(std::atomic_ref<uint64_t>::is_always_lock_free,
              "64-bit atomics must work across processes");

inline size_t fifo_bufs_offset(size_t fifo_size, size_t elem_size)
{
    return FIFO_ELEMS_OFFSET + fifo_size * elem_size;
}

inline size_t fifo_total_size(size_t fifo_size, size_t elem_size, size_t seg_size)
{
    return fifo_bufs_offset(fifo_size, elem_size) + fifo_size * seg_size;
}

inline std::atomic_ref<uint64_t> shared_word(uint64_t &word)
{
    return std::atomic_ref<uint64_t>(word);
}

inline std::atomic_ref<uint64_t> elem_word(uint8_t *elem)
{
    return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t *>(elem));
}

inline uint64_t make_elem_word(uint64_t lap_parity, uint64_t flags, unsigned am_id, uint32_t length)
{
    return lap_parity | flags | (uint64_t(am_id) << 8) | (uint64_t(length) << 32);
}

inline unsigned elem_am_id(uint64_t word)
{
    return unsigned(word >> 8) & 0xff;
}
inline uint32_t elem_length(uint64_t word)
{
    return uint32_t(word >> 32);
}

} // namespace uct::mm

#endif
