/*
 * Rendezvous keys of several memory domains. A pull split over lanes of
 * mds besides the rendezvous lane's (rc_verbs on two adapters: mlx5_0 and
 * mlx5_1 each register on their own) needs the sender's buffer registered
 * on each md and every key in the RTS. The RTS then says KEY_LIST and its
 * key bytes are entries (wire::rts_key: md name, length) each followed by
 * its key, the header's md first; a receiver without one of those mds
 * pulls on the lanes of the others.
 */
#include <ucp/proto/send_common.h>
#include <ucp/proto/wire.h>
#include <ucp/tag/rndv.h>
#include <ucs/debug/log.h>
#include <ucs/type/wire_reader.h>

#include <cstdio>
#include <cstring>
#include <new>

namespace ucp {

namespace {

size_t packed_size(const ucp_context &ctx, unsigned md)
{
    return ctx.mds[md].md->attr().rkey_packed_size;
}

/* Whether md `md` is rndv_md or registered already. */
bool registered_on(const send_state &s, const rndv_md_regs *regs, unsigned md)
{
    if (md == s.rndv_md) {
        return true;
    }
    for (unsigned i = 0; (regs != nullptr) && (i < regs->count); ++i) {
        if (regs->md_reg[i].md == md) {
            return true;
        }
    }
    return false;
}

/* One key list entry: the name and length, then the md's packed key. */
bool pack_entry(const ucp_context &ctx, unsigned md, uct::mem_h memh, uint8_t **out)
{
    wire::rts_key entry{};
    std::snprintf(entry.md_name, sizeof(entry.md_name), "%s", ctx.mds[md].name.c_str());
    entry.length = uint32_t(packed_size(ctx, md));
    std::memcpy(*out, &entry, sizeof(entry));
    if (ctx.mds[md].md->mkey_pack(memh, *out + sizeof(entry)) != UCS_OK) {
        return false;
    }
    *out += sizeof(entry) + entry.length;
    return true;
}

} // namespace

void rndv_register_more(request *req, size_t fixed)
{
    send_state &s      = req->u.send;
    ucp_context &ctx   = req->worker->context;
    const ep_config &c = *s.ep->cfg;
    s.more_regs        = nullptr; /* over msg_id: a rendezvous sends no eager fragments */
    /* Only the application's own host buffer: a staged one is pulled on
     * the host lane alone. */
    if ((c.num_rndv_rails < 2) || (s.bounce != nullptr) ||
        (s.packer.memory_type() != UCS_MEMORY_TYPE_HOST)) {
        return;
    }
    const size_t room  = s.ep->am_ep->owner().attr().am.max_bcopy;
    size_t length      = fixed + sizeof(wire::rts_key) + packed_size(ctx, s.rndv_md);
    rndv_md_regs *regs = nullptr;
    for (unsigned i = 0; i < c.num_rndv_rails; ++i) {
        const unsigned md = s.ep->lanes[c.rndv_rails[i]].md_index;
        const size_t more = sizeof(wire::rts_key) + packed_size(ctx, md);
        if (registered_on(s, regs, md) || (length + more > room)) {
            continue;
        }
        if ((regs == nullptr) && ((regs = new (std::nothrow) rndv_md_regs()) == nullptr)) {
            return; /* the pull stays on rndv_md's lanes */
        }
        rndv_md_regs::entry &e = regs->md_reg[regs->count];
        const ucs_status_t st = buffer_reg_get(ctx, md, s.packer.contig_buffer(), s.packer.length(),
                                               &e.reg);
        if (st != UCS_OK) {
            ucs_debug("rendezvous: no key on md %s (%s): its lanes do not pull",
                      ctx.mds[md].name.c_str(), ucs_status_string(st));
            continue;
        }
        e.md = md;
        ++regs->count;
        length += more;
    }
    if ((regs != nullptr) && (regs->count == 0)) {
        delete regs;
        regs = nullptr;
    }
    s.more_regs = regs;
}

void rndv_release_more_regs(request *req)
{
    send_state &s = req->u.send;
    if (s.more_regs == nullptr) {
        return;
    }
    for (unsigned i = 0; i < s.more_regs->count; ++i) {
        rndv_md_regs::entry &e = s.more_regs->md_reg[i];
        buffer_reg_release(req->worker->context, e.md, &e.reg);
    }
    delete s.more_regs;
    s.more_regs = nullptr;
}

size_t rndv_keys_length(const request *req)
{
    const send_state &s    = req->u.send;
    const ucp_context &ctx = req->worker->context;
    if (s.more_regs == nullptr) {
        return packed_size(ctx, s.rndv_md);
    }
    size_t length = sizeof(wire::rts_key) + packed_size(ctx, s.rndv_md);
    for (unsigned i = 0; i < s.more_regs->count; ++i) {
        length += sizeof(wire::rts_key) + packed_size(ctx, s.more_regs->md_reg[i].md);
    }
    return length;
}

bool rndv_pack_keys(const request *req, void *dest)
{
    const send_state &s    = req->u.send;
    const ucp_context &ctx = req->worker->context;
    if (s.more_regs == nullptr) {
        return ctx.mds[s.rndv_md].md->mkey_pack(s.reg.memh, dest) == UCS_OK;
    }
    auto *out = static_cast<uint8_t *>(dest);
    if (!pack_entry(ctx, s.rndv_md, s.reg.memh, &out)) {
        return false;
    }
    for (unsigned i = 0; i < s.more_regs->count; ++i) {
        const rndv_md_regs::entry &e = s.more_regs->md_reg[i];
        if (!pack_entry(ctx, e.md, e.reg.memh, &out)) {
            return false;
        }
    }
    return true;
}

bool rndv_read_keys(const wire::rts_hdr &rts, const uint8_t *bytes, size_t length, rts_keys *out)
{
    *out = rts_keys{};
    if (!(rts.flags & wire::rts_flag::KEY_LIST)) {
        out->key    = bytes;
        out->length = length;
        return true;
    }
    ucs::wire_reader r(bytes, length);
    while (!r.at_end()) {
        wire::rts_key hdr;
        const uint8_t *key;
        if (!r.get(&hdr) || !r.bytes(hdr.length, &key) ||
            (hdr.md_name[wire::rts_md_name_max - 1] != '\0')) {
            return false;
        }
        if ((out->key == nullptr) && (std::strcmp(hdr.md_name, rts.md_name) == 0)) {
            out->key    = key;
            out->length = hdr.length;
            continue;
        }
        if (out->num_others == max_lanes) {
            return false;
        }
        rts_keys::other &o = out->others[out->num_others++];
        std::memcpy(o.md_name, hdr.md_name, sizeof(o.md_name));
        o.key    = key;
        o.length = hdr.length;
    }
    return out->key != nullptr;
}

} // namespace ucp
