/*
 * Lane selection from the perf models (see lane_select.h).
 */
#include "lane_select.h"

#include <ucp/core/ucp_worker.h>

#include <algorithm>
#include <cstring>

namespace ucp {

namespace {

double am_cost(const uct::iface_attr &attr)
{
    return attr.perf.latency_s + attr.perf.send_overhead_s + attr.perf.recv_overhead_s;
}

/* Whether `a` is better than `b` for active messages (lower cost wins). */
bool better_am(const uct::iface_attr &a, const uct::iface_attr &b)
{
    double ca = am_cost(a), cb = am_cost(b);
    return (ca < cb) || ((ca == cb) && (a.priority > b.priority));
}

/* Rendezvous: bandwidth first, then latency. */
bool better_bulk(const uct::iface_attr &a, const uct::iface_attr &b)
{
    if (a.perf.bandwidth_Bps != b.perf.bandwidth_Bps) {
        return a.perf.bandwidth_Bps > b.perf.bandwidth_Bps;
    }
    return better_am(a, b);
}

/* The first entry of `remote` that iface `i` reaches, and how; one not in
 * `taken` (entries other ifaces chose) where there is one. */
bool find_entry(const ucp_worker &worker, unsigned i, const unpacked_address &remote,
                lane_candidate *out, const std::vector<bool> &taken = {})
{
    const ucp_context &ctx = worker.context;
    const worker_iface &wi = worker.ifaces[i];
    const tl_entry &tl     = ctx.tls[wi.tl_index];
    const uint64_t flags   = wi.iface->attr().flags;
    bool found             = false; /* *out is a taken entry */
    for (unsigned n = 0; n < remote.entries.size(); ++n) {
        const address_entry &e = remote.entries[n];
        if ((e.tl_name != tl.resource.tl_name) || (e.md_name != ctx.mds[tl.md_index].name)) {
            continue;
        }
        const bool to_iface = (flags & uct::iface_flag::CONNECT_TO_IFACE) &&
                              (e.flags & address_entry_flag::CONNECT_TO_IFACE);
        const bool to_ep = (flags & uct::iface_flag::CONNECT_TO_EP) &&
                           (e.flags & address_entry_flag::CONNECT_TO_EP);
        if ((to_iface || to_ep) &&
            wi.iface->is_reachable(e.dev_addr.data(), e.dev_addr.size(), e.iface_addr.data(),
                                   e.iface_addr.size())) {
            if ((n < taken.size()) && taken[n]) {
                if (!found) {
                    *out  = {i, &e, n, !to_iface};
                    found = true;
                }
                continue;
            }
            *out = {i, &e, n, !to_iface};
            return true;
        }
    }
    return found;
}

} // namespace

ucs_status_t select_aux(const ucp_worker &worker, const unpacked_address &remote,
                        lane_candidate *aux)
{
    bool found = false;
    for (unsigned i = 0; i < worker.ifaces.size(); ++i) {
        const uct::iface_attr &attr = worker.ifaces[i].iface->attr();
        lane_candidate c;
        if (!(attr.flags & uct::iface_flag::AM_BCOPY) || !find_entry(worker, i, remote, &c) ||
            c.p2p) {
            continue;
        }
        if (!found || better_am(attr, worker.ifaces[aux->iface_index].iface->attr())) {
            *aux  = c;
            found = true;
        }
    }
    return found ? UCS_OK : UCS_ERR_UNREACHABLE;
}

ucs_status_t select_lanes(const ucp_worker &worker, const unpacked_address &remote, lane_plan *plan)
{
    const ucp_context &ctx = worker.context;
    /* One candidate per local iface: the first peer entry it reaches that
     * no earlier iface chose, so that devices of one transport pair up one
     * to one (ports 1 and 2 of an adapter with the peer's ports 1 and 2):
     * both sides choose alike, and a connect-to-ep lane meets the peer's
     * lane that chose its entry. */
    std::vector<bool> taken(remote.entries.size(), false);
    for (unsigned i = 0; i < worker.ifaces.size(); ++i) {
        lane_candidate c;
        if (find_entry(worker, i, remote, &c, taken) && (plan->lanes.size() < max_lanes)) {
            plan->lanes.push_back(c);
            taken[c.entry_index] = true;
        }
    }
    if (plan->lanes.empty()) {
        return UCS_ERR_UNREACHABLE;
    }

    auto attr_of = [&](uint8_t lane) -> const uct::iface_attr & {
        return worker.ifaces[plan->lanes[lane].iface_index].iface->attr();
    };
    auto md_flags_of = [&](uint8_t lane) {
        unsigned tl = worker.ifaces[plan->lanes[lane].iface_index].tl_index;
        return ctx.mds[ctx.tls[tl].md_index].md->attr().flags;
    };

    auto tl_name_of = [&](uint8_t lane) {
        return ctx.tls[worker.ifaces[plan->lanes[lane].iface_index].tl_index].resource.tl_name;
    };
    auto type_of = [&](uint8_t lane) {
        return ctx.tls[worker.ifaces[plan->lanes[lane].iface_index].tl_index].resource.type;
    };
    auto md_attr_of = [&](uint8_t lane) -> const uct::md_attr & {
        unsigned tl = worker.ifaces[plan->lanes[lane].iface_index].tl_index;
        return ctx.mds[ctx.tls[tl].md_index].md->attr();
    };
    /* Accelerator transports (cuda_copy, cuda_ipc) move accelerator memory
     * only: they take no host role below. */
    for (uint8_t lane = 0; lane < plan->lanes.size(); ++lane) {
        const uct::iface_attr &attr   = attr_of(lane);
        constexpr uint64_t host_types = 1ull << UCS_MEMORY_TYPE_HOST;
        if ((type_of(lane) == uct::device_type::ACC) && (attr.flags & uct::iface_flag::GET_ZCOPY) &&
            (md_flags_of(lane) & uct::md_flag::REG) &&
            (md_attr_of(lane).reg_mem_types & ~host_types) &&
            ((plan->mem_rndv == no_lane) || better_bulk(attr, attr_of(plan->mem_rndv)))) {
            plan->mem_rndv = lane;
        }
    }
    for (uint8_t lane = 0; lane < plan->lanes.size(); ++lane) {
        const uct::iface_attr &attr = attr_of(lane);
        if (type_of(lane) == uct::device_type::ACC) {
            continue;
        }
        if ((attr.flags & uct::iface_flag::AM_BCOPY) &&
            ((plan->am == no_lane) || better_am(attr, attr_of(plan->am)))) {
            plan->am = lane;
        }
    }
    if (plan->am == no_lane) {
        return UCS_ERR_UNREACHABLE;
    }
    /* Same node or same worker: only lanes of that scope, so a tcp loopback
     * never carries bulk data between processes that share memory. */
    const uct::device_type am_type =
        ctx.tls[worker.ifaces[plan->lanes[plan->am].iface_index].tl_index].resource.type;
    auto in_scope = [&](uint8_t lane) {
        const uct::device_type type = type_of(lane);
        const bool local_scope      = (am_type != uct::device_type::NET);
        return !(local_scope && (type == uct::device_type::NET)) && (type != uct::device_type::ACC);
    };
    auto can_pull = [&](uint8_t lane) {
        return in_scope(lane) && (attr_of(lane).flags & uct::iface_flag::GET_ZCOPY) &&
               (md_flags_of(lane) & uct::md_flag::REG);
    };
    for (uint8_t lane = 0; lane < plan->lanes.size(); ++lane) {
        const uct::iface_attr &attr = attr_of(lane);
        if (!in_scope(lane)) {
            continue;
        }
        if (can_pull(lane) && ((plan->rndv == no_lane) || better_bulk(attr, attr_of(plan->rndv)))) {
            plan->rndv = lane;
        }
        if ((attr.flags & uct::iface_flag::PUT_ZCOPY) &&
            (attr.flags & uct::iface_flag::GET_ZCOPY) &&
            ((plan->rma == no_lane) || better_am(attr, attr_of(plan->rma)))) {
            plan->rma = lane;
        }
    }

    auto md_of = [&](uint8_t lane) {
        return ctx.tls[worker.ifaces[plan->lanes[lane].iface_index].tl_index].md_index;
    };
    if (plan->rndv != no_lane) {
        /* Other devices of the rendezvous lane's transport: tcp interfaces
         * and ports of an adapter (its md: the sender's key serves them),
         * other adapters (the sender registers on their mds too). Not other
         * transports: tcp over IPoIB beside rc_verbs would share its wire. */
        const unsigned max_rndv  = std::clamp(ctx.config.max_rndv_lanes, 1u, unsigned(max_lanes));
        const double fastest_Bps = attr_of(plan->rndv).perf.bandwidth_Bps;
        for (uint8_t lane = 0; lane < plan->lanes.size(); ++lane) {
            if ((lane != plan->rndv) && can_pull(lane) &&
                (std::strcmp(tl_name_of(lane), tl_name_of(plan->rndv)) == 0) &&
                (attr_of(lane).perf.bandwidth_Bps * ctx.config.multi_lane_max_ratio >=
                 fastest_Bps)) {
                plan->rndv_extra.push_back(lane);
            }
        }
        std::stable_sort(plan->rndv_extra.begin(), plan->rndv_extra.end(),
                         [&](uint8_t a, uint8_t b) { return better_bulk(attr_of(a), attr_of(b)); });
        if (plan->rndv_extra.size() > max_rndv - 1) {
            plan->rndv_extra.resize(max_rndv - 1);
        }
    }

    /* RMA and atomics: a lane for each md that registers application memory
     * (cma, tcp, self), so registered memory is reached without emulation. */
    if (ctx.features & (UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64)) {
        auto md_taken = [&](unsigned md) {
            for (uint8_t role : {plan->am, plan->rndv, plan->rma}) {
                if ((role != no_lane) && (md_of(role) == md)) {
                    return true;
                }
            }
            for (uint8_t extra : plan->rma_extra) {
                if (md_of(extra) == md) {
                    return true;
                }
            }
            return false;
        };
        constexpr uint64_t put_get = uct::iface_flag::PUT_SHORT | uct::iface_flag::PUT_BCOPY |
                                     uct::iface_flag::PUT_ZCOPY | uct::iface_flag::GET_BCOPY |
                                     uct::iface_flag::GET_ZCOPY;
        for (uint8_t lane = 0; lane < plan->lanes.size(); ++lane) {
            if (!in_scope(lane) || !(attr_of(lane).flags & put_get) ||
                !(md_flags_of(lane) & uct::md_flag::REG) || md_taken(md_of(lane))) {
                continue;
            }
            plan->rma_extra.push_back(lane);
        }
    }

    /* Keep only the lanes with a role: an unused one would still connect. */
    std::vector<lane_candidate> used;
    auto keep = [&](uint8_t &role) {
        if (role == no_lane) {
            return;
        }
        const lane_candidate c = plan->lanes[role];
        for (uint8_t i = 0; i < used.size(); ++i) {
            if (used[i].iface_index == c.iface_index) {
                role = i;
                return;
            }
        }
        used.push_back(c);
        role = uint8_t(used.size() - 1);
    };
    keep(plan->am);
    keep(plan->rndv);
    keep(plan->rma);
    keep(plan->mem_rndv);
    for (uint8_t &extra : plan->rndv_extra) {
        keep(extra);
    }
    for (uint8_t &extra : plan->rma_extra) {
        keep(extra);
    }
    plan->lanes = std::move(used);
    return UCS_OK;
}

} // namespace ucp
