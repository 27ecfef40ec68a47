/*
 * Receiving a wireup message: a peer that created an ep to us sent its
 * worker address, so we can answer it. The ep is created later, outside the
 * transport's progress (creating transport eps from inside a transport
 * callback is not allowed).
 *
 * A server's ep accepting our client-server connection sends its wireup
 * too, and it may overtake the server's answer on the bootstrap socket. It
 * names the port our ep connects from: while an ep of ours connecting from
 * that port waits for its answer, the wireup is held (its sender counts as
 * "ep coming", so replies and active messages for it wait) instead of
 * getting an ep of its own; the connected ep answers that peer then.
 */
#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_worker.h>
#include <ucp/proto/am_handlers.h>
#include <ucp/proto/wire.h>
#include <ucp/wireup/sockaddr_cm.h>
#include <ucs/debug/log.h>

#include <vector>

namespace ucp {

namespace {

/* Whether an ep of ours connects to a listener from local port `port`. */
bool connecting_from(ucp_worker *worker, uint16_t port)
{
    bool found = false;
    worker->ep_ids.for_each([&](unsigned, ucp_ep *ep) {
        found |= (ep->flags & ep_flag::CONNECTING) && ep->usable() &&
                 (cs::port_of(ep->local_sockaddr) == port);
    });
    return found;
}

} // namespace

ucs_status_t wireup_handler(void *arg, void *data, size_t length, unsigned)
{
    auto *worker = static_cast<ucp_worker*>(arg);
    ucs::wire_reader r(data, length);
    wire::wireup_hdr hdr;
    const uint8_t *addr;
    if (!r.get(&hdr) || !r.bytes(hdr.address_length, &addr) ||
        (hdr.client_port > UINT16_MAX)) {
        ucs_warn("worker '%s': dropping a malformed wireup message (%zu bytes)",
                 worker->name.c_str(), length);
        return UCS_OK;
    }
    if (worker->eps_by_uuid.count(hdr.src_uuid) ||
        worker->pending_wireups.count(hdr.src_uuid)) {
        return UCS_OK;
    }
    if (worker->num_peer_eps + worker->pending_wireups.size() >=
        worker->context.config.max_peer_eps) {
        if (worker->dropped_wireups++ == 0) {
            ucs_warn("worker '%s': %u endpoints made for peers already (UCX_MAX_PEER_EPS): "
                     "dropping wireups of new peers", worker->name.c_str(),
                     worker->num_peer_eps);
        }
        return UCS_OK;
    }
    worker->pending_wireups.emplace(hdr.src_uuid,
            pending_wireup{std::vector<uint8_t>(addr, addr + hdr.address_length),
                           uint16_t(hdr.client_port)});
    worker->schedule(deferred::WIREUPS);
    return UCS_OK;
}

unsigned process_pending_wireups(ucp_worker *worker)
{
    /* Held wireups stay where they are (this runs on every progress while
     * one is held); the others leave the map before their ep is made. */
    std::vector<uint64_t> to_answer;
    for (auto it = worker->pending_wireups.begin(); it != worker->pending_wireups.end();) {
        const pending_wireup &w = it->second;
        if (worker->eps_by_uuid.count(it->first)) {
            it = worker->pending_wireups.erase(it);  /* an ep of ours reaches it now */
        } else if ((w.client_port != 0) && connecting_from(worker, w.client_port)) {
            ++it;
        } else {
            to_answer.push_back(it->first);
            ++it;
        }
    }
    unsigned count = 0;
    for (uint64_t uuid : to_answer) {
        auto node = worker->pending_wireups.extract(uuid);
        if (node.empty()) {
            continue;
        }
        const std::vector<uint8_t> &address = node.mapped().address;
        uint64_t address_uuid = 0;
        if ((address_peek(address.data(), address.size(), nullptr, &address_uuid) !=
             UCS_OK) || (address_uuid != uuid)) {
            ucs_warn("worker '%s': wireup address does not name its sender",
                     worker->name.c_str());
            continue;
        }
        ucp_ep *ep;
        ucs_status_t status = ep_create_to_address(worker, address.data(),
                                                   address.size(), 0, &ep);
        if (status != UCS_OK) {
            ucs_warn("worker '%s': cannot answer a peer that connected to us: %s",
                     worker->name.c_str(), ucs_status_string(status));
            continue;
        }
        ++count;
    }
    return count;
}

} // namespace ucp
