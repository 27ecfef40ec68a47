#include "event_recorder.h"

#include <cerrno>
#include <stdexcept>
#include <sys/mman.h>
#include <unistd.h>

namespace ucm_test {

scratch_mapping::scratch_mapping(size_t length) : m_length(length)
{
    void *address = ucm_orig_mmap(nullptr, length, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (address == MAP_FAILED) {
        throw std::runtime_error("mmap failed");
    }
    m_address = static_cast<char *>(address);
}

scratch_mapping::~scratch_mapping()
{
    if (m_address != nullptr) {
        ucm_orig_munmap(m_address, m_length);
    }
}

size_t page_size()
{
    return static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

bool is_mapped(const void *address, size_t length)
{
    /* mincore() fails with ENOMEM on any unmapped page in the range. */
    const size_t page = page_size();
    unsigned char residency[64];
    for (size_t offset = 0; offset < length; offset += page) {
        void *pg = const_cast<char *>(static_cast<const char *>(address) + offset);
        if ((mincore(pg, page, residency) != 0) && (errno == ENOMEM)) {
            return false;
        }
    }
    return true;
}

} // namespace ucm_test
