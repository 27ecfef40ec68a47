/*
 * UCP datatypes: contig, iov and generic (application-packed) buffers seen
 * as one packed byte stream. A packer reads the stream out of a send buffer,
 * an unpacker writes it into a receive buffer; both accept fragments at any
 * offset, so every protocol (short, bcopy, zcopy, rendezvous, out-of-order
 * fragments) uses the same two objects. They are trivially copyable and
 * small, because they live inside a request, and allocate nothing.
 * A contig or iov buffer in memory the CPU cannot touch (set_memory_type:
 * CUDA) is copied through the memory type's copier (ucs memtype registry):
 * the staging copy of the bcopy protocols.
 *
 *   ucp::dt::packer p;
 *   if (p.start(datatype, buffer, count) != UCS_OK) { ... }
 *   for (size_t off = 0; off < p.length(); off += n) {
 *       n = p.pack(frag, off, frag_size);
 *   }
 *   p.finish();
 */
#ifndef UCP_DT_DT_H
#define UCP_DT_DT_H

#include <ucp/api/ucp.h>
#include <ucs/memory/memtype_registry.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/type/status.h>
#include <uct/base/uct_types.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace ucp::dt {

enum class dt_class : uint8_t { contig, iov, generic };

/* What a generic datatype handle points to; the handle is this object's
 * address ORed with UCP_DATATYPE_GENERIC (heap objects leave the low bits
 * free). Made by ucp_dt_create_generic(), freed by ucp_dt_destroy(). */
struct generic_dt {
    ucp_generic_dt_ops_t ops;
    void *context;
};

/* Larger iov counts are taken as garbage rather than walked. */
constexpr size_t max_iov_count = size_t(1) << 20;

inline size_t contig_elem_size(ucp_datatype_t dt) noexcept
{
    return static_cast<size_t>(dt >> UCP_DATATYPE_SHIFT);
}

inline const generic_dt *generic_of(ucp_datatype_t dt) noexcept
{
    return reinterpret_cast<const generic_dt *>(
        static_cast<uintptr_t>(dt & ~static_cast<ucp_datatype_t>(UCP_DATATYPE_CLASS_MASK)));
}

/* Cold path: logs why `dt` or its buffer is rejected; returns
 * UCS_ERR_INVALID_PARAM. */
ucs_status_t reject(ucp_datatype_t dt, const char *why) noexcept;

/* UCS_ERR_INVALID_PARAM for unsupported class bits (strided, 3..6), a contig
 * element size of 0, bits above the class in an iov type, a NULL generic. */
inline ucs_status_t classify(ucp_datatype_t dt, dt_class *out) noexcept
{
    switch (dt & UCP_DATATYPE_CLASS_MASK) {
    case UCP_DATATYPE_CONTIG:
        if (ucs_unlikely(contig_elem_size(dt) == 0)) {
            return reject(dt, "contig element size is 0");
        }
        *out = dt_class::contig;
        return UCS_OK;
    case UCP_DATATYPE_IOV:
        if (ucs_unlikely(dt != UCP_DATATYPE_IOV)) {
            return reject(dt, "iov datatype has bits above the class");
        }
        *out = dt_class::iov;
        return UCS_OK;
    case UCP_DATATYPE_GENERIC:
        if (ucs_unlikely(generic_of(dt) == nullptr)) {
            return reject(dt, "NULL generic datatype");
        }
        *out = dt_class::generic;
        return UCS_OK;
    default:
        return reject(dt, "unsupported datatype class");
    }
}

/* Sum of the entry lengths; saturates at SIZE_MAX instead of wrapping. */
inline size_t iov_total_length(const ucp_dt_iov_t *iov, size_t count) noexcept
{
    size_t total = 0;
    for (size_t i = 0; i < count; ++i) {
        if (ucs_unlikely(__builtin_add_overflow(total, iov[i].length, &total))) {
            return SIZE_MAX;
        }
    }
    return total;
}

namespace detail {

/*
 * Remembers which iov entry holds the last position reached, so sequential
 * fragments cost O(bytes) instead of O(entries) each. Seeking backwards
 * rewinds to the first entry.
 */
struct iov_cursor {
    size_t index = 0; /* entry holding the position, or count at the end */
    size_t start = 0; /* stream offset where entry `index` begins */

    void seek(const ucp_dt_iov_t *iov, size_t count, size_t offset) noexcept
    {
        if (offset < start) {
            index = 0;
            start = 0;
        }
        /* Zero-length entries are skipped: offset - start >= 0 always. */
        while ((index < count) && (offset - start >= iov[index].length)) {
            start += iov[index].length;
            ++index;
        }
    }

