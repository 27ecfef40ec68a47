/*
 * The self interface: active messages to itself, delivered synchronously.
 *
 * Nesting rule: a send made while no handler of this iface is running is
 * delivered to the handler before the send returns. A send made from inside
 * a handler (directly or through a nested call) is never delivered
 * recursively: it is copied into a receive descriptor and queued, and
 * progress() delivers the queue in order. While anything is queued, later
 * sends queue behind it, so per-iface order is kept. When
 * config.nested_queue_len messages are queued, sends return
 * UCS_ERR_NO_RESOURCE and pending_add() accepts requests, dispatched by
 * progress() once the queue drains. The handler stack therefore never holds
 * more than one self handler, however handlers reply to each other.
 * flush() outside a handler delivers what is queued (one pass) and returns
 * UCS_OK if that left nothing behind; otherwise, and always inside a
 * handler, it returns UCS_ERR_NO_RESOURCE and pending_add() accepts the
 * flush request.
 *
 * Handlers always get a descriptor they may keep (am_cb_flag::DESC, with
 * rx_headroom bytes before the data) and return with release_am_desc(),
 * except am_zcopy with no header and a single iov delivered directly: that
 * points at the sender's buffer, without DESC.
 */
#ifndef UCT_SM_SELF_SELF_IFACE_H
#define UCT_SM_SELF_SELF_IFACE_H

#include <uct/base/uct_iface.h>
#include <uct/base/uct_worker.h>
#include <uct/sm/self/self_config.h>
#include <uct/sm/self/self_desc_pool.h>

#include <sys/types.h>

namespace uct::self {

class self_md;

/* Iface address: which process, and which iface in it. */
struct iface_address {
    uint32_t pid;
    uint32_t reserved; /* zero */
    uint64_t token;    /* unique per iface within the process */
};
/* Frozen: changing it requires bumping ucp::address_version, which peers check. */
static_assert(sizeof(iface_address) == 16, "iface address layout");

class self_iface final : public uct::iface {
public:
    static ucs_status_t open(self_md &md, uct::worker &worker, const iface_params &params,
                             const self_config &config, uct::iface **iface_p);
    ~self_iface() override;

    const iface_attr &attr() const override { return attr_; }
    uct::md &owner_md() const override;

    ucs_status_t get_device_address(void *buffer) const override;
    ucs_status_t get_address(void *buffer) const override;
    bool is_reachable(const void *dev_addr, size_t dev_addr_len, const void *iface_addr,
                      size_t iface_addr_len) const override;
    ucs_status_t ep_create_connected(const void *dev_addr, size_t dev_addr_len,
                                     const void *iface_addr, size_t iface_addr_len,
                                     uct::ep **ep_p) override;

    /* Delivers queued messages, then dispatches pending requests. */
    unsigned progress() override;
    ucs_status_t flush(unsigned flags, completion *comp) override;
    void release_am_desc(void *data) override;
    /* No fd: only this process's own sends (delivered or queued at once)
     * produce events, so anything still queued is all there is to report. */
    ucs_status_t event_arm(unsigned) override { return idle() ? UCS_OK : UCS_ERR_BUSY; }

    /* --- used by self_ep --- */

    const self_config &config() const { return config_; }
    pid_t pid() const { return pid_; }
    uint8_t *bounce_buffer() { return bounce_; }

    /*
     * Fills a receive descriptor with `fill(data)` (returns the length or a
     * negative status) and delivers it now or queues it (see the rule above).
     * Returns the length, or an error with nothing delivered.
     */
    template <typename Fill>
    ssize_t send_am(am_id_t id, Fill &&fill)
    {
        const bool direct = (depth_ == 0) && (queue_head_ == nullptr);
        if (!direct && ucs_unlikely(queue_len_ >= config_.nested_queue_len)) {
            return UCS_ERR_NO_RESOURCE;
        }
        auto *d = static_cast<desc *>(pool_.get());
        if (ucs_unlikely(d == nullptr)) {
            return UCS_ERR_NO_MEMORY;
        }
        uint8_t *data  = payload(d);
        ssize_t length = fill(data);
        if (ucs_unlikely(length < 0)) {
            pool_.put(d);
            return length;
        }
        if (direct) {
            deliver(id, d, size_t(length));
        } else {
            enqueue(id, d, size_t(length));
        }
        return length;
    }

    /* Whether a send now would go straight to the handler. */
    bool delivers_directly() const { return (depth_ == 0) && (queue_head_ == nullptr); }

    /* Direct delivery of the caller's own buffer, without DESC. */
    void deliver_in_place(am_id_t id, const void *data, size_t length);

    /* Nothing queued and nothing pending. */
    bool idle() const { return (queue_head_ == nullptr) && (pending_head_ == nullptr); }

    ucs_status_t pending_add(uct::ep *ep, pending_req *req);
    void pending_purge(uct::ep *ep, pending_purge_callback_t cb, void *arg);
    ucs_status_t flush_queue();

private:
    /* Header of each receive descriptor; rx headroom and data follow. */
    struct desc {
        desc *next; /* queue link while waiting for delivery */
        uint32_t length;
        am_id_t id;
    };

    /* Intrusive link of a pending request, kept in pending_req::priv. */
    struct pending_link {
        pending_req *next;
        uct::ep *owner;
    };
    static_assert(sizeof(pending_link) <= sizeof(pending_req::priv), "priv too small");

    self_iface(self_md &md, uct::worker &worker, const iface_params &params,
               const self_config &config, size_t data_offset, uint8_t *bounce);

    uint8_t *payload(desc *d) const { return reinterpret_cast<uint8_t *>(d) + data_offset_; }
    desc *desc_of(void *data) const
    {
        return reinterpret_cast<desc *>(static_cast<uint8_t *>(data) - data_offset_);
    }
    static pending_link &link_of(pending_req *req)
    {
        return *reinterpret_cast<pending_link *>(req->priv);
    }

    void deliver(am_id_t id, desc *d, size_t length)
    {
        ++depth_;
        ucs_status_t status = invoke_am_handler(id, payload(d), length, am_cb_flag::DESC);
        --depth_;
        if (status != UCS_INPROGRESS) {
            pool_.put(d);
        }
    }

    void enqueue(am_id_t id, desc *d, size_t length);
    unsigned deliver_queued();
    unsigned dispatch_pending();

    self_md &md_;
    uct::worker &worker_;
    self_config config_;
    iface_attr attr_;
    size_t data_offset_;
    desc_pool pool_;
    uint8_t *bounce_; /* put_bcopy staging, seg_size bytes */
    pid_t pid_;
    uint64_t token_;

    unsigned depth_            = 0; /* self handlers running now (0 or 1) */
    desc *queue_head_          = nullptr;
    desc *queue_tail_          = nullptr;
    unsigned queue_len_        = 0;
    pending_req *pending_head_ = nullptr;
    pending_req *pending_tail_ = nullptr;
};

} // namespace uct::self

#endif
