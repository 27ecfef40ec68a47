/*
 * An endpoint to one peer process: put/get_zcopy with process_vm_writev/
 * readv, completed before the call returns. With a remote key the access
 * is bounded by the key's region; without one (config.keyless_rma) it goes
 * straight to the peer pid taken from its iface address.
 *
 * The peer process is held from creation (sm::peer_process: its pidfd, and
 * its start time checked against the address). An ep whose peer is already
 * gone is still created, failed, and reported from the iface's progress.
 */
#ifndef UCT_SM_CMA_CMA_EP_H
#define UCT_SM_CMA_CMA_EP_H

#include <uct/base/uct_iface.h>
#include <uct/sm/base/peer_process.h>

#include <sys/types.h>

namespace uct::cma {

class cma_iface;

class cma_ep final : public uct::ep {
public:
    cma_ep(cma_iface &iface, pid_t peer_pid);
    ~cma_ep() override;

    /* Holds the peer, which must have started at `start_time` (0: unknown). */
    ucs_status_t connect(uint64_t start_time);

    ucs_status_t put_zcopy(const iov *iov, size_t iovcnt, uint64_t remote_addr, rkey_t rkey,
                           completion *comp) override;
    ucs_status_t get_zcopy(const iov *iov, size_t iovcnt, uint64_t remote_addr, rkey_t rkey,
                           completion *comp) override;

    /* Operations never run out of resources: there is nothing to queue. */
    ucs_status_t pending_add(pending_req *req, unsigned flags) override;
    void pending_purge(pending_purge_callback_t cb, void *arg) override;

    /* Probes whether the peer process still exists. */
    ucs_status_t check(unsigned flags, completion *comp) override;

    pid_t peer_pid() const { return peer_pid_; }
    bool failed() const { return failed_; }

private:
    friend class cma_iface; /* links failed eps through next_failed_ */

    enum class direction { READ, WRITE };

    template <direction dir>
    ucs_status_t transfer(const iov *iov, size_t iovcnt, uint64_t remote_addr, rkey_t rkey);
    ucs_status_t check_access(uint64_t remote_addr, size_t length, rkey_t rkey) const;
    ucs_status_t syscall_failed(int err, direction dir, size_t length, uint64_t remote_addr);
    void mark_failed();

    pid_t peer_pid_;
    sm::peer_process peer_;
    bool failed_ = false;
    bool keyless_rma_;
    size_t max_iov_;
    cma_ep *next_failed_ = nullptr;
};

} // namespace uct::cma

#endif
