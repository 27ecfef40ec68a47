/*
 * Emulated RMA and atomics: for a key no lane of the ep can use (registered
 * memory of a peer on this node without cma, or where only shared-memory
 * active messages reach it), the requester sends active messages on the AM
 * lane and the target executes them in its progress, after checking the
 * address against the regions it mapped. Every request is answered, so the
 * requester completes puts and atomic posts remotely before a flush ends.
 */
#include "rma.h"

#include <ucp/ext/mem_cntr.h>
#include <ucp/proto/am_handlers.h>
#include <ucp/proto/wire.h>
#include <ucs/debug/log.h>

#include <algorithm>
#include <cstring>

namespace ucp::rma {

namespace {

/* A fixed header alone: inline when the lane takes it, else buffered. */
template <typename Header>
ucs_status_t send_header(uct::ep *ep, uint8_t am_id, const Header &hdr)
{
    static_assert(sizeof(Header) >= sizeof(uint64_t), "the first word rides as AM header");
    const uct::iface_attr &attr = ep->owner().attr();
    if ((attr.flags & uct::iface_flag::AM_SHORT) && (sizeof(hdr) <= attr.am.max_short)) {
        uint64_t first;
        std::memcpy(&first, &hdr, sizeof(first));
        return ep->am_short(am_id, first, reinterpret_cast<const uint8_t *>(&hdr) + sizeof(first),
                            unsigned(sizeof(hdr) - sizeof(first)));
    }
    ssize_t packed = ep->am_bcopy(
        am_id,
        [](void *dest, void *arg) -> size_t {
            std::memcpy(dest, arg, sizeof(Header));
            return sizeof(Header);
        },
        const_cast<Header *>(&hdr), 0);
    return (packed < 0) ? ucs_status_t(packed) : UCS_OK;
}

/* A header followed by `length` bytes from `data`. */
struct header_and_data {
    const void *header;
    size_t header_length;
    const void *data;
    size_t length;
};

size_t pack_header_and_data(void *dest, void *arg)
{
    auto *a = static_cast<header_and_data *>(arg);
    std::memcpy(dest, a->header, a->header_length);
    if (a->length != 0) {
        std::memcpy(static_cast<uint8_t *>(dest) + a->header_length, a->data, a->length);
    }
    return a->header_length + a->length;
}

ucs_status_t send_header_and_data(uct::ep *ep, uint8_t am_id, const void *header,
                                  size_t header_length, const void *data, size_t length)
{
    header_and_data arg{header, header_length, data, length};
    ssize_t packed = ep->am_bcopy(am_id, pack_header_and_data, &arg, 0);
    return (packed < 0) ? ucs_status_t(packed) : UCS_OK;
}

/* Bytes of data an AM of this lane carries after `header_length`. */
size_t max_payload(const uct::ep *ep, size_t header_length)
{
    const size_t bcopy = ep->owner().attr().am.max_bcopy;
    return (bcopy > header_length) ? bcopy - header_length : 0;
}

/* One message whose reply is awaited: counted before it can arrive. */
template <typename Send>
ucs_status_t send_awaited(request *req, Send &&send)
{
    rma_state &r = req->u.send.rma;
    ++r.comp.count;
    ucs_status_t status = send();
    if (status != UCS_OK) {
        --r.comp.count;
    }
    return status;
}

ucs_status_t emulated_put(request *req)
{
    rma_state &r      = req->u.send.rma;
    size_t &offset    = req->u.send.offset;
    ucp_ep *ep        = req->u.send.ep;
    uct::ep *am       = ep->am_ep;
    const size_t room = max_payload(am, sizeof(wire::rma_put_hdr));
    if (room == 0) {
        return issue_failed(req, UCS_ERR_UNSUPPORTED);
    }
    bool progressed = false;
    while (offset < r.length) {
        const size_t chunk  = std::min(r.length - offset, room);
        const uint8_t flags = (offset + chunk == r.length) ? wire::rma_put_flag::LAST : 0;
        const wire::rma_put_hdr hdr{req->worker->uuid,
                                    req->id,
                                    r.remote_addr + offset,
                                    r.rkey->secret,
                                    ep->remote_id,
                                    r.length,
                                    flags,
                                    {}};
        ucs_status_t status = send_awaited(req, [&]() {
            return send_header_and_data(am, wire::AM_RMA_PUT, &hdr, sizeof(hdr), r.buffer + offset,
                                        chunk);
        });
        if (status == UCS_ERR_NO_RESOURCE) {
            return progressed ? UCS_INPROGRESS : UCS_ERR_NO_RESOURCE;
        }
        if (status != UCS_OK) {
            return issue_failed(req, status);
        }
        offset += chunk;
        progressed = true;
    }
    issue_done(req);
    return UCS_OK;
}

ucs_status_t emulated_get(request *req)
{
    const rma_state &r = req->u.send.rma;
    const wire::rma_get_req_hdr hdr{req->worker->uuid, req->id,        r.remote_addr,
                                    r.length,          r.rkey->secret, req->u.send.ep->remote_id};
    ucs_status_t status = send_awaited(req, [&]() {
        return send_header(req->u.send.ep->am_ep, wire::AM_RMA_GET_REQ, hdr);
    });
    if (status == UCS_ERR_NO_RESOURCE) {
        return status;
    }
    if (status != UCS_OK) {
        return issue_failed(req, status);
    }
    issue_done(req);
    return UCS_OK;
}

ucs_status_t emulated_amo(request *req)
{
    const rma_state &r = req->u.send.rma;
    wire::atomic_req_hdr hdr{};
    hdr.src_uuid        = req->worker->uuid;
    hdr.req_id          = req->id;
    hdr.address         = r.remote_addr;
    hdr.value           = r.value;
    hdr.compare         = r.compare;
    hdr.secret          = r.rkey->secret;
    hdr.ep_id           = req->u.send.ep->remote_id;
    hdr.op              = r.amo_op;
    hdr.size            = r.size;
    ucs_status_t status = send_awaited(req, [&]() {
        return send_header(req->u.send.ep->am_ep, wire::AM_ATOMIC_REQ, hdr);
    });
    if (status == UCS_ERR_NO_RESOURCE) {
        return status;
    }
    if (status != UCS_OK) {
        return issue_failed(req, status);
    }
    issue_done(req);
    return UCS_OK;
}

/* ---- target side ---- */

/* Sends what is left of a get reply; false when the lane is full. */
bool send_get_data(ucp_worker *worker, uct::ep *am, deferred_reply &r)
{
    for (;;) {
        wire::rma_get_rep_hdr hdr{r.req_id, r.offset, r.status, {}};
        region_counter counter;
        /* Checked again each time: a deferred reply reads the memory later. */
        if ((r.status == UCS_OK) &&
            !worker->context.mapped_regions.contains(worker->rma.region_cache, r.address, r.length,
                                                     r.secret, &counter)) {
            r.status = hdr.status = int8_t(UCS_ERR_INVALID_ADDR);
        }
        if (r.status != UCS_OK) {
            ucs_status_t status = send_header_and_data(am, wire::AM_RMA_GET_REP, &hdr, sizeof(hdr),
                                                       nullptr, 0);
            return status != UCS_ERR_NO_RESOURCE;
        }
        const size_t chunk = std::min<uint64_t>(r.length, max_payload(am, sizeof(hdr)));
        if (chunk == 0) {
            return true; /* nothing left (or a lane that cannot carry data) */
        }
        ucs_status_t status = send_header_and_data(am, wire::AM_RMA_GET_REP, &hdr, sizeof(hdr),
                                                   reinterpret_cast<const void *>(r.address),
                                                   chunk);
        if (status == UCS_ERR_NO_RESOURCE) {
            return false;
        }
        if (status != UCS_OK) {
            return true; /* the requester's ep failed: nobody to answer */
        }
        r.address += chunk;
        r.offset += chunk;
        r.length -= chunk;
        if (r.length == 0) {
            /* Every byte is read (copied into the replies): counted now. */
            ext::count_remote(counter, UCP_MEM_CNTR_REMOTE_READ, r.offset);
            return true;
        }
    }
}

/* Sends a reply now; false when it must wait (no room, ep not wired up). */
bool try_send(ucp_worker *worker, deferred_reply &r)
{
    ucp_ep *ep = worker->ep_by_id(r.ep_id, r.uuid);
    if (ep == nullptr) {
        ucs_debug("worker '%s': dropping an RMA reply to a gone ep of worker 0x%llx",
                  worker->name.c_str(), static_cast<unsigned long long>(r.uuid));
        return true;
    }
    if (!ep->usable()) {
        return true;
    }
    ucs_status_t status;
    switch (r.am_id) {
    case wire::AM_CMPL: {
        const wire::reply_hdr hdr{r.req_id, r.status, {}};
        status = send_header(ep->am_ep, wire::AM_CMPL, hdr);
        break;
    }
    case wire::AM_ATOMIC_REP: {
        const wire::atomic_rep_hdr hdr{r.req_id, r.result, r.status, {}};
        status = send_header(ep->am_ep, wire::AM_ATOMIC_REP, hdr);
        break;
    }
    default:
        return send_get_data(worker, ep->am_ep, r);
    }
    return status != UCS_ERR_NO_RESOURCE;
}

void reply(ucp_worker *worker, const deferred_reply &r)
{
    auto &queue = worker->rma.deferred;
    if (queue.empty()) {
        deferred_reply now = r;
        if (try_send(worker, now)) {
            return;
        }
        queue.push_back(now);
        worker->schedule(deferred::RMA);
        return;
    }
    queue.push_back(r); /* behind the ones waiting already */
}

/* The emulated request of this kind a reply names, or nullptr. */
request *awaiting_request(ucp_worker *worker, uint64_t req_id, op_kind kind)
{
    request *req = worker->lookup_request(req_id);
    if ((req == nullptr) || !(req->flags & request_flag::RMA) ||
        (req->u.send.rma.kind != uint8_t(kind)) ||
        (req->u.send.rma.path != uint8_t(path::EMULATED))) {
        ucs_debug("worker '%s': RMA reply for an unknown request", worker->name.c_str());
        return nullptr;
    }
    return req;
}

} // namespace

ucs_status_t emulated_step(request *req)
{
    switch (op_kind(req->u.send.rma.kind)) {
    case op_kind::PUT:
        return emulated_put(req);
    case op_kind::GET:
        return emulated_get(req);
    case op_kind::AMO:
        return emulated_amo(req);
    }
    return UCS_ERR_INVALID_PARAM;
}

unsigned deferred_progress(ucp_worker *worker)
{
    auto &queue    = worker->rma.deferred;
    unsigned count = 0;
    while (!queue.empty() && try_send(worker, queue.front())) {
        queue.pop_front();
        ++count;
    }
    return count;
}

} // namespace ucp::rma

