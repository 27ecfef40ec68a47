/*
 * Memory pool of fixed-size elements (requests, descriptors), the reason the
 * data path never calls malloc.
 *
 * Elements are carved out of chunks. Each element has a hidden header of one
 * pointer right before it: while the element is in use it names the pool,
 * so mpool::put(obj) needs nothing but the object (like ucs_mpool_put);
 * while it is free it links the LIFO free list. After warm-up, get() and
 * put() are a few inline loads and stores: no system call, no allocation.
 *
 * Elements can be aligned at an offset inside them (align_offset), so that a
 * user area placed after a descriptor header is what gets aligned. obj_init
 * runs exactly once per element, when its chunk is created, never on reuse;
 * obj_cleanup runs once per element when the pool is cleaned up. Chunk
 * memory comes from the chunk_alloc/chunk_release callbacks when given (a
 * shared-memory segment, registered memory), else from malloc or mmap.
 *
 * Not thread-safe: callers that share a pool between threads lock around it.
 * The pool must not move after init() (elements point back to it).
 *
 *   ucs::mpool_params params;
 *   params.name = "ucp_requests"; params.elem_size = sizeof(request);
 *   params.alignment = 64; params.elems_per_chunk = 128;
 *   ucs::mpool pool;
 *   if (pool.init(params) != UCS_OK) { ... }
 *   auto *req = static_cast<request*>(pool.get());   // nullptr: no memory/limit
 *   ucs::mpool::put(req);
 */
#ifndef UCS_MEMORY_MPOOL_H
#define UCS_MEMORY_MPOOL_H

#include <ucs/sys/compiler_def.h>
#include <ucs/type/status.h>

#include <climits>
#include <cstddef>
#include <cstring>

namespace ucs {

struct mpool_ops {
    /* Allocates a chunk of at least *size_p bytes and may raise *size_p to
     * what it really gave (the pool then fits more elements). */
    ucs_status_t (*chunk_alloc)(void *arg, std::size_t *size_p, void **chunk_p) = nullptr;
    /* Releases a chunk; `size` is the final *size_p of its chunk_alloc. */
    void (*chunk_release)(void *arg, void *chunk, std::size_t size) = nullptr;
    /* Once per element, when created; `chunk` is what chunk_alloc returned. */
    void (*obj_init)(void *arg, void *obj, void *chunk) = nullptr;
    /* Once per element, when the pool is cleaned up. */
    void (*obj_cleanup)(void *arg, void *obj) = nullptr;
};

struct mpool_params {
    const char *name         = "mpool";  /* for diagnostics; copied */
    std::size_t elem_size    = 0;        /* bytes available to the user */
    std::size_t alignment    = 1;        /* power of two */
    std::size_t align_offset = 0;        /* obj + align_offset is aligned; <= elem_size */
    unsigned elems_per_chunk = 128;      /* at least this many per grow */
    unsigned max_elems       = UINT_MAX; /* UINT_MAX: no limit */
    mpool_ops ops;                       /* any null callback: default / none */
    void *arg = nullptr;                 /* passed to every callback */
};

class mpool {
public:
    static constexpr unsigned unlimited      = UINT_MAX;
    static constexpr std::size_t header_size = sizeof(void *);

    mpool() noexcept = default;
    ~mpool() { cleanup(); }

    mpool(const mpool &)            = delete;
    mpool &operator=(const mpool &) = delete;

    /* Validates params (UCS_ERR_INVALID_PARAM) and sets the pool up; no
     * memory is taken until the first get() or grow(). */
    ucs_status_t init(const mpool_params &params) noexcept;

    /* Warns once if elements were not returned, calls obj_cleanup for
     * every element, releases the chunks. init() may be called again. */
    void cleanup() noexcept;

    bool is_initialized() const noexcept { return m_elem_size != 0; }

    /* An element, or nullptr when max_elems are out or memory ran out. */
    UCS_F_ALWAYS_INLINE void *get() noexcept
    {
        char *header = m_free_list;
        if (ucs_unlikely(header == nullptr)) {
            return get_slow();
        }
        m_free_list = load_pointer<char>(header);
        store_pointer(header, this);
        return header + header_size;
    }

    /* Returns an element from get() of any pool to that pool. */
    static UCS_F_ALWAYS_INLINE void put(void *obj) noexcept
    {
        char *header = static_cast<char *>(obj) - header_size;
        mpool *pool  = load_pointer<mpool>(header);
        store_pointer(header, pool->m_free_list);
        pool->m_free_list = header;
    }

    /* The pool an element (currently handed out) belongs to. */
    static mpool *owner(const void *obj) noexcept
    {
        return load_pointer<mpool>(static_cast<const char *>(obj) - header_size);
    }

    /* Adds one chunk with room for at least `num_elems` elements (fewer if
     * max_elems allows fewer). UCS_ERR_EXCEEDS_LIMIT when at max_elems. */
    ucs_status_t grow(unsigned num_elems) noexcept;

    const char *name() const noexcept { return m_name; }
    void *arg() const noexcept { return m_arg; }

    /* Elements created so far (free or in use). */
    unsigned num_elems() const noexcept { return m_num_elems; }
    unsigned num_chunks() const noexcept { return m_num_chunks; }

    /* Elements on the free list; O(free), for diagnostics and tests. */
    unsigned num_free() const noexcept;

    /* Distance between consecutive elements of a chunk. */
    std::size_t elem_stride() const noexcept { return m_stride; }

private:
    struct chunk_header;

    template <typename T>
    static T *load_pointer(const char *where) noexcept
    {
        /* The header may be unaligned when align_offset is odd. */
        T *value;
        std::memcpy(&value, where, sizeof(value));
        return value;
    }

    static void store_pointer(char *where, const void *value) noexcept
    {
        std::memcpy(where, &value, sizeof(value));
    }

    void *get_slow() noexcept;

    char *m_free_list          = nullptr; /* header of the next free element */
    chunk_header *m_chunks     = nullptr;
    std::size_t m_elem_size    = 0;
    std::size_t m_alignment    = 0;
    std::size_t m_align_offset = 0;
    std::size_t m_stride       = 0;
    unsigned m_elems_per_chunk = 0;
    unsigned m_max_elems       = 0;
    unsigned m_num_elems       = 0;
    unsigned m_num_chunks      = 0;
    mpool_ops m_ops;
    void *m_arg     = nullptr;
    char m_name[48] = {};
};

/* Same as mpool::put, for code that reads better with a free function. */
UCS_F_ALWAYS_INLINE void mpool_put(void *obj) noexcept
{
    mpool::put(obj);
}

} // namespace ucs

#endif
