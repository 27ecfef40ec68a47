/*
 * An endpoint of the self transport, always to its own iface. Active
 * messages go to the iface's handlers (see self_iface.h for the nesting
 * rule); RMA is memcpy and atomics are CPU atomics on this process's
 * memory, bounded by the remote key when one is given.
 */
#ifndef UCT_SM_SELF_SELF_EP_H
#define UCT_SM_SELF_SELF_EP_H

#include <uct/base/uct_iface.h>

namespace uct::self {

class self_iface;

class self_ep final : public uct::ep {
public:
    explicit self_ep(self_iface &iface);
    ~self_ep() override;

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

    /* The peer is this process: always alive. */
    ucs_status_t check(unsigned flags, completion *comp) override;

private:
    self_iface &iface() const;
    /* Whether [remote_addr, +length) may be accessed; `quiet` skips logging. */
    ucs_status_t check_access(uint64_t remote_addr, size_t length, rkey_t rkey,
                              bool quiet = false) const;
    ucs_status_t check_iov(const iov *iov, size_t iovcnt, size_t max_iov, size_t *total_p) const;
    template <typename T>
    ucs_status_t atomic(atomic_op op, uint64_t value, uint64_t compare, void *result,
                        uint64_t remote_addr, rkey_t rkey, bool fetch);
};

} // namespace uct::self

#endif
