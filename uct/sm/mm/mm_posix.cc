/*
 * posix backend: an anonymous memfd (or, where memfd_create is missing, a
 * shm_open file unlinked at once), kept open by its owner. Peers open it
 * through /proc/<owner pid>/fd/<fd>, so nothing is left in /dev/shm even if
 * the owner is killed, and the kernel frees it when the last mapping goes.
 */
#include "mm_segment.h"

#include <ucs/debug/log.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

namespace uct::mm {

namespace {

/* Every segment we create carries this in its name; attach checks for it. */
constexpr const char *SEGMENT_TAG = "ucx-ng-mm";

int create_unlinked_fd()
{
    int fd = memfd_create(SEGMENT_TAG, MFD_CLOEXEC);
    if ((fd >= 0) || (errno != ENOSYS)) {
        return fd;
    }

    static std::atomic<unsigned> counter{0};
    char name[64];
    std::snprintf(name, sizeof(name), "/%s-%d-%u", SEGMENT_TAG, int(getpid()),
                  counter.fetch_add(1));
    fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0) {
        shm_unlink(name);
    }
    return fd;
}

ucs_status_t status_from_errno(int err)
{
    switch (err) {
    case ENOMEM:
    case ENOSPC:
    case EMFILE:
    case ENFILE:
        return UCS_ERR_NO_MEMORY;
    default:
        return UCS_ERR_SHMEM_SEGMENT;
    }
}

/* The fd we opened must be one of our segments and big enough. */
bool is_our_segment(int fd, size_t size)
{
    struct statfs fs;
    if ((fstatfs(fd, &fs) != 0) || ((fs.f_type != TMPFS_MAGIC) && (fs.f_type != HUGETLBFS_MAGIC))) {
        return false;
    }
    struct stat st;
    if ((fstat(fd, &st) != 0) || !S_ISREG(st.st_mode) || (st.st_uid != geteuid()) ||
        ((st.st_mode & 0777) != 0600) || (uint64_t(st.st_size) < size)) {
        return false;
    }
    char link[64], target[256];
    std::snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof(target) - 1);
    if (n <= 0) {
        return false;
    }
    target[n] = '\0';
    return std::strstr(target, SEGMENT_TAG) != nullptr;
}

class posix_backend_impl final : public backend {
public:
    backend_kind kind() const override { return backend_kind::POSIX; }
    const char *name() const override { return "posix"; }
    size_t max_size() const override { return size_t(1) << 40; }

    ucs_status_t create(size_t size, void *fixed_address, local_segment *seg) const override
    {
        if ((size == 0) || (size > max_size()) ||
            (reinterpret_cast<uintptr_t>(fixed_address) % page_size() != 0)) {
            return UCS_ERR_INVALID_PARAM;
        }
        int fd = create_unlinked_fd();
        if (fd < 0) {
            int err = errno;
            ucs_error("posix: cannot create a shared memory file: %s", strerror(err));
            return status_from_errno(err);
        }
        /* memfd starts with 0777; peers need only our own uid. */
        if ((fchmod(fd, 0600) != 0) || (ftruncate(fd, off_t(size)) != 0)) {
            int err = errno;
            ucs_error("posix: cannot size a shared memory file to %zu bytes: %s", size,
                      strerror(err));
            close(fd);
            return status_from_errno(err);
        }
        /* NOREPLACE: a fixed address must never unmap what is already there. */
        const int fixed_flag = (fixed_address != nullptr) ? MAP_FIXED_NOREPLACE : 0;
        void *address = mmap(fixed_address, size, PROT_READ | PROT_WRITE, MAP_SHARED | fixed_flag,
                             fd, 0);
        if (address == MAP_FAILED) {
            int err = errno;
            close(fd);
            if ((fixed_address != nullptr) && (err == EEXIST)) {
                ucs_debug("posix: %p+%zu is already mapped", fixed_address, size);
                return UCS_ERR_ALREADY_EXISTS;
            }
            ucs_error("posix: cannot map %zu bytes: %s", size, strerror(err));
            return status_from_errno(err);
        }
        if ((fixed_address != nullptr) && (address != fixed_address)) {
            /* A kernel older than 4.17 took the flag as a mere hint. */
            munmap(address, size);
            close(fd);
            return UCS_ERR_ALREADY_EXISTS;
        }
        seg->address = address;
        seg->size    = size;
        seg->id      = uint64_t(fd);
        return UCS_OK;
    }

    void destroy(local_segment *seg) const override
    {
        if (seg->address != nullptr) {
            munmap(seg->address, seg->size);
            close(int(seg->id));
        }
        *seg = local_segment{};
    }

    ucs_status_t attach(const segment_ref &ref, void **address_p) const override
    {
        if ((ref.owner_pid == 0) || (ref.owner_pid > INT_MAX) || (ref.id > INT_MAX) ||
            (ref.size == 0) || (ref.size > max_size())) {
            return UCS_ERR_INVALID_PARAM;
        }
        char path[64];
        std::snprintf(path, sizeof(path), "/proc/%d/fd/%d", int(ref.owner_pid), int(ref.id));

        /* stat() first so that we never open a device or socket a bad
         * address points at; open() then cannot block or take a tty. */
        struct stat st;
        if ((stat(path, &st) != 0) || !S_ISREG(st.st_mode)) {
            ucs_debug("posix: %s is not a shared segment", path);
            return UCS_ERR_UNREACHABLE;
        }
        int fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
            ucs_debug("posix: cannot open %s: %s", path, strerror(errno));
            return UCS_ERR_UNREACHABLE;
        }
        if (!is_our_segment(fd, ref.size)) {
            ucs_debug("posix: %s is not a %s segment of %lu bytes", path, SEGMENT_TAG,
                      (unsigned long)ref.size);
            close(fd);
            return UCS_ERR_UNREACHABLE;
        }
        void *address = mmap(nullptr, ref.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        int err       = errno;
        close(fd);
        if (address == MAP_FAILED) {
            ucs_error("posix: cannot map %s: %s", path, strerror(err));
            return status_from_errno(err);
        }
        *address_p = address;
        return UCS_OK;
    }

    void detach(void *address, size_t size) const override { munmap(address, size); }
};

} // namespace

const backend &posix_backend()
{
    static const posix_backend_impl instance;
    return instance;
}

size_t page_size()
{
    static const size_t size = size_t(sysconf(_SC_PAGESIZE));
    return size;
}

} // namespace uct::mm
