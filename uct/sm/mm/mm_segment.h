/*
 * Shared segments behind the mm transports. A backend creates segments that
 * no name in the file system or IPC table outlives (posix: an unlinked
 * memfd peers reach through /proc/<owner>/fd; sysv: a segment removed right
 * after creation that peers attach by id), and maps a peer's segment only
 * after checking it really is one: owner, mode 0600, kind, size.
 */
#ifndef UCT_SM_MM_MM_SEGMENT_H
#define UCT_SM_MM_MM_SEGMENT_H

#include <ucs/type/status.h>

#include <cstddef>
#include <cstdint>

namespace uct::mm {

enum class backend_kind : uint16_t { POSIX = 1, SYSV = 2 };

/* A segment this process created and maps. */
struct local_segment {
    void *address = nullptr;
    size_t size   = 0;
    uint64_t id   = 0; /* posix: fd in the owner; sysv: shmid */
};

/* How a peer names a segment. All fields came from outside: untrusted. */
struct segment_ref {
    uint64_t owner_pid;
    uint64_t id;
    uint64_t size; /* bytes the peer wants to map */
};

class backend {
public:
    virtual ~backend() = default;

    virtual backend_kind kind() const = 0;
    virtual const char *name() const  = 0;

    /* Largest segment create() and attach() accept. */
    virtual size_t max_size() const = 0;

    /*
     * A zero-filled segment of `size` bytes (a page multiple), mapped here:
     * anywhere when fixed_address is null, else exactly at that page-aligned
     * address (UCS_ERR_ALREADY_EXISTS if anything is mapped in the range;
     * an existing mapping is never replaced).
     */
    virtual ucs_status_t create(size_t size, void *fixed_address, local_segment *seg) const = 0;
    virtual void destroy(local_segment *seg) const                                          = 0;

    /*
     * Maps a peer's segment read-write. UCS_ERR_INVALID_PARAM for a ref that
     * cannot name a segment, UCS_ERR_UNREACHABLE when the owner or the
     * segment is gone or not one of ours.
     */
    virtual ucs_status_t attach(const segment_ref &ref, void **address_p) const = 0;
    virtual void detach(void *address, size_t size) const                       = 0;
};

const backend &posix_backend();
const backend &sysv_backend();

/* Page size, for rounding segment sizes. */
size_t page_size();

inline size_t align_up(size_t value, size_t alignment)
{
    return (value + alignment - 1) / alignment * alignment;
}

} // namespace uct::mm

#endif
