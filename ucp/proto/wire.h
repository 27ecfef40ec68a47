/*
 * UCP's messages on the transports' active-message channel: the AM ids and
 * the fixed headers that precede each payload. Every header comes from a
 * peer, so handlers check the length they got before reading one.
 *
 * Integers are in the sender's byte order: the worker address format
 * already refuses a peer of the other byte order.
 *
 * Handlers read with ucs::wire_reader (ucs/type/wire_reader.h): a header
 * is copied out before any of its fields is used, and a length, offset or
 * count from it is checked against the bytes that arrived, or against
 * max_message_length before it sizes an allocation.
 *
 * Versioning: these headers carry no version of their own. Two workers
 * exchange them only through eps made from each other's worker address,
 * and an address of another ucp::address_version (ucp/core/ucp_address.h)
 * is refused at ep creation. So a change to a header's layout, or adding,
 * removing or renumbering an AM id, requires bumping address_version. The
 * static_asserts after each header freeze its size (and, where a field is
 * sent or read on its own, its offset).
 *
 * Ep ids: a message that expects an answer (a sync ack, a rendezvous ATS,
 * RTR or ATP, an emulated RMA reply, a user AM's reply ep) or data for an
 * ep (stream) names the receiver's ep that the answer goes out of, learnt
 * in the wireup (`ep_id`). The receiver looks it up with its generation
 * and checks it reaches the sending worker (ucp_worker::ep_by_id): a stale
 * or forged id names nothing and the message is dropped. So answers never
 * depend on which lane the wireup took or on the order of lanes.
 */
#ifndef UCP_PROTO_WIRE_H
#define UCP_PROTO_WIRE_H

#include <ucp/api/ucp_def.h>
#include <ucs/type/wire_reader.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ucp::wire {

/* Longest message a peer may announce (eager total, rendezvous, AM, RMA):
 * more than any process can address (x86-64 with 5-level paging and
 * aarch64 give user space at most 2^56 bytes), so no real message is
 * refused, and sizes built from it never wrap. */
constexpr uint64_t max_message_length = uint64_t(1) << 56;

// clang-format off
enum am_id : uint8_t {
    AM_WIREUP          = 1,  /* wireup_hdr [+ worker address] [+ ep addresses] */
    AM_EAGER_ONLY      = 2,  /* tag (8 B) + whole payload */
    AM_EAGER_FIRST     = 3,  /* eager_first_hdr + first fragment */
    AM_EAGER_MIDDLE    = 4,  /* eager_middle_hdr + fragment */
    AM_EAGER_SYNC_ONLY = 5,  /* eager_sync_hdr + whole payload */
    AM_EAGER_SYNC_FIRST= 6,  /* eager_first_hdr + sreq id (8 B) + fragment */
    AM_SYNC_ACK        = 7,  /* reply_hdr */
    AM_RNDV_RTS        = 8,  /* rts_hdr (names the md) + the md's packed key */
    AM_RNDV_ATS        = 9,  /* reply_hdr */
    AM_STREAM          = 10, /* stream_hdr + payload */
    AM_USER_SINGLE     = 11, /* am_hdr [+ src uuid] + user header + data */
    AM_USER_FIRST      = 12, /* am_first_hdr + user header + first fragment */
    AM_USER_MIDDLE     = 13, /* eager_middle_hdr + fragment */
    AM_RMA_PUT         = 14, /* emulated RMA / atomics (operations issue) */
    AM_RMA_GET_REQ     = 15,
    AM_RMA_GET_REP     = 16,
    AM_ATOMIC_REQ      = 17,
    AM_ATOMIC_REP      = 18,
    AM_CMPL            = 19,
    AM_USER_RTS        = 20, /* am_rts_hdr + user header + packed rkey */
    AM_EP_CLOSED       = 21, /* sender's worker uuid [+ our ep id]: it closed its last ep
                                to us [its ep paired with that one of ours] */
    AM_RNDV_RTR        = 22, /* rtr_hdr + packed rkey: the sender writes a part */
    AM_RNDV_ATP        = 23, /* reply_hdr naming the receiver's request: written */
    AM_PWC             = 24, /* pwc_hdr + id bytes [+ data]: a put/get with completion */
    AM_PWC_CREDIT      = 25, /* pwc_credit_hdr: the target took ids, send more */
    AM_STREAM_RTS      = 26, /* rts_hdr (tag unused) + packed key: stream bytes to pull */
    AM_LAST
};
/* Frozen: changing it requires bumping ucp::address_version, which peers check. */
static_assert(AM_LAST == 27, "AM ids are part of the wire format");
static_assert(sizeof(ucp_tag_t) == 8, "the tag is the AM_EAGER_ONLY header");
// clang-format on

