/*
 * The selection rules and the tables built from them (see select.h).
 */
#include "select.h"

#include <ucp/proto/wire.h>
#include <ucs/memory/memtype_registry.h>

#include <algorithm>
#include <string>
#include <vector>

namespace ucp::proto {

namespace {

struct candidates {
    uint8_t count                 = 0;
    protocol list[max_candidates] = {};

    void add(protocol p)
    {
        ucs_assert(count < max_candidates); /* each protocol at most once */
        list[count++] = p;
    }
};

/* Whether eager zcopy can carry a message of this key at all (sizes aside):
 * a lane with am_zcopy, a UCP header that fits its inline header, and data
 * that goes by address: contiguous, or an iov when no registration is
 * needed (one memory handle covers one buffer). */
bool zcopy_possible(const ep_thresholds &t, dt_class dt, size_t header)
{
    if ((t.zcopy_frag == 0) || (t.zcopy == SIZE_MAX) || (header > t.zcopy_max_hdr)) {
        return false;
    }
    return (dt == dt_class::contig) || ((dt == dt_class::iov) && !t.zcopy_needs_memh);
}

/* What a tagged send of `length` bytes may use, in order. */
/* Whether the data can go in place (short, zcopy): the CPU reaches it. */
bool host(const key &k)
{
    return k.mem_type == UCS_MEMORY_TYPE_HOST;
}

/* A rendezvous lane for the memory, or a host one that a staged copy of
 * the whole message goes over (tag_rndv.cc, rndv_lane_of). */
bool can_rndv(const table_inputs &in, const key &k)
{
    constexpr uint64_t host = 1ull << UCS_MEMORY_TYPE_HOST;
    return (k.dt == dt_class::contig) && (in.rndv_mem_types & ((1ull << k.mem_type) | host));
}

candidates tag_rules(const table_inputs &in, const key &k, size_t length)
{
    const ep_thresholds &t = in.thresh;
    const bool sync        = (k.op == operation::TAG_SYNC);
    const bool contig      = (k.dt == dt_class::contig);
    candidates c;
    if (contig && host(k) && !sync && (t.max_eager_short >= 0) &&
        (length <= size_t(t.max_eager_short))) {
        c.add(protocol::EAGER_SHORT);
        return c;
    }
    if (can_rndv(in, k) && (length >= t.rndv)) {
        c.add(protocol::RNDV);
    }
    if (host(k) && zcopy_possible(t, k.dt, wire::eager_max_header) && (length >= t.zcopy)) {
        c.add(protocol::EAGER_ZCOPY);
    }
    const size_t only = sync ? t.max_eager_only - sizeof(wire::eager_sync_hdr) + sizeof(ucp_tag_t) :
                               t.max_eager_only;
    c.add((length <= only) ? protocol::EAGER_BCOPY_SINGLE : protocol::EAGER_BCOPY_MULTI);
    return c;
}

/* An active message of `length` data bytes (its user header, known only at
 * send time, may make the short, zcopy and one-fragment protocols decline). */
candidates am_rules(const table_inputs &in, const key &k, size_t length)
{
    const ep_thresholds &t = in.thresh;
    const bool contig      = (k.dt == dt_class::contig);
    const bool reply       = (k.variant & am_variant::REPLY);
    candidates c;
    if (can_rndv(in, k) && !(k.variant & am_variant::FORCE_EAGER) &&
        ((k.variant & am_variant::FORCE_RNDV) || (length >= t.am_rndv))) {
        c.add(protocol::RNDV);
    }
    if (contig && host(k) && !reply && (t.max_eager_short >= 0) &&
        (length <= size_t(t.max_eager_short))) {
        c.add(protocol::EAGER_SHORT);
    }
    if (host(k) && zcopy_possible(t, k.dt, sizeof(wire::am_first_hdr)) && (length >= t.zcopy)) {
        c.add(protocol::EAGER_ZCOPY);
    }
    const size_t single = sizeof(wire::am_hdr) + (reply ? sizeof(wire::am_reply_hdr) : 0);
    if ((t.am_max_bcopy > single) && (length <= t.am_max_bcopy - single)) {
        c.add(protocol::EAGER_BCOPY_SINGLE);
    }
    c.add(protocol::EAGER_BCOPY_MULTI);
    return c;
}

/* Stream data: no short protocol (each fragment names the stream); the
 * rendezvous from the tag threshold, and no smaller than stream_rndv_min
 * (the receiver pulls it whole: ucp/stream/stream.h). */
candidates stream_rules(const table_inputs &in, const key &k, size_t length)
{
    const ep_thresholds &t = in.thresh;
    candidates c;
    if (can_rndv(in, k) && (length >= std::max(t.rndv, stream_rndv_min))) {
        c.add(protocol::RNDV);
    }
    if (host(k) && zcopy_possible(t, k.dt, sizeof(wire::stream_hdr)) && (length >= t.zcopy)) {
        c.add(protocol::EAGER_ZCOPY);
    }
    const size_t room = t.am_max_bcopy - sizeof(wire::stream_hdr);
    c.add((length <= room) ? protocol::EAGER_BCOPY_SINGLE : protocol::EAGER_BCOPY_MULTI);
    return c;
}

/* Where a lane with both a copy and a zero-copy call switches to zero
 * copy: at the threshold, and at the latest when a copy takes more than
 * one fragment (its data would be copied through the transport's buffer
 * piece by piece; in place it goes in fewer, larger calls). */
size_t rma_zcopy_from(size_t zcopy, size_t max_bcopy)
{
    return std::min(zcopy, (max_bcopy == SIZE_MAX) ? SIZE_MAX : max_bcopy + 1);
}

/* A put or get on a lane: short, then copy, then zero copy. Memory the
 * CPU cannot touch goes only by zero copy, on a lane whose md reaches it. */
candidates rma_lane_rules(const rma_lane_limits &l, const key &k, size_t length)
{
    candidates c;
    const bool put         = (k.op == operation::PUT);
    const size_t max_bcopy = host(k) ? (put ? l.put_bcopy : l.get_bcopy) : 0;
    const size_t max_zcopy = put ? l.put_zcopy : l.get_zcopy;
    if (!host(k) && !(l.mem_types & (1ull << k.mem_type))) {
        return c;
    }
    if (put && host(k) && (l.put_short >= 0) && (length <= size_t(l.put_short))) {
        c.add(protocol::RMA_SHORT);
    } else if ((max_zcopy > 0) &&
               ((max_bcopy == 0) || (length >= rma_zcopy_from(l.zcopy, max_bcopy)))) {
        c.add(protocol::RMA_ZCOPY);
    } else if (max_bcopy > 0) {
        c.add(protocol::RMA_BCOPY);
    }
    return c;
}

/* Put, get and atomics by the key's reach (sizes matter only on a lane). */
candidates rma_rules(const table_inputs &in, const key &k, size_t length)
{
    candidates c;
    const bool amo = (k.op == operation::AMO);
    if ((k.variant == rma_reach::DIRECT) || (k.variant == rma_reach::AM)) {
        /* Both are the CPU's, here or at the target: not in device mode. */
        if (host(k) && (!amo || in.amo_cpu)) {
            c.add((k.variant == rma_reach::DIRECT) ? protocol::RMA_DIRECT : protocol::RMA_EMULATED);
        }
        return c;
    }
    ucs_assert(k.variant < max_lanes);
    const rma_lane_limits &l = in.rma_lanes[k.variant];
    if (!amo) {
        return rma_lane_rules(l, k, length);
    }
    if (host(k) && l.amo) {
        c.add(protocol::AMO_LANE);
    }
    if (host(k) && in.amo_cpu) {
        c.add(protocol::RMA_EMULATED); /* an op or size the lane lacks */
    }
    return c;
}

candidates rules(const table_inputs &in, const key &k, size_t length)
{
    switch (k.op) {
    case operation::TAG:
    case operation::TAG_SYNC:
        return tag_rules(in, k, length);
    case operation::AM:
        return am_rules(in, k, length);
    case operation::STREAM:
        return stream_rules(in, k, length);
    default:
        return rma_rules(in, k, length);
    }
}

/* Every size at which some rule above can change its answer for `k`: the
 * first size of a new range is always one of these. */
std::vector<size_t> boundaries(const table_inputs &in, const key &k)
{
    const ep_thresholds &t = in.thresh;
    std::vector<size_t> points;
    auto after = [&](size_t last) {
        if (last != SIZE_MAX) {
            points.push_back(last + 1);
        }
    };
    if (is_rma(k.op)) {
        if (k.variant < max_lanes) {
            const rma_lane_limits &l = in.rma_lanes[k.variant];
            if (l.put_short >= 0) {
                after(size_t(l.put_short));
            }
            points.push_back(rma_zcopy_from(l.zcopy, l.put_bcopy));
            points.push_back(rma_zcopy_from(l.zcopy, l.get_bcopy));
        }
    } else {
        points = {t.rndv, t.am_rndv, t.zcopy, std::max(t.rndv, stream_rndv_min)};
        if (t.max_eager_short >= 0) {
            after(size_t(t.max_eager_short));
        }
        after(t.max_eager_only);
        after(t.max_eager_only - sizeof(wire::eager_sync_hdr) + sizeof(ucp_tag_t));
        for (size_t header :
             {sizeof(wire::am_hdr), sizeof(wire::am_hdr) + sizeof(wire::am_reply_hdr),
              sizeof(wire::stream_hdr)}) {
            if (t.am_max_bcopy > header) {
                after(t.am_max_bcopy - header);
            }
        }
    }
    std::sort(points.begin(), points.end());
    points.erase(std::unique(points.begin(), points.end()), points.end());
    points.erase(std::remove_if(points.begin(), points.end(),
                                [](size_t p) { return (p == 0) || (p == SIZE_MAX); }),
                 points.end());
    return points;
}

bool same(const range &r, const candidates &c)
{
    return std::equal(r.candidates, r.candidates + r.count, c.list, c.list + c.count);
}

} // namespace

size_t table::key_index(const key &k)
{
    if (is_rma(k.op)) {
        ucs_assert((k.variant < rma_reach::count) && (k.dt == dt_class::contig));
        const size_t op = size_t(k.op) - size_t(first_rma_op);
        return num_send_keys + (op * rma_reach::count + k.variant) * UCS_MEMORY_TYPE_LAST +
               size_t(k.mem_type);
    }
    ucs_assert(k.variant < am_variant::count);
    return ((size_t(k.op) * am_variant::count + k.variant) * num_dt_classes + size_t(k.dt)) *
               UCS_MEMORY_TYPE_LAST +
           size_t(k.mem_type);
}

void build(const table_inputs &in, const key &k, selection *out)
{
    out->count = 0;
    if (!is_rma(k.op) && !ucs::memtype::can_copy(k.mem_type)) {
        return; /* nothing loaded can stage this memory (RMA: a lane moves it) */
    }
    const std::vector<size_t> points = boundaries(in, k);
    size_t from                      = 0;
    for (size_t i = 0; i <= points.size(); ++i) {
        const size_t last  = (i < points.size()) ? points[i] - 1 : SIZE_MAX;
        const candidates c = rules(in, k, from);
        if ((out->count > 0) && same(out->ranges[out->count - 1], c)) {
            out->ranges[out->count - 1].last = last; /* the same answer: one range */
            from                             = last + 1;
            continue;
        }
        range &r = out->ranges[out->count++];
        r.last   = last;
        r.count  = c.count;
        std::copy(c.list, c.list + c.count, r.candidates);
        from = last + 1;
    }
    if ((out->count == 1) && (out->ranges[0].count == 0)) {
        out->count = 0; /* nothing serves any size */
    }
}

const selection &table::get(const key &k) const
{
    std::unique_ptr<selection> &slot = built_[key_index(k)];
    if (!slot) {
        auto s = std::make_unique<selection>();
        build(in_, k, s.get());
        slot = std::move(s);
    }
    return *slot;
}

void print_range(FILE *stream, size_t from, size_t to, const char *text)
{
    if (from > to) {
        return;
    }
    if (to == SIZE_MAX) {
        std::fprintf(stream, "#   %10zu .. inf        %s\n", from, text);
    } else {
        std::fprintf(stream, "#   %10zu .. %-10zu %s\n", from, to, text);
    }
}

namespace {

const char *eager_name(protocol p)
{
    switch (p) {
    case protocol::EAGER_SHORT:
        return "eager short";
    case protocol::EAGER_BCOPY_SINGLE:
        return "eager bcopy, one fragment";
    case protocol::EAGER_BCOPY_MULTI:
        return "eager bcopy, multiple fragments";
    case protocol::EAGER_ZCOPY:
        return "eager zcopy";
    case protocol::RNDV:
        return "rendezvous";
    default:
        return "?";
    }
}

struct line {
    size_t from, to;
    std::string text;
};

/* Appends [from, to] with `text`, joined to the previous line when that
 * says the same (ranges that differ only in what serves a declined
 * message one step further down). */
void add_line(std::vector<line> &lines, size_t from, size_t to, std::string text)
{
    if (from > to) {
        return;
    }
    if (!lines.empty() && (lines.back().text == text) && (lines.back().to + 1 == from)) {
        lines.back().to = to;
        return;
    }
    lines.push_back({from, to, std::move(text)});
}

/* The family of a protocol, for "else ...": fragment counts follow from
 * the size. */
const char *family_name(protocol p)
{
    const bool bcopy = (p == protocol::EAGER_BCOPY_SINGLE) || (p == protocol::EAGER_BCOPY_MULTI);
    if (p == protocol::RMA_EMULATED) {
        return "emulated over active messages";
    }
    return bcopy ? "eager bcopy" : eager_name(p);
}

/* The lines of one range of a put, get or atomic table. */
void add_rma_lines(std::vector<line> &lines, const table_inputs &in, const key &k,
                   const print_names &names, size_t from, const range &r, const std::string &suffix)
{
    const bool put         = (k.op == operation::PUT);
    const char *op         = put ? "put" : "get";
    const std::string lane = (k.variant < max_lanes) ? names.lane_names[k.variant] : std::string();
    switch (r.candidates[0]) {
    case protocol::RMA_DIRECT:
        add_line(lines, from, r.last,
                 std::string((k.op == operation::AMO) ? "CPU atomics" : "CPU copies") +
                     " in the key's segment mapped here" + suffix);
        return;
    case protocol::RMA_EMULATED:
        add_line(lines, from, r.last,
                 std::string("active messages on ") + names.am_tl + ", the target's CPU does it" +
                     suffix);
        return;
    case protocol::AMO_LANE:
        add_line(lines, from, r.last, "atomics of " + lane + suffix);
        return;
    case protocol::RMA_SHORT:
        add_line(lines, from, r.last, "put_short on " + lane + suffix);
        return;
    default:
        break;
    }
    const bool zcopy         = (r.candidates[0] == protocol::RMA_ZCOPY);
    const rma_lane_limits &l = in.rma_lanes[k.variant];
    const size_t frag        = zcopy ? (put ? l.put_zcopy : l.get_zcopy) :
                                       (put ? l.put_bcopy : l.get_bcopy);
    const std::string text   = std::string(op) + (zcopy ? "_zcopy" : "_bcopy") + " on " + lane;
    const size_t one         = (frag < (SIZE_MAX >> 2)) ? std::min(frag, r.last) : r.last;
    add_line(lines, from, one, text + suffix);
    /* Transports without a practical limit say so with a huge one. */
    if ((frag < r.last) && (frag < (SIZE_MAX >> 2))) {
        add_line(lines, std::max(frag + 1, from), r.last,
                 text + ", fragments of " + std::to_string(frag) + suffix);
    }
}

} // namespace

void print(FILE *stream, const table &t, const key &k, const print_names &names)
{
    const selection &sel    = t.get(k);
    const ep_thresholds &th = t.inputs().thresh;
    std::vector<line> lines;
    size_t from = 0;
    for (uint8_t i = 0; i < sel.count; ++i) {
        const range &r = sel.ranges[i];
        /* What serves a message the first protocol declines. */
        const std::string suffix = (r.count > 1) ?
                                       std::string(" | else ") + family_name(r.candidates[1]) :
                                       std::string();
        const std::string am_tl(names.am_tl);
        if (r.count == 0) {
            add_line(lines, from, r.last, "none: no transport here moves it");
            from = r.last + 1;
            continue;
        }
        if (is_rma(k.op)) {
            add_rma_lines(lines, t.inputs(), k, names, from, r, suffix);
            from = r.last + 1;
            continue;
        }
        switch (r.candidates[0]) {
        case protocol::EAGER_ZCOPY: {
            const size_t frag = (k.op == operation::AM) ? th.am_zcopy_frag : th.zcopy_frag;
            add_line(lines, from, std::min(frag, r.last),
                     "eager zcopy on " + am_tl + ", one fragment" + suffix);
            add_line(lines, std::max(frag + 1, from), r.last,
                     "eager zcopy on " + am_tl + ", fragments of " + std::to_string(frag) + suffix);
            break;
        }
        case protocol::RNDV: {
            const size_t push = names.rndv_push_from;
            if (from < push) {
                const size_t to = (push == SIZE_MAX) ? r.last : std::min(r.last, push - 1);
                add_line(lines, from, to, names.rndv_get + suffix);
            }
            if ((push != SIZE_MAX) && (r.last >= push)) {
                add_line(lines, std::max(from, push), r.last, names.rndv_push + suffix);
            }
            break;
        }
        default:
            add_line(lines, from, r.last, eager_name(r.candidates[0]) + suffix);
            break;
        }
        from = r.last + 1;
    }
    for (const line &l : lines) {
        print_range(stream, l.from, l.to, l.text.c_str());
    }
}

const char *operation_name(operation op)
{
    switch (op) {
    case operation::TAG:
        return "tag_send";
    case operation::TAG_SYNC:
        return "tag_send_sync";
    case operation::AM:
        return "am_send";
    case operation::STREAM:
        return "stream_send";
    case operation::PUT:
        return "put";
    case operation::GET:
        return "get";
    case operation::AMO:
        return "atomic";
    default:
        return "?";
    }
}

const char *dt_class_name(dt_class dt)
{
    switch (dt) {
    case dt_class::contig:
        return "contiguous";
    case dt_class::iov:
        return "iov";
    case dt_class::generic:
        return "generic";
    default:
        return "?";
    }
}

} // namespace ucp::proto
