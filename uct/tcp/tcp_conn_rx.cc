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

#include <array>
#include <cstdlib>
#include <cstring>

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
        __atomic_compare_exchange_n(p, &compare, value, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST);
        return compare;   /* the value found, whether or not it was swapped */
    default:
        return 0;
    }
}

uint64_t execute_atomic(atomic_op op, unsigned size, void *ptr, uint64_t value,
                        uint64_t compare)
{
    if (size == sizeof(uint32_t)) {
        return apply_atomic<uint32_t>(op, static_cast<uint32_t*>(ptr),
                                      uint32_t(value), uint32_t(compare));
    }
    return apply_atomic<uint64_t>(op, static_cast<uint64_t*>(ptr), value, compare);
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
        rx_blocked_ || in_rx_) {
        return 0;
    }
    in_rx_ = true;

    unsigned count = 0;
    for (unsigned iter = 0; iter < config_.max_poll; ++iter) {
        boost::system::error_code ec;
        if (large_.active) {
            /* The rest of the large frame, plus the next frame's header into
             * the (empty) receive buffer: if that frame is large too, it is
             * read straight into its own buffer, without a copy. */
            size_t want = large_.hdr.length - large_.got;
            std::array<boost::asio::mutable_buffer, 2> bufs = {
                boost::asio::buffer(large_.buf + large_.got, want),
                boost::asio::buffer(rx_.get(), FRAME_HDR)};
            size_t got = socket_.read_some(bufs, ec);
            if (ec) {
                rx_failed(ec);
                break;
            }
            ++count;
            if (got < want) {
                large_.got += got;
                break;
            }
            large_.got = large_.hdr.length;
            rx_tail_   = got - want;
            finish_large();
            if ((state_ < conn_state::FAILED) && (rx_tail_ > 0)) {
                parse_frames();
            }
            if ((state_ >= conn_state::FAILED) || (got < want + FRAME_HDR)) {
                break;
            }
            continue;
        }

        size_t want = rx_cap_ - rx_tail_;
        if (want == 0) {
            break;
        }
        size_t got = socket_.read_some(boost::asio::buffer(rx_.get() + rx_tail_, want), ec);
        if (ec) {
            rx_failed(ec);
            break;
        }
        ++count;
        rx_tail_ += got;
        parse_frames();
        if ((state_ >= conn_state::FAILED) || (state_ == conn_state::WAIT_PEER) ||
            rx_blocked_ || (got < want)) {
            break;
        }
    }

    in_rx_ = false;
    if (tx_deferred_ && (state_ == conn_state::CONNECTED)) {
        tx_progress();   /* replies and sends queued by the handlers */
    }
    update_events();
    return count;
}

void tcp_conn::rx_failed(const boost::system::error_code &ec)
{
    if ((ec != boost::asio::error::would_block) && (ec != boost::asio::error::try_again) &&
        (ec != boost::asio::error::interrupted)) {
        rx_error(ec);
    }
}

