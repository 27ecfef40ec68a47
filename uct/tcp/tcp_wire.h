/*
 * The tcp transport's wire format. Every message on a connection is a frame:
 * an 8-byte header followed by `length` payload bytes. User active messages
 * carry flags == 0 and id 0..31; the transport's own messages (the RMA
 * emulation and flush) carry frame_flag::INTERNAL and an internal_op id, so
 * user ids stay free. The first bytes an initiator sends are a handshake;
 * it sends nothing more until the acceptor answers CONN_ACCEPT (use this
 * connection) or CONN_REJECT (two eps connected towards each other at once,
 * and the acceptor's own connection is the one both keep).
 * Peers are assumed to share byte order (as in UCX).
 *
 * Versioning: the acceptor reads HANDSHAKE_VERSION first on every
 * connection and closes it on a mismatch, so the frames and internal
 * operations below are frozen by it: changing one requires bumping
 * HANDSHAKE_VERSION. The device and iface addresses travel inside the UCP
 * worker address instead: changing them requires bumping
 * ucp::address_version (ucp/core/ucp_address.h). The packed remote key
 * has no version of its own; it travels inside UCP remote keys
 * (ucp::rkey_version) and rendezvous requests (ucp::address_version):
 * changing it requires bumping both.
 *
 * Authentication: every iface has a random key, published only in its
 * iface address (inside the UCP worker address). A handshake must carry
 * the acceptor's key, or the acceptor closes the connection before it
 * reads anything else: a port scan, or anyone who does not hold this
 * process's address, never reaches a frame handler. The handshake also
 * carries the initiator's own key, so an accepted connection is reused for
 * an ep to that peer only if the address we hold for it has that key (an
 * initiator cannot pass itself off as another peer by the listening
 * address it claims). The keys protect against whoever cannot read the
 * worker address or the traffic; they do not encrypt (docs/security.md).
 */