    /*
     * Calls visit(entry_bytes, stream_done, n) for each piece of the stream
     * range [offset, offset + length), which must lie within the total.
     */
    template <typename Visit>
    void walk(const ucp_dt_iov_t *iov, size_t count, size_t offset, size_t length,
              Visit &&visit) noexcept
    {
        seek(iov, count, offset);
        size_t done = 0;
        while (done < length) {
            const ucp_dt_iov_t &entry = iov[index];
            size_t in_entry           = offset + done - start;
            size_t n                  = std::min(entry.length - in_entry, length - done);
            if (n > 0) {
                visit(static_cast<char *>(entry.buffer) + in_entry, done, n);
            }
            done += n;
            if (in_entry + n == entry.length) {
                start += entry.length;
                ++index;
            }
        }
    }
};

/* Shared argument checks of packer::start and unpacker::start; sets
 * *length_p to the byte length of a contig or iov buffer. */
inline ucs_status_t buffer_length(dt_class cls, ucp_datatype_t dt, const void *buffer, size_t count,
                                  size_t *length_p) noexcept
{
    if (cls == dt_class::contig) {
        if (ucs_unlikely(__builtin_mul_overflow(count, contig_elem_size(dt), length_p))) {
            return reject(dt, "contig length overflows");
        }
        if (ucs_unlikely((buffer == nullptr) && (*length_p > 0))) {
            return reject(dt, "NULL buffer");
        }
        return UCS_OK;
    }

    if (ucs_unlikely(count > max_iov_count)) {
        return reject(dt, "too many iov entries");
    }
    if (ucs_unlikely((buffer == nullptr) && (count > 0))) {
        return reject(dt, "NULL iov array");
    }
    const auto *iov = static_cast<const ucp_dt_iov_t *>(buffer);
    size_t total    = 0;
    for (size_t i = 0; i < count; ++i) {
        if (ucs_unlikely(__builtin_add_overflow(total, iov[i].length, &total))) {
            return reject(dt, "iov lengths overflow");
        }
        if (ucs_unlikely((iov[i].buffer == nullptr) && (iov[i].length > 0))) {
            return reject(dt, "iov entry with NULL buffer");
        }
    }
    *length_p = total;
    return UCS_OK;
}

} // namespace detail

/*
 * Send side. start() once, then pack()/to_iov() any number of times, then
 * finish() (needed for generic datatypes, harmless otherwise). start() does
 * not finish a previous generic stream: finish() it before reusing.
 */
class packer {
public:
    /* generic: calls start_pack and packed_size; iov: validates and sums. */
    ucs_status_t start(ucp_datatype_t dt, const void *buffer, size_t count) noexcept
    {
        *this               = packer();
        dt_class cls        = dt_class::contig;
        ucs_status_t status = classify(dt, &cls);
        if (ucs_unlikely(status != UCS_OK)) {
            return status;
        }

        if (cls != dt_class::generic) {
            status = detail::buffer_length(cls, dt, buffer, count, &m_length);
            if (ucs_unlikely(status != UCS_OK)) {
                return status;
            }
            m_class     = cls;
            m_buffer    = buffer;
            m_iov_count = count;
            return UCS_OK;
        }

        const generic_dt *gen = generic_of(dt);
        if (ucs_unlikely((gen->ops.start_pack == nullptr) || (gen->ops.packed_size == nullptr) ||
                         (gen->ops.pack == nullptr))) {
            return reject(dt, "generic datatype cannot pack");
        }
        void *state = gen->ops.start_pack(gen->context, buffer, count);
        m_class     = dt_class::generic;
        m_generic   = gen;
        m_buffer    = state;
        m_active    = true;
        m_length    = gen->ops.packed_size(state);
        return UCS_OK;
    }

    /* Total bytes of the packed stream. */
    size_t length() const noexcept { return m_length; }

    bool is_contig() const noexcept { return m_class == dt_class::contig; }

    /* Valid when is_contig(): the stream is this memory. */
    const void *contig_buffer() const noexcept { return m_buffer; }

    dt_class type_class() const noexcept { return m_class; }

    /* Where a contig or iov buffer lives (HOST unless set after start()). */
    void set_memory_type(ucs_memory_type_t type) noexcept { m_mem_type = type; }
    ucs_memory_type_t memory_type() const noexcept { return m_mem_type; }

