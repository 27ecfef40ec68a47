/*
 * Rendezvous: the sender registers its buffer on the rendezvous lane's
 * memory domain and sends an RTS with the packed key; the receiver, once a
 * receive matches, pulls the data with get_zcopy on its own lane of that
 * domain (cma between processes on a node, tcp otherwise, self within one
 * worker) and answers with an ATS, which completes the send.
 *
 * Split (RNDV_SCHEME=auto between processes on a node, or put_zcopy): the
 * receiver first sends an RTR asking the sender to write the head of the
 * message into its buffer (rndv_push.cc), pulls the tail itself, and sends
 * the ATS once both its gets and the sender's ATP are in.
 *
 * Several lanes (UCX_MAX_RNDV_LANES: tcp interfaces, ports of an adapter,
 * of the sender's key's md) each pull a share of the message, in
 * proportion to their bandwidth (rndv_rails), their gets issued in turn.
 *
 * Into memory the CPU cannot touch, over a lane that writes only host
 * memory, the pull lands in a host bounce buffer. A contiguous destination
 * is pulled in pieces of UCX_RNDV_FRAG_SIZE (rndv_pieces): each piece, once
 * in, moves on to the destination by an asynchronous staging copy while
 * the next is pulled, so the copy to the device overlaps the transfer.
 */
#include <ucp/core/ucp_ep.h>
#include <ucp/core/ucp_worker.h>
#include <ucp/proto/am_handlers.h>
#include <ucp/proto/send_common.h>
#include <ucp/proto/wire.h>
#include <ucp/tag/rndv.h>
#include <ucp/tag/tag_recv.h>
#include <ucs/debug/log.h>
#include <ucs/memory/memtype_registry.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

