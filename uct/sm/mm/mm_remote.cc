#include "mm_remote.h"

#include <ucs/debug/log.h>

#include <bit>
#include <cstring>

namespace uct::mm {

mm_remote::mm_remote(const backend &backend, const iface_address &address) :
    backend_(backend), address_(address)
{
}

mm_remote::~mm_remote()
{
    if (segment_ != nullptr) {
        backend_.detach(segment_, address_.segment_size);
    }
}

bool mm_remote::same_fifo(const iface_address &address) const
{
    return std::memcmp(&address, &address_, sizeof(address)) == 0;
}

ucs_status_t mm_remote::connect()
{
    const iface_address &address = address_;
    if ((address.owner_pid == 0) || (address.segment_size < FIFO_ELEMS_OFFSET) ||
        (address.segment_size > backend_.max_size())) {
        ucs_debug("mm: bad iface address (pid %u, %lu bytes)", address.owner_pid,
                  (unsigned long)address.segment_size);
        return UCS_ERR_INVALID_ADDR;
    }

    /* Hold the owner first, so the segment we map is the live owner's. */
    ucs_status_t status = peer_.open(pid_t(address.owner_pid));
    if (status != UCS_OK) {
        return (status == UCS_ERR_INVALID_PARAM) ? UCS_ERR_INVALID_ADDR : status;
    }

    segment_ref ref{address.owner_pid, address.segment_id, address.segment_size};
    status = backend_.attach(ref, &segment_);
    if (status != UCS_OK) {
        segment_ = nullptr;
        return (status == UCS_ERR_INVALID_PARAM) ? UCS_ERR_INVALID_ADDR : status;
    }

    /* Copy the header once and trust only the copy. */
    fifo_header hdr;
    std::memcpy(&hdr, segment_, sizeof(hdr));
    uint64_t fifo_size = hdr.fifo_size, elem_size = hdr.elem_size;
    bool ok = (hdr.magic == FIFO_MAGIC) && (hdr.version == FIFO_VERSION) &&
              (hdr.owner_pid == address.owner_pid) && std::has_single_bit(fifo_size) &&
              (fifo_size >= 2) && (fifo_size <= 65536) && std::has_single_bit(elem_size) &&
              (elem_size >= CACHE_LINE) && (elem_size <= 4096) &&
              (hdr.seg_size % CACHE_LINE == 0) && (hdr.seg_size <= (1u << 20)) &&
              (hdr.elems_offset == FIFO_ELEMS_OFFSET) &&
              (hdr.bufs_offset == fifo_bufs_offset(fifo_size, elem_size)) &&
              (hdr.total_size == fifo_total_size(fifo_size, elem_size, hdr.seg_size)) &&
              (hdr.total_size <= address.segment_size);
    if (!ok) {
        ucs_debug("mm: peer %u's segment has no valid FIFO header", address.owner_pid);
        return UCS_ERR_INVALID_ADDR;
    }
    /* The segment is the one its owner made, and the owner is still the
     * process we hold (not one that got its pid after it died). */
    status = peer_.verify_start_time(hdr.owner_start_time);
    if ((status == UCS_OK) && !peer_.alive()) {
        status = UCS_ERR_UNREACHABLE;
    }
    if (status != UCS_OK) {
        return status;
    }

    auto *ctl            = static_cast<fifo_ctl *>(segment_);
    auto *base           = static_cast<uint8_t *>(segment_);
    geometry_.tail       = &ctl->tail;
    geometry_.head       = &ctl->head;
    geometry_.elems      = base + hdr.elems_offset;
    geometry_.bufs       = base + hdr.bufs_offset;
    geometry_.capacity   = fifo_size;
    geometry_.fifo_mask  = fifo_size - 1;
    geometry_.max_inline = uint32_t(elem_size - ELEM_HEADER_SIZE);
    geometry_.seg_size   = hdr.seg_size;
    geometry_.fifo_shift = uint8_t(std::countr_zero(fifo_size));
    geometry_.elem_shift = uint8_t(std::countr_zero(elem_size));
    wakeup_              = wakeup_address::make(address.owner_pid, address.wakeup_id);
    return UCS_OK;
}

} // namespace uct::mm
