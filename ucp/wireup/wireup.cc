/*
 * The wireup handshake (wireup.h): REQUEST, REPLY and ACK, ep matching,
 * and connecting the connect-to-ep lanes.
 *
 * A server's ep accepting a client-server connection sends its REQUEST
 * too, and it may overtake the server's answer on the bootstrap socket. It
 * names the port our ep connects from: while our ep connecting from that
 * port waits for its answer, the REQUEST waits; once the ep has lanes it
 * answers the REQUEST as its own instead of making another ep.
 */
#include "wireup.h"

#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_worker.h>
#include <ucp/proto/send_common.h>
#include <ucp/wireup/sockaddr_cm.h>
#include <ucs/debug/log.h>
#include <ucs/memory/memtype_registry.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace ucp::wireup {

namespace {

/* Whether some lane of the ep connects to an ep. */
bool has_p2p_lanes(const ucp_ep *ep)
{
    for (uint8_t i = 0; i < ep->num_lanes; ++i) {
        if (ep->lanes[i].p2p) {
            return true;
        }
    }
    return false;
}

const char *type_name(uint8_t type)
{
    switch (type) {
    case wire::wireup_type::REQUEST:
        return "request";
    case wire::wireup_type::REPLY:
        return "reply";
    case wire::wireup_type::ACK:
        return "ack";
    default:
        return "?";
    }
}

/* ---- sending ---------------------------------------------------------- */

/* bounce: the message, offset: its length. */
ucs_status_t message_step(request *req)
{
    ucp_ep *ep = req->u.send.ep;
    byte_span m{req->u.send.bounce, req->u.send.offset};
    ssize_t packed = ep_wireup_lane(ep)->am_bcopy(wire::AM_WIREUP, pack_span, &m, 0);
    if (packed == UCS_ERR_NO_RESOURCE) {
        return UCS_ERR_NO_RESOURCE;
    }
    ucs::memtype::bounce_free(req->u.send.bounce);
    req->u.send.bounce = nullptr;
    request_complete(req, (packed < 0) ? ucs_status_t(packed) : UCS_OK);
    return UCS_OK;
}

template <typename T>
void append(std::vector<uint8_t> *out, const T &value)
{
    const auto *p = reinterpret_cast<const uint8_t *>(&value);
    out->insert(out->end(), p, p + sizeof(value));
}

/* The message of `type` from `ep`: header, our worker address (REQUEST),
 * and our connect-to-ep lanes' ep addresses, each naming its entry in that
 * address. The address is of the kind the ep reached the peer by (all our
 * transports, or the network ones): the peer's ep made from it chooses
 * lanes among the same kind as ours, and its lanes' entry indices and the
 * REPLY's (of that kind of its address) are the ones ours use. */
ucs_status_t pack_message(ucp_ep *ep, uint8_t type, uint16_t client_port, std::vector<uint8_t> *out)
{
    ucp_worker *worker = ep->worker;
    std::vector<unsigned> iface_of_entry;
    const unpacked_address self = worker->address(ep->net_only_address, &iface_of_entry);
    void *address               = nullptr;
    size_t address_length       = 0;
    if (type == wire::wireup_type::REQUEST) {
        ucs_status_t status = pack_address(self, &address, &address_length);
        if (status != UCS_OK) {
            return status;
        }
    }
    std::vector<uint8_t> records;
    uint16_t num_records = 0;
    if (type != wire::wireup_type::ACK) {
        for (uint8_t i = 0; i < ep->num_lanes; ++i) {
            const lane &l = ep->lanes[i];
            if (!l.p2p) {
                continue;
            }
            auto it = std::find(iface_of_entry.begin(), iface_of_entry.end(), l.iface_index);
            const size_t length = worker->ifaces[l.iface_index].iface->attr().ep_addr_len;
            std::vector<uint8_t> bytes(length);
            if ((it == iface_of_entry.end()) || (length > wire::wireup_max_ep_addr) ||
                (l.ep->get_address(bytes.data()) != UCS_OK)) {
                std::free(address);
                ucs_error("worker '%s': no address for lane %u of ep %u", worker->name.c_str(), i,
                          ep->id);
                return UCS_ERR_INVALID_ADDR;
            }
            append(&records,
                   wire::wireup_ep_addr{uint16_t(it - iface_of_entry.begin()), uint16_t(length)});
            records.insert(records.end(), bytes.begin(), bytes.end());
            ++num_records;
        }
    }
    wire::wireup_hdr hdr{};
    hdr.type           = type;
    hdr.num_ep_addrs   = num_records;
    hdr.conn_sn        = ep->conn_sn;
    hdr.src_uuid       = worker->uuid;
    hdr.src_ep_id      = ep->local_id;
    hdr.dst_ep_id      = (type == wire::wireup_type::REQUEST) ? 0 : ep->remote_id;
    hdr.address_length = uint32_t(address_length);
    hdr.client_port    = client_port;
    out->clear();
    append(out, hdr);
    if (address != nullptr) {
        const auto *a = static_cast<const uint8_t *>(address);
        out->insert(out->end(), a, a + address_length);
        std::free(address);
    }
    out->insert(out->end(), records.begin(), records.end());
    return UCS_OK;
}

ucs_status_t send_message(ucp_ep *ep, uint8_t type, uint16_t client_port = 0)
{
    ucp_worker *worker = ep->worker;
    std::vector<uint8_t> bytes;
    ucs_status_t status = pack_message(ep, type, client_port, &bytes);
    if (status != UCS_OK) {
        return status;
    }
    uct::ep *lane = ep_wireup_lane(ep);
    if (bytes.size() > lane->owner().attr().am.max_bcopy) {
        ucs_error("worker '%s': a wireup %s of %zu bytes does not fit the wireup lane "
                  "(%zu bytes)",
                  worker->name.c_str(), type_name(type), bytes.size(),
                  lane->owner().attr().am.max_bcopy);
        return UCS_ERR_EXCEEDS_LIMIT;
    }
    /* send_state::bounce: freed by whoever ends the request. */
    void *copy   = ucs::memtype::bounce_alloc(bytes.size());
    request *req = (copy != nullptr) ? worker->get_request() : nullptr;
    if (req == nullptr) {
        ucs::memtype::bounce_free(copy);
        return UCS_ERR_NO_MEMORY;
    }
    std::memcpy(copy, bytes.data(), bytes.size());
    request_reset(req, worker, request_flag::RELEASED | request_flag::WIREUP);
    req->u.send.ep     = ep;
    req->u.send.step   = message_step;
    req->u.send.packer = dt::packer(); /* inert: a purge releases the request */
    req->u.send.reg    = {};
    req->u.send.bounce = copy;
    req->u.send.offset = bytes.size();
    ucs_debug("worker '%s': ep %u sends a wireup %s to '%s'", worker->name.c_str(), ep->id,
              type_name(type), ep->peer_name.c_str());
    status = ep_send_wireup(ep, req);
    if ((status != UCS_OK) && (status != UCS_INPROGRESS)) {
        send_request_abort(req); /* never sent nor queued: its copy goes too */
        return status;
    }
    return UCS_OK;
}

/* ---- the handshake ---------------------------------------------------- */

conn_key match_key(const ucp_ep *ep)
{
    return {ep->remote_uuid, ep->conn_sn};
}

/* Takes `ep` out of `set` if it is there (not another ep of its key). */
void match_erase(ep_match_set &set, const ucp_ep *ep)
{
    auto it = set.find(match_key(ep));
    if ((it != set.end()) && (*it == ep)) {
        set.erase(it);
    }
}

/* Puts `ep` in `set` under its remote_uuid and conn_sn, instead of any
 * other ep there under them. */
void match_put(ep_match_set &set, ucp_ep *ep)
{
    auto it = set.find(match_key(ep));
    if (it != set.end()) {
        set.erase(it);
    }
    set.insert(ep);
}

/* The ep may use every lane now: its held sends go out, in order. */
void set_ready(ucp_ep *ep)
{
    if (ep->flags & ep_flag::READY) {
        return;
    }
    ep->flags |= ep_flag::READY;
    ucs_debug("worker '%s': ep %u to '%s' is wired up (peer ep 0x%llx)", ep->worker->name.c_str(),
              ep->id, ep->peer_name.c_str(), static_cast<unsigned long long>(ep->remote_id));
    ep_release_sends(ep);
}

/* The peer's ep paired with ours; false (message dropped) on a conflict. */
bool set_remote(ucp_ep *ep, uint64_t remote_id)
{
    if ((ep->remote_id != 0) && (ep->remote_id != remote_id)) {
        ucs_warn("worker '%s': ep %u to '%s' is paired with peer ep 0x%llx already, "
                 "not 0x%llx: dropping the wireup message",
                 ep->worker->name.c_str(), ep->id, ep->peer_name.c_str(),
                 static_cast<unsigned long long>(ep->remote_id),
                 static_cast<unsigned long long>(remote_id));
        return false;
    }
    ep->remote_id = remote_id;
    if (ep->flags & ep_flag::EXPECTED) {
        match_erase(ep->worker->eps_expected, ep);
        ep->flags &= ~ep_flag::EXPECTED;
    }
    return true;
}

/*
 * Connects every connect-to-ep lane to the peer's ep address for the
 * address entry it reaches. A missing or wrong address fails the ep (the
 * peer chose other lanes: the two sides cannot talk on them).
 */
bool connect_p2p(ucp_ep *ep, const message &msg)
{
    if ((ep->flags & ep_flag::LOCAL_CONNECTED) || !has_p2p_lanes(ep)) {
        ep->flags |= ep_flag::LOCAL_CONNECTED;
        return true;
    }
    ucp_worker *worker = ep->worker;
    for (uint8_t i = 0; i < ep->num_lanes; ++i) {
        const lane &l = ep->lanes[i];
        if (!l.p2p) {
            continue;
        }
        const ep_address *found = nullptr;
        for (const ep_address &a : msg.ep_addrs) {
            if (a.entry == l.remote_entry) {
                found = &a;
            }
        }
        const uct::iface_attr &attr = worker->ifaces[l.iface_index].iface->attr();
        ucs_status_t status         = UCS_ERR_UNREACHABLE;
        if ((found != nullptr) && (found->bytes.size() == attr.ep_addr_len) &&
            (ep->p2p_dev_addrs != nullptr) && (i < ep->p2p_dev_addrs->size())) {
            const std::vector<uint8_t> &dev = (*ep->p2p_dev_addrs)[i];
            status = l.ep->connect_to_ep(dev.data(), dev.size(), found->bytes.data(),
                                         found->bytes.size());
        }
        if (status != UCS_OK) {
            ucs_error("worker '%s': cannot connect lane %u (%s) of ep %u to '%s': %s",
                      worker->name.c_str(), i,
                      worker->context.tls[worker->ifaces[l.iface_index].tl_index].resource.tl_name,
                      ep->id, ep->peer_name.c_str(),
                      (found == nullptr) ? "the peer gave no ep address for it" :
                                           ucs_status_string(status));
            ep_set_failed(ep, UCS_ERR_UNREACHABLE);
            return false;
        }
    }
    ep->flags |= ep_flag::LOCAL_CONNECTED;
    ep->p2p_dev_addrs.reset();
    return true;
}

void answer_request(ucp_ep *ep, const message &msg)
{
    if (!ep->usable() || !set_remote(ep, msg.hdr.src_ep_id) || !connect_p2p(ep, msg)) {
        return;
    }
    ucs_status_t status = send_message(ep, wire::wireup_type::REPLY);
    if (status != UCS_OK) {
        ep_set_failed(ep, status);
        return;
    }
    if (!has_p2p_lanes(ep)) {
        set_ready(ep);
    }
}

/* Our ep connecting to a listener from local port `port`, if any. */
ucp_ep *connecting_from(ucp_worker *worker, uint16_t port, bool *waiting)
{
    ucp_ep *found = nullptr;
    worker->ep_ids.for_each([&](unsigned, ucp_ep *ep) {
        if ((ep->flags & ep_flag::CLIENT) && (ep->remote_id == 0) && ep->usable() &&
            (ep->sockaddrs != nullptr) && (cs::port_of(ep->sockaddrs->local) == port)) {
            found = ep;
        }
    });
    *waiting = (found != nullptr) && (found->flags & ep_flag::CONNECTING);
    return found;
}

void process_request(ucp_worker *worker, const message &msg)
{
    const uint64_t uuid = msg.hdr.src_uuid;
    ucp_ep *ep          = nullptr;
    if (msg.hdr.client_port != 0) {
        bool waiting;
        ep = connecting_from(worker, uint16_t(msg.hdr.client_port), &waiting);
        if ((ep != nullptr) && (ep->remote_uuid != uuid)) {
            ucs_warn("worker '%s': a client-server wireup request from another worker "
                     "than the server's: dropped",
                     worker->name.c_str());
            return;
        }
    }
    const bool by_sn = (msg.hdr.client_port == 0);
    if ((ep == nullptr) && by_sn) {
        auto it = worker->eps_expected.find(conn_key{uuid, msg.hdr.conn_sn});
        if (it != worker->eps_expected.end()) {
            ep = *it; /* both sides connect at once: the pair forms here */
        }
    }
    if (ep == nullptr) {
        if (by_sn && worker->eps_unexpected.count(conn_key{uuid, msg.hdr.conn_sn})) {
            ucs_debug("worker '%s': a second wireup request for one pairing: dropped",
                      worker->name.c_str());
            return;
        }
        if (worker->num_peer_eps >= worker->context.config.max_peer_eps) {
            ++worker->dropped_wireups;
            return;
        }
        ucs_status_t status = ep_create_to_address(worker, msg.address.data(), msg.address.size(),
                                                   0, &ep);
        if (status != UCS_OK) {
            ucs_warn("worker '%s': cannot answer a peer that connected to us: %s",
                     worker->name.c_str(), ucs_status_string(status));
            return;
        }
        if (by_sn) {
            ep->conn_sn = msg.hdr.conn_sn;
            ep->flags |= ep_flag::UNEXPECTED;
            match_put(worker->eps_unexpected, ep); /* ep->remote_uuid is uuid */
        }
        if (has_p2p_lanes(ep)) {
            ep_hold_sends(ep); /* until the peer's lanes are connected to ours */
        }
    }
    answer_request(ep, msg);
}

void process_reply(ucp_worker *worker, const message &msg)
{
    ucp_ep *ep = worker->ep_by_id(msg.hdr.dst_ep_id, msg.hdr.src_uuid);
    if ((ep == nullptr) || !ep->usable() || !set_remote(ep, msg.hdr.src_ep_id) ||
        !connect_p2p(ep, msg)) {
        return;
    }
    if (has_p2p_lanes(ep)) {
        /* The peer waits for this before it uses its lanes to us. */
        ucs_status_t status = send_message(ep, wire::wireup_type::ACK);
        if (status != UCS_OK) {
            ep_set_failed(ep, status);
            return;
        }
    }
    set_ready(ep);
}

void process_ack(ucp_worker *worker, const message &msg)
{
    ucp_ep *ep = worker->ep_by_id(msg.hdr.dst_ep_id, msg.hdr.src_uuid);
    if ((ep != nullptr) && ep->usable() && (ep->remote_id == msg.hdr.src_ep_id) &&
        (ep->flags & ep_flag::LOCAL_CONNECTED)) {
        set_ready(ep);
    }
}

/* Pairs an ep to our own worker with itself: its lanes connect to
 * themselves, nothing is sent. */
ucs_status_t pair_with_itself(ucp_ep *ep)
{
    ucp_worker *worker = ep->worker;
    message msg{};
    for (uint8_t i = 0; i < ep->num_lanes; ++i) {
        const lane &l = ep->lanes[i];
        if (!l.p2p) {
            continue;
        }
        ep_address a{l.remote_entry,
                     std::vector<uint8_t>(worker->ifaces[l.iface_index].iface->attr().ep_addr_len)};
        ucs_status_t status = l.ep->get_address(a.bytes.data());
        if (status != UCS_OK) {
            return status;
        }
        msg.ep_addrs.push_back(std::move(a));
    }
    ep->remote_id = ep->local_id;
    if (!connect_p2p(ep, msg)) {
        return UCS_ERR_UNREACHABLE;
    }
    set_ready(ep);
    return UCS_OK;
}

bool read_message(const void *data, size_t length, message *msg)
{
    ucs::wire_reader r(data, length);
    wire::wireup_hdr &hdr = msg->hdr;
    if (!r.get(&hdr) || (hdr.reserved8 != 0) || (hdr.reserved16 != 0) || (hdr.src_ep_id == 0) ||
        (hdr.num_ep_addrs > max_lanes)) {
        return false;
    }
    switch (hdr.type) {
    case wire::wireup_type::REQUEST: {
        const uint8_t *address;
        size_t total;
        uint64_t uuid;
        if ((hdr.dst_ep_id != 0) || (hdr.address_length > address_max_length) ||
            !r.bytes(hdr.address_length, &address) ||
            (address_peek(address, hdr.address_length, &total, &uuid) != UCS_OK) ||
            (total != hdr.address_length) || (uuid != hdr.src_uuid)) {
            return false;
        }
        msg->address.assign(address, address + hdr.address_length);
        break;
    }
    case wire::wireup_type::REPLY:
    case wire::wireup_type::ACK:
        if ((hdr.dst_ep_id == 0) || (hdr.address_length != 0) || (hdr.client_port != 0) ||
            ((hdr.type == wire::wireup_type::ACK) && (hdr.num_ep_addrs != 0))) {
            return false;
        }
        break;
    default:
        return false;
    }
    for (unsigned i = 0; i < hdr.num_ep_addrs; ++i) {
        wire::wireup_ep_addr rec;
        const uint8_t *bytes;
        if (!r.get(&rec) || (rec.length == 0) || (rec.length > wire::wireup_max_ep_addr) ||
            (rec.entry >= address_max_entries) || !r.bytes(rec.length, &bytes)) {
            return false;
        }
        msg->ep_addrs.push_back({rec.entry, std::vector<uint8_t>(bytes, bytes + rec.length)});
    }
    return r.at_end();
}

/* A REQUEST that would make a new ep: counted against UCX_MAX_PEER_EPS. */
bool makes_new_ep(const ucp_worker *worker, const wire::wireup_hdr &hdr)
{
    return (hdr.type == wire::wireup_type::REQUEST) && (hdr.client_port == 0) &&
           !worker->eps_expected.count(conn_key{hdr.src_uuid, hdr.conn_sn});
}

} // namespace

