/*
 * What happens to soak message `seq` of a stream: its size, how it is sent
 * and how it is received. Both sides compute it from (stream seed, seq),
 * so the receiver knows each message's length and tag, and the kinds mix
 * at random without any coordination.
 */
#ifndef TESTS_SOAK_SOAK_PLAN_H
#define TESTS_SOAK_SOAK_PLAN_H

#include "soak_pattern.h"

#include <ucp/api/ucp.h>

#include <cstddef>
#include <cstdint>

namespace soak {

enum class send_kind : uint8_t {
    normal, /* ucp_tag_send_nbx */
    sync,   /* ucp_tag_send_sync_nbx: completes once matched */
};

enum class recv_kind : uint8_t {
    exact,      /* ucp_tag_recv_nbx with the full tag, posted ahead (expected) */
    wildcard,   /* ucp_tag_recv_nbx with a mask (all or part of the tag), posted ahead */
    unexpected, /* posted only once ucp_tag_probe_nb sees the message waiting */
    probe,      /* ucp_tag_probe_nb(remove) + ucp_tag_msg_recv_nbx */
    cancel,     /* a receive posted ahead and cancelled at once; then a new one */
    count
};

inline const char *recv_kind_name(recv_kind kind)
{
    static const char *const names[] = {"exact", "wildcard", "unexpected", "probe", "cancel"};
    return (kind < recv_kind::count) ? names[unsigned(kind)] : "?";
}

struct message_plan {
    size_t size;
    send_kind send;
    recv_kind recv;
    bool full_wildcard; /* wildcard/probe/cancel: mask 0 instead of the kind bits */
    unsigned offset;    /* buffer offset (alignment) on either side, 0..63 */
    bool fresh_buffer;  /* sender/receiver reallocate the slot buffer first */
};

/* Tag: sequence number above, recv kind below. Messages of one stream come
 * from one sender, so any mask still matches them in order. */
constexpr unsigned TAG_SEQ_SHIFT  = 8;
constexpr ucp_tag_t TAG_KIND_MASK = 0xff;

inline ucp_tag_t message_tag(uint64_t seq, recv_kind kind)
{
    return (ucp_tag_t(seq) << TAG_SEQ_SHIFT) | ucp_tag_t(kind);
}

/* Sizes are log-uniform from 1 B to max_size, so every protocol range
 * (short, bcopy, zcopy, rendezvous) gets its share of messages. */
inline message_plan plan_message(uint64_t seed, uint64_t seq, size_t max_size)
{
    const uint64_t r1 = mix64(message_key(seed, seq) ^ 0x5a5a5a5a5a5a5a5aull);
    const uint64_t r2 = mix64(r1);
    unsigned bits     = 1;
    while ((bits < 63) && ((size_t(1) << bits) <= max_size)) {
        ++bits;
    }
    /* 2^e .. 2^(e+1)-1 for e uniform in [0, bits), capped at max_size. */
    const unsigned e = unsigned(r1 % bits);
    size_t size      = (size_t(1) << e) + size_t((r1 >> 8) % (uint64_t(1) << e));
    if (size > max_size) {
        size = max_size;
    }

    message_plan p{};
    p.size           = (size == 0) ? 1 : size;
    p.send           = ((r2 % 100) < 30) ? send_kind::sync : send_kind::normal;
    const unsigned k = unsigned((r2 >> 8) % 100);
    p.recv           = (k < 30) ? recv_kind::exact :
                       (k < 50) ? recv_kind::wildcard :
                       (k < 65) ? recv_kind::unexpected :
                       (k < 80) ? recv_kind::probe :
                                  recv_kind::cancel;
    p.full_wildcard  = ((r2 >> 16) & 1) != 0;
    p.offset         = unsigned((r2 >> 24) % 64);
    p.fresh_buffer   = ((r2 >> 32) % 32) == 0;
    return p;
}

} // namespace soak

#endif