/* wireup_hdr::type: the handshake of ucp/wireup/wireup.cc. */
namespace wireup_type {
constexpr uint8_t REQUEST = 1; /* + worker address + ep addresses of our p2p lanes */
constexpr uint8_t REPLY   = 2; /* + ep addresses of our p2p lanes */
constexpr uint8_t ACK     = 3; /* nothing: our p2p lanes are connected to yours */
} // namespace wireup_type

/*
 * The wireup handshake's messages. A REQUEST pairs the sender's ep with
 * one of ours (a new one, or ours to the sender with the same conn_sn, or
 * the client-server ep connecting from client_port); REPLY and ACK name
 * the ep they are for (dst_ep_id), which the REQUEST's answer told.
 */
struct wireup_hdr {
    uint8_t type; /* wireup_type:: */
    uint8_t reserved8;
    uint16_t num_ep_addrs; /* wireup_ep_addr records at the end */
    uint32_t conn_sn;      /* REQUEST: the sender's n-th ep to us */
    uint64_t src_uuid;
    uint64_t src_ep_id;      /* the sender's ep: answers name it */
    uint64_t dst_ep_id;      /* REPLY, ACK: the receiver's ep; else 0 */
    uint32_t address_length; /* REQUEST: worker address bytes; else 0 */
    /* From a server's ep accepting a client-server connection: the client's
     * port of that connection, so the client knows the request belongs to
     * its ep still connecting (it makes no ep of its own then); else 0. */
    uint16_t client_port;
    uint16_t reserved16;
};
/* Frozen: changing it requires bumping ucp::address_version, which peers check. */
static_assert((sizeof(wireup_hdr) == 40) && (offsetof(wireup_hdr, conn_sn) == 4) &&
                  (offsetof(wireup_hdr, dst_ep_id) == 24) &&
                  (offsetof(wireup_hdr, address_length) == 32),
              "wireup_hdr layout");

/* The address of the sender's ep on a connect-to-ep lane: for the entry of
 * the sender's worker address whose iface it belongs to; `length` bytes of
 * uct::ep::get_address follow. */
struct wireup_ep_addr {
    uint16_t entry;
    uint16_t length;
};
/* Frozen: changing it requires bumping ucp::address_version, which peers check. */
static_assert(sizeof(wireup_ep_addr) == 4, "wireup_ep_addr layout");

/* Longest ep address a wireup message may carry (an RC QP's is ~ 10 bytes). */
constexpr size_t wireup_max_ep_addr = 256;

struct eager_first_hdr {
    ucp_tag_t tag;
    uint64_t src_uuid;
    uint64_t msg_id;
    uint64_t total_length;
};
/* Frozen: changing it requires bumping ucp::address_version, which peers check. */
static_assert(sizeof(eager_first_hdr) == 32, "eager_first_hdr layout");

struct eager_middle_hdr {
    uint64_t src_uuid;
    uint64_t msg_id;
    uint64_t offset;
};
/* Frozen: changing it requires bumping ucp::address_version, which peers check. */
static_assert(sizeof(eager_middle_hdr) == 24, "eager_middle_hdr layout");

/* What a message expecting an answer carries: the sender's request the
 * answer completes, and the receiver's ep the answer goes out of. */
struct request_hdr {
    uint64_t req_id;
    uint64_t ep_id;
};
/* Frozen: changing it requires bumping ucp::address_version, which peers check. */
static_assert(sizeof(request_hdr) == 16, "request_hdr layout");

struct eager_sync_hdr {
    ucp_tag_t tag;
    uint64_t src_uuid;
    request_hdr req;
};
/* Frozen: changing it requires bumping ucp::address_version, which peers check. */
static_assert(sizeof(eager_sync_hdr) == 32, "eager_sync_hdr layout");