#ifndef UCT_TCP_TCP_WIRE_H
#define UCT_TCP_TCP_WIRE_H

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace uct::tcp {

struct frame_hdr {
    uint8_t id;
    uint8_t flags;
    uint16_t reserved; /* zero */
    uint32_t length;   /* payload bytes after this header */
};
/* Frozen: changing it requires bumping HANDSHAKE_VERSION, which the acceptor checks. */
static_assert((sizeof(frame_hdr) == 8) && (offsetof(frame_hdr, length) == 4));

namespace frame_flag {
constexpr uint8_t INTERNAL = 1u << 0;
} // namespace frame_flag

enum class internal_op : uint8_t {
    PUT = 1,      /* initiator -> target: put_hdr + data */
    GET_REQ,      /* initiator -> target: get_req */
    GET_REPLY,    /* target -> initiator: reply_hdr + data when OK */
    ATOMIC_POST,  /* initiator -> target: atomic_req, no reply */
    ATOMIC_REQ,   /* initiator -> target: atomic_req */
    ATOMIC_REPLY, /* target -> initiator: reply_hdr + uint64_t old value */
    FLUSH_REQ,    /* initiator -> target: flush_req */
    FLUSH_REPLY,  /* target -> initiator: reply_hdr */
    DETACH,       /* either way, no payload: the sender's ep is gone */
    CONN_ACCEPT,  /* acceptor -> initiator, first frame: conn_reply */
    CONN_REJECT,  /* acceptor -> initiator, only frame: conn_reply, then close */
    LAST
};

struct put_hdr {
    uint64_t region_id;
    uint64_t address;
};
/* Frozen: changing it requires bumping HANDSHAKE_VERSION, which the acceptor checks. */
static_assert(sizeof(put_hdr) == 16);

struct get_req {
    uint64_t seq;
    uint64_t region_id;
    uint64_t address;
    uint64_t length;
};
/* Frozen: changing it requires bumping HANDSHAKE_VERSION, which the acceptor checks. */
static_assert(sizeof(get_req) == 32);

struct atomic_req {
    uint64_t seq; /* 0 for ATOMIC_POST */
    uint64_t region_id;
    uint64_t address;
    uint64_t value;
    uint64_t compare;
    uint8_t op;   /* uct::atomic_op */
    uint8_t size; /* 4 or 8 */
    uint8_t reserved[6];
};
/* Frozen: changing it requires bumping HANDSHAKE_VERSION, which the acceptor checks. */
static_assert((sizeof(atomic_req) == 48) && (offsetof(atomic_req, op) == 40));

struct flush_req {
    uint64_t seq;
};
/* Frozen: changing it requires bumping HANDSHAKE_VERSION, which the acceptor checks. */
static_assert(sizeof(flush_req) == 8);

/* Replies come back in request order; `seq` lets the initiator check that. */
struct reply_hdr {
    uint64_t seq;
    int32_t status; /* ucs_status_t */
    uint32_t reserved;
};
/* Frozen: changing it requires bumping HANDSHAKE_VERSION, which the acceptor checks. */
static_assert((sizeof(reply_hdr) == 16) && (offsetof(reply_hdr, status) == 8));

/* Longest reply frame a target copies into its send buffer (an atomic's). */
constexpr size_t MAX_REPLY_FRAME = sizeof(frame_hdr) + sizeof(reply_hdr) + sizeof(uint64_t);

namespace conn_reply_flag {
/* The acceptor's ep sends on this connection too (the eps are paired). */
constexpr uint8_t PAIRED = 1u << 0;
} // namespace conn_reply_flag

struct conn_reply {
    uint8_t flags; /* conn_reply_flag:: */
    uint8_t reserved[7];
};
/* Frozen: changing it requires bumping HANDSHAKE_VERSION, which the acceptor checks. */
static_assert(sizeof(conn_reply) == 8);

constexpr uint32_t HANDSHAKE_MAGIC   = 0x54435078; /* "xPCT" */
constexpr uint16_t HANDSHAKE_VERSION = 3;

/* An iface's connection key (random, from the kernel's CSPRNG). */
struct iface_key {
    uint8_t bytes[16];
};
/* Frozen: changing it requires bumping HANDSHAKE_VERSION and ucp::address_version. */
static_assert(sizeof(iface_key) == 16);

/*
 * Who is connecting: the initiator's own listening address, and which of
 * its eps towards the acceptor's iface this is (0 for the first, 1 for the
 * second...). The n-th ep of each side towards the other pair up: when both
 * connect at once, one connection is kept for both, the one initiated by
 * the side with the lower address (family, ip, port).
 */
struct handshake {
    uint32_t magic;
    uint16_t version;
    uint8_t family; /* addr_family */
    uint8_t reserved;
    uint8_t ip[16];
    uint16_t port; /* host order */
    uint16_t reserved2;
    uint32_t conn_sn;
    iface_key acceptor_key;  /* the key of the iface connected to */
    iface_key initiator_key; /* the initiator iface's own key */
};
/* Frozen: changing it requires bumping HANDSHAKE_VERSION, which the acceptor checks;
 * magic and version never move, so an acceptor of any version can refuse it. */
static_assert((sizeof(handshake) == 64) && (offsetof(handshake, version) == 4) &&
              (offsetof(handshake, acceptor_key) == 32) &&
              (offsetof(handshake, initiator_key) == 48));

enum class addr_family : uint8_t { IPV4 = 4, IPV6 = 6 };

inline size_t ip_length(addr_family family)
{
    return (family == addr_family::IPV4) ? 4 : 16;
}

/*
 * Device address: the interface's IP. Loopback addresses mean "this host",
 * so they carry a host identity and are reachable only from the same host.
 */
struct device_addr_hdr {
    uint8_t family; /* addr_family */
    uint8_t flags;  /* device_addr_flag:: */
    uint8_t reserved[6];
    uint64_t host_id; /* nonzero for loopback */
    /* followed by ip_length(family) bytes */
};
/* Frozen: changing it requires bumping ucp::address_version, which peers check. */
static_assert((sizeof(device_addr_hdr) == 16) && (offsetof(device_addr_hdr, host_id) == 8));

namespace device_addr_flag {
constexpr uint8_t LOOPBACK = 1u << 0;
} // namespace device_addr_flag

/* Iface address: the listening port and the key a connection must show. */
struct iface_addr {
    uint16_t port; /* host order */
    uint8_t reserved[6];
    iface_key key;
};
/* Frozen: changing it requires bumping ucp::address_version, which peers check. */
static_assert((sizeof(iface_addr) == 24) && (offsetof(iface_addr, key) == 8));

constexpr uint64_t RKEY_MAGIC = 0x7463702d726b6579ull; /* "tcp-rkey" */

struct packed_rkey {
    uint64_t magic;
    uint64_t region_id;
    uint64_t address;
    uint64_t length;
};
/* Frozen: changing it requires bumping ucp::rkey_version and ucp::address_version. */
static_assert(sizeof(packed_rkey) == 32);

} // namespace uct::tcp

#endif
