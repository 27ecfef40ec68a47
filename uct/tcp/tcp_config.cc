#include <uct/tcp/tcp_config.h>
#include <uct/tcp/tcp_fetch_ring.h>
#include <uct/tcp/tcp_tx_queue.h>
#include <uct/tcp/tcp_wire.h>

#include <ucs/debug/log.h>

#include <climits>
#include <cstdint>

namespace uct::tcp {

tcp_config default_tcp_config()
{
    tcp_config c;
    c.sndbuf          = 0;
    c.rcvbuf          = 0;
    c.rx_seg_size     = 64 * 1024;
    c.tx_seg_size     = 8 * 1024;
    c.tx_buf_size     = 64 * 1024;
    c.max_short       = 256;
    c.max_am_hdr      = 128;
    c.max_zcopy       = size_t(1) << 30;
    c.max_iov         = 16;
    c.max_get_iov     = 4;
    c.zcopy_inflight  = 16;
    c.rma_outstanding = 64;
    c.max_poll        = 16;
    c.direct_poll_max = 2;
    c.epoll_period    = 16;
    c.backlog         = 1024;
    c.nodelay         = true;
    c.rx_keep         = 4 * 1024 * 1024;
    return c;
}

ucs_status_t check_tcp_config(const tcp_config &c)
{
    /* Largest frame headers any operation puts in front of its data. */
    constexpr size_t max_op_hdr = sizeof(frame_hdr) + sizeof(get_req);

    auto fail = [](const char *what) {
        ucs_error("invalid tcp configuration: %s", what);
        return UCS_ERR_INVALID_PARAM;
    };

    if ((c.sndbuf > INT_MAX) || (c.rcvbuf > INT_MAX)) {
        return fail("UCX_TCP_SNDBUF/RCVBUF must fit in an int");
    }
    if (c.rx_seg_size < 256) {
        return fail("UCX_TCP_RX_SEG_SIZE must be at least 256");
    }
    if ((c.tx_seg_size == 0) || (c.max_short < sizeof(uint64_t))) {
        return fail("UCX_TCP_TX_SEG_SIZE must be positive and UCX_TCP_MAX_SHORT at least 8");
    }
    /* The handshake plus one largest bcopy or short frame must fit. */
    if ((c.tx_buf_size < sizeof(handshake) + max_op_hdr + c.tx_seg_size) ||
        (c.tx_buf_size < sizeof(handshake) + max_op_hdr + c.max_short) ||
        (c.tx_buf_size < sizeof(handshake) + max_op_hdr + c.max_am_hdr)) {
        return fail("UCX_TCP_TX_BUF_SIZE too small for the segment, short and header sizes");
    }
    if ((c.max_zcopy == 0) ||
        (c.max_zcopy > UINT32_MAX - c.max_am_hdr - max_op_hdr) ||
        (c.max_am_hdr > UINT32_MAX) || (c.tx_seg_size > UINT32_MAX)) {
        return fail("UCX_TCP_MAX_ZCOPY + UCX_TCP_MAX_AM_HDR must fit a 32-bit frame length");
    }
    if ((c.max_iov == 0) || (c.max_iov > tx_queue::MAX_GATHER - 2)) {
        return fail("UCX_TCP_MAX_IOV out of range (1..62)");
    }
    if ((c.max_get_iov == 0) || (c.max_get_iov > fetch_op::MAX_IOV)) {
        return fail("UCX_TCP_MAX_GET_IOV out of range (1..8)");
    }
    if ((c.zcopy_inflight == 0) || (c.zcopy_inflight > tx_queue::MAX_ZCOPY_SLOTS)) {
        return fail("UCX_TCP_ZCOPY_INFLIGHT out of range (1..64)");
    }
    if ((c.rma_outstanding == 0) || (c.max_poll == 0) || (c.epoll_period == 0) ||
        (c.backlog <= 0)) {
        return fail("UCX_TCP_RMA_OUTSTANDING, MAX_POLL, EPOLL_PERIOD and BACKLOG must be positive");
    }
    return UCS_OK;
}

} // namespace uct::tcp
