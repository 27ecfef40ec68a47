#include "inbound_ring.h"

#include "notify.h"
#include "robust_mutex.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include <sys/mman.h>
#include <unistd.h>

namespace verbs_emu {

size_t ring_capacity_for(uint32_t max_recv_wr)
{
    const char *forced = std::getenv("VERBS_EMU_RING_BYTES");
    size_t wanted      = size_t(max_recv_wr) * 8192;
    if (forced != nullptr && *forced != '\0') {
        wanted = size_t(std::strtoull(forced, nullptr, 10));
    }
    size_t capacity = kMinRingBytes;
    while (capacity < wanted && capacity < kMaxRingBytes) {
        capacity *= 2;
    }
    return capacity;
}

int inbound_ring::create(size_t capacity)
{
    fd_ = memfd_create("verbs_emu_ring", MFD_CLOEXEC);
    if (fd_ < 0) {
        return errno;
    }
    size_t total = kRingHeaderBytes + capacity;
    if (ftruncate(fd_, off_t(total)) != 0) {
        int err = errno;
        destroy();
        return err;
    }
    void *base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (base == MAP_FAILED) {
        int err = errno;
        destroy();
        return err;
    }
    header_   = new (base) ring_header();
    data_     = static_cast<uint8_t *>(base) + kRingHeaderBytes;
    capacity_ = capacity;
    int rc    = robust_mutex_init(&header_->producer_lock);
    if (rc != 0) {
        destroy();
        return rc;
    }
    header_->version     = kRingVersion;
    header_->owner_pid   = getpid();
    header_->capacity    = capacity;
    header_->notify_slot = 0xffffffffu;
    header_->tail.store(0, std::memory_order_relaxed);
    header_->head.store(0, std::memory_order_relaxed);
    header_->waiter_flag.store(0, std::memory_order_relaxed);
    head_              = 0;
    expected_sequence_ = 0;
    resync_            = false;
    return 0;
}

void inbound_ring::publish(uint32_t qpn, uint32_t notify_slot, const std::string &notify_address)
{
    header_->qpn         = qpn;
    header_->notify_slot = notify_slot;
    std::memset(header_->notify_address, 0, sizeof(header_->notify_address));
    std::memcpy(header_->notify_address, notify_address.data(),
                std::min(notify_address.size(), kNotifyAddressBytes));
    __atomic_store_n(&header_->magic, kRingMagic, __ATOMIC_RELEASE);
}

void inbound_ring::destroy()
{
    if (header_ != nullptr) {
        __atomic_store_n(&header_->magic, 0, __ATOMIC_RELEASE);
        munmap(header_, kRingHeaderBytes + capacity_);
        header_ = nullptr;
        data_   = nullptr;
    }
    if (fd_ >= 0) {
        close(fd_);
        fd_ = -1;
    }
}

bool inbound_ring::has_records() const
{
    return header_ != nullptr && header_->tail.load(std::memory_order_acquire) != head_;
}

inbound_ring::peek_result inbound_ring::peek(record_header *record)
{
    if (header_ == nullptr) {
        return peek_result::empty;
    }
    uint64_t tail = header_->tail.load(std::memory_order_acquire);
    if (tail == head_) {
        return peek_result::empty;
    }
    uint64_t used = tail - head_;
    if (used > capacity_ || (tail % kRecordAlign) != 0) {
        return peek_result::corrupt;
    }
    std::memcpy(record, data_ + (head_ & (capacity_ - 1)), sizeof(*record));
    bool valid = record->size >= sizeof(record_header) && (record->size % kRecordAlign) == 0 &&
                 record->size <= used && record_size_for(record->fragment_length) == record->size &&
                 (record->opcode == kRecordSend || record->opcode == kRecordWriteImm) &&
                 record->offset <= record->message_length &&
                 record->fragment_length <= record->message_length - record->offset &&
                 (resync_ || record->sequence == expected_sequence_);
    return valid ? peek_result::record : peek_result::corrupt;
}

void inbound_ring::copy_payload(const record_header &record, size_t offset, void *dst,
                                size_t length) const
{
    if (offset > record.fragment_length || length > record.fragment_length - offset) {
        return; /* callers stay inside the checked fragment */
    }
    size_t position = (head_ + sizeof(record_header) + offset) & (capacity_ - 1);
    size_t first    = std::min(length, capacity_ - position);
    std::memcpy(dst, data_ + position, first);
    std::memcpy(static_cast<uint8_t *>(dst) + first, data_, length - first);
}

void inbound_ring::pop(const record_header &record)
{
    head_ += record.size;
    expected_sequence_ = record.sequence + 1;
    resync_            = false;
    header_->head.store(head_, std::memory_order_release);
    wake_waiter();
}

void inbound_ring::wake_waiter()
{
    if (header_ == nullptr || header_->waiter_flag.load(std::memory_order_seq_cst) == 0 ||
        header_->waiter_flag.exchange(0) == 0) {
        return;
    }
    char address[kNotifyAddressBytes + 1];
    std::memcpy(address, header_->waiter_address, kNotifyAddressBytes);
    address[kNotifyAddressBytes] = '\0';
    notify_fire(header_->waiter_slot, address);
}

void inbound_ring::discard_all()
{
    if (header_ == nullptr) {
        return;
    }
    uint64_t tail = header_->tail.load(std::memory_order_acquire);
    if (tail == head_) {
        return;
    }
    /* a torn tail is not ours to trust: only move to an aligned position */
    head_   = tail & ~uint64_t(kRecordAlign - 1);
    resync_ = true;
    header_->head.store(head_, std::memory_order_release);
    wake_waiter();
}

} // namespace verbs_emu