/* The largest header an eager tag fragment carries: a sync first fragment
 * (eager_first_hdr and a request_hdr). */
constexpr size_t eager_max_header = sizeof(eager_first_hdr) + sizeof(request_hdr);

/* An acknowledgement or rendezvous completion naming the sender's request. */
struct reply_hdr {
    uint64_t req_id;
    int8_t status;
    uint8_t reserved[7];
};
/* Frozen: changing it requires bumping ucp::address_version, which peers check. */
/* am_short sends req_id as its 8-byte header and the status onwards as payload. */
static_assert((sizeof(reply_hdr) == 16) && (offsetof(reply_hdr, status) == 8), "reply_hdr layout");

constexpr unsigned rts_md_name_max = 16;

struct rts_hdr {
    ucp_tag_t tag;
    uint64_t src_uuid;
    uint64_t sreq_id;
    uint64_t address;
    uint64_t length;
    char md_name[rts_md_name_max]; /* NUL-padded */
    uint32_t rkey_length;          /* packed rkey bytes after the header */
    uint8_t flags;                 /* rts_flag:: */
    uint8_t reserved[3];           /* the ATS also serves sync sends */
    uint64_t ep_id;                /* the receiver's ep: RTR and ATS go out of it */
};
/* Frozen: changing it requires bumping ucp::address_version, which peers check. */
static_assert((sizeof(rts_hdr) == 72) && (offsetof(rts_hdr, md_name) == 40) &&
                  (offsetof(rts_hdr, rkey_length) == 56) && (offsetof(rts_hdr, ep_id) == 64),
              "rts_hdr layout");

/* Bits of rts_hdr::flags and am_rts_hdr::flags. */
namespace rts_flag {
/* The sender can also write into the receiver's buffer (it has a put lane on
 * the key's memory domain): the receiver may ask it to move part of the data
 * with an RTR, so both sides copy at once. */
constexpr uint8_t CAN_PUSH = 1u << 0;
/* The key bytes are a list, an rts_key and its packed key for each md the
 * sender registered the buffer on, the header's md first: the receiver may
 * pull over lanes of each (ucp/tag/rndv_keys.cc). */
constexpr uint8_t KEY_LIST = 1u << 1;
} // namespace rts_flag

/* An entry of an RTS's key list (rts_flag::KEY_LIST). */
struct rts_key {
    char md_name[rts_md_name_max]; /* NUL-padded */
    uint32_t length;               /* packed key bytes after it */
};
/* Frozen: changing it requires bumping ucp::address_version, which peers check. */
static_assert(sizeof(rts_key) == 20, "rts_key layout");

/*
 * Ready to receive: the receiver asks the sender to write bytes
 * [0, length) of the message to `address`, with the receiver's key after
 * the header, while it pulls the rest itself. The sender answers with an
 * ATP naming rreq_id once the bytes are in place (or with an error).
 */
struct rtr_hdr {
    uint64_t sreq_id;
    uint64_t rreq_id;
    uint64_t src_uuid; /* the receiver's worker */
    uint64_t ep_id;    /* the sender's ep the ATP goes out of */
    uint64_t address;
    uint64_t length;
    uint32_t rkey_length;
    uint32_t reserved;
};
/* Frozen: changing it requires bumping ucp::address_version, which peers check. */
static_assert(sizeof(rtr_hdr) == 56, "rtr_hdr layout");

/* Stream bytes: the receiver appends them to the stream of its ep dst_ep_id. */
struct stream_hdr {
    uint64_t src_uuid;
    uint64_t dst_ep_id;
};
/* Frozen: changing it requires bumping ucp::address_version, which peers check. */
static_assert(sizeof(stream_hdr) == 16, "stream_hdr layout");

// clang-format off
/* Bits of am_hdr::flags. */
namespace am_hdr_flag {
constexpr uint8_t REPLY = 1u << 0;        /* give a reply ep: single: src uuid and ep id
                                             follow; first: am_first_hdr::ep_id */
constexpr uint8_t LAYERED = 1u << 1;      /* am_id is a layered id (UCP_EXT_AM_ID_LAYERED
                                             + am_id): handlers of libraries over UCP */
} // namespace am_hdr_flag
// clang-format on