    /*
     * Copies min(max_length, length() - offset) bytes of the stream starting
     * at `offset` into `dest` and returns how many (generic: what ops.pack
     * returned, capped at that). Any offset order works. 0 when the
     * staging copy of a non-host buffer failed.
     */
    size_t pack(void *dest, size_t offset, size_t max_length) noexcept
    {
        if (offset >= m_length) {
            return 0;
        }
        size_t n = std::min(max_length, m_length - offset);
        if (n == 0) {
            return 0;
        }
        switch (m_class) {
        case dt_class::contig:
            if (ucs_unlikely(m_mem_type != UCS_MEMORY_TYPE_HOST)) {
                return staged_copy(dest, static_cast<const char *>(m_buffer) + offset, n) ? n : 0;
            }
            std::memcpy(dest, static_cast<const char *>(m_buffer) + offset, n);
            return n;
        case dt_class::iov: {
            bool ok = true;
            m_cursor.walk(iov(), m_iov_count, offset, n,
                          [this, dest, &ok](const char *entry, size_t done, size_t len) {
                ok = ok && staged_copy(static_cast<char *>(dest) + done, entry, len);
            });
            return ok ? n : 0;
        }
        case dt_class::generic:
            if (ucs_unlikely(!m_active)) {
                return 0; /* finished: the state is gone */
            }
            return std::min(n, m_generic->ops.pack(state(), offset, dest, n));
        }
        return 0;
    }

    /*
     * contig/iov only: fills up to max_iov entries (memh NULL, no zero-length
     * entries) covering the stream from `offset`, at most max_length bytes.
     * Returns the entry count and sets *length_p to the bytes covered.
     * generic: returns 0 and *length_p = 0 (it must be packed).
     */
    size_t to_iov(uct::iov *out, size_t max_iov, size_t offset, size_t max_length,
                  size_t *length_p) const noexcept
    {
        *length_p = 0;
        if ((offset >= m_length) || (max_iov == 0) || (max_length == 0)) {
            return 0;
        }
        size_t n = std::min(max_length, m_length - offset);
        if (m_class == dt_class::contig) {
            out[0]    = {static_cast<const char *>(m_buffer) + offset, n, uct::MEM_HANDLE_NULL};
            *length_p = n;
            return 1;
        }
        if (m_class != dt_class::iov) {
            return 0;
        }

        /* Walks a copy of the cursor: stopping at max_iov may leave the walk
         * mid-entry, and the member cursor is then moved to where it got. */
        size_t entries = 0;
        m_cursor.seek(iov(), m_iov_count, offset);
        detail::iov_cursor cur = m_cursor;
        size_t covered         = 0;
        while ((covered < n) && (entries < max_iov)) {
            const ucp_dt_iov_t &entry = iov()[cur.index];
            size_t in_entry           = offset + covered - cur.start;
            size_t len                = std::min(entry.length - in_entry, n - covered);
            if (len > 0) {
                out[entries++] = {static_cast<const char *>(entry.buffer) + in_entry, len,
                                  uct::MEM_HANDLE_NULL};
            }
            covered += len;
            if (in_entry + len == entry.length) {
                cur.start += entry.length;
                ++cur.index;
            }
        }
        m_cursor  = cur;
        *length_p = covered;
        return entries;
    }

    /* generic: ops.finish(state) the first time; a no-op afterwards and for
     * other classes. */
    void finish() noexcept
    {
        if (m_active) {
            m_active = false;
            if (m_generic->ops.finish != nullptr) {
                m_generic->ops.finish(state());
            }
        }
    }

private:
    const ucp_dt_iov_t *iov() const noexcept { return static_cast<const ucp_dt_iov_t *>(m_buffer); }

    /* The generic state shares the buffer slot; it is the user's object,
     * only handed back to the user's callbacks. */
    void *state() const noexcept { return const_cast<void *>(m_buffer); }

    bool staged_copy(void *dest, const void *src, size_t length) const noexcept
    {
        if (ucs_likely(m_mem_type == UCS_MEMORY_TYPE_HOST)) {
            std::memcpy(dest, src, length);
            return true;
        }
        return ucs::memtype::copy(dest, UCS_MEMORY_TYPE_HOST, src, m_mem_type, length) == UCS_OK;
    }

    const void *m_buffer        = nullptr; /* contig data, iov array or generic state */
    const generic_dt *m_generic = nullptr;
    size_t m_length             = 0;
    size_t m_iov_count          = 0;
    /* A position cache, not state: to_iov() may move it. */
    mutable detail::iov_cursor m_cursor;
    dt_class m_class             = dt_class::contig;
    bool m_active                = false; /* generic state awaits finish() */
    ucs_memory_type_t m_mem_type = UCS_MEMORY_TYPE_HOST;
};

/*
 * Receive side. start() once, unpack() fragments in any order, finish().
 * Bytes beyond capacity() are dropped and reported as truncation.
 */
