#include <uct/tcp/tcp_buffers.h>

#include <ucs/debug/log.h>

#include <sys/mman.h>
#include <unistd.h>

namespace uct::tcp {

buffer_pool::~buffer_pool()
{
    if (in_use_ != 0) {
        ucs_warn("%s: %u buffers were not returned", name_.c_str(), in_use_);
    }
    for (uint8_t *buffer : idle_) {
        release(buffer);
    }
}

ucs_status_t buffer_pool::init(const char *name, size_t size)
{
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    if (size == 0) {
        return UCS_ERR_INVALID_PARAM;
    }
    try {
        name_ = name;
        idle_.reserve(KEEP_IDLE);
    } catch (...) {
        return UCS_ERR_NO_MEMORY;
    }
    size_ = (size + page - 1) / page * page;
    return UCS_OK;
}

uint8_t *buffer_pool::allocate()
{
    void *p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        ucs_debug("%s: no memory for a %zu-byte buffer: %m", name_.c_str(), size_);
        return nullptr;
    }
    ++in_use_;
    return static_cast<uint8_t *>(p);
}

void buffer_pool::release(uint8_t *buffer) const
{
    munmap(buffer, size_);
}

} // namespace uct::tcp