const char *state_name(const ucp_ep *ep)
{
    if (ep->flags & ep_flag::READY) {
        return "ready";
    }
    if (ep->flags & ep_flag::CONNECTING) {
        return "waiting for the server's address";
    }
    if (ep->remote_id == 0) {
        return (ep->flags & ep_flag::REQ_SENT) ? "request sent, waiting for the reply" :
                                                 "waiting for the server's request";
    }
    return "lanes connected, waiting for the peer's ack";
}

void ep_forget(ucp_ep *ep)
{
    ucp_worker *worker = ep->worker;
    if (ep->flags & ep_flag::EXPECTED) {
        match_erase(worker->eps_expected, ep);
    }
    if (ep->flags & ep_flag::UNEXPECTED) {
        match_erase(worker->eps_unexpected, ep);
    }
    ep->flags &= ~(ep_flag::EXPECTED | ep_flag::UNEXPECTED);
}

ucs_status_t connect(ucp_worker *worker, const void *address, size_t max_length,
                     uint16_t client_port, ucp_ep **ep_p)
{
    uint64_t uuid;
    ucs_status_t status = address_peek(address, std::min(max_length, address_header_size), nullptr,
                                       &uuid);
    if (status != UCS_OK) {
        ucs_error("ucp_ep_create: not a worker address");
        return status;
    }
    const bool by_sn = (client_port == 0) && (uuid != worker->uuid);
    uint32_t sn      = 0;
    /* The sn is taken only by an ep that exists and whose REQUEST is out:
     * a failed ucp_ep_create must not shift our later eps against the
     * peer's. */
    if (by_sn) {
        sn = worker->conn_sn_next[uuid];
        /* The peer's n-th ep to us made one of ours already: ours it is. */
        auto it = worker->eps_unexpected.find(conn_key{uuid, sn});
        if ((it != worker->eps_unexpected.end()) && (*it)->usable()) {
            ++worker->conn_sn_next[uuid];
            ucp_ep *ep = *it;
            worker->eps_unexpected.erase(it);
            ep->flags = (ep->flags & ~ep_flag::UNEXPECTED) | ep_flag::USER;
            --worker->num_peer_eps;
            ucs_debug("worker '%s': ep %u (made for a request of '%s') is the "
                      "application's now",
                      worker->name.c_str(), ep->id, ep->peer_name.c_str());
            *ep_p = ep;
            return UCS_OK;
        }
    }

    ucp_ep *ep;
    status = ep_create_to_address(worker, address, max_length, ep_flag::USER, &ep);
    if (status != UCS_OK) {
        return status;
    }
    if ((client_port == 0) && (uuid == worker->uuid)) {
        status = pair_with_itself(ep);
        if (status != UCS_OK) {
            ep_destroy(ep);
            return status;
        }
        *ep_p = ep;
        return UCS_OK;
    }
    ep->conn_sn = sn;
    if (by_sn) {
        match_put(worker->eps_expected, ep); /* ep->remote_uuid is uuid */
        ep->flags |= ep_flag::EXPECTED;
    }
    if (has_p2p_lanes(ep)) {
        ep_hold_sends(ep);
    }
    status = send_message(ep, wire::wireup_type::REQUEST, client_port);
    if (status != UCS_OK) {
        ep_destroy(ep);
        return status;
    }
    ep->flags |= ep_flag::REQ_SENT;
    if (by_sn) {
        ++worker->conn_sn_next[uuid];
    }
    *ep_p = ep;
    return UCS_OK;
}

