/*
 * The internal part of a UCP request. The pointer an application gets is
 * the start of its request_size area, right after this struct. The fields
 * are what every operation needs; the request pool and the protocols
 * (next issue) extend the union, which must keep the size a multiple of 16.
 */
#ifndef UCP_CORE_UCP_REQUEST_H
#define UCP_CORE_UCP_REQUEST_H

#include <ucp/api/ucp_def.h>
#include <ucs/type/status.h>

#include <cstdint>

namespace ucp {

struct request {
    ucs_status_t status;      /* final status once completed */
    uint32_t     flags;       /* completed, released, callback kind, ... */
    void         *callback;   /* user callback; its type depends on flags */
    void         *user_data;
    ucp_worker_h worker;
    union {
        unsigned char protocol_state[96]; /* owned by the operation's protocol */
        uint64_t      align_;
    };
};

static_assert(sizeof(request) % 16 == 0, "user area must stay 16-byte aligned");

} // namespace ucp

#endif