void tcp_conn::rx_error(const boost::system::error_code &ec)
{
    if (ec == boost::asio::error::eof) {
        if ((state_ == conn_state::HANDSHAKE) && (rx_tail_ > rx_head_)) {
            ucs_error("tcp: connection closed after a truncated handshake "
                      "(%zu of %zu bytes)", rx_tail_ - rx_head_, sizeof(handshake));
        } else if (large_.active || (rx_tail_ > rx_head_)) {
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
    rx_blocked_ = false;
    in_rx_      = true;
    parse_frames();
    in_rx_      = false;
    if (tx_deferred_ && (state_ == conn_state::CONNECTED)) {
        tx_progress();
    }
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
    std::memcpy(&hs, rx_.get() + rx_head_, sizeof(hs));
    if ((hs.magic != HANDSHAKE_MAGIC) || (hs.version != HANDSHAKE_VERSION) ||
        ((hs.family != uint8_t(addr_family::IPV4)) &&
         (hs.family != uint8_t(addr_family::IPV6)))) {
        protocol_error("invalid handshake");
        return false;
    }
    peer_     = hs;
    rx_head_ += sizeof(hs);
    switch (iface_.pair_accepted(*this)) {
    case pairing::REJECT:
        ucs_debug("tcp: connection from iface port %u (its ep %u) gives way to ours",
                  unsigned(hs.port), unsigned(hs.conn_sn));
        reject();
        return false;
    case pairing::ADOPTED:
        return false;    /* this object is closed; our ep owns the socket now */
    case pairing::NONE:
        break;
    }
    set_state(conn_state::CONNECTED);
    set_conn_reply(internal_op::CONN_ACCEPT, 0);
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
    frame_hdr  hdr;
    conn_reply reply;
    std::memcpy(&hdr, rx_.get() + rx_head_, sizeof(hdr));
    std::memcpy(&reply, rx_.get() + rx_head_ + sizeof(hdr), sizeof(reply));
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
                  static_cast<void*>(owner_ep_), unsigned(peer_.port));
        close_socket();
        rx_head_ = rx_tail_ = 0;
        set_state(conn_state::WAIT_PEER);
        return false;
    }
    set_state(conn_state::CONNECTED);
    if (reply.flags & conn_reply_flag::PAIRED) {
        peer_sends_ = true;
    }
    tx_kick();   /* the sends buffered meanwhile */
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
                return true;   /* the rest of the answer is still coming */
            }
        }
    }

    while (rx_tail_ - rx_head_ >= FRAME_HDR) {
        frame_hdr hdr;
        std::memcpy(&hdr, rx_.get() + rx_head_, FRAME_HDR);
        if (ucs_unlikely(!valid_frame(hdr))) {
            protocol_error("malformed frame header");
            return false;
        }
        size_t total = FRAME_HDR + size_t(hdr.length);
        size_t avail = rx_tail_ - rx_head_;
        if (avail >= total) {
            if (!dispatch(hdr, rx_.get() + rx_head_ + FRAME_HDR)) {
                rx_blocked_ = true;   /* retried when send room returns */
                return false;
            }
            rx_head_ += total;
            if (state_ >= conn_state::FAILED) {
                return false;
            }
            continue;
        }
        if (total > rx_cap_) {
            /* Larger than the receive buffer: the rest of it is read straight
             * into a buffer of its own, delivered in one piece. */
            if (!large_reserve(hdr.length)) {
                ucs_error("tcp: no memory for a %u-byte frame", hdr.length);
                schedule_failure(UCS_ERR_NO_MEMORY, "out of memory");
                return false;
            }
            size_t have = avail - FRAME_HDR;
            std::memcpy(large_.buf, rx_.get() + rx_head_ + FRAME_HDR, have);
            large_.hdr    = hdr;
            large_.got    = have;
            large_.active = true;
            rx_head_      = rx_tail_;
        }
        break;
    }

    if (rx_head_ == rx_tail_) {
        rx_head_ = rx_tail_ = 0;
    } else if (rx_head_ > 0) {
        /* Keep a partial frame at the front, so the next read completes it. */
        std::memmove(rx_.get(), rx_.get() + rx_head_, rx_tail_ - rx_head_);
        rx_tail_ -= rx_head_;
        rx_head_  = 0;
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
    large_.buf = static_cast<uint8_t*>(std::malloc(length));
    large_.cap = (large_.buf != nullptr) ? length : 0;
    return large_.buf != nullptr;
}

void tcp_conn::finish_large()
{
    large_.active = false;
    dispatch(large_.hdr, large_.buf);   /* large frames never wait for room */
    if ((large_.cap > config_.rx_keep) && !large_.active) {
        std::free(large_.buf);
        large_.buf = nullptr;
        large_.cap = 0;
    }
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
    switch (op) {
    case internal_op::PUT:
        handle_put(payload, hdr.length);
        return true;
    case internal_op::GET_REQ: {
        get_req req;
        std::memcpy(&req, payload, sizeof(req));
        return handle_get_req(req);
    }
    case internal_op::ATOMIC_POST:
    case internal_op::ATOMIC_REQ: {
        atomic_req req;
        std::memcpy(&req, payload, sizeof(req));
        return handle_atomic(req, op == internal_op::ATOMIC_REQ);
    }
    case internal_op::FLUSH_REQ: {
        flush_req req;
        std::memcpy(&req, payload, sizeof(req));
        return handle_flush_req(req);
    }
    case internal_op::DETACH:
        handle_detach();
        return true;
    default:
        handle_reply(op, payload, hdr.length);
        return true;
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
              "not inside a registered region", what, length, address,
              unsigned(peer_.port));
}

void tcp_conn::handle_put(uint8_t *payload, size_t length)
{
    put_hdr hdr;
    std::memcpy(&hdr, payload, sizeof(hdr));
    size_t data_length = length - sizeof(hdr);
    void *dest = iface_.regions().region_ptr(hdr.region_id, hdr.address, data_length);
    if (ucs_unlikely(dest == nullptr)) {
        refuse_rma("put", hdr.address, data_length);
        if (rma_error_ == UCS_OK) {
            rma_error_ = UCS_ERR_INVALID_ADDR;   /* reported by the next flush */
        }
        return;
    }
    std::memcpy(dest, payload + sizeof(hdr), data_length);
}