/* What follows an AM_USER_SINGLE's am_hdr when it has the REPLY flag: the
 * sender's worker and the receiver's ep that the reply ep is. */
struct am_reply_hdr {
    uint64_t src_uuid;
    uint64_t ep_id;
};
/* Frozen: changing it requires bumping ucp::address_version, which peers check. */
static_assert(sizeof(am_reply_hdr) == 16, "am_reply_hdr layout");

/*
 * A user active message in one piece. It fits the 8-byte am_short header,
 * so a small message without user header or reply goes out inline.
 */
struct am_hdr {
    uint16_t am_id; /* the application's id */
    uint8_t flags;  /* am_hdr_flag:: */
    uint8_t reserved;
    uint32_t header_length; /* user header bytes */
};
/* Frozen: changing it requires bumping ucp::address_version, which peers check. */
static_assert((sizeof(am_hdr) == sizeof(uint64_t)) && (offsetof(am_hdr, header_length) == 4),
              "am_hdr is the am_short header");

/* The first fragment of a user active message sent in several. */
struct am_first_hdr {
    am_hdr am;
    uint64_t src_uuid;
    uint64_t msg_id;
    uint64_t total_length; /* data bytes, user header excluded */
    uint64_t ep_id;        /* REPLY: the receiver's ep to give; else 0 */
};
/* Frozen: changing it requires bumping ucp::address_version, which peers check. */
static_assert(sizeof(am_first_hdr) == 40, "am_first_hdr layout");

/* A rendezvous user active message: the data stays at the sender until the
 * receiver pulls it (ucp_am_recv_data_nbx); the ATS completes the send. */
struct am_rts_hdr {
    am_hdr am;
    uint64_t src_uuid;
    uint64_t sreq_id;
    uint64_t address;
    uint64_t length;
    char md_name[rts_md_name_max]; /* NUL-padded */
    uint32_t rkey_length;          /* after the user header */
    uint8_t flags;                 /* rts_flag:: */
    uint8_t reserved[3];
    uint64_t ep_id; /* the receiver's ep: ATS (and reply ep) */
};
/* Frozen: changing it requires bumping ucp::address_version, which peers check. */
static_assert((sizeof(am_rts_hdr) == 72) && (offsetof(am_rts_hdr, md_name) == 40) &&
                  (offsetof(am_rts_hdr, rkey_length) == 56) && (offsetof(am_rts_hdr, ep_id) == 64),
              "am_rts_hdr layout");

/*
 * Emulated RMA and atomics (ucp/rma): requests the target executes against
 * the regions it mapped, each answered with the status (and data), so the
 * requester's flush knows when its operations are done remotely.
 */

/* Every request names the secret of the remote key it was made with: the
 * target serves it only inside a region mapped with that secret. */

/* rma_put_hdr::flags */
namespace rma_put_flag {
/* The put's last fragment (fragments travel in order on the AM lane): a
 * region with a counter counts the put's completion on it. */
constexpr uint8_t LAST = 1u << 0;
} // namespace rma_put_flag

/* AM_RMA_PUT: header + data; answered with AM_CMPL (reply_hdr). */
struct rma_put_hdr {
    uint64_t src_uuid;
    uint64_t req_id;
    uint64_t address;
    uint64_t secret;
    uint64_t ep_id;  /* the target's ep the answer goes out of */
    uint64_t length; /* bytes of the whole put (for EVENTS_BYTES counters) */
    uint8_t flags;   /* rma_put_flag */
    uint8_t reserved[7];
};
/* Frozen: changing it requires bumping ucp::address_version, which peers check. */
static_assert(sizeof(rma_put_hdr) == 56, "rma_put_hdr layout");

/* AM_RMA_GET_REQ: answered with AM_RMA_GET_REP fragments covering
 * [address, address + length), or one with an error status. */
struct rma_get_req_hdr {
    uint64_t src_uuid;
    uint64_t req_id;
    uint64_t address;
    uint64_t length;
    uint64_t secret;
    uint64_t ep_id;
};
/* Frozen: changing it requires bumping ucp::address_version, which peers check. */
static_assert(sizeof(rma_get_req_hdr) == 48, "rma_get_req_hdr layout");

