/*
 * User active messages (ucp_am_*): the receiver's AM handlers and the
 * descriptors that hold a message's data when it must outlive the
 * transport's buffer (kept by the application, reassembled from fragments,
 * or announced by a rendezvous RTS).
 *
 * A descriptor sits right before the data pointer the application gets,
 * so ucp_am_data_release() and ucp_am_recv_data_nbx() find it from that
 * pointer; its magic tells a descriptor from a stray pointer.
 */
#ifndef UCP_AM_AM_H
#define UCP_AM_AM_H

#include <ucp/api/ucp_ext.h>
#include <ucp/core/ucp_worker.h>
#include <ucp/proto/wire.h>
#include <ucs/memory/mpool.h>

#include <cstdint>
#include <unordered_map>

namespace ucp {

namespace am_desc_kind {
constexpr uint8_t EAGER = 1; /* the whole message is in the descriptor */
constexpr uint8_t RNDV  = 2; /* an RTS: the data is still at the sender */
} // namespace am_desc_kind

/* Where a descriptor is in its life. */
namespace am_desc_state {
constexpr uint8_t NEW        = 0; /* not handed to a handler yet */
constexpr uint8_t IN_HANDLER = 1; /* its handler is running */
constexpr uint8_t KEPT       = 2; /* the handler returned UCS_INPROGRESS */
constexpr uint8_t CONSUMED   = 3; /* released or received from inside the handler */
} // namespace am_desc_state

constexpr uint32_t am_desc_magic = 0xa3d35c01u;

struct alignas(16) am_desc {
    uint32_t magic;
    uint8_t kind;       /* am_desc_kind:: */
    uint8_t state;      /* am_desc_state:: */
    uint8_t pooled;     /* base is a desc_pool element, else malloc'ed */
    uint8_t send_flags; /* wire::am_hdr_flag:: */
    uint16_t am_id;
    uint8_t rndv_flags; /* RNDV: wire::rts_flag:: of the offer */
    uint32_t header_length;
    uint64_t src_uuid;
    uint64_t ep_id;  /* our ep the sender named (reply ep, ATS); 0: none */
    size_t length;   /* data bytes (EAGER) or message bytes (RNDV) */
    size_t received; /* EAGER being reassembled: bytes in so far */
    void *base;      /* the allocation this lives in */
    uint8_t *header; /* copy of the user header */
    /* RNDV: the sender's offer. */
    uint64_t sreq_id;
    uint64_t address;
    uint8_t *rkey;
    uint32_t rkey_length;
    char md_name[16];

    uint8_t *data() { return reinterpret_cast<uint8_t *>(this + 1); }
};

static_assert(sizeof(am_desc) % 16 == 0, "the data after a descriptor stays aligned");

/* Per-worker active-message receive state. */
struct am_worker {
    ucs::mpool desc_pool; /* descriptors of single-fragment size */
    size_t pool_room = 0; /* bytes a pool element has after the descriptor */
    /* Multi-fragment messages being reassembled. */
    std::unordered_map<msg_key, am_desc *, msg_key_hash> partial;
};

/*
 * AM ids: the application's are 16-bit, as on the wire; a layered id of
 * <ucp/api/ucp_ext.h> (UCP_EXT_AM_ID_LAYERED + n) travels as n with
 * wire::am_hdr_flag::LAYERED, so no application id can reach its handler.
 * False: `id` is neither.
 */
inline bool am_id_to_wire(unsigned id, uint16_t *wire_id, uint8_t *hdr_flags)
{
    if (id <= UINT16_MAX) {
        *wire_id   = uint16_t(id);
        *hdr_flags = 0;
        return true;
    }
    if ((id >= UCP_EXT_AM_ID_LAYERED) &&
        (id < UCP_EXT_AM_ID_LAYERED + UCP_EXT_AM_ID_LAYERED_COUNT)) {
        *wire_id   = uint16_t(id - UCP_EXT_AM_ID_LAYERED);
        *hdr_flags = wire::am_hdr_flag::LAYERED;
        return true;
    }
    return false;
}

/* The handler table of a wire id with these header flags. */
inline std::vector<am_handler> &am_handler_table(ucp_worker *worker, uint8_t hdr_flags)
{
    return (hdr_flags & wire::am_hdr_flag::LAYERED) ? worker->layered_am_handlers :
                                                      worker->am_handlers;
}

/* The worker's active-message state, made on first use; nullptr: no memory. */
am_worker *am_worker_get(ucp_worker *worker);

/*
 * A descriptor with `data_length` bytes of data (aligned to the worker's
 * am_alignment) and `extra` bytes after them; nullptr when out of memory or
 * the lengths are absurd (they may come from a peer).
 */
am_desc *am_desc_alloc(ucp_worker *worker, size_t data_length, size_t extra);

/* The descriptor whose data() is `data`, or nullptr if it is not one. */
am_desc *am_desc_of(void *data);

void am_desc_free(am_desc *desc);

/* The application is done with a descriptor (recv_data or data_release):
 * freed now, or after its handler returns when called from the handler. */
void am_desc_consume(am_desc *desc);

/*
 * Pulls the data of a rendezvous descriptor into buffer/count as
 * ucp_am_recv_data_nbx does; the descriptor is consumed in every case.
 */
ucs_status_ptr_t am_rndv_recv(ucp_worker *worker, am_desc *desc, void *buffer, size_t count,
                              const ucp_request_param_t *param);

/* Tells the sender of a rendezvous message that it is done with. */
void am_rndv_finish(ucp_worker *worker, const am_desc *desc, ucs_status_t status);

/* AM handlers (see set_am_handlers). */
ucs_status_t am_single_handler(void *arg, void *data, size_t length, unsigned flags);
ucs_status_t am_first_handler(void *arg, void *data, size_t length, unsigned flags);
ucs_status_t am_middle_handler(void *arg, void *data, size_t length, unsigned flags);
ucs_status_t am_rts_handler(void *arg, void *data, size_t length, unsigned flags);

} // namespace ucp

#endif
