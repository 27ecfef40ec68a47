/*
 * Memory pool: the slow paths (setup, growth, cleanup). The get/put fast
 * path is inline in mpool.h.
 */
#include <ucs/memory/mpool.h>

#include <ucs/debug/log.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <sys/mman.h>
#include <unistd.h>

namespace ucs {

/* Bookkeeping at the start of every chunk, so chunks need no other memory. */
struct mpool::chunk_header {
    chunk_header *next;
    void *base;       /* as returned by chunk_alloc */
    std::size_t size; /* as reported by chunk_alloc */
    char *first_obj;  /* user pointer of the first element */
    unsigned num_elems;
};

namespace {

/* Large chunks come straight from mmap (page-rounded, returned to the OS on
 * release); small ones from the heap, cache-line aligned. */
constexpr std::size_t mmap_threshold = 256 * 1024;
constexpr std::size_t heap_alignment = 64;

/* Guards size arithmetic against absurd parameters. */
constexpr std::size_t max_elem_size = std::size_t(1) << 40;
constexpr std::size_t max_alignment = std::size_t(1) << 30;

std::size_t align_up(std::size_t value, std::size_t alignment)
{
    return (value + alignment - 1) & ~(alignment - 1);
}

ucs_status_t default_chunk_alloc(void *, std::size_t *size_p, void **chunk_p)
{
    if (*size_p >= mmap_threshold) {
        std::size_t size = align_up(*size_p, sysconf(_SC_PAGESIZE));
        void *ptr = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (ptr == MAP_FAILED) {
            return UCS_ERR_NO_MEMORY;
        }
        *size_p  = size;
        *chunk_p = ptr;
        return UCS_OK;
    }

    void *ptr = nullptr;
    if (posix_memalign(&ptr, heap_alignment, *size_p) != 0) {
        return UCS_ERR_NO_MEMORY;
    }
    *chunk_p = ptr;
    return UCS_OK;
}

void default_chunk_release(void *, void *chunk, std::size_t size)
{
    /* The size decides the way back exactly as it decided the way in:
     * mmap only ever enlarges a size that was already over the threshold. */
    if (size >= mmap_threshold) {
        munmap(chunk, size);
    } else {
        std::free(chunk);
    }
}

bool is_power_of_two(std::size_t value)
{
    return (value != 0) && ((value & (value - 1)) == 0);
}

} // namespace

ucs_status_t mpool::init(const mpool_params &params) noexcept
{
    const char *name = (params.name != nullptr) ? params.name : "mpool";

    if (is_initialized()) {
        ucs_error("mpool %s: already initialized", m_name);
        return UCS_ERR_ALREADY_EXISTS;
    }
    if ((params.elem_size == 0) || (params.elem_size > max_elem_size)) {
        ucs_error("mpool %s: invalid element size %zu", name, params.elem_size);
        return UCS_ERR_INVALID_PARAM;
    }
    if (!is_power_of_two(params.alignment) || (params.alignment > max_alignment)) {
        ucs_error("mpool %s: alignment %zu is not a power of two up to %zu", name, params.alignment,
                  max_alignment);
        return UCS_ERR_INVALID_PARAM;
    }
    if (params.align_offset > params.elem_size) {
        ucs_error("mpool %s: align offset %zu is past the element size %zu", name,
                  params.align_offset, params.elem_size);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((params.elems_per_chunk == 0) || (params.max_elems == 0)) {
        ucs_error("mpool %s: elements per chunk (%u) and maximum (%u) must "
                  "be positive",
                  name, params.elems_per_chunk, params.max_elems);
        return UCS_ERR_INVALID_PARAM;
    }
    if ((params.ops.chunk_alloc == nullptr) != (params.ops.chunk_release == nullptr)) {
        ucs_error("mpool %s: chunk_alloc and chunk_release go together", name);
        return UCS_ERR_INVALID_PARAM;
    }

    /* Keeping every header pointer-aligned (when align_offset allows)
     * makes the fast path's loads and stores single aligned accesses. */
    m_alignment       = std::max(params.alignment, alignof(void *));
    m_elem_size       = params.elem_size;
    m_align_offset    = params.align_offset;
    m_stride          = align_up(header_size + params.elem_size, m_alignment);
    m_elems_per_chunk = params.elems_per_chunk;
    m_max_elems       = params.max_elems;
    m_num_elems       = 0;
    m_num_chunks      = 0;
    m_free_list       = nullptr;
    m_chunks          = nullptr;
    m_ops             = params.ops;
    m_arg             = params.arg;
    if (m_ops.chunk_alloc == nullptr) {
        m_ops.chunk_alloc   = default_chunk_alloc;
        m_ops.chunk_release = default_chunk_release;
    }
    std::snprintf(m_name, sizeof(m_name), "%s", name);
    return UCS_OK;
}

ucs_status_t mpool::grow(unsigned num_elems) noexcept
{
    if (!is_initialized() || (num_elems == 0)) {
        return UCS_ERR_INVALID_PARAM;
    }
    if (m_num_elems >= m_max_elems) {
        return UCS_ERR_EXCEEDS_LIMIT;
    }
    num_elems = std::min(num_elems, m_max_elems - m_num_elems);

    /* Worst-case room for the chunk header, padding to the first aligned
     * element, and the elements themselves. */
    const std::size_t overhead = (alignof(chunk_header) - 1) + sizeof(chunk_header) + header_size +
                                 m_align_offset + (m_alignment - 1);
    if (num_elems > (SIZE_MAX - overhead) / m_stride) {
        return UCS_ERR_INVALID_PARAM;
    }
    const std::size_t wanted_size = overhead + num_elems * m_stride;
    std::size_t size              = wanted_size;
    void *base                    = nullptr;
    ucs_status_t status           = m_ops.chunk_alloc(m_arg, &size, &base);
    if ((status != UCS_OK) || (base == nullptr) || (size < wanted_size)) {
        if ((status == UCS_OK) && (base != nullptr)) {
            m_ops.chunk_release(m_arg, base, size);
        }
        ucs_error("mpool %s: failed to allocate a chunk of %zu bytes: %s", m_name, wanted_size,
                  ucs_status_string((status == UCS_OK) ? UCS_ERR_NO_MEMORY : status));
        return (status == UCS_OK) ? UCS_ERR_NO_MEMORY : status;
    }

    const auto start               = reinterpret_cast<std::uintptr_t>(base);
    const auto hdr_at              = align_up(start, alignof(chunk_header));
    const std::uintptr_t data_at   = hdr_at + sizeof(chunk_header);
    const std::uintptr_t first_obj = align_up(data_at + header_size + m_align_offset, m_alignment) -
                                     m_align_offset;

    /* An allocator that gave more than asked lends the room to more
     * elements; otherwise the chunk holds exactly what was asked. */
    std::size_t fit = (start + size - (first_obj - header_size)) / m_stride;
    if (size == wanted_size) {
        fit = std::min<std::size_t>(fit, num_elems);
    }
    const auto count = static_cast<unsigned>(std::min<std::size_t>(fit, m_max_elems - m_num_elems));

    auto *chunk      = new (reinterpret_cast<void *>(hdr_at)) chunk_header;
    chunk->next      = m_chunks;
    chunk->base      = base;
    chunk->size      = size;
    chunk->first_obj = reinterpret_cast<char *>(first_obj);
    chunk->num_elems = count;
    m_chunks         = chunk;
    ++m_num_chunks;

    if (m_ops.obj_init != nullptr) {
        for (unsigned i = 0; i < count; ++i) {
            m_ops.obj_init(m_arg, chunk->first_obj + i * m_stride, base);
        }
    }

    /* Linked back to front so get() hands elements out in address order. */
    for (unsigned i = count; i-- > 0;) {
        char *header = chunk->first_obj + i * m_stride - header_size;
        store_pointer(header, m_free_list);
        m_free_list = header;
    }
    m_num_elems += count;

    ucs_debug("mpool %s: added chunk %p of %zu bytes with %u elements "
              "(%u in total)",
              m_name, base, size, count, m_num_elems);
    return UCS_OK;
}

void *mpool::get_slow() noexcept
{
    if (!is_initialized()) {
        ucs_error("get() from an uninitialized mpool");
        return nullptr;
    }
    if (m_num_elems >= m_max_elems) {
        ucs_trace("mpool %s: all %u elements are in use", m_name, m_max_elems);
        return nullptr;
    }
    if (grow(m_elems_per_chunk) != UCS_OK) {
        return nullptr;
    }
    return get();
}

unsigned mpool::num_free() const noexcept
{
    unsigned count = 0;
    for (const char *header = m_free_list; header != nullptr;
         header             = load_pointer<const char>(header)) {
        ++count;
    }
    return count;
}

void mpool::cleanup() noexcept
{
    if (!is_initialized()) {
        return;
    }

    const unsigned in_use = m_num_elems - num_free();
    if (in_use != 0) {
        ucs_warn("mpool %s: %u of %u elements were not returned to the pool", m_name, in_use,
                 m_num_elems);
    }

    while (m_chunks != nullptr) {
        chunk_header *chunk = m_chunks;
        m_chunks            = chunk->next;
        if (m_ops.obj_cleanup != nullptr) {
            for (unsigned i = 0; i < chunk->num_elems; ++i) {
                m_ops.obj_cleanup(m_arg, chunk->first_obj + i * m_stride);
            }
        }
        m_ops.chunk_release(m_arg, chunk->base, chunk->size);
    }

    m_free_list  = nullptr;
    m_elem_size  = 0;
    m_num_elems  = 0;
    m_num_chunks = 0;
}

} // namespace ucs
