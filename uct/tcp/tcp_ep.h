/*
 * A tcp ep: the sending side of one outbound connection. Every operation
 * becomes one frame queued on the connection; RMA and atomics are requests
 * the target executes against its registered regions.
 */
#ifndef UCT_TCP_TCP_EP_H
#define UCT_TCP_TCP_EP_H

#include <uct/base/uct_iface.h>
#include <uct/tcp/tcp_conn.h>

namespace uct::tcp {

class tcp_iface;

class tcp_ep : public ep {
public:
    tcp_ep(tcp_iface &iface, tcp_conn *conn);
    ~tcp_ep() override;

    ucs_status_t am_short(am_id_t id, uint64_t header, const void *payload,
                          unsigned length) override;
    ssize_t am_bcopy(am_id_t id, pack_callback_t pack, void *arg,
                     unsigned flags) override;
    ucs_status_t am_zcopy(am_id_t id, const void *header, unsigned header_length,
                          const iov *iov, size_t iovcnt, unsigned flags,
                          completion *comp) override;

    ucs_status_t put_short(const void *buffer, unsigned length, uint64_t remote_addr,
                           rkey_t rkey) override;
    ssize_t put_bcopy(pack_callback_t pack, void *arg, uint64_t remote_addr,
                      rkey_t rkey) override;
    ucs_status_t put_zcopy(const iov *iov, size_t iovcnt, uint64_t remote_addr,
                           rkey_t rkey, completion *comp) override;
    ucs_status_t get_bcopy(unpack_callback_t unpack, void *arg, size_t length,
                           uint64_t remote_addr, rkey_t rkey,
                           completion *comp) override;
    ucs_status_t get_zcopy(const iov *iov, size_t iovcnt, uint64_t remote_addr,
                           rkey_t rkey, completion *comp) override;

    ucs_status_t atomic_post(atomic_op op, unsigned size, uint64_t value,
                             uint64_t remote_addr, rkey_t rkey) override;
    ucs_status_t atomic_fetch(atomic_op op, unsigned size, uint64_t value,
                              uint64_t compare, void *result, uint64_t remote_addr,
                              rkey_t rkey, completion *comp) override;

    ucs_status_t pending_add(pending_req *req, unsigned flags) override;
    void pending_purge(pending_purge_callback_t cb, void *arg) override;
    ucs_status_t flush(unsigned flags, completion *comp) override;
    ucs_status_t fence(unsigned flags) override;

    tcp_conn &conn() const { return *conn_; }

private:
    /* Sum of iov lengths; false if an entry is invalid or the sum overflows. */
    static bool iov_total(const iov *iov, size_t iovcnt, size_t *total);

    ucs_status_t send_atomic(internal_op op, atomic_op aop, unsigned size,
                             uint64_t value, uint64_t compare, uint64_t remote_addr,
                             rkey_t rkey, uint64_t seq);

    tcp_iface &iface_;
    tcp_conn  *conn_;
    /* Limits copied from the iface so the checks touch one object. */
    size_t    max_short_;
    size_t    max_bcopy_;
    size_t    max_zcopy_;
    size_t    max_iov_;
    size_t    max_get_iov_;
    size_t    max_am_hdr_;
};

} // namespace uct::tcp

#endif
