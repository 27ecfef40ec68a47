/*
 * The wireup proxy: the AM lane of an ep that may not send yet. A
 * client-server ep waiting for the server's address, and an ep waiting for
 * its wireup handshake (ucp/wireup/wireup.h) to finish, point their am_ep
 * here: every send finds no resources and queues here, in order, counted
 * in ucp_ep::num_pending like any queued send. When the ep is ready the
 * queue drains onto the real AM lane through this same object (forward_to
 * set), so sends that completion callbacks issue meanwhile still queue
 * behind the earlier ones; then the proxy is deleted.
 *
 * Wireup messages never go through the proxy: they take the ep's wireup
 * lane (ep_send_wireup in ucp_ep.h).
 */
#ifndef UCP_WIREUP_PROXY_EP_H
#define UCP_WIREUP_PROXY_EP_H

#include <uct/base/uct_iface.h>

#include <deque>
#include <functional>

struct ucp_ep;

namespace ucp {

/*
 * The owner of a proxy that stands for lanes not made yet (a client-server
 * ep before the server's address): small limits, so that a protocol chosen
 * meanwhile (eager fragments, sized when sent) fits the real lane.
 */
class proxy_iface final : public uct::iface {
public:
    explicit proxy_iface(uct::md &md);
    const uct::iface_attr &attr() const override { return attr_; }
    uct::md &owner_md() const override { return md_; }
    ucs_status_t get_device_address(void *) const override { return UCS_ERR_UNSUPPORTED; }
    ucs_status_t get_address(void *) const override { return UCS_ERR_UNSUPPORTED; }
    bool is_reachable(const void *, size_t, const void *, size_t) const override { return false; }
    unsigned progress() override { return 0; }

private:
    uct::md &md_;
    uct::iface_attr attr_;
};

class proxy_ep final : public uct::ep {
public:
    /* `owner`: the real AM lane's iface (its limits are the ep's), or a
     * proxy_iface while there is no lane. */
    explicit proxy_ep(uct::iface &owner) : uct::ep(owner) {}
    ~proxy_ep() override;

    ucs_status_t am_short(uct::am_id_t id, uint64_t header, const void *payload,
                          unsigned length) override
    {
        return (forward_to != nullptr) ? forward_to->am_short(id, header, payload, length) :
                                         UCS_ERR_NO_RESOURCE;
    }
    ssize_t am_bcopy(uct::am_id_t id, uct::pack_callback_t pack, void *arg, unsigned flags) override
    {
        return (forward_to != nullptr) ? forward_to->am_bcopy(id, pack, arg, flags) :
                                         ssize_t(UCS_ERR_NO_RESOURCE);
    }
    ucs_status_t am_zcopy(uct::am_id_t id, const void *header, unsigned header_length,
                          const uct::iov *iov, size_t iovcnt, unsigned flags,
                          uct::completion *comp) override
    {
        return (forward_to != nullptr) ?
                   forward_to->am_zcopy(id, header, header_length, iov, iovcnt, flags, comp) :
                   UCS_ERR_NO_RESOURCE;
    }
    ucs_status_t pending_add(uct::pending_req *req, unsigned) override;
    void pending_purge(uct::pending_purge_callback_t cb, void *arg) override;
    ucs_status_t flush(unsigned flags, uct::completion *) override;
    ucs_status_t check(unsigned, uct::completion *) override { return UCS_OK; }

    bool queue_empty() const { return queue_.empty(); }
    uct::pending_req *queue_pop();
    /* Appends what `other` holds, in order, and empties it. */
    void take_queue(proxy_ep &other);

    uct::ep *forward_to = nullptr;    /* the real AM lane while draining */
    bool *alive         = nullptr;    /* cleared when destroyed */
    std::function<void()> on_destroy; /* e.g. cancel a client-server handshake */

private:
    std::deque<uct::pending_req *> queue_;
};

/*
 * Makes `ep`'s sends queue in a proxy from now on (ep->proxy, am_ep): sends
 * already queued on the real AM lane move into it first, in order, except
 * wireup messages. Nothing if the ep is held already.
 */
void ep_hold_sends(ucp_ep *ep);

/*
 * The ep may send: the proxy's queue drains onto the real AM lane, in
 * order, and the proxy goes. Returns false if a completion callback
 * destroyed the ep meanwhile.
 */
bool ep_release_sends(ucp_ep *ep);

/* A client-server ep got real lanes while its sends stay held: the proxy
 * standing for no lane is replaced by one owned by the real AM lane. */
void ep_rehome_proxy(ucp_ep *ep);

} // namespace ucp

#endif
