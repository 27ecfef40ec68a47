#include "perf_buffer.h"

#include "perf_tests.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>

namespace perf {

host_buffer::host_buffer(size_t size, bool huge)
{
    const size_t align  = huge ? HUGE_PAGE : SMALL_PAGE;
    const size_t length = (size + align - 1) / align * align;
    if (!huge) {
        address_ = std::aligned_alloc(align, length);
        return;
    }
    /* One huge page more than needed, so the start can sit on a boundary. */
    map_length_ = length + HUGE_PAGE;
    void *map = mmap(nullptr, map_length_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                     0);
    if (map == MAP_FAILED) {
        map_length_ = 0;
        return;
    }
    map_     = map;
    address_ = reinterpret_cast<void *>((reinterpret_cast<uintptr_t>(map) + HUGE_PAGE - 1) &
                                        ~uintptr_t(HUGE_PAGE - 1));
    if (madvise(address_, length, MADV_HUGEPAGE) != 0) {
        std::fprintf(stderr, "%s: madvise(MADV_HUGEPAGE): %s (4 KiB pages then)\n", tool_name,
                     std::strerror(errno));
    }
}

host_buffer::~host_buffer()
{
    if (map_ != nullptr) {
        munmap(map_, map_length_);
    } else {
        std::free(address_);
    }
}

md_buffer::md_buffer(uct::md &md, size_t size, bool huge, unsigned flags) : md_(md)
{
    length_               = size;
    const uct::md_attr &a = md.attr();
    if ((a.flags & uct::md_flag::ALLOC) &&
        (md.mem_alloc(&length_, &address_, flags, &memh_) == UCS_OK)) {
        allocated_ = true;
        return;
    }
    length_  = size;
    own_     = std::make_unique<host_buffer>(size, huge);
    address_ = own_->address();
    if ((address_ != nullptr) && (a.flags & uct::md_flag::REG) &&
        (md.mem_reg(address_, length_, flags, &memh_) != UCS_OK)) {
        memh_ = uct::MEM_HANDLE_NULL;
    }
}

md_buffer::~md_buffer()
{
    if (allocated_) {
        md_.mem_free(memh_);
    } else if (memh_ != uct::MEM_HANDLE_NULL) {
        md_.mem_dereg(memh_);
    }
}

} // namespace perf
