/*
 * The receiving side of a connection: read, cut the stream into frames,
 * validate each header before its length is used, and deliver: user active
 * messages to the iface's handlers, RMA requests executed against the md's
 * registered regions (the target side of the emulation), replies to the
 * requests this ep is waiting on.
 */
#include <uct/tcp/tcp_conn.h>

#include <uct/tcp/tcp_iface.h>
#include <uct/tcp/tcp_md.h>

#include <ucs/debug/log.h>
#include <ucs/sys/random.h>
#include <ucs/type/wire_reader.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include <sys/socket.h>

namespace uct::tcp {

namespace {

constexpr size_t FRAME_HDR = sizeof(frame_hdr);

template <typename T>
T apply_atomic(atomic_op op, T *p, T value, T compare)
{
    switch (op) {
    case atomic_op::ADD:
        return __atomic_fetch_add(p, value, __ATOMIC_SEQ_CST);
    case atomic_op::AND:
        return __atomic_fetch_and(p, value, __ATOMIC_SEQ_CST);
    case atomic_op::OR:
        return __atomic_fetch_or(p, value, __ATOMIC_SEQ_CST);
    case atomic_op::XOR:
        return __atomic_fetch_xor(p, value, __ATOMIC_SEQ_CST);
    case atomic_op::SWAP:
        return __atomic_exchange_n(p, value, __ATOMIC_SEQ_CST);
    case atomic_op::CSWAP:
        __atomic_compare_exchange_n(p, &compare, value, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        return compare; /* the value found, whether or not it was swapped */
    default:
        return 0;
    }
}

uint64_t execute_atomic(atomic_op op, unsigned size, void *ptr, uint64_t value, uint64_t compare)
{
    if (size == sizeof(uint32_t)) {
        return apply_atomic<uint32_t>(op, static_cast<uint32_t *>(ptr), uint32_t(value),
                                      uint32_t(compare));
    }
    return apply_atomic<uint64_t>(op, static_cast<uint64_t *>(ptr), value, compare);
}

/* A status from the wire: OK or an error code, anything else is garbage. */
ucs_status_t wire_status(int32_t raw)
{
    if ((raw > 0) || (raw <= int32_t(UCS_ERR_LAST))) {
        return UCS_ERR_IO_ERROR;
    }
    return static_cast<ucs_status_t>(raw);
}

} // namespace

unsigned tcp_conn::rx_progress()
{
    if (((state_ != conn_state::CONNECTED) && (state_ != conn_state::HANDSHAKE) &&
         (state_ != conn_state::WAIT_ACCEPT)) ||
        rx_blocked_ || in_rx_ || !rx_acquire()) {
        return 0;
    }
    in_rx_ = true;

    unsigned count = 0;
    for (unsigned iter = 0; iter < config_.max_poll; ++iter) {
        if (sink_.kind != sink_kind::NONE) {
            if (!sink_read(&count)) {
                break;
            }
            continue;
        }
        /* As much as the socket has, up to the buffer: one read takes many
         * small frames. */
        size_t want = config_.rx_seg_size - rx_tail_;
        ssize_t got = ::recv(fd(), rx_ + rx_tail_, want, 0);
        if (got <= 0) {
            rx_failed(got);
            break;
        }
        ++count;
        rx_tail_ += size_t(got);
        parse_frames();
        if ((state_ != conn_state::CONNECTED) || rx_blocked_ || (size_t(got) < want)) {
            break; /* drained (a short read), stopped, or still setting up */
        }
    }

    in_rx_ = false;
    rx_release_if_empty();
    if (tx_deferred_ && (state_ == conn_state::CONNECTED)) {
        tx_progress(); /* replies and sends queued by the handlers */
    }
    update_events();
    return count;
}

bool tcp_conn::rx_acquire()
{
    if (ucs_likely(rx_ != nullptr)) {
        return true;
    }
    rx_ = iface_.rx_buffers().get();
    if (rx_ == nullptr) {
        schedule_failure(UCS_ERR_NO_MEMORY, "no receive buffer");
        return false;
    }
    return true;
}

void tcp_conn::rx_release_if_empty()
{
    if ((rx_ != nullptr) && (rx_head_ == rx_tail_) && !in_rx_) {
        iface_.rx_buffers().put(rx_);
        rx_ = nullptr;
    }
}

unsigned tcp_conn::sink_pieces(struct iovec *vec, void *put_dest) const
{
    switch (sink_.kind) {
    case sink_kind::PUT:
        vec[0] = {put_dest, sink_.left};
        return 1;
    case sink_kind::BOUNCE:
        vec[0] = {large_.buf + (sink_.hdr.length - sink_.left), sink_.left};
        return 1;
    case sink_kind::GET_REPLY: {
        /* The get_zcopy's iovs past what arrived already; its request
         * stays first in the ring until finish_sink(). */
        const fetch_op &f = fetches_.front();
        size_t skip       = (sink_.hdr.length - sizeof(reply_hdr)) - sink_.left;
        unsigned n        = 0;
        for (uint32_t i = 0; i < f.iovcnt; ++i) {
            const size_t len = f.iovs[i].length;
            if (skip >= len) {
                skip -= len;
                continue;
            }
            auto *buffer = static_cast<uint8_t *>(const_cast<void *>(f.iovs[i].buffer));
            vec[n++]     = {buffer + skip, len - skip};
            skip         = 0;
        }
        return n;
    }
    default:
        return 0;
    }
}

bool tcp_conn::sink_read(unsigned *count)
{
    void *put_dest = nullptr;
    if (sink_.kind == sink_kind::PUT) {
        /* The target may have deregistered the region since the put began. */
        put_dest = iface_.regions().region_ptr(sink_.region_id, sink_.address, sink_.left);
        if (put_dest == nullptr) {
            refuse_rma("put", sink_.address, sink_.left);
            if (rma_error_ == UCS_OK) {
                rma_error_ = UCS_ERR_INVALID_ADDR;
            }
            sink_.kind = sink_kind::DISCARD;
        }
    }

    /* The rest of the payload, then whatever follows it into the (empty)
     * receive buffer: one read, no copy of the payload. */
    struct iovec vec[fetch_op::MAX_IOV + 1];
    unsigned n  = 0;
    size_t want = 0;
    if (sink_.kind == sink_kind::DISCARD) {
        vec[n++] = {rx_, std::min(size_t(sink_.left), config_.rx_seg_size)};
        want     = vec[0].iov_len;
    } else {
        n        = sink_pieces(vec, put_dest);
        want     = sink_.left;
        vec[n++] = {rx_, config_.rx_seg_size};
        want += config_.rx_seg_size;
    }
    ssize_t got = ::readv(fd(), vec, int(n));
    if (got <= 0) {
        rx_failed(got);
        return false;
    }
    ++*count;

    const size_t bytes = size_t(got);
    const size_t taken = std::min(bytes, size_t(sink_.left));
    sink_.left -= taken;
    if (sink_.kind == sink_kind::PUT) {
        sink_.address += taken;
    }
    if (sink_.left > 0) {
        update_rx_lowat();
        return bytes == want; /* a short read: the socket is drained */
    }

    rx_head_ = 0;
    rx_tail_ = (sink_.kind == sink_kind::DISCARD) ? 0 : bytes - taken;
    finish_sink();
    if ((state_ == conn_state::CONNECTED) && (rx_tail_ > 0)) {
        parse_frames();
    }
    return (state_ == conn_state::CONNECTED) && !rx_blocked_ && (bytes == want);
}

bool tcp_conn::start_sink(const frame_hdr &hdr, size_t avail)
{
    const uint8_t *payload = rx_ + rx_head_ + FRAME_HDR;
    const size_t have      = avail - FRAME_HDR;
    sink_.hdr              = hdr;
    sink_.pop_fetch        = false;
    /* Large frames back to back: a bulk transfer, where reading in large
     * pieces pays. A frame that answers a message of ours is waited for by
     * someone: read it as it comes, the copy overlapping the sender's. */
    const auto now  = std::chrono::steady_clock::now();
    sink_.streaming = (now - last_sink_end_) < STREAM_GAP;

    if (hdr.flags == frame_flag::INTERNAL) {
        const auto op = static_cast<internal_op>(hdr.id);
        if (op == internal_op::PUT) {
            put_hdr ph;
            if (have < sizeof(ph)) {
                return false;
            }
            std::memcpy(&ph, payload, sizeof(ph));
            peer_sends_           = true;
            const size_t data_len = hdr.length - sizeof(ph);
            const size_t got      = have - sizeof(ph);
            auto *dest            = static_cast<uint8_t *>(iface_.regions().region_ptr(ph.region_id,
                                                                                       ph.address, data_len));
            if (ucs_unlikely(dest == nullptr)) {
                refuse_rma("put", ph.address, data_len);
                if (rma_error_ == UCS_OK) {
                    rma_error_ = UCS_ERR_INVALID_ADDR; /* reported by the next flush */
                }
                sink_.kind = sink_kind::DISCARD;
            } else {
                std::memcpy(dest, payload + sizeof(ph), got);
                sink_.kind      = sink_kind::PUT;
                sink_.region_id = ph.region_id;
                sink_.address   = ph.address + got;
            }
            sink_.left = data_len - got;
            rx_head_   = rx_tail_;
            update_rx_lowat();
            return true;
        }
        if (op == internal_op::GET_REPLY) {
            reply_hdr reply;
            if (have < sizeof(reply)) {
                return false;
            }
            std::memcpy(&reply, payload, sizeof(reply));
            const size_t data_len = hdr.length - sizeof(reply);
            if (!check_reply(op, reply, data_len)) {
                return false;
            }
            const fetch_op &f = fetches_.front();
            /* More requests behind this one: their replies follow at once. */
            sink_.streaming = sink_.streaming || (fetches_.size() > 1);
            if (discard_replies_ || (f.kind == fetch_kind::GET_ZCOPY)) {
                /* Status OK: an error reply has no data and fits. */
                size_t got = have - sizeof(reply);
                if (discard_replies_) {
                    sink_.kind      = sink_kind::DISCARD;
                    sink_.pop_fetch = true;
                } else {
                    /* What arrived already is copied; the rest is read in place. */
                    const uint8_t *src = payload + sizeof(reply);
                    size_t copied      = 0;
                    for (uint32_t i = 0; i < f.iovcnt; ++i) {
                        auto *dst  = static_cast<uint8_t *>(const_cast<void *>(f.iovs[i].buffer));
                        size_t len = f.iovs[i].length;
                        size_t now = std::min(len, got - copied);
                        std::memcpy(dst, src + copied, now);
                        copied += now;
                    }
                    sink_.kind = sink_kind::GET_REPLY;
                }
                sink_.region_id = reply.seq;
                sink_.left      = data_len - got;
                rx_head_        = rx_tail_;
                update_rx_lowat();
                return true;
            }
            /* A get_bcopy reply: bounced below if it does not fit. */
        }
    }

    if (FRAME_HDR + size_t(hdr.length) <= config_.rx_seg_size) {
        return false; /* the rest comes into the receive buffer */
    }
    /* Larger than the receive buffer: delivered in one piece from a buffer
     * of its own, the rest of it read straight there. */
    if (!large_reserve(hdr.length)) {
        ucs_error("tcp: no memory for a %u-byte frame", hdr.length);
        schedule_failure(UCS_ERR_NO_MEMORY, "out of memory");
        return false;
    }
    std::memcpy(large_.buf, payload, have);
    sink_.kind = sink_kind::BOUNCE;
    sink_.left = hdr.length - have;
    rx_head_   = rx_tail_;
    update_rx_lowat();
    return true;
}

void tcp_conn::update_rx_lowat()
{
    /* Below this, waiting for more saves too little to be worth a call. */
    constexpr size_t min_lowat = 64 * 1024;
    size_t want                = 0;
    if ((sink_.kind != sink_kind::NONE) && sink_.streaming && (config_.rx_lowat > 0) &&
        (sink_.left / 2 >= min_lowat)) {
        /* At most half of the rest: the copy of the last piece, which no
         * longer overlaps the sender's, stays short. */
        want = std::min(config_.rx_lowat, size_t(sink_.left / 2));
    }
    if (want == 0) {
        if (rx_lowat_ != 0) {
            set_rx_lowat(0);
        }
    } else if ((rx_lowat_ == 0) || (want < rx_lowat_)) {
        set_rx_lowat(uint32_t(want));
    }
}

void tcp_conn::set_rx_lowat(uint32_t bytes)
{
    int value = (bytes == 0) ? 1 : int(bytes);
    if (::setsockopt(fd(), SOL_SOCKET, SO_RCVLOWAT, &value, sizeof(value)) != 0) {
        bytes = 0; /* the kernel keeps the previous value: read as it comes */
    }
    rx_lowat_ = bytes;
    refresh_epoll_need();
}

void tcp_conn::finish_sink()
{
    const sink_kind kind = sink_.kind;
    sink_.kind           = sink_kind::NONE;
    last_sink_end_       = std::chrono::steady_clock::now();
    if (rx_lowat_ != 0) {
        set_rx_lowat(0);
    }
    switch (kind) {
    case sink_kind::BOUNCE:
        dispatch(sink_.hdr, large_.buf); /* large frames never wait for room */
        if (large_.cap > config_.rx_keep) {
            std::free(large_.buf);
            large_.buf = nullptr;
            large_.cap = 0;
        }
        break;
    case sink_kind::GET_REPLY: {
        reply_hdr reply{sink_.region_id, int32_t(UCS_OK), 0};
        complete_reply(reply, nullptr, sink_.hdr.length - sizeof(reply_hdr));
        break;
    }
    case sink_kind::DISCARD:
        if (sink_.pop_fetch) {
            if (sink_.region_id == fence_seq_) {
                fence_seq_ = 0;
            }
            fetches_.pop_front(); /* its ep is gone */
        }
        break;
    default:
        break; /* a put is in place */
    }
}

void tcp_conn::rx_failed(ssize_t result)
{
    if (result == 0) {
        rx_error(boost::asio::error::eof);
        return;
    }
    const int err = errno;
    if ((err != EAGAIN) && (err != EWOULDBLOCK) && (err != EINTR)) {
        rx_error(boost::system::error_code(err, boost::system::system_category()));
    }
}

void tcp_conn::rx_error(const boost::system::error_code &ec)
{
    if (ec == boost::asio::error::eof) {
        if ((state_ == conn_state::HANDSHAKE) && (rx_tail_ > rx_head_)) {
            ucs_error("tcp: connection closed after a truncated handshake "
                      "(%zu of %zu bytes)",
                      size_t(rx_tail_ - rx_head_), sizeof(handshake));
        } else if ((sink_.kind != sink_kind::NONE) || (rx_tail_ > rx_head_)) {
            ucs_diag("tcp: connection closed inside a frame");
        }
    }
    io_error(ec, "recv");
}

void tcp_conn::resume_rx()
{
    if (!rx_blocked_ || (state_ >= conn_state::FAILED) || in_rx_) {
        return;
    }
    do {
        rx_blocked_ = false;
        in_rx_      = true;
        parse_frames();
        in_rx_ = false;
        if (tx_deferred_ && (state_ == conn_state::CONNECTED)) {
            tx_progress();
        }
        /* Blocked again, but the replies it queued all went out: the room
         * it waits for is free already, and no event would say so. */
    } while (rx_blocked_ && tx_.empty() && (state_ == conn_state::CONNECTED));
    rx_release_if_empty();
    update_events();
}

void tcp_conn::protocol_error(const char *what)
{
    ucs_error("tcp: %s on %s connection (peer port %u); closing it", what,
              outbound_ ? "outbound" : "inbound", unsigned(peer_.port));
    schedule_failure(UCS_ERR_CONNECTION_RESET, what);
}

bool tcp_conn::parse_handshake()
{
    handshake hs;
    ucs::wire_reader(rx_ + rx_head_, rx_tail_ - rx_head_).get(&hs);
    if ((hs.magic != HANDSHAKE_MAGIC) || (hs.version != HANDSHAKE_VERSION) ||
        ((hs.family != uint8_t(addr_family::IPV4)) && (hs.family != uint8_t(addr_family::IPV6)))) {
        protocol_error("invalid handshake");
        return false;
    }
    if (!ucs::sys::secret_equal(&hs.acceptor_key, &iface_.key(), sizeof(hs.acceptor_key))) {
        /* Not made from our address (a port scan, a stale or forged peer):
         * closed before anything else of it is read. */
        if (iface_.count_refused_handshake() == 1) {
            ucs_warn("tcp: closed a connection whose handshake lacks this iface's key "
                     "(a port scan, or a peer with a stale or forged address); further "
                     "ones are logged at diag level");
        } else {
            ucs_diag("tcp: closed a connection whose handshake lacks this iface's key");
        }
        schedule_failure(UCS_ERR_CONNECTION_RESET, "handshake without the iface key");
        return false;
    }
    peer_ = hs;
    rx_head_ += sizeof(hs);
    switch (iface_.pair_accepted(*this)) {
    case pairing::REJECT:
        ucs_debug("tcp: connection from iface port %u (its ep %u) gives way to ours",
                  unsigned(hs.port), unsigned(hs.conn_sn));
        reject();
        return false;
    case pairing::ADOPTED:
        return false; /* this object is closed; our ep owns the socket now */
    case pairing::NONE:
        break;
    }
    set_state(conn_state::CONNECTED);
    set_ctl(ctl_kind::CONN_ACCEPT);
    tx_kick();
    ucs_debug("tcp: accepted connection from iface port %u (its ep %u)", unsigned(hs.port),
              unsigned(hs.conn_sn));
    return true;
}

bool tcp_conn::parse_conn_reply()
{
    constexpr size_t length = FRAME_HDR + sizeof(conn_reply);
    if (rx_tail_ - rx_head_ < length) {
        return true;
    }
    frame_hdr hdr;
    conn_reply reply;
    std::memcpy(&hdr, rx_ + rx_head_, sizeof(hdr));
    std::memcpy(&reply, rx_ + rx_head_ + sizeof(hdr), sizeof(reply));
    if ((hdr.flags != frame_flag::INTERNAL) || (hdr.reserved != 0) ||
        (hdr.length != sizeof(conn_reply)) ||
        ((hdr.id != uint8_t(internal_op::CONN_ACCEPT)) &&
         (hdr.id != uint8_t(internal_op::CONN_REJECT)))) {
        protocol_error("invalid answer to the handshake");
        return false;
    }
    rx_head_ += length;
    if (hdr.id == uint8_t(internal_op::CONN_REJECT)) {
        /* The peer's ep connected towards ours at the same time and its
         * connection is kept: it arrives through the listening socket. */
        ucs_debug("tcp: ep %p waits for the connection of iface port %u",
                  static_cast<void *>(owner_ep_), unsigned(peer_.port));
        wait_for_peer();
        return false;
    }
    set_state(conn_state::CONNECTED);
    if (reply.flags & conn_reply_flag::PAIRED) {
        peer_sends_ = true;
    }
    send_detach_if_orphan();
    tx_kick(); /* the sends buffered meanwhile */
    return true;
}

bool tcp_conn::valid_frame(const frame_hdr &hdr) const
{
    if (hdr.reserved != 0) {
        return false;
    }
    if (hdr.flags == 0) {
        return (hdr.id < AM_ID_MAX) && (hdr.length <= iface_.max_am_frame());
    }
    if (hdr.flags != frame_flag::INTERNAL) {
        return false;
    }
    switch (static_cast<internal_op>(hdr.id)) {
    case internal_op::PUT:
        return (hdr.length >= sizeof(put_hdr)) &&
               (hdr.length - sizeof(put_hdr) <= config_.max_zcopy);
    case internal_op::GET_REQ:
        return hdr.length == sizeof(get_req);
    case internal_op::ATOMIC_POST:
    case internal_op::ATOMIC_REQ:
        return hdr.length == sizeof(atomic_req);
    case internal_op::FLUSH_REQ:
        return hdr.length == sizeof(flush_req);
    case internal_op::GET_REPLY:
        return (hdr.length >= sizeof(reply_hdr)) &&
               (hdr.length - sizeof(reply_hdr) <= config_.max_zcopy);
    case internal_op::ATOMIC_REPLY:
        return hdr.length == sizeof(reply_hdr) + sizeof(uint64_t);
    case internal_op::FLUSH_REPLY:
        return hdr.length == sizeof(reply_hdr);
    case internal_op::DETACH:
        return hdr.length == 0;
    default:
        return false;
    }
}

bool tcp_conn::parse_frames()
{
    if (ucs_unlikely(state_ != conn_state::CONNECTED)) {
        if (state_ == conn_state::HANDSHAKE) {
            if (rx_tail_ - rx_head_ < sizeof(handshake)) {
                return true;
            }
            if (!parse_handshake()) {
                return false;
            }
        } else if (state_ == conn_state::WAIT_ACCEPT) {
            if (!parse_conn_reply()) {
                return false;
            }
            if (state_ != conn_state::CONNECTED) {
                return true; /* the rest of the answer is still coming */
            }
        }
    }

    while (rx_tail_ - rx_head_ >= FRAME_HDR) {
        frame_hdr hdr;
        std::memcpy(&hdr, rx_ + rx_head_, FRAME_HDR);
        if (ucs_unlikely(!valid_frame(hdr))) {
            protocol_error("malformed frame header");
            return false;
        }
        size_t total = FRAME_HDR + size_t(hdr.length);
        size_t avail = rx_tail_ - rx_head_;
        if (avail >= total) {
            if (!dispatch(hdr, rx_ + rx_head_ + FRAME_HDR)) {
                rx_blocked_ = true; /* retried when send room returns */
                return false;
            }
            rx_head_ += total;
            if (state_ >= conn_state::FAILED) {
                return false;
            }
            continue;
        }
        /* Incomplete: the rest is read straight into its destination, or
         * into the receive buffer after what is there. */
        if (!start_sink(hdr, avail) && (state_ >= conn_state::FAILED)) {
            return false;
        }
        break;
    }

    if (rx_head_ == rx_tail_) {
        rx_head_ = rx_tail_ = 0;
    } else if (rx_head_ > 0) {
        /* Keep a partial frame at the front, so the next read completes it. */
        std::memmove(rx_, rx_ + rx_head_, rx_tail_ - rx_head_);
        rx_tail_ -= rx_head_;
        rx_head_ = 0;
    }
    return true;
}

bool tcp_conn::large_reserve(size_t length)
{
    if (length <= large_.cap) {
        return true;
    }
    std::free(large_.buf);
    /* malloc maps large sizes lazily: pages are touched as data arrives. */
    large_.buf = static_cast<uint8_t *>(std::malloc(length));
    large_.cap = (large_.buf != nullptr) ? length : 0;
    return large_.buf != nullptr;
}

bool tcp_conn::dispatch(const frame_hdr &hdr, uint8_t *payload)
{
    if (ucs_likely(hdr.flags == 0)) {
        peer_sends_ = true;
        /* tcp never hands out descriptors: the data is valid during the call. */
        iface_.deliver_am(hdr.id, payload, hdr.length);
        return true;
    }
    return dispatch_internal(hdr, payload);
}

bool tcp_conn::dispatch_internal(const frame_hdr &hdr, uint8_t *payload)
{
    auto op = static_cast<internal_op>(hdr.id);
    if ((op != internal_op::GET_REPLY) && (op != internal_op::ATOMIC_REPLY) &&
        (op != internal_op::FLUSH_REPLY)) {
        peer_sends_ = true;
    }
    /* valid_frame() checked each length against its op: the reads cannot
     * fail, the reader only keeps every access inside the frame. */
    ucs::wire_reader r(payload, hdr.length);
    switch (op) {
    case internal_op::PUT: {
        put_hdr ph;
        if (r.get(&ph)) {
            handle_put(ph, const_cast<uint8_t *>(r.pos()), r.left());
        }
        return true;
    }
    case internal_op::GET_REQ: {
        get_req req;
        return !r.get(&req) || handle_get_req(req);
    }
    case internal_op::ATOMIC_POST:
    case internal_op::ATOMIC_REQ: {
        atomic_req req;
        return !r.get(&req) || handle_atomic(req, op == internal_op::ATOMIC_REQ);
    }
    case internal_op::FLUSH_REQ: {
        flush_req req;
        return !r.get(&req) || handle_flush_req(req);
    }
    case internal_op::DETACH:
        handle_detach();
        return true;
    default: {
        reply_hdr reply;
        if (r.get(&reply) && check_reply(op, reply, r.left())) {
            complete_reply(reply, r.pos(), r.left());
        }
        return true;
    }
    }
}

uint8_t *tcp_conn::reply_reserve(internal_op op, size_t frame_length, size_t reserve_length,
                                 bool copy)
{
    uint8_t *p = copy ? tx_.reserve(FRAME_HDR + reserve_length) :
                        tx_.reserve_reply(FRAME_HDR + reserve_length);
    if (p == nullptr) {
        return nullptr;
    }
    frame_hdr hdr{uint8_t(op), frame_flag::INTERNAL, 0, uint32_t(frame_length)};
    std::memcpy(p, &hdr, FRAME_HDR);
    return p + FRAME_HDR;
}

void tcp_conn::refuse_rma(const char *what, uint64_t address, uint64_t length)
{
    ucs_error("tcp: refused %s of %lu bytes at 0x%lx from peer port %u: "
              "not inside a registered region",
              what, length, address, unsigned(peer_.port));
}

void tcp_conn::handle_put(const put_hdr &hdr, const uint8_t *data, size_t data_length)
{
    void *dest = iface_.regions().region_ptr(hdr.region_id, hdr.address, data_length);
    if (ucs_unlikely(dest == nullptr)) {
        refuse_rma("put", hdr.address, data_length);
        if (rma_error_ == UCS_OK) {
            rma_error_ = UCS_ERR_INVALID_ADDR; /* reported by the next flush */
        }
        return;
    }
    std::memcpy(dest, data, data_length);
}

bool tcp_conn::handle_get_req(const get_req &req)
{
    ucs_status_t status = UCS_OK;
    void *src           = nullptr;
    if (req.length > config_.max_zcopy) {
        status = UCS_ERR_EXCEEDS_LIMIT;
    } else {
        src = iface_.regions().region_ptr(req.region_id, req.address, req.length);
        if (src == nullptr) {
            status = UCS_ERR_INVALID_ADDR;
        }
    }
    size_t data = (status == UCS_OK) ? size_t(req.length) : 0;
    reply_hdr reply{req.seq, int32_t(status), 0};

    /* Small data is copied while the send buffer has room; otherwise the
     * reply needs only the room kept for replies, which the peer's window
     * guarantees: this side never stops reading for want of send room. */
    uint8_t *p = nullptr;
    if ((data <= config_.tx_seg_size) &&
        ((p = reply_reserve(internal_op::GET_REPLY, sizeof(reply) + data, sizeof(reply) + data,
                            true)) != nullptr)) {
        std::memcpy(p, &reply, sizeof(reply));
        if (data > 0) {
            std::memcpy(p + sizeof(reply), src, data);
        }
        tx_send(FRAME_HDR + sizeof(reply) + data);
    } else if (data == 0) {
        p = reply_reserve(internal_op::GET_REPLY, sizeof(reply), sizeof(reply));
        if (p == nullptr) {
            return false; /* the peer went beyond its window: wait */
        }
        std::memcpy(p, &reply, sizeof(reply));
        tx_send(FRAME_HDR + sizeof(reply));
    } else {
        /* Sent straight from the registered memory, as RDMA would read it. */
        if (!tx_.zcopy_room(true)) {
            return false; /* the peer went beyond its window: wait */
        }
        p = reply_reserve(internal_op::GET_REPLY, sizeof(reply) + data, sizeof(reply));
        if (p == nullptr) {
            return false;
        }
        std::memcpy(p, &reply, sizeof(reply));
        iov v{src, data, MEM_HANDLE_NULL};
        tx_send_zcopy(FRAME_HDR + sizeof(reply), &v, 1, nullptr, true);
    }
    if (status != UCS_OK) {
        refuse_rma("get", req.address, req.length);
    }
    return true;
}

bool tcp_conn::handle_atomic(const atomic_req &req, bool fetch)
{
    if ((req.op >= uint8_t(atomic_op::LAST)) ||
        ((req.size != sizeof(uint32_t)) && (req.size != sizeof(uint64_t)))) {
        protocol_error("malformed atomic request");
        return true;
    }
    constexpr size_t reply_length = sizeof(reply_hdr) + sizeof(uint64_t);
    uint8_t *p                    = nullptr;
    if (fetch) {
        /* Room first: an executed atomic cannot be undone. */
        p = reply_reserve(internal_op::ATOMIC_REPLY, reply_length, reply_length);
        if (p == nullptr) {
            return false;
        }
    }

    ucs_status_t status = UCS_OK;
    uint64_t old        = 0;
    void *ptr           = iface_.regions().region_ptr(req.region_id, req.address, req.size);
    if ((ptr == nullptr) || (req.address % req.size != 0)) {
        status = UCS_ERR_INVALID_ADDR;
        refuse_rma("atomic", req.address, req.size);
    } else {
        old = execute_atomic(static_cast<atomic_op>(req.op), req.size, ptr, req.value, req.compare);
    }

    if (fetch) {
        reply_hdr reply{req.seq, int32_t(status), 0};
        std::memcpy(p, &reply, sizeof(reply));
        std::memcpy(p + sizeof(reply), &old, sizeof(old));
        tx_send(FRAME_HDR + reply_length);
    } else if ((status != UCS_OK) && (rma_error_ == UCS_OK)) {
        rma_error_ = status;
    }
    return true;
}

bool tcp_conn::handle_flush_req(const flush_req &req)
{
    uint8_t *p = reply_reserve(internal_op::FLUSH_REPLY, sizeof(reply_hdr), sizeof(reply_hdr));
    if (p == nullptr) {
        return false;
    }
    reply_hdr reply{req.seq, int32_t(rma_error_), 0};
    rma_error_ = UCS_OK;
    std::memcpy(p, &reply, sizeof(reply));
    tx_send(FRAME_HDR + sizeof(reply));
    return true;
}

bool tcp_conn::check_reply(internal_op op, const reply_hdr &reply, size_t data_len)
{
    if (fetches_.empty()) {
        protocol_error("reply without a request");
        return false;
    }
    const fetch_op &f = fetches_.front();
    bool kind_ok;
    switch (op) {
    case internal_op::GET_REPLY:
        kind_ok = (f.kind == fetch_kind::GET_BCOPY) || (f.kind == fetch_kind::GET_ZCOPY);
        break;
    case internal_op::ATOMIC_REPLY:
        kind_ok = (f.kind == fetch_kind::ATOMIC);
        break;
    default:
        kind_ok = (f.kind == fetch_kind::FLUSH);
        break;
    }
    if (!kind_ok || (reply.seq != f.seq)) {
        protocol_error("reply out of order");
        return false;
    }
    if ((op == internal_op::GET_REPLY) &&
        (data_len != ((wire_status(reply.status) == UCS_OK) ? f.length : 0))) {
        protocol_error("get reply of the wrong length");
        return false;
    }
    return true;
}

void tcp_conn::complete_reply(const reply_hdr &reply, const uint8_t *data, size_t data_len)
{
    if (reply.seq == fence_seq_) {
        fence_seq_ = 0; /* the last reply a fence waited for */
    }
    if (discard_replies_) {
        fetches_.pop_front(); /* its ep is gone */
        return;
    }

    /* Off the ring before any user code runs: callbacks may post more. */
    fetch_op &f              = fetches_.front();
    ucs_status_t status      = wire_status(reply.status);
    completion *comp         = f.comp;
    fetch_kind kind          = f.kind;
    unpack_callback_t unpack = f.unpack;
    void *arg                = f.arg;
    if (status == UCS_OK) {
        if ((kind == fetch_kind::GET_ZCOPY) && (data != nullptr)) {
            size_t offset = 0;
            for (uint32_t i = 0; i < f.iovcnt; ++i) {
                std::memcpy(const_cast<void *>(f.iovs[i].buffer), data + offset, f.iovs[i].length);
                offset += f.iovs[i].length;
            }
        } else if (kind == fetch_kind::ATOMIC) {
            uint64_t old;
            std::memcpy(&old, data, sizeof(old));
            if (f.atomic_size == sizeof(uint32_t)) {
                uint32_t old32 = uint32_t(old);
                std::memcpy(arg, &old32, sizeof(old32));
            } else {
                std::memcpy(arg, &old, sizeof(old));
            }
        }
    }
    fetches_.pop_front();

    if ((kind == fetch_kind::GET_BCOPY) && (status == UCS_OK)) {
        unpack(arg, data, data_len);
    }
    if (comp != nullptr) {
        invoke_completion(comp, status);
    }
}

void tcp_conn::handle_detach()
{
    peer_detached_ = true;
    if (owner_ep_ == nullptr) {
        close(); /* nobody uses this connection any more */
        iface_.conn_closed();
    }
}

} // namespace uct::tcp
