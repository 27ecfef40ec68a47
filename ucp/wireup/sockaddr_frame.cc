/*
 * Handshake frames: building them, and reading one from an untrusted
 * socket with every field checked.
 */
#include "sockaddr_frame.h"

#include <ucp/core/ucp_address.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/socket.h>

namespace ucp::cs {

std::vector<uint8_t> make_frame(frame_type type, ucs_status_t status, uint8_t flags,
                                uint64_t client_id, const void *body, size_t length)
{
    frame_header hdr{};
    hdr.magic     = frame_magic;
    hdr.version   = frame_version;
    hdr.type      = type;
    hdr.flags     = flags;
    hdr.length    = uint32_t(length);
    hdr.status    = int32_t(status);
    hdr.client_id = client_id;
    std::vector<uint8_t> frame(sizeof(hdr) + length);
    std::memcpy(frame.data(), &hdr, sizeof(hdr));
    if (length != 0) {
        std::memcpy(frame.data() + sizeof(hdr), body, length);
    }
    return frame;
}

size_t frame_reader::wanted() const
{
    if (done_) {
        return 0;
    }
    if (!have_header_) {
        return sizeof(frame_header) - received_;
    }
    return sizeof(frame_header) + header_.length - received_;
}

uint8_t *frame_reader::cursor()
{
    return have_header_ ? body_.data() + (received_ - sizeof(frame_header)) :
                          raw_header_ + received_;
}

ucs_status_t frame_reader::header_complete()
{
    std::memcpy(&header_, raw_header_, sizeof(header_));
    const frame_header &h = header_;
    if ((h.magic != frame_magic) || (h.version != frame_version) || (h.type >= 32) ||
        !(accepted_ & (1u << h.type)) || (h.reserved != 0) || (h.flags & ~frame_flag::ALL)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if ((h.flags & frame_flag::CLIENT_ID) ? (h.type != FRAME_CONN_REQUEST) : (h.client_id != 0)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (h.type == FRAME_REJECT) {
        if ((h.length != 0) || (h.status >= 0)) {
            return UCS_ERR_INVALID_PARAM; /* a reject carries a reason only */
        }
    } else if ((h.status != 0) || (h.length < address_header_size) ||
               (h.length > address_max_length)) {
        return UCS_ERR_INVALID_PARAM;
    }
    have_header_ = true;
    body_.resize(h.length); /* bounded above: at most address_max_length */
    return UCS_INPROGRESS;
}

ucs_status_t frame_reader::body_complete() const
{
    if (header_.type == FRAME_REJECT) {
        return UCS_OK;
    }
    size_t total = 0;
    if ((address_peek(body_.data(), body_.size(), &total, nullptr) != UCS_OK) ||
        (total != body_.size())) {
        return UCS_ERR_INVALID_PARAM;
    }
    unpacked_address unused;
    return unpack_address(body_.data(), body_.size(), &unused);
}

ucs_status_t frame_reader::advance(size_t n)
{
    received_ += n;
    if (!have_header_) {
        if (received_ < sizeof(frame_header)) {
            return UCS_INPROGRESS;
        }
        ucs_status_t status = header_complete();
        if (status != UCS_INPROGRESS) {
            return status;
        }
    }
    if (wanted() != 0) {
        return UCS_INPROGRESS;
    }
    done_ = true;
    return body_complete();
}

ucs_status_t frame_reader::read_from(int fd)
{
    for (;;) {
        const size_t n = wanted();
        if (n == 0) {
            return done_ ? body_complete() : UCS_INPROGRESS;
        }
        ssize_t got = ::recv(fd, cursor(), n, 0);
        if (got > 0) {
            ucs_status_t status = advance(size_t(got));
            if (status != UCS_INPROGRESS) {
                return status;
            }
            continue;
        }
        if (got == 0) {
            return UCS_ERR_CONNECTION_RESET;
        }
        if (errno == EINTR) {
            continue;
        }
        return ((errno == EAGAIN) || (errno == EWOULDBLOCK)) ? UCS_INPROGRESS :
                                                               UCS_ERR_CONNECTION_RESET;
    }
}

ucs_status_t frame_reader::feed(const void *data, size_t length, size_t *consumed)
{
    const auto *in      = static_cast<const uint8_t *>(data);
    size_t used         = 0;
    ucs_status_t status = UCS_INPROGRESS;
    while ((used < length) && (status == UCS_INPROGRESS)) {
        const size_t n = std::min(wanted(), length - used);
        if (n == 0) {
            break;
        }
        std::memcpy(cursor(), in + used, n);
        used += n;
        status = advance(n);
    }
    *consumed = used;
    return status;
}

} // namespace ucp::cs
