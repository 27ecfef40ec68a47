/*
 * sysv backend: shmget(IPC_PRIVATE) marked for removal right after the
 * owner attaches. Linux still lets peers attach a removed segment by id, and
 * frees it when the last process detaches, so a killed owner leaves nothing
 * in the IPC table once its peers let go.
 */
#include "mm_segment.h"

#include <ucs/debug/log.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include <sys/ipc.h>
#include <sys/shm.h>
#include <unistd.h>

namespace uct::mm {

namespace {

class sysv_backend_impl final : public backend {
public:
    backend_kind kind() const override { return backend_kind::SYSV; }
    const char *name() const override { return "sysv"; }
    size_t max_size() const override { return size_t(1) << 40; }

    ucs_status_t create(size_t size, void *fixed_address, local_segment *seg) const override
    {
        if ((size == 0) || (size > max_size()) ||
            (reinterpret_cast<uintptr_t>(fixed_address) % SHMLBA != 0)) {
            return UCS_ERR_INVALID_PARAM;
        }
        int shmid = shmget(IPC_PRIVATE, size, IPC_CREAT | IPC_EXCL | 0600);
        if (shmid < 0) {
            int err = errno;
            ucs_error("sysv: shmget(%zu bytes) failed: %s", size, strerror(err));
            return ((err == ENOMEM) || (err == ENOSPC)) ? UCS_ERR_NO_MEMORY : UCS_ERR_SHMEM_SEGMENT;
        }
        /* Without SHM_REMAP, shmat at an address refuses (EINVAL) a range
         * that overlaps an existing mapping: nothing is ever replaced. */
        void *address = shmat(shmid, fixed_address, 0);
        int err       = errno;
        /* Removed now: from here on only attachments keep it alive. */
        shmctl(shmid, IPC_RMID, nullptr);
        if (address == reinterpret_cast<void *>(-1)) {
            if ((fixed_address != nullptr) && (err == EINVAL)) {
                ucs_debug("sysv: %p+%zu is already mapped", fixed_address, size);
                return UCS_ERR_ALREADY_EXISTS;
            }
            ucs_error("sysv: shmat(%d) failed: %s", shmid, strerror(err));
            return UCS_ERR_SHMEM_SEGMENT;
        }
        seg->address = address;
        seg->size    = size;
        seg->id      = uint64_t(shmid);
        return UCS_OK;
    }

    void destroy(local_segment *seg) const override
    {
        if (seg->address != nullptr) {
            shmdt(seg->address);
        }
        *seg = local_segment{};
    }

    ucs_status_t attach(const segment_ref &ref, void **address_p) const override
    {
        if ((ref.owner_pid == 0) || (ref.owner_pid > INT_MAX) || (ref.id > INT_MAX) ||
            (ref.size == 0) || (ref.size > max_size())) {
            return UCS_ERR_INVALID_PARAM;
        }
        int shmid = int(ref.id);
        struct shmid_ds ds;
        if (shmctl(shmid, IPC_STAT, &ds) != 0) {
            ucs_debug("sysv: no segment %d: %s", shmid, strerror(errno));
            return UCS_ERR_UNREACHABLE;
        }
        /* Created by the peer that claims it, private to our uid, and big
         * enough: anything else is not the segment the address names. */
        if ((uint64_t(ds.shm_cpid) != ref.owner_pid) || (ds.shm_perm.uid != geteuid()) ||
            ((ds.shm_perm.mode & 0777) != 0600) || (ds.shm_segsz < ref.size)) {
            ucs_debug("sysv: segment %d is not a %lu-byte segment of pid %lu", shmid,
                      (unsigned long)ref.size, (unsigned long)ref.owner_pid);
            return UCS_ERR_UNREACHABLE;
        }
        void *address = shmat(shmid, nullptr, 0);
        if (address == reinterpret_cast<void *>(-1)) {
            ucs_debug("sysv: shmat(%d) failed: %s", shmid, strerror(errno));
            return UCS_ERR_UNREACHABLE;
        }
        *address_p = address;
        return UCS_OK;
    }

    void detach(void *address, size_t) const override { shmdt(address); }
};

} // namespace

const backend &sysv_backend()
{
    static const sysv_backend_impl instance;
    return instance;
}

} // namespace uct::mm
