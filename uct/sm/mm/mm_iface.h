/*
 * An mm interface: owns a receive FIFO in a shared segment (see mm_fifo.h)
 * that any number of peer endpoints write into, and a wakeup socket.
 * progress() polls only the next element's word, delivers up to
 * rx_max_poll messages, then (rarely) dispatches pending sends and reports
 * failed endpoints.
 *
 * The peers' processes are watched through a peer_watch (their pidfds in an
 * epoll set): check_peers() and event_arm() look at it, and it is the
 * iface's event fd too (with the wakeup socket in it), so a worker asleep
 * wakes up when a peer dies. check_peers() delivers what is in the FIFO
 * before it fails the dead peers' eps.
 *
 * AM handlers get the data in place (no DESC flag: it is valid only during
 * the call, the slot is reused afterwards) and must not call progress().
 * A sender that dies between reserving a slot and publishing it stalls this
 * FIFO: nothing tells the receiver who reserved it.
 */
#ifndef UCT_SM_MM_MM_IFACE_H
#define UCT_SM_MM_MM_IFACE_H

#include "mm_address.h"
#include "mm_config.h"
#include "mm_fifo.h"
#include "mm_remote.h"
#include "mm_segment.h"

#include <uct/base/uct_iface.h>
#include <uct/base/uct_worker.h>
#include <uct/sm/base/peer_watch.h>

#include <map>
#include <memory>
#include <vector>

namespace uct::mm {

class mm_md;
class mm_ep;

class mm_iface final : public uct::iface {
public:
    static ucs_status_t open(mm_md &md, uct::worker &worker, const iface_params &params,
                             const mm_config &config, uct::iface **iface_p);
    ~mm_iface() override;

    const iface_attr &attr() const override { return attr_; }
    md &owner_md() const override;

    ucs_status_t get_device_address(void *buffer) const override;
    ucs_status_t get_address(void *buffer) const override;
    bool is_reachable(const void *dev_addr, size_t dev_addr_len, const void *iface_addr,
                      size_t iface_addr_len) const override;
    ucs_status_t ep_create_connected(const void *dev_addr, size_t dev_addr_len,
                                     const void *iface_addr, size_t iface_addr_len,
                                     ep **ep_p) override;

    unsigned progress() override;
    ucs_status_t flush(unsigned flags, completion *comp) override;

    ucs_status_t event_fd_get(int *fd_p) override;
    ucs_status_t event_arm(unsigned events) override;
    unsigned check_peers() override;

    /* For endpoints. */
    const backend &seg_backend() const { return backend_; }
    int wakeup_fd() const { return wakeup_fd_; }
    uint8_t *bounce_buffer() const { return bounce_.get(); }
    /* Connects `ep` to the FIFO at `address`, shared with the iface's other
     * eps to it. */
    ucs_status_t ep_attach(mm_ep *ep, const iface_address &address);
    void ep_detach(mm_ep *ep);
    void pending_ep_link(mm_ep *ep);
    void pending_ep_unlink(mm_ep *ep);
    void ep_failed(mm_ep *ep);

private:
    mm_iface(mm_md &md, uct::worker &worker, const iface_params &params, const mm_config &config);
    ucs_status_t init();

    void deliver(uint8_t *elem, uint64_t word);
    unsigned progress_slow();
    unsigned report_failed_eps();
    /* Fails the eps whose peer the watch found gone; true if any. */
    bool look_for_dead_peers();
    /* The live remote for `address`, mapped on first use. */
    ucs_status_t remote_get(const iface_address &address, mm_remote **remote_p);
    /* No new ep joins it (its eps keep using it). */
    void unindex(mm_remote *remote);
    /* Its owner is gone: no new ep joins it, its eps fail. */
    void remote_failed(mm_remote *remote);
    /* Frees it once no ep and no holder uses it. */
    void remote_release(mm_remote *remote);

    /* Receive path state, read on every progress() call: keep together. */
    uint8_t *elems_            = nullptr;
    uint64_t head_             = 0; /* next index to read */
    uint64_t released_         = 0; /* last head published to senders */
    uint64_t *shared_head_     = nullptr;
    unsigned elem_shift_       = 0;
    unsigned fifo_shift_       = 0;
    uint64_t fifo_mask_        = 0;
    uint64_t release_interval_ = 0;
    unsigned rx_max_poll_      = 0;
    uint32_t max_inline_       = 0; /* inline bytes an element carries */
    uint8_t *bufs_             = nullptr;
    uint32_t seg_size_         = 0;
    mm_ep *pending_eps_        = nullptr; /* circular list of eps with queued work */
    unsigned pending_ep_count_ = 0;
    unsigned failed_eps_       = 0; /* eps waiting for their error report */

    mm_md &md_;
    uct::worker &worker_;
    const backend &backend_;
    mm_config config_;
    error_handler_t err_handler_;
    void *err_handler_arg_;
    iface_attr attr_;
    local_segment segment_;
    fifo_ctl *ctl_      = nullptr;
    int wakeup_fd_      = -1;
    uint32_t wakeup_id_ = 0;
    std::vector<mm_ep *> eps_;
    std::map<mm_remote::key_type, mm_remote *> remotes_; /* the ones new eps join */
    sm::peer_watch peer_watch_;                          /* also the event fd */
    std::unique_ptr<uint8_t[]> bounce_;                  /* put_bcopy near a region's end */
};

} // namespace uct::mm

#endif