unsigned progress(ucp_worker *worker)
{
    unsigned count = 0;
    /* Messages queued meanwhile (by callbacks) wait for the next round. */
    for (size_t n = worker->wireup_msgs.size(); n > 0; --n) {
        message msg = std::move(worker->wireup_msgs.front());
        worker->wireup_msgs.pop_front();
        if (msg.hdr.type == wire::wireup_type::REQUEST) {
            if (msg.hdr.client_port != 0) {
                bool waiting;
                connecting_from(worker, uint16_t(msg.hdr.client_port), &waiting);
                if (waiting) {
                    worker->wireup_msgs.push_back(std::move(msg)); /* its ep has no lanes yet */
                    continue;
                }
            }
            --worker->queued_requests;
            process_request(worker, msg);
        } else if (msg.hdr.type == wire::wireup_type::REPLY) {
            process_reply(worker, msg);
        } else {
            process_ack(worker, msg);
        }
        ++count;
    }
    return count;
}

bool messages_left(const ucp_worker &worker)
{
    return !worker.wireup_msgs.empty();
}

} // namespace ucp::wireup

namespace ucp {

ucs_status_t wireup_handler(void *arg, void *data, size_t length, unsigned)
{
    auto *worker = static_cast<ucp_worker *>(arg);
    wireup::message msg;
    if (!wireup::read_message(data, length, &msg)) {
        ucs_warn("worker '%s': dropping a malformed wireup message (%zu bytes)",
                 worker->name.c_str(), length);
        return UCS_OK;
    }
    if ((msg.hdr.type != wire::wireup_type::REQUEST) &&
        (worker->ep_by_id(msg.hdr.dst_ep_id, msg.hdr.src_uuid) == nullptr)) {
        ucs_debug("worker '%s': a wireup %s names no ep of ours to its sender: dropped",
                  worker->name.c_str(), wireup::type_name(msg.hdr.type));
        return UCS_OK; /* stale: its ep is gone */
    }
    if (wireup::makes_new_ep(worker, msg.hdr) &&
        (worker->num_peer_eps + worker->queued_requests >= worker->context.config.max_peer_eps)) {
        if (worker->dropped_wireups++ == 0) {
            ucs_warn("worker '%s': %u endpoints made for peers already (UCX_MAX_PEER_EPS): "
                     "dropping wireup requests of new peers",
                     worker->name.c_str(), worker->num_peer_eps);
        }
        return UCS_OK;
    }
    /* Only REQUESTs are bounded here: a REPLY or ACK names a live ep of
     * ours (checked above), and dropping one would hold that ep forever. */
    if ((msg.hdr.type == wire::wireup_type::REQUEST) &&
        (worker->queued_requests >= wireup::max_queued_messages)) {
        ucs_warn("worker '%s': %u wireup requests wait already: dropping one", worker->name.c_str(),
                 worker->queued_requests);
        return UCS_OK;
    }
    if (msg.hdr.type == wire::wireup_type::REQUEST) {
        ++worker->queued_requests;
    }
    worker->wireup_msgs.push_back(std::move(msg));
    worker->schedule(deferred::WIREUPS);
    return UCS_OK;
}

size_t ep_match_hash::operator()(const conn_key &key) const noexcept
{
    return msg_key_hash()(key);
}

size_t ep_match_hash::operator()(const ucp_ep *ep) const noexcept
{
    return (*this)(wireup::match_key(ep));
}

bool ep_match_equal::operator()(const ucp_ep *a, const ucp_ep *b) const noexcept
{
    return wireup::match_key(a) == wireup::match_key(b);
}

bool ep_match_equal::operator()(const conn_key &key, const ucp_ep *ep) const noexcept
{
    return key == wireup::match_key(ep);
}

bool ep_match_equal::operator()(const ucp_ep *ep, const conn_key &key) const noexcept
{
    return key == wireup::match_key(ep);
}

} // namespace ucp
