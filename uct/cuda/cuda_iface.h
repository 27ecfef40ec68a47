/*
 * The interface and endpoint of both CUDA transports. They differ in what
 * they reach and how a remote address becomes a pointer:
 *   cuda_copy: this process only; the "remote" address is local memory
 *              (host or device), put/get copy between it and the iov.
 *   cuda_ipc:  processes of this node; the remote address lies in a peer's
 *              device allocation, mapped here through its IPC handle (the
 *              remote key, cuda_ipc.h).
 * Zero-copy operations run as cuMemcpyAsync on the iface's streams and
 * complete from progress() (copy_queue); the iface registers itself with
 * the worker's progress only while copies are in flight.
 */
#ifndef UCT_CUDA_CUDA_IFACE_H
#define UCT_CUDA_CUDA_IFACE_H

#include <uct/base/uct_iface.h>
#include <uct/base/uct_worker.h>
#include <uct/cuda/cuda_copy_queue.h>

#include <cstdint>

namespace uct::cuda {

enum class transport_kind : uint8_t { COPY, IPC };

constexpr const char *DEV_NAME = "cuda";

/* Device address: the node (ucs::sys::machine_id()). Iface address: the
 * process, by pid and start time. Frozen with ucp::address_version. */
struct __attribute__((packed)) iface_address {
    uint32_t pid;
    uint64_t start_time;
};
static_assert(sizeof(iface_address) == 12, "iface address layout");

class cuda_iface final : public uct::iface {
public:
    cuda_iface(uct::md &md, uct::worker &worker, transport_kind kind);
    ~cuda_iface() override;

    const iface_attr &attr() const override { return attr_; }
    uct::md &owner_md() const override { return md_; }

    ucs_status_t get_device_address(void *buffer) const override;
    ucs_status_t get_address(void *buffer) const override;
    bool is_reachable(const void *dev_addr, size_t dev_addr_len, const void *iface_addr,
                      size_t iface_addr_len) const override;
    ucs_status_t ep_create_connected(const void *dev_addr, size_t dev_addr_len,
                                     const void *iface_addr, size_t iface_addr_len,
                                     uct::ep **ep_p) override;

    unsigned progress() override;
    bool progresses_on_demand() const override { return true; }
    ucs_status_t flush(unsigned flags, completion *comp) override;

    transport_kind kind() const { return kind_; }

    /* Ends an operation whose copies were queued (copy_queue::end_operation)
     * and makes sure progress() runs until it completes. */
    ucs_status_t end_operation(completion *comp);
    copy_queue &queue() { return queue_; }

private:
    uct::md &md_;
    uct::worker &worker_;
    transport_kind kind_;
    iface_attr attr_;
    iface_address self_;
    copy_queue queue_;
};

class cuda_ep final : public uct::ep {
public:
    explicit cuda_ep(cuda_iface &iface) : uct::ep(iface), iface_(iface) {}

    /* cuda_copy only: a synchronous copy. */
    ucs_status_t put_short(const void *buffer, unsigned length, uint64_t remote_addr,
                           rkey_t rkey) override;

    ucs_status_t put_zcopy(const iov *iov, size_t iovcnt, uint64_t remote_addr, rkey_t rkey,
                           completion *comp) override;
    ucs_status_t get_zcopy(const iov *iov, size_t iovcnt, uint64_t remote_addr, rkey_t rkey,
                           completion *comp) override;

    /* Copies never wait for resources: nothing is ever queued. */
    ucs_status_t pending_add(pending_req *req, unsigned flags) override;
    void pending_purge(pending_purge_callback_t cb, void *arg) override;

    ucs_status_t flush(unsigned flags, completion *comp) override;
    ucs_status_t fence(unsigned flags) override;

private:
    enum class direction { PUT, GET };

    /* The local pointer of [remote_addr, +length) under `rkey`; nullptr
     * when the range is outside the key's region. */
    char *target(uint64_t remote_addr, size_t length, rkey_t rkey) const;
    template <direction dir>
    ucs_status_t zcopy(const iov *iov, size_t iovcnt, uint64_t remote_addr, rkey_t rkey,
                       completion *comp);

    cuda_iface &iface_;
};

} // namespace uct::cuda

#endif
