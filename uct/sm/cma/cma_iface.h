/*
 * The cma interface: no receive side and nothing to poll; it publishes the
 * node identity (device address) and pid (iface address), creates eps to
 * peers on the same node and namespaces, and reports lost peers to the
 * upper layer's error handler from progress() and check_peers(). The peers'
 * processes are watched through a peer_watch, whose epoll set is the
 * iface's event fd: it turns readable only when a peer dies.
 */
#ifndef UCT_SM_CMA_CMA_IFACE_H
#define UCT_SM_CMA_CMA_IFACE_H

#include <uct/base/uct_iface.h>
#include <uct/base/uct_worker.h>
#include <uct/sm/base/peer_watch.h>
#include <uct/sm/cma/cma_access.h>
#include <uct/sm/cma/cma_config.h>

#include <sys/types.h>

namespace uct::cma {

class cma_md;
class cma_ep;

/* Iface address: the owner's pid, in the namespace the device address
 * names, and its start time, which a process that reuses the pid lacks. */
struct __attribute__((packed)) iface_address {
    uint32_t pid;
    uint64_t start_time; /* ucs::sys::self_start_time(); 0: unknown */
};
/* Frozen: changing it requires bumping ucp::address_version, which peers check. */
static_assert(sizeof(iface_address) == 12, "iface address layout");

class cma_iface final : public uct::iface {
public:
    cma_iface(cma_md &md, uct::worker &worker, const iface_params &params,
              const cma_config &config);
    ~cma_iface() override;
    ucs_status_t init();

    const iface_attr &attr() const override { return attr_; }
    uct::md &owner_md() const override;

    ucs_status_t get_device_address(void *buffer) const override;
    ucs_status_t get_address(void *buffer) const override;
    bool is_reachable(const void *dev_addr, size_t dev_addr_len, const void *iface_addr,
                      size_t iface_addr_len) const override;
    ucs_status_t ep_create_connected(const void *dev_addr, size_t dev_addr_len,
                                     const void *iface_addr, size_t iface_addr_len,
                                     uct::ep **ep_p) override;

    /* Delivers deferred peer-failure reports; otherwise there is nothing to do. */
    unsigned progress() override;
    bool progresses_on_demand() const override { return true; }
    /* Nothing arrives here: the fd shows dead peers only, and only
     * unreported failures need progress. */
    ucs_status_t event_fd_get(int *fd_p) override;
    ucs_status_t event_arm(unsigned events) override;
    unsigned check_peers() override;

    const cma_config &config() const { return config_; }

    /* An ep found its peer gone: report it from the next progress(). */
    void peer_failed(cma_ep *ep);
    /* An ep is being destroyed: forget any report still queued for it. */
    void forget_ep(cma_ep *ep);
    /* Watches an ep's peer until it dies or the ep is forgotten. */
    ucs_status_t watch(cma_ep *ep);

private:
    cma_md &md_;
    uct::worker &worker_;
    cma_config config_;
    iface_attr attr_;
    node_identity identity_;
    uint32_t pid_;
    error_handler_t err_handler_;
    void *err_handler_arg_;
    cma_ep *failed_head_ = nullptr; /* eps waiting for a report */
    sm::peer_watch peer_watch_;
};

} // namespace uct::cma

#endif
