#include <uct/cuda/cuda_iface.h>

#include <uct/cuda/cuda_ipc.h>
#include <uct/cuda/cuda_memtype.h>

#include <ucs/debug/log.h>
#include <ucs/sys/identity.h>
#include <ucs/sys/process.h>

#include <cstring>
#include <new>
#include <unistd.h>

namespace uct::cuda {

namespace {

/* Sizes of one operation: the copy engine takes any size. */
constexpr size_t max_iov   = 16;
constexpr size_t max_short = 8192;

} // namespace

cuda_iface::cuda_iface(uct::md &md, uct::worker &worker, transport_kind kind) :
    md_(md), worker_(worker), kind_(kind), self_{uint32_t(getpid()), ucs::sys::self_start_time()}
{
    attr_.flags = iface_flag::PUT_ZCOPY | iface_flag::GET_ZCOPY | iface_flag::CONNECT_TO_IFACE;
    for (op_limits *l : {&attr_.put, &attr_.get}) {
        l->max_zcopy = SIZE_MAX;
        l->max_iov   = max_iov;
    }
    if (kind == transport_kind::COPY) {
        attr_.flags |= iface_flag::PUT_SHORT;
        attr_.put.max_short = max_short;
        /* A staged copy: a driver call and a stream synchronize. */
        attr_.perf.latency_s     = 8e-6;
        attr_.perf.bandwidth_Bps = 25e9;
    } else {
        /* Device to device on one node: the GPU's copy engines. */
        attr_.perf.latency_s     = 10e-6;
        attr_.perf.bandwidth_Bps = 300e9;
    }
    attr_.perf.send_overhead_s = 2e-6;
    attr_.device_addr_len      = sizeof(uint64_t);
    attr_.iface_addr_len       = sizeof(iface_address);
}

cuda_iface::~cuda_iface()
{
    worker_.progress_unregister(this);
}

ucs_status_t cuda_iface::get_device_address(void *buffer) const
{
    const uint64_t node = ucs::sys::machine_id();
    std::memcpy(buffer, &node, sizeof(node));
    return UCS_OK;
}

ucs_status_t cuda_iface::get_address(void *buffer) const
{
    std::memcpy(buffer, &self_, sizeof(self_));
    return UCS_OK;
}

bool cuda_iface::is_reachable(const void *dev_addr, size_t dev_addr_len, const void *iface_addr,
                              size_t iface_addr_len) const
{
    if ((dev_addr == nullptr) || (dev_addr_len != sizeof(uint64_t)) || (iface_addr == nullptr) ||
        (iface_addr_len != sizeof(iface_address))) {
        return false;
    }
    uint64_t node;
    iface_address peer;
    std::memcpy(&node, dev_addr, sizeof(node));
    std::memcpy(&peer, iface_addr, sizeof(peer));
    if (node != ucs::sys::machine_id()) {
        return false;
    }
    return (kind_ == transport_kind::IPC) ||
           ((peer.pid == self_.pid) && (peer.start_time == self_.start_time));
}

ucs_status_t cuda_iface::ep_create_connected(const void *dev_addr, size_t dev_addr_len,
                                             const void *iface_addr, size_t iface_addr_len,
                                             uct::ep **ep_p)
{
    if (!is_reachable(dev_addr, dev_addr_len, iface_addr, iface_addr_len)) {
        return UCS_ERR_UNREACHABLE;
    }
    auto *ep = new (std::nothrow) cuda_ep(*this);
    if (ep == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    *ep_p = ep;
    return UCS_OK;
}

unsigned cuda_iface::progress()
{
    const unsigned count = queue_.progress();
    if (queue_.idle()) {
        worker_.progress_unregister(this);
    }
    return count;
}

ucs_status_t cuda_iface::end_operation(completion *comp)
{
    ucs_status_t status = queue_.end_operation(comp);
    if (status == UCS_INPROGRESS) {
        worker_.progress_register(this);
    }
    return status;
}

ucs_status_t cuda_iface::flush(unsigned flags, completion *comp)
{
    if (queue_.idle()) {
        return UCS_OK;
    }
    if ((comp == nullptr) || (flags & flush_flag::CANCEL)) {
        return UCS_INPROGRESS; /* copies cannot be taken back: poll again */
    }
    ucs_status_t status = queue_.flush(comp);
    if (status == UCS_INPROGRESS) {
        worker_.progress_register(this);
    }
    return status;
}

char *cuda_ep::target(uint64_t remote_addr, size_t length, rkey_t rkey) const
{
    if (iface_.kind() == transport_kind::COPY) {
        return reinterpret_cast<char *>(remote_addr);
    }
    return ipc_target(rkey, remote_addr, length);
}

template <cuda_ep::direction dir>
ucs_status_t cuda_ep::zcopy(const iov *iov, size_t iovcnt, uint64_t remote_addr, rkey_t rkey,
                            completion *comp)
{
    if ((iovcnt > max_iov) || ((iov == nullptr) && (iovcnt > 0))) {
        return UCS_ERR_INVALID_PARAM;
    }
    uint64_t offset = 0;
    for (size_t i = 0; i < iovcnt; ++i) {
        if (iov[i].length == 0) {
            continue;
        }
        char *remote = target(remote_addr + offset, iov[i].length, rkey);
        if (remote == nullptr) {
            ucs_error("%s: [0x%lx, +%zu) is outside the remote key",
                      (iface_.kind() == transport_kind::IPC) ? "cuda_ipc" : "cuda_copy",
                      remote_addr + offset, iov[i].length);
            return UCS_ERR_INVALID_PARAM;
        }
        auto *local         = const_cast<void *>(iov[i].buffer);
        ucs_status_t status = (dir == direction::PUT) ?
                                  iface_.queue().copy(remote, local, iov[i].length) :
                                  iface_.queue().copy(local, remote, iov[i].length);
        if (status != UCS_OK) {
            return status;
        }
        offset += iov[i].length;
    }
    return iface_.end_operation(comp);
}

ucs_status_t cuda_ep::put_zcopy(const iov *iov, size_t iovcnt, uint64_t remote_addr, rkey_t rkey,
                                completion *comp)
{
    return zcopy<direction::PUT>(iov, iovcnt, remote_addr, rkey, comp);
}

ucs_status_t cuda_ep::get_zcopy(const iov *iov, size_t iovcnt, uint64_t remote_addr, rkey_t rkey,
                                completion *comp)
{
    return zcopy<direction::GET>(iov, iovcnt, remote_addr, rkey, comp);
}

ucs_status_t cuda_ep::put_short(const void *buffer, unsigned length, uint64_t remote_addr, rkey_t)
{
    if ((iface_.kind() != transport_kind::COPY) || (length > max_short)) {
        return UCS_ERR_UNSUPPORTED;
    }
    return staged_copy(reinterpret_cast<void *>(remote_addr), UCS_MEMORY_TYPE_UNKNOWN, buffer,
                       UCS_MEMORY_TYPE_UNKNOWN, length);
}

ucs_status_t cuda_ep::pending_add(pending_req *, unsigned)
{
    return UCS_ERR_BUSY;
}

void cuda_ep::pending_purge(pending_purge_callback_t, void *)
{
}

ucs_status_t cuda_ep::flush(unsigned flags, completion *comp)
{
    return iface_.flush(flags, comp);
}

ucs_status_t cuda_ep::fence(unsigned)
{
    iface_.queue().fence();
    return UCS_OK;
}

} // namespace uct::cuda
