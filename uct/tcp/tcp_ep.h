/*
 * A tcp ep: its end of one connection (its own, or one the peer opened and
 * it shares). Every operation becomes one frame queued on the connection;
 * RMA and atomics are requests the target executes against its registered
 * regions, in order.
 *
 * Semantics worth knowing:
 * - Sends before the connection is up are queued until the peer accepted
 *   it (CONN_ACCEPT). Eps of two ifaces created towards each other share
 *   one connection: the n-th ep of each side towards the other pair up,
 *   even when both connect at the same time (see tcp_conn.h).
 * - Large put and get_zcopy payloads are read by the receiving side
 *   straight into the destination (region or iovs), without a bounce copy.
 * - UCS_ERR_NO_RESOURCE means the send buffer (tx_buf_size), the zero-copy
 *   slots or the reply ring is full, or requests wait in the pending queue.
 * - am_zcopy/put_zcopy return UCS_OK when all bytes left at once (no
 *   completion), else UCS_INPROGRESS and complete `comp` when written.
 * - flush: UCS_OK when nothing is queued or awaited; UCS_ERR_NO_RESOURCE
 *   while the pending queue is not empty (UCX semantics: queue a pending
 *   request) or when no room is left for the flush request; otherwise
 *   UCS_INPROGRESS. With `comp`, a flush request goes out and its reply
 *   completes `comp` once the target executed everything sent before it;
 *   a put or atomic the target refused since the previous flush makes that
 *   status UCS_ERR_INVALID_ADDR. flush_flag::CANCEL is treated as LOCAL.
 * - A lost peer (end-of-stream, reset, refused connect, protocol violation)
 *   fails the ep with UCS_ERR_CONNECTION_RESET: queued zero-copy sends and
 *   awaited replies complete with it, the iface's error handler runs once,
 *   requests still pending run once more (their operation returns the
 *   error) and are dropped; pending_add then answers UCS_ERR_BUSY.
 * - Destroying the ep completes nothing further. Buffered sends still go
 *   out and the connection stays up while the peer's ep uses it; with
 *   zero-copy sends in flight the connection is closed instead. Eps must be
 *   destroyed before their iface.
 */
#ifndef UCT_TCP_TCP_EP_H
#define UCT_TCP_TCP_EP_H

#include <uct/base/uct_iface.h>
#include <uct/tcp/tcp_conn.h>

namespace uct::tcp {

class tcp_iface;
struct tcp_rkey;

class tcp_ep : public ep {
public:
    tcp_ep(tcp_iface &iface, tcp_conn *conn);
    ~tcp_ep() override;

    ucs_status_t am_short(am_id_t id, uint64_t header, const void *payload,
                          unsigned length) override;
    ssize_t am_bcopy(am_id_t id, pack_callback_t pack, void *arg, unsigned flags) override;
    ucs_status_t am_zcopy(am_id_t id, const void *header, unsigned header_length, const iov *iov,
                          size_t iovcnt, unsigned flags, completion *comp) override;

    ucs_status_t put_short(const void *buffer, unsigned length, uint64_t remote_addr,
                           rkey_t rkey) override;
    ssize_t put_bcopy(pack_callback_t pack, void *arg, uint64_t remote_addr, rkey_t rkey) override;
    ucs_status_t put_zcopy(const iov *iov, size_t iovcnt, uint64_t remote_addr, rkey_t rkey,
                           completion *comp) override;
    ucs_status_t get_bcopy(unpack_callback_t unpack, void *arg, size_t length, uint64_t remote_addr,
                           rkey_t rkey, completion *comp) override;
    ucs_status_t get_zcopy(const iov *iov, size_t iovcnt, uint64_t remote_addr, rkey_t rkey,
                           completion *comp) override;

    ucs_status_t atomic_post(atomic_op op, unsigned size, uint64_t value, uint64_t remote_addr,
                             rkey_t rkey) override;
    ucs_status_t atomic_fetch(atomic_op op, unsigned size, uint64_t value, uint64_t compare,
                              void *result, uint64_t remote_addr, rkey_t rkey,
                              completion *comp) override;

    ucs_status_t pending_add(pending_req *req, unsigned flags) override;
    void pending_purge(pending_purge_callback_t cb, void *arg) override;
    ucs_status_t flush(unsigned flags, completion *comp) override;
    ucs_status_t fence(unsigned flags) override;

    tcp_conn &conn() const { return *conn_; }

private:
    /* Sum of iov lengths; false if an entry is invalid or the sum overflows. */
    static bool iov_total(const iov *iov, size_t iovcnt, size_t *total);

    /* Bounds and resource checks, then a GET_REQ on the wire and its fetch
     * record in *op_p (UCS_INPROGRESS); any other status sent nothing. */
    ucs_status_t post_get(const tcp_rkey &key, uint64_t remote_addr, size_t length, fetch_kind kind,
                          completion *comp, fetch_op **op_p);

    ucs_status_t send_atomic(internal_op op, atomic_op aop, unsigned size, uint64_t value,
                             uint64_t compare, uint64_t remote_addr, rkey_t rkey, uint64_t seq);

    tcp_iface &tcp_owner() const;
    /* The iface's limits, read from there: an ep is only its connection
     * (24 bytes, with thousands of eps per worker). */
    const tcp_config &config() const;

    tcp_conn *conn_;
};

} // namespace uct::tcp

#endif
