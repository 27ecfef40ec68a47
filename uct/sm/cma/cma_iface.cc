#include <uct/sm/cma/cma_iface.h>

#include <uct/sm/cma/cma_ep.h>
#include <uct/sm/cma/cma_md.h>

#include <ucs/debug/log.h>
#include <ucs/sys/process.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <new>
#include <sys/prctl.h>
#include <unistd.h>

namespace uct::cma {

cma_iface::cma_iface(cma_md &md, uct::worker &worker, const iface_params &params,
                     const cma_config &config) :
    md_(md),
    worker_(worker), config_(config), identity_(local_node_identity()), pid_(uint32_t(getpid())),
    err_handler_(params.err_handler), err_handler_arg_(params.err_handler_arg)
{
    /* Under Yama scope 1 only declared tracers may attach: let any peer of
     * ours read and write this process. Without Yama the call fails
     * harmlessly. */
    if (prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0) != 0) {
        ucs_debug("cma: PR_SET_PTRACER_ANY: %s", strerror(errno));
    }

    attr_.flags = iface_flag::PUT_ZCOPY | iface_flag::GET_ZCOPY | iface_flag::CONNECT_TO_IFACE |
                  iface_flag::PENDING | iface_flag::ERRHANDLE_PEER_FAILURE | iface_flag::EP_CHECK;
    attr_.event_flags = event_flag::FD;
    for (op_limits *lim : {&attr_.put, &attr_.get}) {
        lim->min_zcopy       = 0;
        lim->max_zcopy       = SSIZE_MAX; /* the syscall's limit on one call */
        lim->opt_zcopy_align = 1;
        lim->max_iov         = config.max_iov;
    }
    attr_.device_addr_len      = sizeof(node_identity);
    attr_.iface_addr_len       = sizeof(iface_address);
    attr_.ep_addr_len          = 0;
    attr_.perf.latency_s       = config.latency_s;
    attr_.perf.send_overhead_s = config.overhead_s;
    attr_.perf.recv_overhead_s = 0; /* the peer's CPU is not involved */
    attr_.perf.bandwidth_Bps   = config.bandwidth_Bps;
}

cma_iface::~cma_iface()
{
    worker_.progress_unregister(this);
}

ucs_status_t cma_iface::init()
{
    return peer_watch_.init();
}

uct::md &cma_iface::owner_md() const
{
    return md_;
}

ucs_status_t cma_iface::get_device_address(void *buffer) const
{
    std::memcpy(buffer, &identity_, sizeof(identity_));
    return UCS_OK;
}

ucs_status_t cma_iface::get_address(void *buffer) const
{
    iface_address addr{pid_, ucs::sys::self_start_time()};
    std::memcpy(buffer, &addr, sizeof(addr));
    return UCS_OK;
}

bool cma_iface::is_reachable(const void *dev_addr, size_t dev_addr_len, const void *iface_addr,
                             size_t iface_addr_len) const
{
    if ((dev_addr == nullptr) || (dev_addr_len != sizeof(node_identity)) ||
        (iface_addr == nullptr) || (iface_addr_len != sizeof(iface_address))) {
        return false;
    }
    node_identity peer;
    iface_address addr;
    std::memcpy(&peer, dev_addr, sizeof(peer));
    std::memcpy(&addr, iface_addr, sizeof(addr));
    /* A pid means something only inside the same pid namespace; ptrace
     * across user namespaces is refused by the kernel anyway. */
    return (peer == identity_) && (addr.pid != 0) && (addr.pid <= uint32_t(INT32_MAX));
}

ucs_status_t cma_iface::ep_create_connected(const void *dev_addr, size_t dev_addr_len,
                                            const void *iface_addr, size_t iface_addr_len,
                                            uct::ep **ep_p)
{
    if (!is_reachable(dev_addr, dev_addr_len, iface_addr, iface_addr_len)) {
        ucs_debug("cma: peer address is not reachable from here");
        return UCS_ERR_UNREACHABLE;
    }
    iface_address addr;
    std::memcpy(&addr, iface_addr, sizeof(addr));
    auto *ep = new (std::nothrow) cma_ep(*this, pid_t(addr.pid));
    if (ep == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    ucs_status_t status = ep->connect(addr.start_time);
    if (status != UCS_OK) {
        delete ep;
        return status;
    }
    *ep_p = ep;
    return UCS_OK;
}

ucs_status_t cma_iface::watch(cma_ep *ep)
{
    return peer_watch_.add(ep->peer_, ep);
}

ucs_status_t cma_iface::event_fd_get(int *fd_p)
{
    if (fd_p == nullptr) {
        return UCS_ERR_INVALID_PARAM;
    }
    *fd_p = peer_watch_.fd();
    return UCS_OK;
}

ucs_status_t cma_iface::event_arm(unsigned)
{
    /* A dead peer's pidfd would keep the fd readable: take it out now and
     * report it from progress(). */
    peer_watch_.check([](void *owner) { static_cast<cma_ep *>(owner)->mark_failed(); });
    return (failed_head_ == nullptr) ? UCS_OK : UCS_ERR_BUSY;
}

unsigned cma_iface::check_peers()
{
    peer_watch_.check([](void *owner) { static_cast<cma_ep *>(owner)->mark_failed(); });
    return progress(); /* reports whatever is queued */
}

unsigned cma_iface::progress()
{
    if (ucs_likely(failed_head_ == nullptr)) {
        return 0;
    }
    unsigned count = 0;
    /* Re-read the head each time: a handler may destroy other failed eps. */
    while (failed_head_ != nullptr) {
        cma_ep *ep       = failed_head_;
        failed_head_     = ep->next_failed_;
        ep->next_failed_ = nullptr;
        ++count;
        if (err_handler_ != nullptr) {
            err_handler_(err_handler_arg_, ep, UCS_ERR_CONNECTION_RESET);
        } else {
            ucs_error("cma: peer process %d is gone and no error handler is set",
                      int(ep->peer_pid()));
        }
    }
    return count;
}

void cma_iface::peer_failed(cma_ep *ep)
{
    peer_watch_.remove(ep); /* reported once, whoever noticed first */
    /* Append, so reports come out in the order failures were seen. */
    cma_ep **tail = &failed_head_;
    while (*tail != nullptr) {
        tail = &(*tail)->next_failed_;
    }
    *tail            = ep;
    ep->next_failed_ = nullptr;
    /* Reported from progress, outside the failing call. Registered from now
     * on: peers are rarely lost, and a worker polling this iface for
     * nothing afterwards costs little. */
    worker_.progress_register(this);
}

void cma_iface::forget_ep(cma_ep *ep)
{
    peer_watch_.remove(ep);
    for (cma_ep **link = &failed_head_; *link != nullptr; link = &(*link)->next_failed_) {
        if (*link == ep) {
            *link            = ep->next_failed_;
            ep->next_failed_ = nullptr;
            return;
        }
    }
}

} // namespace uct::cma