namespace ucp {

using rma::deferred_reply;

namespace {

/* The fixed header of a peer's request, sent from an ep we know (a stale
 * or forged one is dropped); false when the request is to be dropped. */
template <typename Header>
bool read_request(ucp_worker *worker, ucs::wire_reader &r, Header *hdr, const char *what)
{
    if (!r.get(hdr)) {
        ucs_warn("worker '%s': dropping a short %s", worker->name.c_str(), what);
        return false;
    }
    return sender_ep(worker, hdr->ep_id, hdr->src_uuid) != nullptr;
}

} // namespace

ucs_status_t rma_put_handler(void *arg, void *data, size_t length, unsigned)
{
    auto *worker = static_cast<ucp_worker *>(arg);
    ucs::wire_reader r(data, length);
    wire::rma_put_hdr hdr;
    if (!read_request(worker, r, &hdr, "RMA put")) {
        return UCS_OK;
    }
    const size_t size   = r.left();
    ucs_status_t status = UCS_OK;
    region_counter counter;
    if (!worker->context.mapped_regions.contains(worker->rma.region_cache, hdr.address, size,
                                                 hdr.secret, &counter)) {
        ucs_error("worker '%s': refused a put to 0x%llx+%zu outside the regions its key opens",
                  worker->name.c_str(), static_cast<unsigned long long>(hdr.address), size);
        status = UCS_ERR_INVALID_ADDR;
    } else {
        if (size != 0) {
            std::memcpy(reinterpret_cast<void *>(hdr.address), r.pos(), size);
        }
        /* Fragments arrive in order: at the last one the whole put landed. */
        if (hdr.flags & wire::rma_put_flag::LAST) {
            ext::count_remote(counter, UCP_MEM_CNTR_REMOTE_WRITE, hdr.length);
        }
    }
    rma::reply(worker, deferred_reply{hdr.ep_id, hdr.src_uuid, hdr.req_id, wire::AM_CMPL,
                                      int8_t(status), 0, 0, 0, 0, 0});
    return UCS_OK;
}

ucs_status_t rma_get_req_handler(void *arg, void *data, size_t length, unsigned)
{
    auto *worker = static_cast<ucp_worker *>(arg);
    ucs::wire_reader r(data, length);
    wire::rma_get_req_hdr hdr;
    if (!read_request(worker, r, &hdr, "RMA get")) {
        return UCS_OK;
    }
    ucs_status_t status = UCS_OK;
    if ((hdr.length == 0) ||
        !worker->context.mapped_regions.contains(worker->rma.region_cache, hdr.address, hdr.length,
                                                 hdr.secret)) {
        ucs_error("worker '%s': refused a get from 0x%llx+%llu outside the regions its key opens",
                  worker->name.c_str(), static_cast<unsigned long long>(hdr.address),
                  static_cast<unsigned long long>(hdr.length));
        status = UCS_ERR_INVALID_ADDR;
    }
    rma::reply(worker, deferred_reply{hdr.ep_id, hdr.src_uuid, hdr.req_id, wire::AM_RMA_GET_REP,
                                      int8_t(status), 0, hdr.address, hdr.length, 0, hdr.secret});
    return UCS_OK;
}

ucs_status_t atomic_req_handler(void *arg, void *data, size_t length, unsigned)
{
    auto *worker = static_cast<ucp_worker *>(arg);
    ucs::wire_reader r(data, length);
    wire::atomic_req_hdr hdr;
    if (!read_request(worker, r, &hdr, "atomic request")) {
        return UCS_OK;
    }
    ucs_status_t status = UCS_OK;
    uint64_t old        = 0;
    region_counter counter;
    if ((hdr.op >= uint8_t(uct::atomic_op::LAST)) ||
        ((hdr.size != sizeof(uint32_t)) && (hdr.size != sizeof(uint64_t))) ||
        (hdr.address % hdr.size != 0)) {
        ucs_error("worker '%s': malformed atomic request (op %u size %u address 0x%llx)",
                  worker->name.c_str(), hdr.op, hdr.size,
                  static_cast<unsigned long long>(hdr.address));
        status = UCS_ERR_INVALID_PARAM;
    } else if (!worker->context.mapped_regions.contains(worker->rma.region_cache, hdr.address,
                                                        hdr.size, hdr.secret, &counter)) {
        ucs_error("worker '%s': refused an atomic on 0x%llx outside the regions its key opens",
                  worker->name.c_str(), static_cast<unsigned long long>(hdr.address));
        status = UCS_ERR_INVALID_ADDR;
    } else {
        status = rma::cpu_atomic(uct::atomic_op(hdr.op), hdr.size,
                                 reinterpret_cast<void *>(hdr.address), hdr.value, hdr.compare,
                                 &old);
        if (status == UCS_OK) {
            ext::count_remote(counter, UCP_MEM_CNTR_REMOTE_ATOMIC, hdr.size);
        }
    }
    rma::reply(worker, deferred_reply{hdr.ep_id, hdr.src_uuid, hdr.req_id, wire::AM_ATOMIC_REP,
                                      int8_t(status), old, 0, 0, 0, 0});
    return UCS_OK;
}

ucs_status_t rma_cmpl_handler(void *arg, void *data, size_t length, unsigned)
{
    auto *worker = static_cast<ucp_worker *>(arg);
    ucs::wire_reader r(data, length);
    wire::reply_hdr hdr;
    if (!r.get(&hdr)) {
        ucs_warn("worker '%s': dropping a short RMA completion", worker->name.c_str());
        return UCS_OK;
    }
    request *req = rma::awaiting_request(worker, hdr.req_id, rma::op_kind::PUT);
    if (req != nullptr) {
        uct::invoke_completion(&req->u.send.rma.comp, wire::peer_status(hdr.status));
    }
    return UCS_OK;
}

ucs_status_t atomic_rep_handler(void *arg, void *data, size_t length, unsigned)
{
    auto *worker = static_cast<ucp_worker *>(arg);
    ucs::wire_reader reader(data, length);
    wire::atomic_rep_hdr hdr;
    if (!reader.get(&hdr)) {
        ucs_warn("worker '%s': dropping a short atomic reply", worker->name.c_str());
        return UCS_OK;
    }
    request *req = rma::awaiting_request(worker, hdr.req_id, rma::op_kind::AMO);
    if (req == nullptr) {
        return UCS_OK;
    }
    rma_state &r              = req->u.send.rma;
    const ucs_status_t status = wire::peer_status(hdr.status);
    if ((status == UCS_OK) && (r.flags & rma::state_flag::FETCH)) {
        rma::store_result(r.buffer, r.size, hdr.result);
    }
    uct::invoke_completion(&r.comp, status);
    return UCS_OK;
}

ucs_status_t rma_get_rep_handler(void *arg, void *data, size_t length, unsigned)
{
    auto *worker = static_cast<ucp_worker *>(arg);
    ucs::wire_reader reader(data, length);
    wire::rma_get_rep_hdr hdr;
    if (!reader.get(&hdr)) {
        ucs_warn("worker '%s': dropping a short get reply", worker->name.c_str());
        return UCS_OK;
    }
    request *req = rma::awaiting_request(worker, hdr.req_id, rma::op_kind::GET);
    if ((req == nullptr) || (req->u.send.rma.flags & rma::state_flag::GET_DONE)) {
        return UCS_OK;
    }
    rma_state &r        = req->u.send.rma;
    const size_t size   = reader.left();
    ucs_status_t status = wire::peer_status(hdr.status);
    if ((status == UCS_OK) && (!ucs::range_inside(hdr.offset, size, r.length) || (size == 0))) {
        ucs_error("worker '%s': get reply of %zu bytes at offset %llu for %zu bytes",
                  worker->name.c_str(), size, static_cast<unsigned long long>(hdr.offset),
                  r.length);
        status = UCS_ERR_IO_ERROR;
    }
    if (status == UCS_OK) {
        std::memcpy(r.buffer + hdr.offset, reader.pos(), size);
        req->u.send.offset += size; /* the bytes arrived */
        if (req->u.send.offset < r.length) {
            return UCS_OK;
        }
    }
    r.flags |= rma::state_flag::GET_DONE;
    uct::invoke_completion(&r.comp, status);
    return UCS_OK;
}

unsigned rma_deferred_progress(ucp_worker *worker)
{
    return rma::deferred_progress(worker);
}

} // namespace ucp