namespace ucp {

namespace {

size_t pack_rts(void *dest, void *arg)
{
    return rndv_pack_rts(static_cast<request *>(arg), dest);
}

ucs_status_t rts_step(request *req)
{
    return rndv_send_rts(req, wire::AM_RNDV_RTS);
}

request *request_of_comp(uct::completion *comp)
{
    return reinterpret_cast<request *>(reinterpret_cast<char *>(comp) -
                                       offsetof(request, u.recv.comp));
}

} // namespace

/* One piece of a bounce pull: its get's completion, and where it goes. */
struct rndv_piece {
    uct::completion comp; /* first: the get completes this */
    request *req;
    size_t offset;
    size_t length;
};

// clang-format off
struct rndv_pieces {
    std::vector<rndv_piece> piece;
    size_t                  size;             /* of every piece but the last */
    bool                    copying = false;  /* copies started: finish before the
                                                 bounce buffer goes */
};
// clang-format on

/*
 * A pull split over several lanes: the sender's keys of mds besides
 * rkey_md (KEY_LIST), and once planned (make_rails), each lane's range of
 * the message and how far its gets have been issued.
 */
struct rndv_rails {
    struct md_key {
        unsigned md;
        uct::rkey_bundle rkey;
        buffer_reg get_reg; /* where we pull to, if the md needs a memh */
    };
    struct share {
        const lane *l;
        uct::rkey_t rkey;
        uct::mem_h memh;
        size_t max_frag;
        size_t next; /* the first byte not asked for yet */
        size_t end;
    };
    md_key keys[max_lanes];
    unsigned num_keys = 0;
    share lane_share[max_lanes];
    unsigned count = 0;
    bool planned   = false;
};

static_assert(sizeof(wire::am_rts_hdr) == sizeof(wire::rts_hdr),
              "rndv_select sizes the tag and active-message RTS alike");

unsigned rndv_split_shares(size_t length, const double *Bps, unsigned count, size_t min_chunk,
                           size_t *shares)
{
    constexpr size_t page = 4096;
    const size_t least    = std::max<size_t>(min_chunk, 1);
    for (unsigned used = count; used > 1; --used) {
        double total = 0;
        for (unsigned i = 0; i < used; ++i) {
            total += Bps[i];
        }
        size_t given = 0;
        bool fits    = total > 0;
        for (unsigned i = 0; fits && (i + 1 < used); ++i) {
            const double exact = double(length) * (Bps[i] / total);
            shares[i]          = size_t(exact / page + 0.5) * page; /* the nearest page */
            given += shares[i];
            fits = (shares[i] >= least) && (given <= length);
        }
        if (fits && (length - given >= least)) {
            shares[used - 1] = length - given;
            return used;
        }
    }
    shares[0] = length;
    return 1;
}

namespace {

/* A piece is in the bounce buffer: start its copy to the destination. */
ucs_status_t piece_move_on(request *req, const rndv_piece &p)
{
    recv_state &r     = req->u.recv;
    r.pieces->copying = true;
    return ucs::memtype::copy_start(static_cast<uint8_t *>(r.unpacker.contig_buffer()) + p.offset,
                                    r.unpacker.memory_type(),
                                    static_cast<uint8_t *>(r.bounce) + p.offset,
                                    UCS_MEMORY_TYPE_HOST, p.length);
}

void piece_get_completed(uct::completion *comp)
{
    auto *p             = reinterpret_cast<rndv_piece *>(comp);
    ucs_status_t status = comp->status;
    if (status == UCS_OK) {
        status = piece_move_on(p->req, *p);
    }
    uct::invoke_completion(&p->req->u.recv.comp, status);
}

/* Pieces of `size` over a contiguous destination; nullptr: one whole copy
 * at the end (one piece, or no memory for the list). */
rndv_pieces *make_pieces(request *req, size_t size)
{
    recv_state &r = req->u.recv;
    if (!r.unpacker.is_contig() || (size == 0) || (r.get_length <= size)) {
        return nullptr;
    }
    auto *pieces = new (std::nothrow) rndv_pieces();
    if (pieces == nullptr) {
        return nullptr;
    }
    try {
        pieces->piece.reserve((r.get_length + size - 1) / size);
        for (size_t offset = 0; offset < r.get_length; offset += size) {
            pieces->piece.push_back({{piece_get_completed, 1, UCS_OK},
                                     req,
                                     offset,
                                     std::min(size, r.get_length - offset)});
        }
    } catch (...) {
        delete pieces;
        return nullptr;
    }
    pieces->size = size;
    return pieces;
}

/* Copies the pieces started must land before their source goes. */
void release_pieces(request *req)
{
    recv_state &r = req->u.recv;
    if (r.pieces == nullptr) {
        return;
    }
    if (r.pieces->copying) {
        ucs::memtype::copy_finish(r.unpacker.memory_type());
    }
    delete r.pieces;
    r.pieces = nullptr;
}

/* The key and local handle a pull on lane `l` uses; false when the sender
 * gave no key of its md, or we cannot register our buffer there. */
bool rail_key(request *req, const lane &l, uct::rkey_t *rkey, uct::mem_h *memh)
{
    recv_state &r = req->u.recv;
    if (l.md_index == r.rkey_md) {
        *rkey = r.rkey.rkey;
        *memh = r.get_reg.memh;
        return true;
    }
    for (unsigned i = 0; (r.rails != nullptr) && (i < r.rails->num_keys); ++i) {
        rndv_rails::md_key &k = r.rails->keys[i];
        if (k.md != l.md_index) {
            continue;
        }
        ucp_context &ctx = req->worker->context;
        if (!k.get_reg.held() && (ctx.mds[k.md].md->attr().flags & uct::md_flag::NEED_MEMH) &&
            (buffer_reg_get(ctx, k.md, r.unpacker.contig_buffer(), r.get_length, &k.get_reg) !=
             UCS_OK)) {
            return false;
        }
        *rkey = k.rkey.rkey;
        *memh = k.get_reg.memh;
        return true;
    }
    return false;
}

/*
 * Shares the rest of the pull among the ep's rendezvous lanes whose md the
 * sender gave a key of (ep_config::rndv_rails), when there are several and
 * the rest is large enough; else the pull stays on one lane. Not for a
 * bounce pull, whose pieces follow one lane's order.
 */
void make_rails(request *req)
{
    recv_state &r      = req->u.recv;
    const ep_config &c = *r.ep->cfg;
    if (r.rails != nullptr) {
        r.rails->planned = true;
    }
    if (c.num_rndv_rails < 2) {
        return;
    }
    rndv_rails::share found[max_lanes];
    double Bps[max_lanes];
    unsigned count = 0;
    for (unsigned i = 0; i < c.num_rndv_rails; ++i) {
        /* Every rail can get (lane selection's can_pull); a failed ep's
         * lanes are gone. */
        const lane &l = r.ep->lanes[c.rndv_rails[i]];
        if ((l.ep == nullptr) || !rail_key(req, l, &found[count].rkey, &found[count].memh)) {
            continue;
        }
        found[count].l = &l;
        Bps[count++]   = c.rndv_rail_Bps[i];
    }
    size_t shares[max_lanes];
    const size_t rest = r.get_length - r.received;
    count = rndv_split_shares(rest, Bps, count, req->worker->context.config.min_rndv_chunk_size,
                              shares);
    if (count < 2) {
        return;
    }
    if ((r.rails == nullptr) && ((r.rails = new (std::nothrow) rndv_rails()) == nullptr)) {
        return; /* one lane pulls it all */
    }
    size_t offset = r.received;
    for (unsigned i = 0; i < count; ++i) {
        const uct::iface_attr &attr = req->worker->ifaces[found[i].l->iface_index].iface->attr();
        found[i].max_frag           = std::max<size_t>(attr.get.max_zcopy, 1);
        found[i].next               = offset;
        found[i].end                = offset + shares[i];
        r.rails->lane_share[i]      = found[i];
        offset += shares[i];
    }
    r.rails->count   = count;
    r.rails->planned = true;
    ucs_debug("worker '%s': rendezvous of %zu bytes pulled over %u lanes",
              req->worker->name.c_str(), rest, count);
}

/* The sender's other keys, and our registrations for them. */
void release_rails(request *req)
{
    recv_state &r = req->u.recv;
    if (r.rails == nullptr) {
        return;
    }
    ucp_context &ctx = req->worker->context;
    for (unsigned i = 0; i < r.rails->num_keys; ++i) {
        rndv_rails::md_key &k = r.rails->keys[i];
        ctx.mds[k.md].component->rkey_release(k.rkey);
        buffer_reg_release(ctx, k.md, &k.get_reg);
    }
    delete r.rails;
    r.rails = nullptr;
}

/* Keeps the sender's keys of our other mds for make_rails; a key we cannot
 * use leaves its md's lanes out. */
void adopt_keys(request *req, const rts_keys &keys)
{
    recv_state &r    = req->u.recv;
    ucp_context &ctx = req->worker->context;
    for (unsigned i = 0; i < keys.num_others; ++i) {
        for (unsigned md = 0; md < ctx.mds.size(); ++md) {
            if ((md == r.rkey_md) || (ctx.mds[md].name != keys.others[i].md_name)) {
                continue;
            }
            if ((r.rails == nullptr) && ((r.rails = new (std::nothrow) rndv_rails()) == nullptr)) {
                return;
            }
            rndv_rails::md_key &k = r.rails->keys[r.rails->num_keys];
            k                     = {md, {}, {}};
            const ucs_status_t st = ctx.mds[md].component->rkey_unpack(keys.others[i].key,
                                                                       keys.others[i].length,
                                                                       &k.rkey);
            if (st == UCS_OK) {
                ++r.rails->num_keys;
            } else {
                ucs_debug("worker '%s': the sender's key of md %s is unusable (%s)",
                          req->worker->name.c_str(), keys.others[i].md_name, ucs_status_string(st));
            }
            break;
        }
    }
}

/* The sender's key, our registration and the bounce buffer. */
void rndv_recv_release(request *req)
{
    recv_state &r      = req->u.recv;
    ucp_worker *worker = req->worker;
    if (r.bounce != nullptr) {
        release_pieces(req);
    } else {
        release_rails(req);
    }
    ucs::memtype::bounce_free(r.bounce);
    r.bounce = nullptr;
    if (r.rkey.handle != nullptr || r.rkey.rkey != 0) {
        worker->context.mds[r.rkey_md].component->rkey_release(r.rkey);
        r.rkey = {};
    }
    buffer_reg_release(worker->context, r.rkey_md, &r.push_reg);
    buffer_reg_release(worker->context, r.rkey_md, &r.get_reg);
    worker->unregister_request(req);
}

/* Everything pulled (or failed): unpack, answer the sender, complete. */
void rndv_recv_done(request *req)
{
    recv_state &r         = req->u.recv;
    ucp_worker *worker    = req->worker;
    ucs_status_t transfer = r.comp.status;
    if ((r.bounce != nullptr) && (transfer == UCS_OK)) {
        ucs_status_t st;
        if (r.pieces != nullptr) {
            st                = ucs::memtype::copy_finish(r.unpacker.memory_type());
            r.pieces->copying = false;
        } else {
            st = r.unpacker.unpack(r.bounce, 0, r.get_length);
        }
        if ((st != UCS_OK) && (r.data_status == UCS_OK)) {
            r.data_status = st;
        }
    }
    rndv_recv_release(req);
    send_reply_to(worker, r.src_ep_id, r.src_uuid, wire::AM_RNDV_ATS, r.remote_req_id, transfer);
    recv_finish(req, (transfer != UCS_OK) ? transfer : r.data_status);
}

void rndv_get_completed(uct::completion *comp)
{
    rndv_recv_done(request_of_comp(comp));
}

/* One get of `length` bytes at `offset` of the message on lane `l` with
 * key `rkey` and local handle `memh`: false when the lane has no room for
 * it now. */
bool issue_get(request *req, const lane &l, uct::rkey_t rkey, uct::mem_h memh, size_t offset,
               size_t length, uct::completion *comp)
{
    recv_state &r = req->u.recv;
    auto *dest    = static_cast<uint8_t *>(r.bounce != nullptr ? r.bounce :
                                                                 r.unpacker.contig_buffer());
    uct::iov iov{dest + offset, length, memh};
    ++r.comp.count;
    ucs_status_t status = l.ep->get_zcopy(&iov, 1, r.remote_addr + offset, rkey, comp);
    if (status == UCS_INPROGRESS) {
        return true;
    }
    --r.comp.count;
    if (status == UCS_ERR_NO_RESOURCE) {
        return false;
    }
    if ((comp != &r.comp) && (status == UCS_OK)) {
        /* a piece's get is done already */
        status = piece_move_on(req, *reinterpret_cast<rndv_piece *>(comp));
    }
    uct::completion_update_status(&r.comp, status);
    return true;
}

/* Issues the gets of a split pull, a fragment per lane in turn; false when
 * a lane must wait for room. */
bool rndv_issue_rails(request *req)
{
    recv_state &r = req->u.recv;
    bool issued   = true;
    while (issued && (r.received < r.get_length) && (r.comp.status == UCS_OK)) {
        issued = false;
        for (unsigned i = 0; (i < r.rails->count) && (r.comp.status == UCS_OK); ++i) {
            rndv_rails::share &sh = r.rails->lane_share[i];
            const size_t frag     = std::min(sh.max_frag, sh.end - sh.next);
            if ((frag == 0) || !issue_get(req, *sh.l, sh.rkey, sh.memh, sh.next, frag, &r.comp)) {
                continue;
            }
            sh.next += frag;
            r.received += frag;
            issued = true;
        }
    }
    return (r.received == r.get_length) || (r.comp.status != UCS_OK);
}

/* Issues the gets from r.received on; false when it must wait for room. */
bool rndv_issue(request *req)
{
    recv_state &r = req->u.recv;
    if (r.bounce == nullptr) {
        if (((r.rails == nullptr) || !r.rails->planned) && (r.received == r.push_length)) {
            make_rails(req);
        }
        if ((r.rails != nullptr) && (r.rails->count > 0)) {
            return rndv_issue_rails(req);
        }
    }
    const lane *l = rndv_lane_with(r.ep, r.rkey_md, uct::iface_flag::GET_ZCOPY);
    if (l == nullptr) {
        uct::completion_update_status(&r.comp, UCS_ERR_UNREACHABLE);
        return true;
    }
    const uct::iface_attr &attr = r.ep->worker->ifaces[l->iface_index].iface->attr();
    const size_t max_frag       = std::max<size_t>(attr.get.max_zcopy, 1);
    /* Pieces only with a bounce buffer: without one the pointer they share
     * may hold the sender's other keys (a pull left on one lane). */
    rndv_pieces *pieces = nullptr;
    if (r.bounce != nullptr) {
        if ((r.pieces == nullptr) && (r.received == 0)) {
            r.pieces = make_pieces(req,
                                   std::min(max_frag, req->worker->context.config.rndv_frag_size));
        }
        pieces = r.pieces;
    }
    while ((r.received < r.get_length) && (r.comp.status == UCS_OK)) {
        size_t frag           = std::min(max_frag, r.get_length - r.received);
        uct::completion *comp = &r.comp;
        if (pieces != nullptr) {
            rndv_piece *piece = &pieces->piece[r.received / pieces->size];
            frag              = piece->length;
            comp              = &piece->comp;
            *comp             = {piece_get_completed, 1, UCS_OK};
        }
        if (!issue_get(req, *l, r.rkey.rkey, r.get_reg.memh, r.received, frag, comp)) {
            return false;
        }
        r.received += frag;
    }
    return true;
}

/*
 * How many head bytes to ask the sender to write (0: pull everything).
 * auto splits between processes on one node, where each side's copy is
 * bound by its own core; within one process (self) or over the network a
 * second copier buys nothing.
 */
size_t push_length_for(const request *req)
{
    const recv_state &r       = req->u.recv;
    const ucp_worker *worker  = req->worker;
    const context_config &cfg = worker->context.config;
    if (!(r.rts_flags & wire::rts_flag::CAN_PUSH) || (r.bounce != nullptr) || (r.get_length == 0) ||
        (cfg.rndv_scheme == RNDV_SCHEME_GET_ZCOPY)) {
        return 0;
    }
    if (cfg.rndv_scheme == RNDV_SCHEME_PUT_ZCOPY) {
        return r.get_length;
    }
    const lane *l = rndv_lane_with(r.ep, r.rkey_md, uct::iface_flag::GET_ZCOPY);
    if ((l == nullptr) || (r.get_length < cfg.rndv_split_thresh)) {
        return 0;
    }
    unsigned tl = worker->ifaces[l->iface_index].tl_index;
    if (worker->context.tls[tl].resource.type != uct::device_type::SHM) {
        return 0;
    }
    /* Half each, the split on a page boundary so no page is touched twice. */
    constexpr size_t page = 4096;
    return (r.get_length / 2) & ~(page - 1);
}

struct rtr_pack_args {
    request *req;
    uct::md *md;
};

size_t pack_rtr(void *dest, void *arg)
{
    auto *a       = static_cast<rtr_pack_args *>(arg);
    request *req  = a->req;
    recv_state &r = req->u.recv;
    wire::rtr_hdr hdr{};
    hdr.sreq_id     = r.remote_req_id;
    hdr.rreq_id     = req->id;
    hdr.src_uuid    = req->worker->uuid;
    hdr.ep_id       = r.ep->remote_id;
    hdr.address     = reinterpret_cast<uintptr_t>(r.unpacker.contig_buffer());
    hdr.length      = r.push_length;
    hdr.rkey_length = uint32_t(a->md->attr().rkey_packed_size);
    std::memcpy(dest, &hdr, sizeof(hdr));
    const uct::mem_h memh = r.get_reg.held() ? r.get_reg.memh : r.push_reg.memh;
    if (a->md->mkey_pack(memh, static_cast<char *>(dest) + sizeof(hdr)) != UCS_OK) {
        return 0;
    }
    return sizeof(hdr) + hdr.rkey_length;
}

/* Registers the head of our buffer and asks the sender to write it. Returns
 * false when the RTR must wait for room; on any other failure the push is
 * dropped and we pull everything. */
bool request_push(request *req)
{
    recv_state &r      = req->u.recv;
    ucp_worker *worker = req->worker;
    uct::md &md        = *worker->context.mds[r.rkey_md].md;
    if (md.attr().rkey_packed_size + sizeof(wire::rtr_hdr) >
        r.ep->am_ep->owner().attr().am.max_bcopy) {
        r.push_length = 0;
        return true;
    }
    /* The pull's registration (never of a bounce buffer here: a bounced
     * receive is never split) covers the head already. */
    if (!r.get_reg.held() && !r.push_reg.held() &&
        (buffer_reg_get(worker->context, r.rkey_md, r.unpacker.contig_buffer(), r.push_length,
                        &r.push_reg) != UCS_OK)) {
        r.push_length = 0;
        return true;
    }
    rtr_pack_args args{req, &md};
    ssize_t packed = r.ep->am_ep->am_bcopy(wire::AM_RNDV_RTR, pack_rtr, &args, 0);
    if (packed == UCS_ERR_NO_RESOURCE) {
        return false;
    }
    if (packed <= 0) {
        ucs_debug("worker '%s': rendezvous push request not sent (%zd): pulling all",
                  worker->name.c_str(), packed);
        buffer_reg_release(worker->context, r.rkey_md, &r.push_reg);
        r.push_length = 0;
        return true;
    }
    ucs_debug("worker '%s': split rendezvous: the sender writes %zu of %zu bytes",
              worker->name.c_str(), r.push_length, r.get_length);
    r.rtr_sent = true;
    r.received = r.push_length; /* the sender writes the head */
    req->flags |= request_flag::AWAIT_PUSH;
    ++r.comp.count; /* released by the ATP */
    return true;
}

/* Starts or resumes the pull; the request holds one count while issuing. */
void rndv_continue(request *req)
{
    recv_state &r = req->u.recv;
    if (r.ep == nullptr) {
        r.ep = req->worker->ep_by_id(r.src_ep_id, r.src_uuid);
        if (r.ep == nullptr) {
            uct::completion_update_status(&r.comp, UCS_ERR_UNREACHABLE);
        } else {
            r.push_length = push_length_for(req);
        }
    }
    if ((r.ep != nullptr) && !(r.ep->flags & ep_flag::READY) && r.ep->usable()) {
        /* Our lanes to the sender wait for the wireup to finish (a message
         * of the sender's may overtake its REQUEST's processing or ACK). */
        req->worker->rndv_deferred.push_back(req);
        req->worker->schedule(deferred::RNDV);
        return;
    }
    if ((r.ep != nullptr) && (r.push_length != 0) && !r.rtr_sent && (r.comp.status == UCS_OK) &&
        !request_push(req)) {
        req->worker->rndv_deferred.push_back(req);
        req->worker->schedule(deferred::RNDV);
        return;
    }
    if ((r.ep != nullptr) && !rndv_issue(req)) {
        req->worker->rndv_deferred.push_back(req);
        req->worker->schedule(deferred::RNDV);
        return;
    }
    uct::invoke_completion(&r.comp, UCS_OK);
}

} // namespace

size_t rndv_pack_rts(request *req, void *dest)
{
    send_state &s = req->u.send;
    wire::rts_hdr hdr{};
    hdr.tag = s.tag;
    rndv_fill_rts(hdr, req);
    std::memcpy(dest, &hdr, sizeof(hdr));
    if (!rndv_pack_keys(req, static_cast<char *>(dest) + sizeof(hdr))) {
        return 0;
    }
    return sizeof(hdr) + hdr.rkey_length;
}

bool rndv_read_rts(const void *data, size_t length, wire::rts_hdr *rts, const uint8_t **rkey)
{
    ucs::wire_reader r(data, length);
    return r.get(rts) && r.bytes(rts->rkey_length, rkey) &&
           (rts->md_name[wire::rts_md_name_max - 1] == '\0') &&
           (rts->length <= wire::max_message_length);
}

ucs_status_t rndv_send_rts(request *req, uint8_t am_id)
{
    ssize_t packed = req->u.send.ep->am_ep->am_bcopy(am_id, pack_rts, req, 0);
    if (packed < 0) {
        return ucs_status_t(packed);
    }
    if (packed == 0) {
        return UCS_ERR_IO_ERROR; /* the key could not be packed */
    }
    send_done(req);
    return UCS_OK;
}

ucs_status_t rndv_atp_handler(void *arg, void *data, size_t length, unsigned)
{
    auto *worker = static_cast<ucp_worker *>(arg);
    ucs::wire_reader r(data, length);
    wire::reply_hdr hdr;
    if (!r.get(&hdr)) {
        ucs_warn("worker '%s': dropping a short rendezvous push answer", worker->name.c_str());
        return UCS_OK;
    }
    request *req = worker->lookup_request(hdr.req_id);
    if ((req == nullptr) || !(req->flags & request_flag::RECV) ||
        !(req->flags & request_flag::AWAIT_PUSH)) {
        ucs_debug("worker '%s': push answer for an unknown request", worker->name.c_str());
        return UCS_OK;
    }
    const ucs_status_t status = wire::peer_status(hdr.status);
    req->flags &= ~request_flag::AWAIT_PUSH;
    uct::invoke_completion(&req->u.recv.comp, status);
    return UCS_OK;
}

uint8_t rndv_lane_of(request *req)
{
    send_state &s                = req->u.send;
    const ucs_memory_type_t type = s.packer.memory_type();
    const uint8_t lane           = s.ep->rndv_lane_for(type);
    if ((lane != no_lane) || (type == UCS_MEMORY_TYPE_HOST) || (s.ep->rndv_lane == no_lane)) {
        return lane;
    }
    if (send_stage_whole(s) != UCS_OK) {
        return no_lane; /* the eager protocols say why */
    }
    return s.ep->rndv_lane;
}

send_step_t rndv_select(request *req, size_t user_header_length)
{
    send_state &s            = req->u.send;
    ucp_ep *ep               = s.ep;
    const uint8_t lane_index = rndv_lane_of(req);
    if (lane_index == no_lane) {
        return nullptr;
    }
    const lane &l = ep->lanes[lane_index];
    uct::md &md   = *req->worker->context.mds[l.md_index].md;
    if (md.attr().rkey_packed_size + sizeof(wire::rts_hdr) >
        ep->am_ep->owner().attr().am.max_bcopy) {
        return nullptr;
    }
    ucs_status_t status = buffer_reg_get(req->worker->context, l.md_index, s.packer.contig_buffer(),
                                         s.packer.length(), &s.reg);
    if (status != UCS_OK) {
        ucs_debug("rendezvous registration failed (%s): sending eagerly",
                  ucs_status_string(status));
        return nullptr;
    }
    s.rndv_md = l.md_index;
    req->flags |= request_flag::RNDV_SEND;
    if (!(req->flags & request_flag::SYNC)) {
        req->flags |= request_flag::SYNC;
        if (req->worker->register_request(req) == 0) {
            buffer_reg_release(req->worker->context, l.md_index, &s.reg);
            req->flags &= ~(request_flag::SYNC | request_flag::RNDV_SEND);
            return nullptr;
        }
    }
    req->flags |= request_flag::NAMES_PEER_EP;
    rndv_register_more(req, sizeof(wire::rts_hdr) + user_header_length);
    return rts_step;
}

void rndv_recv_start(ucp_worker *worker, request *req, const wire::rts_hdr &rts, const void *rkey,
                     size_t rkey_length)
{
    recv_state &r   = req->u.recv;
    r.src_uuid      = rts.src_uuid;
    r.src_ep_id     = rts.ep_id;
    r.remote_req_id = rts.sreq_id;
    r.remote_addr   = rts.address;
    r.received      = 0;
    r.bounce        = nullptr;
    r.pieces        = nullptr;
    r.rkey          = {};
    r.ep            = nullptr;
    r.comp.func     = rndv_get_completed;
    r.comp.count    = 1;
    r.comp.status   = UCS_OK;
    r.push_reg      = {};
    r.get_reg       = {};
    r.push_length   = 0;
    r.rts_flags     = rts.flags;
    r.rtr_sent      = false;

    const size_t capacity = r.unpacker.capacity();
    r.get_length          = std::min<size_t>(rts.length, capacity);
    if (rts.length > capacity) {
        r.data_status = UCS_ERR_MESSAGE_TRUNCATED;
    }
    worker->register_request(req);

    /* The key must belong to a memory domain we have too. */
    rts_keys keys;
    ucs_status_t status = UCS_ERR_UNREACHABLE;
    if (!rndv_read_keys(rts, static_cast<const uint8_t *>(rkey), rkey_length, &keys)) {
        status = UCS_ERR_INVALID_PARAM;
    }
    for (unsigned i = 0; (keys.key != nullptr) && (i < worker->context.mds.size()); ++i) {
        if (worker->context.mds[i].name == rts.md_name) {
            status = worker->context.mds[i].component->rkey_unpack(keys.key, keys.length, &r.rkey);
            r.rkey_md = i;
            break;
        }
    }
    if (status != UCS_OK) {
        ucs_error("worker '%s': cannot use the rendezvous key of md '%s': %s", worker->name.c_str(),
                  rts.md_name, ucs_status_string(status));
        r.rkey        = {};
        r.comp.status = status;
        uct::invoke_completion(&r.comp, status);
        return;
    }
    /* Pulled through a bounce buffer: data the unpacker scatters, or a
     * buffer in memory the lane's transport cannot write (a host transport
     * into CUDA memory: the unpacker's copier moves it). */
    const uint64_t reachable = worker->context.mds[r.rkey_md].md->attr().access_mem_types;
    if ((!r.unpacker.is_contig() || !(reachable & (1ull << r.unpacker.memory_type()))) &&
        (r.get_length > 0)) {
        r.bounce = ucs::memtype::bounce_alloc(r.get_length);
        if (r.bounce == nullptr) {
            uct::invoke_completion(&r.comp, UCS_ERR_NO_MEMORY);
            return;
        }
    }
    /* A transport that needs a local handle gets one for what we pull into. */
    if ((r.get_length > 0) &&
        (worker->context.mds[r.rkey_md].md->attr().flags & uct::md_flag::NEED_MEMH)) {
        void *dest = (r.bounce != nullptr) ? r.bounce : r.unpacker.contig_buffer();
        status     = buffer_reg_get(worker->context, r.rkey_md, dest, r.get_length, &r.get_reg);
        if (status != UCS_OK) {
            ucs_error("worker '%s': cannot register the rendezvous receive buffer on "
                      "md '%s': %s",
                      worker->name.c_str(), rts.md_name, ucs_status_string(status));
            uct::invoke_completion(&r.comp, status);
            return;
        }
    }
    if ((keys.num_others > 0) && (r.bounce == nullptr) && (r.get_length > 0)) {
        adopt_keys(req, keys);
    }
    rndv_continue(req);
}

unsigned rndv_deferred_progress(ucp_worker *worker)
{
    auto waiting = std::move(worker->rndv_deferred);
    worker->rndv_deferred.clear();
    for (request *req : waiting) {
        if (req->flags & request_flag::RECV) {
            rndv_continue(req);
        } else {
            rndv_push_continue(req);
        }
    }
    return unsigned(waiting.size());
}

void fail_waiting_request(request *req, ucs_status_t status)
{
    if (!(req->flags & request_flag::RECV)) {
        if (req->flags & request_flag::PUSHING) {
            rndv_push_fail(req, status); /* finished when the puts end */
        } else {
            send_request_finish(req, status);
        }
        return;
    }
    /* A pull from a lost peer: the transport completes nothing further. */
    ucp_worker *worker = req->worker;
    auto &deferred     = worker->rndv_deferred;
    deferred.erase(std::remove(deferred.begin(), deferred.end(), req), deferred.end());
    req->flags &= ~request_flag::AWAIT_PUSH;
    rndv_recv_release(req);
    recv_finish(req, status);
}

} // namespace ucp
