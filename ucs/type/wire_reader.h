/*
 * Reading bytes that came from a peer, and the size arithmetic that goes
 * with them. Every parser of wire data (worker addresses, remote keys,
 * protocol headers, transport frames) reads through wire_reader, so a
 * length or count in the data can never move a read past the buffer, and
 * checks ranges and sizes with the helpers below instead of ad-hoc
 * arithmetic that may wrap.
 *
 * Values are copied out (memcpy): the buffer may be unaligned, and it may
 * be shared memory a peer can still write, so a value is read once and
 * then only the copy is used.
 */
#ifndef UCS_TYPE_WIRE_READER_H
#define UCS_TYPE_WIRE_READER_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

namespace ucs {

/* [offset, offset + length) lies inside [0, total), without wrapping. */
constexpr bool range_inside(uint64_t offset, uint64_t length, uint64_t total)
{
    return (offset <= total) && (length <= total - offset);
}

/* [start, start + length) lies inside [base, base + size), without wrapping. */
constexpr bool range_inside(uint64_t start, uint64_t length, uint64_t base, uint64_t size)
{
    return (start >= base) && range_inside(start - base, length, size);
}

/* *sum = a + b; false if that wraps. */
template <typename T>
constexpr bool checked_add(T a, T b, T *sum)
{
    return !__builtin_add_overflow(a, b, sum);
}

/* Bytes to allocate for a fixed part plus `payload` bytes a peer announced:
 * false if the payload exceeds `limit` (what the protocol can ever send)
 * or the sum wraps. */
constexpr bool alloc_size(size_t fixed, uint64_t payload, uint64_t limit, size_t *size)
{
    return (payload <= limit) && (payload <= SIZE_MAX) &&
           checked_add<size_t>(fixed, size_t(payload), size);
}

/* Sequential reader over [data, data + length) that refuses to go past its end. */
class wire_reader {
public:
    wire_reader(const void *data, size_t length) :
        m_p(static_cast<const uint8_t *>(data)), m_left(length)
    {
    }

    /* Copies the next sizeof(T) bytes into *out. */
    template <typename T>
    bool get(T *out)
    {
        static_assert(std::is_trivially_copyable_v<T>, "wire values are plain bytes");
        if (m_left < sizeof(T)) {
            return false;
        }
        std::memcpy(out, m_p, sizeof(T));
        advance(sizeof(T));
        return true;
    }

    /* The next `length` bytes, in place. */
    bool bytes(size_t length, const uint8_t **data_p)
    {
        if (m_left < length) {
            return false;
        }
        *data_p = m_p;
        advance(length);
        return true;
    }

    bool skip(size_t length)
    {
        const uint8_t *unused;
        return bytes(length, &unused);
    }

    /*
     * A string with a one-byte length prefix that counts its terminating
     * NUL: [min_len, max_len] characters, no NUL before the end.
     */
    bool string(size_t min_len, size_t max_len, std::string_view *out)
    {
        uint8_t size;
        const uint8_t *text;
        if (!get(&size) || (size < min_len + 1) || (size > max_len + 1) || !bytes(size, &text) ||
            (text[size - 1] != '\0') || (std::memchr(text, '\0', size - 1) != nullptr)) {
            return false;
        }
        *out = std::string_view(reinterpret_cast<const char *>(text), size - 1);
        return true;
    }

    /* A byte string with a two-byte length prefix. */
    bool blob16(const uint8_t **data_p, size_t *length_p)
    {
        uint16_t size;
        if (!get(&size) || !bytes(size, data_p)) {
            return false;
        }
        *length_p = size;
        return true;
    }

    /* Where the next byte is, and how many are left. */
    const uint8_t *pos() const { return m_p; }
    size_t left() const { return m_left; }
    bool at_end() const { return m_left == 0; }

private:
    void advance(size_t n)
    {
        m_p += n;
        m_left -= n;
    }

    const uint8_t *m_p;
    size_t m_left;
};

} // namespace ucs

#endif
