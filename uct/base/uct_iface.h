/*
 * Interfaces and endpoints: the operations every UCP protocol is built from.
 * An iface is one transport on one device inside one worker; an ep sends to
 * one peer iface (or peer ep, for connection-oriented transports).
 * Operations return UCS_OK when done, UCS_INPROGRESS when a completion will
 * be invoked later, UCS_ERR_NO_RESOURCE when the caller should retry or
 * queue a pending request, or an error.
 * Active messages sent on one ep, of any kind, are delivered in the order
 * sent (UCP's AM lane relies on it). tests/uct/conform checks this contract
 * on every transport.
 */
#ifndef UCT_BASE_UCT_IFACE_H
#define UCT_BASE_UCT_IFACE_H

#include <uct/base/uct_types.h>

namespace uct {

class iface {
public:
    virtual ~iface() = default;

    virtual const iface_attr &attr() const = 0;
    virtual md &owner_md() const           = 0;

    /* Addresses a peer needs to reach this iface (attr() gives the lengths). */
    virtual ucs_status_t get_device_address(void *buffer) const = 0;
    virtual ucs_status_t get_address(void *buffer) const        = 0;

    /*
     * Whether this iface can reach a peer with these addresses. The bytes came
     * from the peer: `*_len` are the lengths actually received.
     */
    virtual bool is_reachable(const void *dev_addr, size_t dev_addr_len, const void *iface_addr,
                              size_t iface_addr_len) const = 0;

    /* CONNECT_TO_IFACE transports: an ep connected to a peer iface. */
    virtual ucs_status_t ep_create_connected(const void *dev_addr, size_t dev_addr_len,
                                             const void *iface_addr, size_t iface_addr_len,
                                             ep **ep_p);
    /*
     * CONNECT_TO_EP transports (an RC queue pair): an unconnected ep. Its
     * address (ep::get_address, attr().ep_addr_len bytes) goes to the peer,
     * which connects an ep of its own to it; this ep is connected to the
     * peer's with ep::connect_to_ep. Until then every send and RMA call on
     * it returns UCS_ERR_NO_RESOURCE; pending_add, flush and check work.
     * A message may be sent only once the peer's ep is connected to this
     * one too: the peer refuses (drops) messages from an ep it is not
     * connected to, so the layer above learns that from the peer first.
     */
    virtual ucs_status_t ep_create(ep **ep_p);

    /* Polls for incoming messages and completions; returns events handled. */
    virtual unsigned progress() = 0;
    /* True for an iface with nothing to poll in steady state, which
     * registers itself with its worker when it has (cma: a lost peer to
     * report). The layer above then leaves it out of its progress list. */
    virtual bool progresses_on_demand() const { return false; }

    /*
     * Looks, without blocking, for peers whose process is gone, and reports
     * their eps through the error handler before it returns; returns the
     * events it handled (reports, and messages of the dead it delivered
     * first). For transports that can tell without traffic
     * (shared memory: the peer's pidfd); the layer above calls it at a slow
     * cadence, never on the data path. The default finds nothing.
     */
    virtual unsigned check_peers() { return 0; }

    virtual ucs_status_t flush(unsigned flags, completion *comp);
    virtual ucs_status_t fence(unsigned flags);

    /* Returns a DESC buffer a handler kept (returned UCS_INPROGRESS for). */
    virtual void release_am_desc(void *data);

    /* Wakeup support (event_flag::FD). */
    virtual ucs_status_t event_fd_get(int *fd_p);
    /* Arms the fd for `events`; UCS_ERR_BUSY if something is already pending. */
    virtual ucs_status_t event_arm(unsigned events);

    ucs_status_t set_am_handler(am_id_t id, am_callback_t cb, void *arg, unsigned flags);

protected:
    /* Transports call this for every arriving AM; one indirect call. */
    ucs_status_t invoke_am_handler(am_id_t id, void *data, size_t length, unsigned cb_flags)
    {
        if (ucs_unlikely(id >= AM_ID_MAX)) {
            return drop_am(id, length);
        }
        const am_handler &h = am_handlers_[id];
        return h.cb(h.arg, data, length, cb_flags);
    }

private:
    struct am_handler {
        am_callback_t cb;
        void *arg;
        unsigned flags;
    };

    static ucs_status_t unhandled_am(void *arg, void *data, size_t length, unsigned flags);
    ucs_status_t drop_am(am_id_t id, size_t length);

