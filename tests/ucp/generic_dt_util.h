/*
 * A generic (callback-packed) datatype for tests: packs and unpacks the
 * buffer unchanged, through ucp_generic_dt_ops_t, counting the calls so a
 * test can tell the generic path was taken.
 */
#ifndef TEST_UCP_GENERIC_DT_UTIL_H
#define TEST_UCP_GENERIC_DT_UTIL_H

#include <ucp/api/ucp.h>

#include <algorithm>
#include <cstring>

namespace ucp_test {

struct generic_counts {
    int packs    = 0;
    int unpacks  = 0;
    int starts   = 0; /* start_pack + start_unpack */
    int finishes = 0; /* each start must be finished once */
};

inline generic_counts g_generic;

namespace generic_detail {

struct state {
    uint8_t *buffer;
    size_t length;
};

inline void *start_pack(void *, const void *buffer, size_t count)
{
    ++g_generic.starts;
    return new state{static_cast<uint8_t *>(const_cast<void *>(buffer)), count};
}

inline void *start_unpack(void *, void *buffer, size_t count)
{
    ++g_generic.starts;
    return new state{static_cast<uint8_t *>(buffer), count};
}

inline size_t packed_size(void *s)
{
    return static_cast<state *>(s)->length;
}

inline size_t pack(void *s, size_t offset, void *dest, size_t max_length)
{
    auto *st = static_cast<state *>(s);
    size_t n = std::min(max_length, st->length - offset);
    std::memcpy(dest, st->buffer + offset, n);
    ++g_generic.packs;
    return n;
}

inline ucs_status_t unpack(void *s, size_t offset, const void *src, size_t length)
{
    auto *st = static_cast<state *>(s);
    if ((offset > st->length) || (length > st->length - offset)) {
        return UCS_ERR_MESSAGE_TRUNCATED;
    }
    std::memcpy(st->buffer + offset, src, length);
    ++g_generic.unpacks;
    return UCS_OK;
}

inline void finish(void *s)
{
    ++g_generic.finishes;
    delete static_cast<state *>(s);
}

} // namespace generic_detail

/* A datatype whose count is a byte count; 0 on failure. Destroy with
 * ucp_dt_destroy(). */
inline ucp_datatype_t make_identity_generic()
{
    ucp_generic_dt_ops_t ops{generic_detail::start_pack,  generic_detail::start_unpack,
                             generic_detail::packed_size, generic_detail::pack,
                             generic_detail::unpack,      generic_detail::finish};
    ucp_datatype_t dt = 0;
    return (ucp_dt_create_generic(&ops, nullptr, &dt) == UCS_OK) ? dt : 0;
}

/* Like make_identity_generic(), but its pack gives bytes only at offset 0:
 * a broken datatype whose later fragments pack nothing. */
inline ucp_datatype_t make_stingy_generic()
{
    ucp_generic_dt_ops_t ops{generic_detail::start_pack,
                             generic_detail::start_unpack,
                             generic_detail::packed_size,
                             [](void *s, size_t offset, void *dest, size_t max) -> size_t {
                                 return (offset == 0) ? generic_detail::pack(s, 0, dest, max) : 0;
                             },
                             generic_detail::unpack,
                             generic_detail::finish};
    ucp_datatype_t dt = 0;
    return (ucp_dt_create_generic(&ops, nullptr, &dt) == UCS_OK) ? dt : 0;
}

} // namespace ucp_test

#endif
