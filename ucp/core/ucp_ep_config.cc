/*
 * Endpoint configurations: found or made when an ep gets its lanes, with
 * the protocols' limits computed once (see ucp_ep_config.h).
 */
#include "ucp_ep_config.h"
#include "ep_config_log.h"
#include "ucp_ep.h"
#include "ucp_worker.h"

#include <ucp/proto/wire.h>
#include <ucs/config/parser.h>
#include <ucs/debug/log.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

namespace ucp {

namespace {

/* A copy send moves the data at about one core's memcpy rate between
 * cores: eager messages over posix move 16 GB/s here (ucx_perftest tag_lat
 * 16 KiB..256 KiB, 6.2e-11 s a byte), memcpy in one cache 100 GB/s. */
constexpr double bcopy_bandwidth_Bps = 16e9;
/* What a zero-copy send costs beyond a copy send of the same size: its
 * request completes later, from the transport's completion (a callback and
 * a queue slot), instead of inside the call. With it the threshold over
 * tcp is 4800 bytes; measured there, zcopy and bcopy tie from 1 to 4 KiB
 * (tag_bw, stream_bw, tag_lat) and zcopy wins from 8 KiB on. */
constexpr double zcopy_overhead_s = 300e-9;
/*
 * Tag and stream zcopy fragments: the receiver copies each one out of the
 * transport's buffer anyway, so fragments that fit a receive segment (64
 * KiB, with room for headers) let it copy one while the next arrives, and
 * spare the transport assembling a larger one first.
 */
constexpr size_t zcopy_frag_max = 63 * 1024;
/*
 * Active messages: one fragment is handed to the application's handler
 * right in the transport's buffer, while several are reassembled (a copy):
 * up to this size a message goes in one piece.
 */
constexpr size_t am_zcopy_frag_max = size_t(4) << 20;

const uct::tl_resource &lane_resource(const ucp_worker &worker, const ep_config_key &key,
                                      uint8_t lane)
{
    const unsigned tl = worker.ifaces[key.lanes[lane].iface_index].tl_index;
    return worker.context.tls[tl].resource;
}

bool has_md(const ucp_worker &worker, const ep_config_key &key, uint8_t lane)
{
    return key.lanes[lane].md_index < worker.context.mds.size();
}

const uct::iface_attr &lane_attr(const ucp_worker &worker, const ep_config_key &key, uint8_t lane)
{
    return worker.ifaces[key.lanes[lane].iface_index].iface->attr();
}

/* A model's bandwidth, or the copy rate where the transport gave none. */
double bandwidth_of(const uct::perf_model &perf)
{
    return (perf.bandwidth_Bps > 0) ? perf.bandwidth_Bps : bcopy_bandwidth_Bps;
}

/* The lanes of `key` a rendezvous pull is split over and their bandwidth:
 * rndv_lane first, the extra ones fastest first. Returns how many. */
unsigned rndv_rails_of(const ucp_worker &worker, const ep_config_key &key, uint8_t *lanes,
                       double *Bps)
{
    if ((key.rndv_lane == no_lane) || !has_md(worker, key, key.rndv_lane)) {
        return 0;
    }
    unsigned count = 0;
    auto add       = [&](uint8_t lane) {
        lanes[count] = lane;
        Bps[count++] = bandwidth_of(lane_attr(worker, key, lane).perf);
    };
    add(key.rndv_lane);
    for (uint8_t lane = 0; lane < key.num_lanes; ++lane) {
        if ((key.extra_rndv_lanes & (1u << lane)) && has_md(worker, key, lane)) {
            add(lane);
        }
    }
    for (unsigned i = 2; i < count; ++i) { /* insertion: at most 7, fastest first */
        for (unsigned j = i; (j > 1) && (Bps[j] > Bps[j - 1]); --j) {
            std::swap(lanes[j], lanes[j - 1]);
            std::swap(Bps[j], Bps[j - 1]);
        }
    }
    return count;
}

/*
 * UCX_RNDV_THRESH=auto: the size from which a rendezvous costs less than an
 * eager send, from the lanes' performance models (uct::perf_model):
 *  - eager, per byte: the AM lane's transfer and the copies at both ends,
 *    which overlap (fragments are pipelined): the slower of the lane's and
 *    the copy rate; and each fragment's send and receive overheads;
 *  - rendezvous, per byte: the rendezvous lanes' transfer alone (their
 *    rates added where a pull is split over several; twice the rate where
 *    the receiver splits the transfer with the sender, both copying half:
 *    on one node from UCX_RNDV_SPLIT_THRESH), and registering
 *    both buffers where its md needs it; once: the get's round trip on that
 *    lane, its overhead, the ATS's send, both registrations.
 * The threshold: once / (eager per byte - rendezvous per byte). Measured
 * here (tag_lat, tag_bw), eager wins to 64 KiB and loses from 256 KiB over
 * posix and cma (the model says 137 KiB), and wins to 1 MiB over tcp
 * loopback (the model says more than rndv_auto_max). At most
 * rndv_auto_max: a larger eager message that arrives before its receive is
 * held whole by the receiver, which a rendezvous never is.
 */
constexpr size_t rndv_auto_max = 512 * 1024;

/* Whether receivers split this configuration's rendezvous transfers with
 * the sender (push_length_for in ucp/tag/tag_rndv.cc): UCX_RNDV_SCHEME=auto,
 * and a rendezvous lane on this node that can put. */
bool rndv_splits(const ucp_worker &worker, const ep_config_key &key)
{
    return (key.rndv_lane != no_lane) && has_md(worker, key, key.rndv_lane) &&
           (worker.context.config.rndv_scheme == RNDV_SCHEME_AUTO) &&
           (lane_attr(worker, key, key.rndv_lane).flags & uct::iface_flag::PUT_ZCOPY) &&
           (lane_resource(worker, key, key.rndv_lane).type == uct::device_type::SHM);
}

size_t auto_rndv_thresh(const ucp_worker &worker, const ep_config_key &key, const ep_thresholds &t)
{
    if (key.rndv_lane == no_lane) {
        return SIZE_MAX;
    }
    if (!has_md(worker, key, key.am_lane) || !has_md(worker, key, key.rndv_lane)) {
        return rndv_auto_max; /* a placeholder lane: no model yet */
    }
    const uct::iface_attr &am   = lane_attr(worker, key, key.am_lane);
    const uct::iface_attr &rndv = lane_attr(worker, key, key.rndv_lane);
    const uct::md_attr &md      = worker.context.mds[key.lanes[key.rndv_lane].md_index].md->attr();
    const size_t fragment = (t.zcopy_frag > 0) ? t.zcopy_frag : std::max(t.middle_frag, size_t(1));
    const double eager_per_byte = 1.0 / std::min(bandwidth_of(am.perf), bcopy_bandwidth_Bps) +
                                  (am.perf.send_overhead_s + am.perf.recv_overhead_s) /
                                      double(fragment);
    double reg_per_byte = 0;
    double once = 2 * rndv.perf.latency_s + rndv.perf.send_overhead_s + am.perf.send_overhead_s;
    if (md.flags & uct::md_flag::NEED_MEMH) {
        once += 2 * md.reg_overhead_s;
        reg_per_byte = 2 * md.reg_growth_s_per_byte;
    }
    auto thresh_at = [&](double rndv_bandwidth) {
        const double saved_per_byte = eager_per_byte - (1.0 / rndv_bandwidth + reg_per_byte);
        if ((saved_per_byte <= 0) || (once / saved_per_byte >= double(rndv_auto_max))) {
            return rndv_auto_max;
        }
        return std::max(size_t(std::ceil(once / saved_per_byte)), size_t(1));
    };
    uint8_t rails[max_lanes];
    double rail_Bps[max_lanes];
    const unsigned num_rails = rndv_rails_of(worker, key, rails, rail_Bps);
    double pull_Bps          = 0;
    for (unsigned i = 0; i < num_rails; ++i) {
        pull_Bps += rail_Bps[i];
    }
    size_t thresh             = thresh_at(pull_Bps);
    const context_config &cfg = worker.context.config;
    if (rndv_splits(worker, key) && (cfg.rndv_split_thresh < thresh)) {
        thresh = std::max(thresh_at(2 * bandwidth_of(rndv.perf)), cfg.rndv_split_thresh);
    }
    return thresh;
}

/*
 * UCX_ZCOPY_THRESH=auto: the size from which registering (where the md
 * needs it) and sending in place costs less than copying into a transport
 * buffer: fixed / (1/copy rate - registration cost per byte).
 */
size_t auto_zcopy_thresh(const uct::md_attr &md)
{
    double fixed          = zcopy_overhead_s;
    double saved_per_byte = 1.0 / bcopy_bandwidth_Bps;
    if (md.flags & uct::md_flag::NEED_MEMH) {
        fixed += md.reg_overhead_s;
        saved_per_byte -= md.reg_growth_s_per_byte;
    }
    if (saved_per_byte <= 0) {
        return SIZE_MAX; /* registering costs more than copying, at any size */
    }
    const double thresh = std::ceil(fixed / saved_per_byte);
    return (thresh >= double(SIZE_MAX)) ? SIZE_MAX : size_t(thresh);
}

/*
 * Eager zcopy on the AM lane, if it has am_zcopy. UCX_MAX_EAGER_LANES: an
 * eager message always uses the AM lane alone (the lanes of an ep are of
 * different transports, and splitting a message over them would give up
 * the AM lane's ordering), so every value behaves as 1.
 */
void zcopy_thresholds(const ucp_worker &worker, const ep_config_key &key,
                      const uct::iface_attr &attr, ep_thresholds &t)
{
    t.zcopy            = SIZE_MAX;
    t.zcopy_frag       = 0;
    t.am_zcopy_frag    = 0;
    t.zcopy_max_hdr    = 0;
    t.zcopy_max_iov    = 0;
    t.zcopy_needs_memh = false;
    if (!(attr.flags & uct::iface_flag::AM_ZCOPY) || (attr.am.max_zcopy == 0) ||
        (attr.am.max_iov == 0) || !has_md(worker, key, key.am_lane)) {
        return; /* no am_zcopy, or a placeholder lane (no md) */
    }
    const context_config &cfg = worker.context.config;
    const uct::md_attr &md    = worker.context.mds[key.lanes[key.am_lane].md_index].md->attr();
    size_t thresh      = (cfg.zcopy_thresh == ucs::config::size_auto) ? auto_zcopy_thresh(md) :
                                                                        cfg.zcopy_thresh;
    t.zcopy            = std::max({thresh, attr.am.min_zcopy, size_t(1)});
    t.zcopy_frag       = std::min(attr.am.max_zcopy, zcopy_frag_max);
    t.am_zcopy_frag    = std::min(attr.am.max_zcopy, am_zcopy_frag_max);
    t.zcopy_max_hdr    = attr.am.max_hdr;
    t.zcopy_max_iov    = attr.am.max_iov;
    t.zcopy_needs_memh = (md.flags & uct::md_flag::NEED_MEMH) != 0;
}

/*
 * Rendezvous for active messages. With UCX_RNDV_THRESH=auto on a network
 * lane with eager zcopy, a message that fits one AM zcopy fragment goes
 * eagerly: the handler reads it in place, where a rendezvous pays a round
 * trip and a copy into the receiver's buffer. Otherwise as tag sends.
 */
size_t am_rndv_thresh(const ucp_worker &worker, const ep_config_key &key, const ep_thresholds &t)
{
    if ((t.rndv == SIZE_MAX) || (t.am_zcopy_frag == 0) || (t.zcopy == SIZE_MAX) ||
        (worker.context.config.rndv_thresh != ucs::config::size_auto)) {
        return t.rndv;
    }
    if (lane_resource(worker, key, key.am_lane).type != uct::device_type::NET) {
        return t.rndv;
    }
    return std::max(t.rndv, t.am_zcopy_frag + 1);
}

ep_thresholds compute_thresholds(const ucp_worker &worker, const ep_config_key &key,
                                 const uct::iface_attr &attr)
{
    ep_thresholds t{};
    t.max_eager_short  = ((attr.flags & uct::iface_flag::AM_SHORT) &&
                         (attr.am.max_short >= sizeof(ucp_tag_t))) ?
                             ssize_t(attr.am.max_short - sizeof(ucp_tag_t)) :
                             -1;
    const size_t bcopy = attr.am.max_bcopy;
    t.am_max_bcopy     = bcopy;
    t.max_eager_only   = bcopy - sizeof(ucp_tag_t);
    t.first_frag       = bcopy - sizeof(wire::eager_first_hdr);
    t.sync_first_frag  = t.first_frag - sizeof(wire::request_hdr);
    t.middle_frag      = bcopy - sizeof(wire::eager_middle_hdr);

    zcopy_thresholds(worker, key, attr, t);
    const context_config &cfg = worker.context.config;
    if (key.rndv_lane == no_lane) {
        t.rndv = SIZE_MAX;
    } else if (cfg.rndv_thresh == ucs::config::size_auto) {
        t.rndv = auto_rndv_thresh(worker, key, t);
    } else {
        t.rndv = cfg.rndv_thresh;
    }
    /* UCX_RNDV_THRESH below the short limit wins: from that size on, every
     * protocol choice (and ucp_ep_print_info) says rendezvous. */
    if ((t.rndv != SIZE_MAX) && (t.max_eager_short >= ssize_t(t.rndv))) {
        t.max_eager_short = ssize_t(t.rndv) - 1;
    }
    t.am_rndv = am_rndv_thresh(worker, key, t);
    return t;
}

/* What lane `i` offers put, get and atomics (nothing for a placeholder). */
proto::rma_lane_limits rma_limits(const ucp_worker &worker, const ep_config_key &key, uint8_t i)
{
    proto::rma_lane_limits l;
    if (!has_md(worker, key, i)) {
        return l;
    }
    const uct::iface_attr &attr = lane_attr(worker, key, i);
    const uct::md_attr &md      = worker.context.mds[key.lanes[i].md_index].md->attr();
    using namespace uct::iface_flag;
    auto offered = [&](uint64_t flag, size_t size) { return (attr.flags & flag) ? size : 0; };
    l.put_short  = (attr.flags & PUT_SHORT) ? ssize_t(attr.put.max_short) : -1;
    l.put_bcopy  = offered(PUT_BCOPY, attr.put.max_bcopy);
    l.put_zcopy  = offered(PUT_ZCOPY, attr.put.max_zcopy);
    l.get_bcopy  = offered(GET_BCOPY, attr.get.max_bcopy);
    l.get_zcopy  = offered(GET_ZCOPY, attr.get.max_zcopy);
    const size_t thresh = worker.context.config.zcopy_thresh;
    l.zcopy             = (thresh == ucs::config::size_auto) ? auto_zcopy_thresh(md) : thresh;
    l.mem_types         = md.access_mem_types;
    const bool cpu_mode = (worker.atomic_mode == ATOMIC_MODE_CPU);
    l.amo               = (attr.flags & (cpu_mode ? ATOMIC_CPU : ATOMIC_DEVICE)) &&
            ((attr.atomic32_fetch | attr.atomic64_fetch) != 0);
    return l;
}

ep_config_key key_of(const ucp_ep &ep)
{
    ep_config_key key;
    key.num_lanes = ep.num_lanes;
    for (uint8_t i = 0; i < ep.num_lanes; ++i) {
        key.lanes[i] = {ep.lanes[i].iface_index, ep.lanes[i].md_index};
    }
    key.am_lane          = ep.am_lane;
    key.rndv_lane        = ep.rndv_lane;
    key.extra_rndv_lanes = ep.extra_rndv_lanes;
    key.rma_lane         = ep.rma_lane;
    key.mem_rndv_lane    = ep.mem_rndv_lane;
    return key;
}

std::unique_ptr<ep_config> make_config(const ucp_worker &worker, const ucp_ep &ep,
                                       const ep_config_key &key, unsigned index)
{
    const ep_thresholds thresh = compute_thresholds(worker, key, ep.am_ep->owner().attr());
    uint64_t rndv_mem_types    = (key.rndv_lane != no_lane) ? (1ull << UCS_MEMORY_TYPE_HOST) : 0;
    if (key.mem_rndv_lane != no_lane) {
        rndv_mem_types |=
            worker.context.mds[key.lanes[key.mem_rndv_lane].md_index].md->attr().reg_mem_types &
            ~(1ull << UCS_MEMORY_TYPE_HOST);
    }
    proto::table_inputs inputs{thresh, rndv_mem_types};
    for (uint8_t i = 0; i < key.num_lanes; ++i) {
        inputs.rma_lanes[i] = rma_limits(worker, key, i);
    }
    inputs.amo_cpu = (worker.atomic_mode == ATOMIC_MODE_CPU);
    auto cfg       = std::make_unique<ep_config>(
        ep_config{index, key, thresh, {}, {}, {}, false, false, {}, proto::table(inputs)});
    for (uint8_t i = 0; i < key.num_lanes; ++i) {
        const uct::tl_resource &res = lane_resource(worker, key, i);
        cfg->lane_names[i]          = has_md(worker, key, i) ?
                                          std::string(res.tl_name) + "/" + res.dev_name :
                                          std::string("(connecting)");
    }
    cfg->am_tl = has_md(worker, key, key.am_lane) ?
                     lane_resource(worker, key, key.am_lane).tl_name :
                     "the connecting lane";
    if (key.rndv_lane != no_lane) {
        const worker_iface &wi = worker.ifaces[key.lanes[key.rndv_lane].iface_index];
        cfg->rndv_tl           = lane_resource(worker, key, key.rndv_lane).tl_name;
        cfg->rndv_can_push     = (wi.iface->attr().flags & uct::iface_flag::PUT_ZCOPY) != 0;
        cfg->rndv_splits       = rndv_splits(worker, key);
        cfg->num_rndv_rails    = uint8_t(rndv_rails_of(worker, key, cfg->rndv_rails,
                                                       cfg->rndv_rail_Bps));
    }
    if (key.mem_rndv_lane != no_lane) {
        cfg->mem_rndv_tl = lane_resource(worker, key, key.mem_rndv_lane).tl_name;
    }
    return cfg;
}

/* Whether lane `i` serves `op` for keys it reaches (for atomics: has them). */
bool lane_serves(const ep_config &cfg, proto::operation op, uint8_t i)
{
    if (op == proto::operation::AMO) {
        return cfg.protocols.inputs().rma_lanes[i].amo;
    }
    return cfg.protocols.get({op, i, proto::dt_class::contig, UCS_MEMORY_TYPE_HOST}).count > 0;
}

/* Put, get and atomics, one table per way a remote key can be reached:
 * a lane whose md is in the key, the key mapped here (a peer on this node
 * with a shared-memory lane), or neither. */
void print_rma_tables(const ucp_worker &worker, const ep_config &cfg,
                      const proto::print_names &names, FILE *stream)
{
    using proto::operation;
    const uint64_t features = worker.context.features;
    bool mappable           = false;
    for (uint8_t i = 0; i < cfg.key.num_lanes; ++i) {
        mappable |= has_md(worker, cfg.key, i) &&
                    (worker.context.mds[cfg.key.lanes[i].md_index].md->attr().flags &
                     uct::md_flag::RKEY_PTR);
    }
    for (operation op : {operation::PUT, operation::GET, operation::AMO}) {
        const bool wanted = (op == operation::AMO) ?
                                (features & (UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64)) != 0 :
                                (features & UCP_FEATURE_RMA) != 0;
        if (!wanted) {
            continue;
        }
        std::fprintf(stream, "#\n#   %s%s, by how the remote key is reached:\n",
                     proto::operation_name(op), (op == operation::AMO) ? "" : " (size in bytes)");
        auto table_of = [&](uint8_t reach, const std::string &how) {
            std::fprintf(stream, "#   %s:\n", how.c_str());
            proto::print(stream, cfg.protocols,
                         {op, reach, proto::dt_class::contig, UCS_MEMORY_TYPE_HOST}, names);
        };
        if (mappable) {
            table_of(proto::rma_reach::DIRECT, "the key's segment mapped here");
        }
        for (uint8_t i = 0; i < cfg.key.num_lanes; ++i) {
            if (lane_serves(cfg, op, i)) {
                table_of(i, "the key has an entry for lane[" + std::to_string(i) + "] " +
                                cfg.lane_names[i]);
            }
        }
        table_of(proto::rma_reach::AM, "no lane reaches the key");
    }
}

} // namespace

const ep_config *ep_config_attach(ucp_ep *ep)
{
    ucp_worker *worker      = ep->worker;
    const ep_config_key key = key_of(*ep);
    const ep_config *found  = nullptr;
    for (const auto &cfg : worker->ep_configs) {
        if (cfg->key == key) {
            found = cfg.get();
            break;
        }
    }
    const bool made = (found == nullptr);
    if (made) {
        const unsigned index = unsigned(worker->ep_configs.size());
        worker->ep_configs.push_back(make_config(*worker, *ep, key, index));
        found = worker->ep_configs.back().get();
    }
    ep->cfg             = found;
    ep->max_eager_short = int32_t(std::min<ssize_t>(found->thresh.max_eager_short,
                                                    INT32_MAX)); /* >= -1 */
    /* A client's placeholder lane (no md) reaches no transport yet. */
    if (made && has_md(*worker, key, key.am_lane)) {
        log_new_ep_config(ep);
        if (worker->context.config.proto_info) {
            print_ep_config(*worker, *found, stdout);
        }
    }
    return found;
}

void print_ep_config(const ucp_worker &worker, const ep_config &cfg, FILE *stream)
{
    std::fprintf(stream, "#\n#   ep_cfg[%u] of worker '%s':\n", cfg.index, worker.name.c_str());
    for (uint8_t i = 0; i < cfg.key.num_lanes; ++i) {
        const bool rndv = (i == cfg.key.rndv_lane) || (cfg.key.extra_rndv_lanes & (1u << i));
        std::fprintf(stream, "#   lane[%u]: %s%s%s%s%s\n", i, cfg.lane_names[i].c_str(),
                     (i == cfg.key.am_lane) ? " am" : "", rndv ? " rndv" : "",
                     (i == cfg.key.rma_lane) ? " rma" : "",
                     (i == cfg.key.mem_rndv_lane) ? " rndv(device memory)" : "");
    }
    if (cfg.num_rndv_rails > 1) {
        std::string rails;
        for (unsigned i = 0; i < cfg.num_rndv_rails; ++i) {
            char text[96];
            std::snprintf(text, sizeof(text), "%slane[%u] %s (%.0f MB/s)", (i > 0) ? ", " : "",
                          cfg.rndv_rails[i], cfg.lane_names[cfg.rndv_rails[i]].c_str(),
                          cfg.rndv_rail_Bps[i] / 1e6);
            rails += text;
        }
        std::fprintf(stream,
                     "#   rendezvous pulls split over %s, by bandwidth, at least %zu bytes "
                     "each\n",
                     rails.c_str(), worker.context.config.min_rndv_chunk_size);
    }
    const ep_thresholds &t = cfg.thresh;
    if (t.zcopy_frag == 0) {
        std::fprintf(stream, "#   eager zcopy: %s has no zero-copy active messages\n",
                     cfg.am_tl.c_str());
    } else if (t.zcopy == SIZE_MAX) {
        std::fprintf(stream, "#   eager zcopy: off (UCX_ZCOPY_THRESH=inf)\n");
    } else {
        std::fprintf(stream, "#   eager zcopy from %zu bytes on %s%s\n", t.zcopy, cfg.am_tl.c_str(),
                     t.zcopy_needs_memh ? " (the buffer is registered: iov data goes by copy)" :
                                          "");
    }

    /* The receiver picks the rendezvous scheme; shown as it would with our
     * lanes at both ends. */
    const context_config &ccfg = worker.context.config;
    size_t push_from           = SIZE_MAX;
    if (cfg.rndv_can_push && (ccfg.rndv_scheme == RNDV_SCHEME_PUT_ZCOPY)) {
        push_from = 0;
    } else if (cfg.rndv_splits) {
        push_from = ccfg.rndv_split_thresh;
    }
    const std::string rndv_get  = "rendezvous, receiver gets (get_zcopy) on " + cfg.rndv_tl;
    const std::string rndv_push = ((ccfg.rndv_scheme == RNDV_SCHEME_PUT_ZCOPY) ?
                                       "rendezvous, sender puts (put_zcopy) on " :
                                       "rendezvous split, sender puts half, receiver gets half "
                                       "on ") +
                                  cfg.rndv_tl;
    const proto::print_names names{cfg.am_tl.c_str(), rndv_get.c_str(), rndv_push.c_str(),
                                   push_from, cfg.lane_names};
    using proto::operation;
    using proto::dt_class;
    const struct {
        operation op;
        dt_class dt;
        const char *note;
    } tables[] = {
        {operation::TAG, dt_class::contig, nullptr},
        {operation::TAG, dt_class::iov, nullptr},
        {operation::TAG, dt_class::generic, nullptr},
        {operation::TAG_SYNC, dt_class::contig, nullptr},
        {operation::AM, dt_class::contig,
         "a user header can rule out short, zcopy and one-fragment sends; "
         "UCP_AM_SEND_FLAG_EAGER/RNDV force the choice"},
        {operation::STREAM, dt_class::contig, nullptr},
    };
    for (const auto &tb : tables) {
        std::fprintf(stream, "#\n#   %s, %s data (message size in bytes):\n",
                     proto::operation_name(tb.op), proto::dt_class_name(tb.dt));
        if (tb.note != nullptr) {
            std::fprintf(stream, "#   (%s)\n", tb.note);
        }
        proto::print(stream, cfg.protocols, {tb.op, 0, tb.dt, UCS_MEMORY_TYPE_HOST}, names);
    }
    print_rma_tables(worker, cfg, names, stream);
    std::fprintf(stream, "#\n");
}

} // namespace ucp
