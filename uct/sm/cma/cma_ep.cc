#include <uct/sm/cma/cma_ep.h>

#include <uct/sm/cma/cma_iface.h>
#include <uct/sm/cma/cma_rkey.h>

#include <ucs/debug/log.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <sys/uio.h>

namespace uct::cma {

namespace {

/* Local iovecs handed to one syscall: enough for any common case while
 * keeping the stack frame small; longer lists take several calls. */
constexpr size_t IOV_BATCH = 64;

} // namespace

cma_ep::cma_ep(cma_iface &iface, pid_t peer_pid) :
    uct::ep(iface), peer_pid_(peer_pid), keyless_rma_(iface.config().keyless_rma),
    max_iov_(iface.config().max_iov)
{
}

cma_ep::~cma_ep()
{
    static_cast<cma_iface &>(owner()).forget_ep(this);
}

ucs_status_t cma_ep::connect(uint64_t start_time)
{
    ucs_status_t status = peer_.open(peer_pid_);
    if (status == UCS_OK) {
        status = peer_.verify_start_time(start_time);
    }
    if (status == UCS_ERR_UNREACHABLE) {
        /* The process the address named is gone (its pid may name another
         * one now): an ep that fails every operation, reported as lost. */
        ucs_diag("cma: peer process %d is gone", int(peer_pid_));
        mark_failed();
        return UCS_OK;
    }
    if (status != UCS_OK) {
        return status;
    }
    return static_cast<cma_iface &>(owner()).watch(this);
}

ucs_status_t cma_ep::check_access(uint64_t remote_addr, size_t length, rkey_t rkey) const
{
    if (is_no_rkey(rkey)) {
        if (ucs_likely(keyless_rma_)) {
            return UCS_OK;
        }
        ucs_diag("cma: access to pid %d without a remote key refused", int(peer_pid_));
        return UCS_ERR_INVALID_PARAM;
    }
    const auto *region = reinterpret_cast<const remote_region *>(rkey);
    if (ucs_unlikely((region->magic != REMOTE_REGION_MAGIC) || (region->pid != peer_pid_))) {
        ucs_diag("cma: remote key is not a cma key of pid %d", int(peer_pid_));
        return UCS_ERR_INVALID_PARAM;
    }
    if (ucs_unlikely(!region->contains(remote_addr, length))) {
        ucs_diag("cma: [0x%lx, +%zu) is outside the key's region [0x%lx, +%lu) of pid %d",
                 remote_addr, length, region->address, region->length, int(peer_pid_));
        return UCS_ERR_OUT_OF_RANGE;
    }
    return UCS_OK;
}

template <cma_ep::direction dir>
ucs_status_t cma_ep::transfer(const iov *iov, size_t iovcnt, uint64_t remote_addr, rkey_t rkey)
{
    if (ucs_unlikely(failed_)) {
        return UCS_ERR_CONNECTION_RESET;
    }
    if (ucs_unlikely((iovcnt > max_iov_) || ((iov == nullptr) && (iovcnt != 0)))) {
        return UCS_ERR_INVALID_PARAM;
    }

    size_t total = 0;
    for (size_t i = 0; i < iovcnt; ++i) {
        if (ucs_unlikely(__builtin_add_overflow(total, iov[i].length, &total))) {
            return UCS_ERR_INVALID_PARAM;
        }
    }
    if (ucs_unlikely(total > size_t(SSIZE_MAX))) {
        return UCS_ERR_INVALID_PARAM;
    }
    ucs_status_t status = check_access(remote_addr, total, rkey);
    if (ucs_unlikely(status != UCS_OK)) {
        return status;
    }

    /* Position in the caller's iov list: entry `index`, `offset` bytes in. */
    size_t index = 0, offset = 0;
    struct iovec local[IOV_BATCH];
    while (total > 0) {
        size_t count = 0, batch = 0;
        for (size_t i = index, off = offset; (i < iovcnt) && (count < IOV_BATCH); ++i, off = 0) {
            size_t len = iov[i].length - off;
            if (len != 0) {
                local[count].iov_base =
                    const_cast<char *>(static_cast<const char *>(iov[i].buffer) + off);
                local[count].iov_len = len;
                ++count;
                batch += len;
            }
        }

        struct iovec remote = {reinterpret_cast<void *>(remote_addr), batch};
        ssize_t done        = (dir == direction::READ) ?
                                  process_vm_readv(peer_pid_, local, count, &remote, 1, 0) :
                                  process_vm_writev(peer_pid_, local, count, &remote, 1, 0);
        if (ucs_unlikely(done <= 0)) {
            if ((done < 0) && (errno == EINTR)) {
                continue;
            }
            /* No progress without an error would loop forever: the remote
             * range stopped being accessible. */
            return syscall_failed((done < 0) ? errno : EFAULT, dir, total, remote_addr);
        }

        /* Partial transfers stop at a page the kernel could not access;
         * resume from there and let the next call report the error. */
        remote_addr += size_t(done);
        total -= size_t(done);
        for (size_t left = size_t(done); left > 0;) {
            size_t avail = iov[index].length - offset;
            if (left < avail) {
                offset += left;
                left = 0;
            } else {
                left -= avail;
                ++index;
                offset = 0;
            }
        }
    }
    return UCS_OK;
}

ucs_status_t cma_ep::syscall_failed(int err, direction dir, size_t length, uint64_t remote_addr)
{
    const char *call = (dir == direction::READ) ? "process_vm_readv" : "process_vm_writev";
    switch (err) {
    case ESRCH:
        ucs_diag("cma: %s: peer process %d is gone", call, int(peer_pid_));
        mark_failed();
        return UCS_ERR_CONNECTION_RESET;
    case EFAULT:
        ucs_error("cma: %s of %zu bytes at 0x%lx in pid %d: bad address", call, length, remote_addr,
                  int(peer_pid_));
        return UCS_ERR_INVALID_ADDR;
    case EPERM:
        ucs_error("cma: %s to pid %d: permission denied (ptrace rules or another "
                  "user)",
                  call, int(peer_pid_));
        return UCS_ERR_UNSUPPORTED;
    case ENOMEM:
        return UCS_ERR_NO_MEMORY;
    case EINVAL:
        return UCS_ERR_INVALID_PARAM;
    default:
        ucs_error("cma: %s to pid %d: %s", call, int(peer_pid_), strerror(err));
        return UCS_ERR_IO_ERROR;
    }
}

void cma_ep::mark_failed()
{
    if (!failed_) {
        failed_ = true;
        static_cast<cma_iface &>(owner()).peer_failed(this);
    }
}

ucs_status_t cma_ep::put_zcopy(const iov *iov, size_t iovcnt, uint64_t remote_addr, rkey_t rkey,
                               completion *)
{
    return transfer<direction::WRITE>(iov, iovcnt, remote_addr, rkey);
}

ucs_status_t cma_ep::get_zcopy(const iov *iov, size_t iovcnt, uint64_t remote_addr, rkey_t rkey,
                               completion *)
{
    return transfer<direction::READ>(iov, iovcnt, remote_addr, rkey);
}

ucs_status_t cma_ep::pending_add(pending_req *, unsigned)
{
    return UCS_ERR_BUSY;
}

void cma_ep::pending_purge(pending_purge_callback_t, void *)
{
}

ucs_status_t cma_ep::check(unsigned, completion *)
{
    if (!failed_ && !peer_.alive()) {
        mark_failed();
    }
    return UCS_OK;
}

} // namespace uct::cma