/* AM_RMA_GET_REP: header + the bytes at `offset` of the requested range. */
struct rma_get_rep_hdr {
    uint64_t req_id;
    uint64_t offset;
    int8_t status;
    uint8_t reserved[7];
};
/* Frozen: changing it requires bumping ucp::address_version, which peers check. */
static_assert(sizeof(rma_get_rep_hdr) == 24, "rma_get_rep_hdr layout");

/* AM_ATOMIC_REQ: op is a uct::atomic_op, size 4 or 8; answered with
 * AM_ATOMIC_REP, which carries the previous value. */
struct atomic_req_hdr {
    uint64_t src_uuid;
    uint64_t req_id;
    uint64_t address;
    uint64_t value;   /* CSWAP: the value swapped in */
    uint64_t compare; /* CSWAP only */
    uint64_t secret;
    uint64_t ep_id;
    uint8_t op;
    uint8_t size;
    uint8_t reserved[6];
};
/* Frozen: changing it requires bumping ucp::address_version, which peers check. */
static_assert((sizeof(atomic_req_hdr) == 64) && (offsetof(atomic_req_hdr, op) == 56),
              "atomic_req_hdr layout");

struct atomic_rep_hdr {
    uint64_t req_id;
    uint64_t result;
    int8_t status;
    uint8_t reserved[7];
};
/* Frozen: changing it requires bumping ucp::address_version, which peers check. */
static_assert(sizeof(atomic_rep_hdr) == 24, "atomic_rep_hdr layout");

/*
 * Put and get with completion ids (ucp/ext/pwc.cc). AM_PWC carries a remote
 * id: alone (a notification, sent once the data is at the target: after a
 * put's flush, after a get's data arrived), or with the put's data (the
 * packed path of small puts), which the target writes first, inside the
 * regions the key's secret opens.
 */
namespace pwc_flag {
constexpr uint8_t DATA        = 1u << 0; /* the bytes after the id: write them */
constexpr uint8_t NO_RCE      = 1u << 1; /* ... and queue no id (a packed put without one) */
constexpr uint8_t REMOTE_CNTR = 1u << 2; /* count on the bound counter instead of queueing */
constexpr uint8_t GET         = 1u << 3; /* a get's notification */
constexpr uint8_t ALL         = DATA | NO_RCE | REMOTE_CNTR | GET;
} // namespace pwc_flag

/* 48 bytes: with 8 bytes of data, the message and the shared-memory FIFO's
 * element header fill one cache line. */
struct pwc_hdr {
    uint64_t src_uuid;
    uint64_t ep_id;   /* the target's ep to us: it names the source */
    uint64_t address; /* DATA: where the bytes after the id go */
    uint64_t secret;  /* DATA: the key's */
    uint64_t cid;     /* the id when id_size is 0 */
    uint32_t id_size; /* bytes of id payload after the header */
    uint8_t flags;    /* pwc_flag */
    uint8_t reserved[3];
};
/* Frozen: changing it requires bumping ucp::address_version, which peers check. */
static_assert((sizeof(pwc_hdr) == 48) && (offsetof(pwc_hdr, id_size) == 40), "pwc_hdr layout");

/* AM_PWC_CREDIT: the application took `credits` ids the receiver sent. */
struct pwc_credit_hdr {
    uint64_t src_uuid;
    uint64_t ep_id; /* the receiver's ep to us */
    uint32_t credits;
    uint32_t reserved;
};
/* Frozen: changing it requires bumping ucp::address_version, which peers check. */
static_assert(sizeof(pwc_credit_hdr) == 24, "pwc_credit_hdr layout");

/* A status byte from a peer's reply: an error code or UCS_OK as sent, any
 * other value (not a status) becomes UCS_ERR_IO_ERROR. */
inline ucs_status_t peer_status(int8_t value)
{
    const auto status = ucs_status_t(value);
    return ((status > UCS_OK) || (status <= UCS_ERR_LAST)) ? UCS_ERR_IO_ERROR : status;
}

} // namespace ucp::wire

#endif
