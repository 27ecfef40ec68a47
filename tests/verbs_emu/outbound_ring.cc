#include "outbound_ring.h"

#include "liveness.h"
#include "robust_mutex.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace verbs_emu {

namespace {

/* Callers hold the emulator's global lock, which also guards this map. */
std::unordered_map<uint32_t, outbound_ring> g_rings;
constexpr size_t kCacheSweepThreshold = 1024;

void unmap(outbound_ring &ring)
{
    if (ring.header != nullptr) {
        munmap(ring.header, ring.map_bytes);
        ring.header = nullptr;
    }
    if (ring.pidfd >= 0) {
        close(ring.pidfd);
        ring.pidfd = -1;
    }
}

/* Drops mappings of QPs that no longer exist. */
void sweep_cache()
{
    for (auto it = g_rings.begin(); it != g_rings.end();) {
        qp_view view;
        if (!fabric_lookup_qp(it->first, &view) || view.id.owner != it->second.owner) {
            unmap(it->second);
            it = g_rings.erase(it);
        } else {
            ++it;
        }
    }
}

bool map_ring(uint32_t qpn, const qp_view &view, outbound_ring *ring)
{
    if (view.id.owner <= 0 || view.id.ring_fd < 0) {
        return false;
    }
    char path[64];
    std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", int(view.id.owner), view.id.ring_fd);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        if (errno == EACCES || errno == EPERM) {
            static bool told = false;
            if (!told) {
                told = true;
                std::fprintf(stderr,
                             "verbs_emu: cannot open %s: %s (ptrace "
                             "restrictions?)\n",
                             path, std::strerror(errno));
            }
        }
        return false;
    }
    struct stat st;
    bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
              size_t(st.st_size) >= kRingHeaderBytes + kMinRingBytes &&
              size_t(st.st_size) <= kRingHeaderBytes + kMaxRingBytes;
    void *base = MAP_FAILED;
    if (ok) {
        base = mmap(nullptr, size_t(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    close(fd);
    if (base == MAP_FAILED) {
        return false;
    }
    auto *header    = static_cast<ring_header *>(base);
    size_t capacity = __atomic_load_n(&header->capacity, __ATOMIC_RELAXED);
    bool valid      = __atomic_load_n(&header->magic, __ATOMIC_ACQUIRE) == kRingMagic &&
                 header->version == kRingVersion && header->qpn == qpn &&
                 header->owner_pid == view.id.owner && capacity >= kMinRingBytes &&
                 (capacity & (capacity - 1)) == 0 &&
                 kRingHeaderBytes + capacity <= size_t(st.st_size);
    if (!valid) {
        munmap(base, size_t(st.st_size));
        return false;
    }
    ring->qpn        = qpn;
    ring->owner      = view.id.owner;
    ring->ring_fd    = view.id.ring_fd;
    ring->header     = header;
    ring->data       = static_cast<uint8_t *>(base) + kRingHeaderBytes;
    ring->map_bytes  = size_t(st.st_size);
    ring->capacity   = capacity;
    ring->pidfd      = (view.id.owner == getpid()) ? -1 : open_pidfd(view.id.owner);
    ring->checked_at = std::chrono::steady_clock::now();
    ring->alive      = true;
    return true;
}

void copy_into_ring(outbound_ring &ring, uint64_t position, const void *src, size_t length)
{
    size_t offset = position & (ring.capacity - 1);
    size_t first  = std::min(length, ring.capacity - offset);
    std::memcpy(ring.data + offset, src, first);
    std::memcpy(ring.data, static_cast<const uint8_t *>(src) + first, length - first);
}

/* Gathers straight from the sender's buffers into the (wrapping) ring. */
void gather_into_ring(outbound_ring &ring, uint64_t position, const gather_list &source,
                      uint64_t source_offset, size_t length)
{
    uint64_t skip = source_offset;
    for (const struct iovec &piece : source) {
        if (length == 0) {
            break;
        }
        if (skip >= piece.iov_len) {
            skip -= piece.iov_len;
            continue;
        }
        size_t chunk = std::min(length, size_t(piece.iov_len - skip));
        copy_into_ring(ring, position, static_cast<const uint8_t *>(piece.iov_base) + skip, chunk);
        position += chunk;
        length -= chunk;
        skip = 0;
    }
}

} // namespace

outbound_ring *outbound_ring_get(uint32_t qpn, const qp_view &view)
{
    auto it = g_rings.find(qpn);
    if (it != g_rings.end()) {
        if (it->second.owner == view.id.owner && it->second.ring_fd == view.id.ring_fd) {
            return &it->second;
        }
        unmap(it->second);
        g_rings.erase(it);
    }
    if (g_rings.size() >= kCacheSweepThreshold) {
        sweep_cache();
    }
    outbound_ring ring;
    if (!map_ring(qpn, view, &ring)) {
        return nullptr;
    }
    return &g_rings.emplace(qpn, ring).first->second;
}

bool outbound_owner_alive(outbound_ring &ring)
{
    if (ring.owner == getpid()) {
        return true;
    }
    if (ring.pidfd >= 0) {
        return pidfd_alive(ring.pidfd);
    }
    constexpr auto kRecheck = std::chrono::milliseconds(2);
    auto now                = std::chrono::steady_clock::now();
    if (ring.alive && now - ring.checked_at >= kRecheck) {
        ring.alive      = process_alive(ring.owner);
        ring.checked_at = now;
    }
    return ring.alive;
}

produce_status ring_produce(outbound_ring &ring, record_header record, const gather_list &source,
                            uint64_t source_offset, size_t payload_min, size_t payload_max,
                            size_t *written)
{
    *written            = 0;
    ring_header *header = ring.header;
    robust_guard lock(&header->producer_lock);
    if (!lock.locked()) {
        return produce_status::broken;
    }
    uint64_t head = header->head.load(std::memory_order_acquire);
    uint64_t tail = header->tail.load(std::memory_order_relaxed);
    uint64_t used = tail - head;
    if (used > ring.capacity || (head % kRecordAlign) != 0 || (tail % kRecordAlign) != 0) {
        return produce_status::broken;
    }
    uint64_t free_bytes = ring.capacity - used;
    if (free_bytes < record_size_for(payload_min)) {
        return produce_status::no_room;
    }
    size_t payload = size_t(std::min<uint64_t>(payload_max, free_bytes - sizeof(record_header)));
    record.size    = uint32_t(record_size_for(payload));
    record.fragment_length = uint32_t(payload);
    record.sequence        = header->next_sequence;
    if (record.opcode == kRecordSend && record.offset + payload == record.message_length) {
        record.flags |= kRecordLast;
    }
    copy_into_ring(ring, tail, &record, sizeof(record));
    gather_into_ring(ring, tail + sizeof(record), source, source_offset, payload);
    header->next_sequence = record.sequence + 1;
    header->tail.store(tail + record.size, std::memory_order_release);
    *written = payload;
    return produce_status::done;
}

bool ring_has_room(const outbound_ring &ring, size_t payload)
{
    uint64_t head = ring.header->head.load(std::memory_order_acquire);
    uint64_t tail = ring.header->tail.load(std::memory_order_acquire);
    uint64_t used = tail - head;
    return used <= ring.capacity && ring.capacity - used >= record_size_for(payload);
}

void ring_register_waiter(outbound_ring &ring, uint32_t slot, const char *address)
{
    ring_header *header = ring.header;
    header->waiter_slot = slot;
    std::memset(header->waiter_address, 0, sizeof(header->waiter_address));
    std::memcpy(header->waiter_address, address, strnlen(address, kNotifyAddressBytes));
    header->waiter_flag.store(1, std::memory_order_seq_cst);
}

void ring_notify_owner(const outbound_ring &ring)
{
    uint32_t slot = __atomic_load_n(&ring.header->notify_slot, __ATOMIC_RELAXED);
    if (slot == kNoSlot) {
        return;
    }
    char address[kNotifyAddressBytes + 1];
    std::memcpy(address, ring.header->notify_address, kNotifyAddressBytes);
    address[kNotifyAddressBytes] = '\0';
    notify_fire(slot, address);
}

void gather_copy(const gather_list &source, uint64_t offset, uint8_t *dst, size_t length)
{
    for (const struct iovec &piece : source) {
        if (length == 0) {
            break;
        }
        if (offset >= piece.iov_len) {
            offset -= piece.iov_len;
            continue;
        }
        size_t chunk = std::min(length, size_t(piece.iov_len - offset));
        std::memcpy(dst, static_cast<const uint8_t *>(piece.iov_base) + offset, chunk);
        dst += chunk;
        length -= chunk;
        offset = 0;
    }
}

} // namespace verbs_emu