class unpacker {
public:
    /* generic: calls start_unpack and packed_size (kept as capacity()). */
    ucs_status_t start(ucp_datatype_t dt, void *buffer, size_t count) noexcept
    {
        *this               = unpacker();
        dt_class cls        = dt_class::contig;
        ucs_status_t status = classify(dt, &cls);
        if (ucs_unlikely(status != UCS_OK)) {
            return status;
        }

        if (cls != dt_class::generic) {
            status = detail::buffer_length(cls, dt, buffer, count, &m_capacity);
            if (ucs_unlikely(status != UCS_OK)) {
                return status;
            }
            m_class     = cls;
            m_buffer    = buffer;
            m_iov_count = count;
            return UCS_OK;
        }

        const generic_dt *gen = generic_of(dt);
        if (ucs_unlikely((gen->ops.start_unpack == nullptr) || (gen->ops.packed_size == nullptr) ||
                         (gen->ops.unpack == nullptr))) {
            return reject(dt, "generic datatype cannot unpack");
        }
        void *state = gen->ops.start_unpack(gen->context, buffer, count);
        m_class     = dt_class::generic;
        m_generic   = gen;
        m_buffer    = state;
        m_active    = true;
        m_capacity  = gen->ops.packed_size(state);
        return UCS_OK;
    }

    /* Bytes the receive buffer can take. */
    size_t capacity() const noexcept { return m_capacity; }

    bool is_contig() const noexcept { return m_class == dt_class::contig; }

    /* Valid when is_contig(). */
    void *contig_buffer() const noexcept { return m_buffer; }

    dt_class type_class() const noexcept { return m_class; }

    /* Where a contig or iov buffer lives (HOST unless set after start()). */
    void set_memory_type(ucs_memory_type_t type) noexcept { m_mem_type = type; }
    ucs_memory_type_t memory_type() const noexcept { return m_mem_type; }

    /*
     * Writes stream bytes [offset, offset + length) from `src`. The part
     * beyond capacity() is dropped and UCS_ERR_MESSAGE_TRUNCATED returned
     * (the part that fits is still written). generic: an error from
     * ops.unpack is returned as is; a failed staging copy into a non-host
     * buffer returns the copier's status.
     */
    ucs_status_t unpack(const void *src, size_t offset, size_t length) noexcept
    {
        size_t fit          = (offset >= m_capacity) ? 0 : std::min(length, m_capacity - offset);
        ucs_status_t status = UCS_OK;
        if (fit > 0) {
            switch (m_class) {
            case dt_class::contig:
                if (ucs_unlikely(m_mem_type != UCS_MEMORY_TYPE_HOST)) {
                    status = staged_copy(static_cast<char *>(m_buffer) + offset, src, fit);
                    break;
                }
                std::memcpy(static_cast<char *>(m_buffer) + offset, src, fit);
                break;
            case dt_class::iov:
                m_cursor.walk(static_cast<const ucp_dt_iov_t *>(m_buffer), m_iov_count, offset, fit,
                              [this, src, &status](char *entry, size_t done, size_t len) {
                    if (status == UCS_OK) {
                        status = staged_copy(entry, static_cast<const char *>(src) + done, len);
                    }
                });
                break;
            case dt_class::generic:
                if (ucs_unlikely(!m_active)) {
                    return UCS_ERR_INVALID_PARAM; /* finished: no state */
                }
                status = m_generic->ops.unpack(m_buffer, offset, src, fit);
                break;
            }
        }
        if (ucs_unlikely(fit < length) && (status == UCS_OK)) {
            return UCS_ERR_MESSAGE_TRUNCATED;
        }
        return status;
    }

    /* generic: ops.finish(state) the first time; a no-op otherwise. */
    void finish() noexcept
    {
        if (m_active) {
            m_active = false;
            if (m_generic->ops.finish != nullptr) {
                m_generic->ops.finish(m_buffer);
            }
        }
    }

private:
    ucs_status_t staged_copy(void *dest, const void *src, size_t length) const noexcept
    {
        if (ucs_likely(m_mem_type == UCS_MEMORY_TYPE_HOST)) {
            std::memcpy(dest, src, length);
            return UCS_OK;
        }
        return ucs::memtype::copy(dest, m_mem_type, src, UCS_MEMORY_TYPE_HOST, length);
    }

    void *m_buffer              = nullptr; /* contig data, iov array or generic state */
    const generic_dt *m_generic = nullptr;
    size_t m_capacity           = 0;
    size_t m_iov_count          = 0;
    detail::iov_cursor m_cursor;
    dt_class m_class             = dt_class::contig;
    bool m_active                = false;
    ucs_memory_type_t m_mem_type = UCS_MEMORY_TYPE_HOST;
};

static_assert(std::is_trivially_copyable_v<packer> && (sizeof(packer) <= 64),
              "a packer lives inside a request");
static_assert(std::is_trivially_copyable_v<unpacker> && (sizeof(unpacker) <= 64),
              "an unpacker lives inside a request");

} // namespace ucp::dt

#endif
