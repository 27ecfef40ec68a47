#include <uct/tcp/tcp_ep.h>

#include <uct/tcp/tcp_iface.h>
#include <uct/tcp/tcp_md.h>

#include <ucs/debug/log.h>

#include <cstring>

namespace uct::tcp {

namespace {

constexpr size_t FRAME_HDR = sizeof(frame_hdr);

inline void write_frame_hdr(uint8_t *p, uint8_t id, uint8_t flags, size_t length)
{
    frame_hdr hdr{id, flags, 0, uint32_t(length)};
    std::memcpy(p, &hdr, sizeof(hdr));
}

inline void write_internal_hdr(uint8_t *p, internal_op op, size_t length)
{
    write_frame_hdr(p, uint8_t(op), frame_flag::INTERNAL, length);
}

constexpr uint64_t POST_OPS = atomic_op_bit(atomic_op::ADD) | atomic_op_bit(atomic_op::AND) |
                              atomic_op_bit(atomic_op::OR) | atomic_op_bit(atomic_op::XOR);

} // namespace

tcp_ep::tcp_ep(tcp_iface &iface, tcp_conn *conn) : ep(iface), conn_(conn)
{
    conn_->set_owner_ep(this);
}

tcp_ep::~tcp_ep()
{
    tcp_owner().release_conn(conn_);
}

tcp_iface &tcp_ep::tcp_owner() const
{
    return static_cast<tcp_iface &>(owner());
}

const tcp_config &tcp_ep::config() const
{
    return tcp_owner().config();
}

bool tcp_ep::iov_total(const iov *iov, size_t iovcnt, size_t *total)
{
    if ((iov == nullptr) && (iovcnt > 0)) {
        return false;
    }
    size_t sum = 0;
    for (size_t i = 0; i < iovcnt; ++i) {
        if ((iov[i].buffer == nullptr) && (iov[i].length > 0)) {
            return false;
        }
        if (sum + iov[i].length < sum) {
            return false;
        }
        sum += iov[i].length;
    }
    *total = sum;
    return true;
}

ucs_status_t tcp_ep::am_short(am_id_t id, uint64_t header, const void *payload, unsigned length)
{
    if (ucs_unlikely((id >= AM_ID_MAX) || (length + sizeof(header) > config().max_short) ||
                     ((payload == nullptr) && (length > 0)))) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucs_status_t status = conn_->send_check();
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    size_t frame_len = sizeof(header) + length;
    uint8_t *p       = conn_->tx_reserve(FRAME_HDR + frame_len);
    if (ucs_unlikely(p == nullptr)) {
        return UCS_ERR_NO_RESOURCE;
    }
    write_frame_hdr(p, id, 0, frame_len);
    std::memcpy(p + FRAME_HDR, &header, sizeof(header));
    if (length > 0) {
        std::memcpy(p + FRAME_HDR + sizeof(header), payload, length);
    }
    conn_->tx_send(FRAME_HDR + frame_len);
    return UCS_OK;
}

ssize_t tcp_ep::am_bcopy(am_id_t id, pack_callback_t pack, void *arg, unsigned)
{
    if (ucs_unlikely((id >= AM_ID_MAX) || (pack == nullptr))) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucs_status_t status = conn_->send_check();
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    uint8_t *p = conn_->tx_reserve(FRAME_HDR + config().tx_seg_size);
    if (ucs_unlikely(p == nullptr)) {
        return UCS_ERR_NO_RESOURCE;
    }
    size_t length = pack(p + FRAME_HDR, arg);
    if (ucs_unlikely(length > config().tx_seg_size)) {
        ucs_error("tcp: am_bcopy packed %zu bytes, more than %zu", length, config().tx_seg_size);
        return UCS_ERR_INVALID_PARAM;
    }
    write_frame_hdr(p, id, 0, length);
    conn_->tx_send(FRAME_HDR + length);
    return ssize_t(length);
}

ucs_status_t tcp_ep::am_zcopy(am_id_t id, const void *header, unsigned header_length,
                              const iov *iov, size_t iovcnt, unsigned, completion *comp)
{
    size_t total = 0;
    if (ucs_unlikely((id >= AM_ID_MAX) || (header_length > config().max_am_hdr) ||
                     ((header == nullptr) && (header_length > 0)) || (iovcnt > config().max_iov) ||
                     !iov_total(iov, iovcnt, &total) || (total > config().max_zcopy))) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucs_status_t status = conn_->send_check();
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    if (ucs_unlikely(!conn_->zcopy_room())) {
        return UCS_ERR_NO_RESOURCE;
    }
    uint8_t *p = conn_->tx_reserve(FRAME_HDR + header_length);
    if (ucs_unlikely(p == nullptr)) {
        return UCS_ERR_NO_RESOURCE;
    }
    write_frame_hdr(p, id, 0, header_length + total);
    if (header_length > 0) {
        std::memcpy(p + FRAME_HDR, header, header_length);
    }
    return conn_->tx_send_zcopy(FRAME_HDR + header_length, iov, iovcnt, comp);
}

ucs_status_t tcp_ep::put_short(const void *buffer, unsigned length, uint64_t remote_addr,
                               rkey_t rkey)
{
    const tcp_rkey *key = rkey_from(rkey);
    if (ucs_unlikely((key == nullptr) || (length > config().max_short) ||
                     ((buffer == nullptr) && (length > 0)))) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (ucs_unlikely(!key->covers(remote_addr, length))) {
        return UCS_ERR_INVALID_ADDR;
    }
    ucs_status_t status = conn_->send_check();
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    size_t frame_len = sizeof(put_hdr) + length;
    uint8_t *p       = conn_->tx_reserve(FRAME_HDR + frame_len);
    if (ucs_unlikely(p == nullptr)) {
        return UCS_ERR_NO_RESOURCE;
    }
    write_internal_hdr(p, internal_op::PUT, frame_len);
    put_hdr hdr{key->region_id, remote_addr};
    std::memcpy(p + FRAME_HDR, &hdr, sizeof(hdr));
    if (length > 0) {
        std::memcpy(p + FRAME_HDR + sizeof(hdr), buffer, length);
    }
    conn_->mark_remote_unacked();
    conn_->tx_send(FRAME_HDR + frame_len);
    return UCS_OK;
}

ssize_t tcp_ep::put_bcopy(pack_callback_t pack, void *arg, uint64_t remote_addr, rkey_t rkey)
{
    const tcp_rkey *key = rkey_from(rkey);
    if (ucs_unlikely((key == nullptr) || (pack == nullptr))) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucs_status_t status = conn_->send_check();
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    uint8_t *p = conn_->tx_reserve(FRAME_HDR + sizeof(put_hdr) + config().tx_seg_size);
    if (ucs_unlikely(p == nullptr)) {
        return UCS_ERR_NO_RESOURCE;
    }
    size_t length = pack(p + FRAME_HDR + sizeof(put_hdr), arg);
    if (ucs_unlikely(length > config().tx_seg_size)) {
        ucs_error("tcp: put_bcopy packed %zu bytes, more than %zu", length, config().tx_seg_size);
        return UCS_ERR_INVALID_PARAM;
    }
    if (ucs_unlikely(!key->covers(remote_addr, length))) {
        return UCS_ERR_INVALID_ADDR; /* nothing was committed */
    }
    write_internal_hdr(p, internal_op::PUT, sizeof(put_hdr) + length);
    put_hdr hdr{key->region_id, remote_addr};
    std::memcpy(p + FRAME_HDR, &hdr, sizeof(hdr));
    conn_->mark_remote_unacked();
    conn_->tx_send(FRAME_HDR + sizeof(put_hdr) + length);
    return ssize_t(length);
}

ucs_status_t tcp_ep::put_zcopy(const iov *iov, size_t iovcnt, uint64_t remote_addr, rkey_t rkey,
                               completion *comp)
{
    const tcp_rkey *key = rkey_from(rkey);
    size_t total        = 0;
    if (ucs_unlikely((key == nullptr) || (iovcnt > config().max_iov) ||
                     !iov_total(iov, iovcnt, &total) || (total > config().max_zcopy))) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (ucs_unlikely(!key->covers(remote_addr, total))) {
        return UCS_ERR_INVALID_ADDR;
    }
    ucs_status_t status = conn_->send_check();
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    if (ucs_unlikely(!conn_->zcopy_room())) {
        return UCS_ERR_NO_RESOURCE;
    }
    uint8_t *p = conn_->tx_reserve(FRAME_HDR + sizeof(put_hdr));
    if (ucs_unlikely(p == nullptr)) {
        return UCS_ERR_NO_RESOURCE;
    }
    write_internal_hdr(p, internal_op::PUT, sizeof(put_hdr) + total);
    put_hdr hdr{key->region_id, remote_addr};
    std::memcpy(p + FRAME_HDR, &hdr, sizeof(hdr));
    conn_->mark_remote_unacked();
    return conn_->tx_send_zcopy(FRAME_HDR + sizeof(put_hdr), iov, iovcnt, comp);
}

ucs_status_t tcp_ep::post_get(const tcp_rkey &key, uint64_t remote_addr, size_t length,
                              fetch_kind kind, completion *comp, fetch_op **op_p)
{
    if (ucs_unlikely(!key.covers(remote_addr, length))) {
        return UCS_ERR_INVALID_ADDR;
    }
    ucs_status_t status = conn_->send_check();
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    if (ucs_unlikely(!conn_->fetch_ready(config().rma_outstanding))) {
        return UCS_ERR_NO_RESOURCE;
    }
    constexpr size_t frame_len = FRAME_HDR + sizeof(get_req);
    uint8_t *p                 = conn_->tx_reserve(frame_len);
    if (ucs_unlikely(p == nullptr)) {
        return UCS_ERR_NO_RESOURCE;
    }
    /* The reply is matched only from progress(), so the caller may finish
     * filling *op_p after the request went out. */
    fetch_op &op = conn_->fetches().push();
    op.kind      = kind;
    op.length    = length;
    op.comp      = comp;
    write_internal_hdr(p, internal_op::GET_REQ, sizeof(get_req));
    get_req req{op.seq, key.region_id, remote_addr, length};
    std::memcpy(p + FRAME_HDR, &req, sizeof(req));
    conn_->tx_send(frame_len);
    *op_p = &op;
    return UCS_INPROGRESS;
}

ucs_status_t tcp_ep::get_bcopy(unpack_callback_t unpack, void *arg, size_t length,
                               uint64_t remote_addr, rkey_t rkey, completion *comp)
{
    const tcp_rkey *key = rkey_from(rkey);
    if (ucs_unlikely((key == nullptr) || (unpack == nullptr) || (length > config().tx_seg_size))) {
        return UCS_ERR_INVALID_PARAM;
    }
    fetch_op *op;
    ucs_status_t status = post_get(*key, remote_addr, length, fetch_kind::GET_BCOPY, comp, &op);
    if (status == UCS_INPROGRESS) {
        op->unpack = unpack;
        op->arg    = arg;
    }
    return status;
}

ucs_status_t tcp_ep::get_zcopy(const iov *iov, size_t iovcnt, uint64_t remote_addr, rkey_t rkey,
                               completion *comp)
{
    const tcp_rkey *key = rkey_from(rkey);
    size_t total        = 0;
    if (ucs_unlikely((key == nullptr) || (iovcnt > config().max_get_iov) ||
                     !iov_total(iov, iovcnt, &total) || (total > config().max_zcopy))) {
        return UCS_ERR_INVALID_PARAM;
    }
    fetch_op *op;
    ucs_status_t status = post_get(*key, remote_addr, total, fetch_kind::GET_ZCOPY, comp, &op);
    if (status == UCS_INPROGRESS) {
        op->iovcnt = uint32_t(iovcnt);
        std::copy(iov, iov + iovcnt, op->iovs);
    }
    return status;
}

ucs_status_t tcp_ep::atomic_post(atomic_op op, unsigned size, uint64_t value, uint64_t remote_addr,
                                 rkey_t rkey)
{
    const tcp_rkey *key = rkey_from(rkey);
    if (ucs_unlikely((key == nullptr) || (op >= atomic_op::LAST) ||
                     !(atomic_op_bit(op) & POST_OPS) ||
                     ((size != sizeof(uint32_t)) && (size != sizeof(uint64_t))) ||
                     (remote_addr % size != 0))) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (ucs_unlikely(!key->covers(remote_addr, size))) {
        return UCS_ERR_INVALID_ADDR;
    }
    ucs_status_t status = conn_->send_check();
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    constexpr size_t frame_len = FRAME_HDR + sizeof(atomic_req);
    uint8_t *p                 = conn_->tx_reserve(frame_len);
    if (ucs_unlikely(p == nullptr)) {
        return UCS_ERR_NO_RESOURCE;
    }
    write_internal_hdr(p, internal_op::ATOMIC_POST, sizeof(atomic_req));
    atomic_req req{};
    req.region_id = key->region_id;
    req.address   = remote_addr;
    req.value     = value;
    req.op        = uint8_t(op);
    req.size      = uint8_t(size);
    std::memcpy(p + FRAME_HDR, &req, sizeof(req));
    conn_->mark_remote_unacked();
    conn_->tx_send(frame_len);
    return UCS_OK;
}

ucs_status_t tcp_ep::atomic_fetch(atomic_op op, unsigned size, uint64_t value, uint64_t compare,
                                  void *result, uint64_t remote_addr, rkey_t rkey, completion *comp)
{
    const tcp_rkey *key = rkey_from(rkey);
    if (ucs_unlikely((key == nullptr) || (op >= atomic_op::LAST) || (result == nullptr) ||
                     ((size != sizeof(uint32_t)) && (size != sizeof(uint64_t))) ||
                     (remote_addr % size != 0))) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (ucs_unlikely(!key->covers(remote_addr, size))) {
        return UCS_ERR_INVALID_ADDR;
    }
    ucs_status_t status = conn_->send_check();
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }
    if (ucs_unlikely(!conn_->fetch_ready(config().rma_outstanding))) {
        return UCS_ERR_NO_RESOURCE;
    }
    constexpr size_t frame_len = FRAME_HDR + sizeof(atomic_req);
    uint8_t *p                 = conn_->tx_reserve(frame_len);
    if (ucs_unlikely(p == nullptr)) {
        return UCS_ERR_NO_RESOURCE;
    }
    fetch_op &fop   = conn_->fetches().push();
    fop.kind        = fetch_kind::ATOMIC;
    fop.atomic_size = uint8_t(size);
    fop.comp        = comp;
    fop.arg         = result;
    write_internal_hdr(p, internal_op::ATOMIC_REQ, sizeof(atomic_req));
    atomic_req req{};
    req.seq       = fop.seq;
    req.region_id = key->region_id;
    req.address   = remote_addr;
    req.value     = value;
    req.compare   = compare;
    req.op        = uint8_t(op);
    req.size      = uint8_t(size);
    std::memcpy(p + FRAME_HDR, &req, sizeof(req));
    conn_->tx_send(frame_len);
    return UCS_INPROGRESS;
}

ucs_status_t tcp_ep::pending_add(pending_req *req, unsigned)
{
    if ((req == nullptr) || (req->func == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    return conn_->pending_add(req);
}

void tcp_ep::pending_purge(pending_purge_callback_t cb, void *arg)
{
    conn_->pending_purge(cb, arg);
}

ucs_status_t tcp_ep::flush(unsigned, completion *comp)
{
    return conn_->flush(comp);
}

ucs_status_t tcp_ep::fence(unsigned)
{
    /* One ordered stream, executed in order by the target, except for the
     * data of gets, which the target reads late. */
    conn_->fence();
    return UCS_OK;
}

} // namespace uct::tcp