    am_handler am_handlers_[AM_ID_MAX] = {
#define UCT_UNHANDLED \
    { \
        unhandled_am, nullptr, 0 \
    }
        UCT_UNHANDLED, UCT_UNHANDLED, UCT_UNHANDLED, UCT_UNHANDLED, UCT_UNHANDLED, UCT_UNHANDLED,
        UCT_UNHANDLED, UCT_UNHANDLED, UCT_UNHANDLED, UCT_UNHANDLED, UCT_UNHANDLED, UCT_UNHANDLED,
        UCT_UNHANDLED, UCT_UNHANDLED, UCT_UNHANDLED, UCT_UNHANDLED, UCT_UNHANDLED, UCT_UNHANDLED,
        UCT_UNHANDLED, UCT_UNHANDLED, UCT_UNHANDLED, UCT_UNHANDLED, UCT_UNHANDLED, UCT_UNHANDLED,
        UCT_UNHANDLED, UCT_UNHANDLED, UCT_UNHANDLED, UCT_UNHANDLED, UCT_UNHANDLED, UCT_UNHANDLED,
        UCT_UNHANDLED, UCT_UNHANDLED,
#undef UCT_UNHANDLED
    };
};

class ep {
public:
    explicit ep(iface &owner) : iface_(owner) {}
    virtual ~ep() = default;

    iface &owner() const { return iface_; }

    /* Active messages: an 8-byte header plus payload, inline; the header
     * counts against attr().am.max_short (UCX's "total max. size"). */
    virtual ucs_status_t am_short(am_id_t id, uint64_t header, const void *payload,
                                  unsigned length);
    /* Short AM gathered from `iov`: the handler gets the entries back to
     * back, the first 8 bytes being the header word, so the entries hold
     * 8 to attr().am.max_short bytes in all (UCX's uct_ep_am_short_iov).
     * The base gathers them and calls am_short; a transport may override
     * it to copy straight into its send slot. */
    virtual ucs_status_t am_short_iov(am_id_t id, const iov *iov, size_t iovcnt);
    /* Buffered AM: `pack` writes the payload; returns its length or an error. */
    virtual ssize_t am_bcopy(am_id_t id, pack_callback_t pack, void *arg, unsigned flags);
    /* Zero-copy AM: a header copied inline plus iov payload sent in place. */
    virtual ucs_status_t am_zcopy(am_id_t id, const void *header, unsigned header_length,
                                  const iov *iov, size_t iovcnt, unsigned flags, completion *comp);

    virtual ucs_status_t put_short(const void *buffer, unsigned length, uint64_t remote_addr,
                                   rkey_t rkey);
    virtual ssize_t put_bcopy(pack_callback_t pack, void *arg, uint64_t remote_addr, rkey_t rkey);
    virtual ucs_status_t put_zcopy(const iov *iov, size_t iovcnt, uint64_t remote_addr, rkey_t rkey,
                                   completion *comp);
    virtual ucs_status_t get_bcopy(unpack_callback_t unpack, void *arg, size_t length,
                                   uint64_t remote_addr, rkey_t rkey, completion *comp);
    virtual ucs_status_t get_zcopy(const iov *iov, size_t iovcnt, uint64_t remote_addr, rkey_t rkey,
                                   completion *comp);

    /* Atomics; `size` is 4 or 8. Fetching forms write the old value to `result`. */
    virtual ucs_status_t atomic_post(atomic_op op, unsigned size, uint64_t value,
                                     uint64_t remote_addr, rkey_t rkey);
    virtual ucs_status_t atomic_fetch(atomic_op op, unsigned size, uint64_t value, uint64_t compare,
                                      void *result, uint64_t remote_addr, rkey_t rkey,
                                      completion *comp);

    /*
     * Queues `req` to be retried when resources return. UCS_ERR_BUSY means
     * there are resources now: the caller should retry the operation itself.
     */
    virtual ucs_status_t pending_add(pending_req *req, unsigned flags);
    virtual void pending_purge(pending_purge_callback_t cb, void *arg);

    virtual ucs_status_t flush(unsigned flags, completion *comp);
    virtual ucs_status_t fence(unsigned flags);

    /* Connection-oriented transports (CONNECT_TO_EP, see iface::ep_create):
     * this ep's address, attr().ep_addr_len bytes. */
    virtual ucs_status_t get_address(void *buffer) const;
    /* Connects this ep to the peer ep at `ep_addr` on the device at
     * `dev_addr`, once (UCS_ERR_ALREADY_EXISTS after). The bytes came from
     * the peer: `*_len` are the lengths received, checked by the transport. */
    virtual ucs_status_t connect_to_ep(const void *dev_addr, size_t dev_addr_len,
                                       const void *ep_addr, size_t ep_addr_len);

    /* Probes the peer; a lost peer is reported through the error handler. */
    virtual ucs_status_t check(unsigned flags, completion *comp);

private:
    iface &iface_;
};

} // namespace uct

#endif
