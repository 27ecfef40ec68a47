/*
 * Device memory the CPU cannot touch, emulated for machines without a GPU:
 * a memfd mapped twice, once PROT_NONE (the "device" addresses handed to
 * UCP: any load or store there by the library faults, as it would on GPU
 * memory) and once read-write (the "copy engine's" view). While installed
 * it is the process's CUDA memory: the ucs registry's CUDA detector claims
 * the PROT_NONE range and its copier moves data through the shadow view.
 * A range can be marked faulty: copies touching it fail (a copy-engine
 * error). Mappings and registrations are inherited by forked children.
 *
 * Like the CUDA module it gives asynchronous copies (started copies land
 * only when finish is called: a pipeline that reads its destination, or
 * frees its source, before then sees the difference) and bounce buffers
 * (malloc'ed, counted, so a test sees that each one is given back).
 */
#ifndef TEST_UCP_EMULATED_DEVICE_H
#define TEST_UCP_EMULATED_DEVICE_H

#include <ucs/memory/memtype_registry.h>

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <vector>

namespace ucp_test {

class emulated_device {
public:
    explicit emulated_device(size_t size) : size_(size)
    {
        int fd = memfd_create("emulated-device", 0);
        if ((fd < 0) || (ftruncate(fd, off_t(size)) != 0)) {
            throw std::runtime_error("memfd");
        }
        void *dev    = mmap(nullptr, size, PROT_NONE, MAP_SHARED, fd, 0);
        void *shadow = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        ::close(fd);
        if ((dev == MAP_FAILED) || (shadow == MAP_FAILED)) {
            throw std::runtime_error("mmap");
        }
        device_    = static_cast<char *>(dev);
        shadow_    = static_cast<char *>(shadow);
        current_   = this;
        installed_ = (ucs::memtype::register_detector(UCS_MEMORY_TYPE_CUDA, detect) == UCS_OK) &&
                     (ucs::memtype::register_copier(UCS_MEMORY_TYPE_CUDA, copy) == UCS_OK) &&
                     (ucs::memtype::register_async_copier(UCS_MEMORY_TYPE_CUDA, &async_) ==
                      UCS_OK) &&
                     (ucs::memtype::register_bounce_allocator(&bounces_) == UCS_OK);
    }

    ~emulated_device()
    {
        ucs::memtype::unregister_detector(UCS_MEMORY_TYPE_CUDA);
        ucs::memtype::unregister_copier(UCS_MEMORY_TYPE_CUDA);
        ucs::memtype::unregister_async_copier(UCS_MEMORY_TYPE_CUDA);
        ucs::memtype::unregister_bounce_allocator();
        current_ = nullptr;
        munmap(device_, size_);
        munmap(shadow_, size_);
    }

    emulated_device(const emulated_device &)            = delete;
    emulated_device &operator=(const emulated_device &) = delete;

    /* Whether the detector and copier were registered (none was before). */
    bool installed() const { return installed_; }

    /* "Device" memory at `offset`: to pass to UCP, never to touch. */
    char *device(size_t offset = 0) const { return device_ + offset; }

    /* The read-write view of a device address. */
    char *shadow(const void *device_address) const
    {
        return shadow_ + (static_cast<const char *>(device_address) - device_);
    }

    bool contains(const void *address) const
    {
        auto *p = static_cast<const char *>(address);
        return (p >= device_) && (p < device_ + size_);
    }

    /* Copies touching [address, +length) of device memory fail from now on. */
    void mark_faulty(const void *address, size_t length)
    {
        faulty_      = static_cast<const char *>(address);
        faulty_size_ = length;
    }

    static unsigned copies() { return copies_.load(); }

    /* Asynchronous copies started so far, and bounce buffers not given back. */
    static unsigned copies_started() { return started_.load(); }
    static int bounces_held() { return bounces_held_.load(); }

private:
    static bool detect(const void *address, size_t)
    {
        return (current_ != nullptr) && current_->contains(address);
    }

    bool overlaps_faulty(const void *address, size_t length) const
    {
        auto *p = static_cast<const char *>(address);
        return (faulty_ != nullptr) && (p < faulty_ + faulty_size_) && (faulty_ < p + length);
    }

    /* The copy engine: device addresses go through the shadow view. */
    static ucs_status_t copy(void *dest, ucs_memory_type_t, const void *src, ucs_memory_type_t,
                             size_t length)
    {
        emulated_device *d = current_;
        if (d == nullptr) {
            return UCS_ERR_NO_DEVICE;
        }
        if (d->overlaps_faulty(dest, length) || d->overlaps_faulty(src, length)) {
            return UCS_ERR_IO_ERROR;
        }
        ++copies_;
        void *to         = d->contains(dest) ? d->shadow(dest) : dest;
        const void *from = d->contains(src) ? d->shadow(src) : src;
        std::memcpy(to, from, length);
        return UCS_OK;
    }

    struct queued_copy {
        void *dest;
        const void *src;
        size_t length;
    };

    static ucs_status_t copy_start(void *dest, ucs_memory_type_t dest_type, const void *src,
                                   ucs_memory_type_t src_type, size_t length)
    {
        emulated_device *d = current_;
        if (d == nullptr) {
            return UCS_ERR_NO_DEVICE;
        }
        if (d->overlaps_faulty(dest, length) || d->overlaps_faulty(src, length)) {
            return UCS_ERR_IO_ERROR;
        }
        (void)dest_type;
        (void)src_type;
        ++started_;
        std::lock_guard<std::mutex> guard(queue_lock_);
        queue_.push_back({dest, src, length});
        return UCS_OK;
    }

    /* The queued copies land now, in order. */
    static ucs_status_t copy_finish()
    {
        std::vector<queued_copy> queued;
        {
            std::lock_guard<std::mutex> guard(queue_lock_);
            queued.swap(queue_);
        }
        ucs_status_t status = UCS_OK;
        for (const queued_copy &c : queued) {
            ucs_status_t s = copy(c.dest, UCS_MEMORY_TYPE_UNKNOWN, c.src, UCS_MEMORY_TYPE_UNKNOWN,
                                  c.length);
            if (status == UCS_OK) {
                status = s;
            }
        }
        return status;
    }

    static void *bounce_alloc(size_t length)
    {
        void *block = std::malloc(length);
        bounces_held_ += (block != nullptr);
        return block;
    }

    static void bounce_release(void *block, size_t)
    {
        --bounces_held_;
        std::free(block);
    }

    static inline emulated_device *current_ = nullptr;
    static inline std::atomic<unsigned> copies_{0};
    static inline std::atomic<unsigned> started_{0};
    static inline std::atomic<int> bounces_held_{0};
    static inline std::mutex queue_lock_;
    static inline std::vector<queued_copy> queue_;
    static constexpr ucs::memtype::async_copier async_     = {copy_start, copy_finish};
    static constexpr ucs::memtype::host_allocator bounces_ = {bounce_alloc, bounce_release};

    size_t size_;
    char *device_       = nullptr;
    char *shadow_       = nullptr;
    bool installed_     = false;
    const char *faulty_ = nullptr;
    size_t faulty_size_ = 0;
};

} // namespace ucp_test

#endif