bool tcp_conn::handle_get_req(const get_req &req)
{
    ucs_status_t status = UCS_OK;
    void *src = nullptr;
    if (req.length > config_.max_zcopy) {
        status = UCS_ERR_EXCEEDS_LIMIT;
    } else {
        src = iface_.regions().region_ptr(req.region_id, req.address, req.length);
        if (src == nullptr) {
            status = UCS_ERR_INVALID_ADDR;
        }
    }
    size_t    data = (status == UCS_OK) ? size_t(req.length) : 0;
    reply_hdr reply{req.seq, int32_t(status), 0};

    /* Small data is copied while the send buffer has room; otherwise the
     * reply needs only the room kept for replies, which the peer's window
     * guarantees: this side never stops reading for want of send room. */
    uint8_t *p = nullptr;
    if ((data <= config_.tx_seg_size) &&
        ((p = reply_reserve(internal_op::GET_REPLY, sizeof(reply) + data,
                            sizeof(reply) + data, true)) != nullptr)) {
        std::memcpy(p, &reply, sizeof(reply));
        if (data > 0) {
            std::memcpy(p + sizeof(reply), src, data);
        }
        tx_send(FRAME_HDR + sizeof(reply) + data);
    } else if (data == 0) {
        p = reply_reserve(internal_op::GET_REPLY, sizeof(reply), sizeof(reply));
        if (p == nullptr) {
            return false;   /* the peer went beyond its window: wait */
        }
        std::memcpy(p, &reply, sizeof(reply));
        tx_send(FRAME_HDR + sizeof(reply));
    } else {
        /* Sent straight from the registered memory, as RDMA would read it. */
        if (tx_.reply_zcopy_full()) {
            return false;   /* the peer went beyond its window: wait */
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
    uint8_t *p = nullptr;
    if (fetch) {
        /* Room first: an executed atomic cannot be undone. */
        p = reply_reserve(internal_op::ATOMIC_REPLY, reply_length, reply_length);
        if (p == nullptr) {
            return false;
        }
    }

    ucs_status_t status = UCS_OK;
    uint64_t     old    = 0;
    void *ptr = iface_.regions().region_ptr(req.region_id, req.address, req.size);
    if ((ptr == nullptr) || (req.address % req.size != 0)) {
        status = UCS_ERR_INVALID_ADDR;
        refuse_rma("atomic", req.address, req.size);
    } else {
        old = execute_atomic(static_cast<atomic_op>(req.op), req.size, ptr, req.value,
                             req.compare);
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
    uint8_t *p = reply_reserve(internal_op::FLUSH_REPLY, sizeof(reply_hdr),
                               sizeof(reply_hdr));
    if (p == nullptr) {
        return false;
    }
    reply_hdr reply{req.seq, int32_t(rma_error_), 0};
    rma_error_ = UCS_OK;
    std::memcpy(p, &reply, sizeof(reply));
    tx_send(FRAME_HDR + sizeof(reply));
    return true;
}

void tcp_conn::handle_reply(internal_op op, uint8_t *payload, size_t length)
{
    reply_hdr reply;
    std::memcpy(&reply, payload, sizeof(reply));
    const uint8_t *data   = payload + sizeof(reply);
    size_t        data_len = length - sizeof(reply);

    if (fetches_.empty()) {
        protocol_error("reply without a request");
        return;
    }
    fetch_op &f = fetches_.front();
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
    ucs_status_t status = wire_status(reply.status);
    if (!kind_ok || (reply.seq != f.seq)) {
        protocol_error("reply out of order");
        return;
    }
    if ((op == internal_op::GET_REPLY) &&
        (data_len != ((status == UCS_OK) ? f.length : 0))) {
        protocol_error("get reply of the wrong length");
        return;
    }

    if (reply.seq == fence_seq_) {
        fence_seq_ = 0;   /* the last reply a fence waited for */
    }
    if (discard_replies_) {
        fetches_.pop_front();   /* its ep is gone */
        return;
    }

    /* Off the ring before any user code runs: callbacks may post more. */
    completion        *comp   = f.comp;
    fetch_kind        kind    = f.kind;
    unpack_callback_t unpack  = f.unpack;
    void              *arg    = f.arg;
    if (status == UCS_OK) {
        if (kind == fetch_kind::GET_ZCOPY) {
            size_t offset = 0;
            for (uint32_t i = 0; i < f.iovcnt; ++i) {
                std::memcpy(const_cast<void*>(f.iovs[i].buffer), data + offset,
                            f.iovs[i].length);
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
        close();    /* nobody uses this connection any more */
        iface_.conn_closed();
    }
}

} // namespace uct::tcp
