/*
 * Endpoint configuration lines of the log (see ep_config_log.h).
 */
#include "ep_config_log.h"
#include "ucp_ep.h"
#include "ucp_worker.h"

#include <ucs/debug/log.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace ucp {

namespace {

std::string lane_resource(const ucp_ep *ep, uint8_t lane)
{
    const ucp_worker *worker = ep->worker;
    const uct::tl_resource &res =
        worker->context.tls[worker->ifaces[ep->lanes[lane].iface_index].tl_index].resource;
    return std::string(res.tl_name) + "/" + res.dev_name;
}

/* "name(tl/dev tl/dev) ", lanes in order, each once; "" without lanes. */
std::string feature(const ucp_ep *ep, const char *name, std::vector<uint8_t> lanes)
{
    lanes.erase(std::remove(lanes.begin(), lanes.end(), no_lane), lanes.end());
    std::sort(lanes.begin(), lanes.end());
    lanes.erase(std::unique(lanes.begin(), lanes.end()), lanes.end());
    if (lanes.empty()) {
        return "";
    }
    std::string text = std::string(name) + "(";
    for (size_t i = 0; i < lanes.size(); ++i) {
        if (i > 0) {
            text += ' ';
        }
        text += lane_resource(ep, lanes[i]);
    }
    return text + ") ";
}

/* The configuration's protocol tables (as ucp_ep_print_info shows them),
 * one debug line per line. */
void log_protocols(const ucp_ep *ep)
{
    char *text    = nullptr;
    size_t length = 0;
    FILE *stream  = open_memstream(&text, &length);
    if (stream == nullptr) {
        return;
    }
    print_ep_config(*ep->worker, *ep->cfg, stream);
    std::fclose(stream);
    std::string_view rest(text, length);
    while (!rest.empty()) {
        size_t end            = rest.find('\n');
        std::string_view line = rest.substr(0, end);
        if ((line != "#") && !line.empty()) {
            ucs_debug("%.*s", static_cast<int>(line.size()), line.data());
        }
        rest.remove_prefix((end == rest.npos) ? rest.size() : end + 1);
    }
    std::free(text);
}

} // namespace

std::string describe_ep_config(const ucp_ep *ep)
{
    if (ep->am_lane == no_lane) {
        return "";
    }
    const uint64_t features       = ep->worker->context.features;
    const bool rma_emulated       = (ep->rma_lane == no_lane);
    std::vector<uint8_t> am_lanes = {ep->am_lane, ep->rndv_lane};
    for (uint8_t i = 0; i < ep->num_lanes; ++i) {
        if (ep->extra_rndv_lanes & (1u << i)) {
            am_lanes.push_back(i);
        }
    }
    const std::vector<uint8_t> rma_lanes = {rma_emulated ? ep->am_lane : ep->rma_lane};

    std::string text;
    if (features & UCP_FEATURE_TAG) {
        text += feature(ep, "tag", am_lanes);
    }
    if (features & UCP_FEATURE_RMA) {
        text += feature(ep, rma_emulated ? "rma_am" : "rma", rma_lanes);
    }
    if (features & (UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64)) {
        text += feature(ep, rma_emulated ? "amo_am" : "amo", rma_lanes);
    }
    if (features & UCP_FEATURE_AM) {
        text += feature(ep, "am", am_lanes);
    }
    if (features & UCP_FEATURE_STREAM) {
        text += feature(ep, "stream", {ep->am_lane});
    }
    while (!text.empty() && (text.back() == ' ')) {
        text.pop_back();
    }
    return text;
}

void log_ep_lanes(const ucp_ep *ep)
{
    if (!ucs::log_enabled(UCS_LOG_LEVEL_DEBUG)) {
        return;
    }
    const ucp_worker *worker = ep->worker;
    for (uint8_t i = 0; i < ep->num_lanes; ++i) {
        ucs_debug("worker '%s' ep %u to '%s': lane[%u] %s%s%s%s", worker->name.c_str(), ep->id,
                  ep->peer_name.c_str(), i, lane_resource(ep, i).c_str(),
                  (i == ep->am_lane) ? " am" : "",
                  ((i == ep->rndv_lane) || (ep->extra_rndv_lanes & (1u << i))) ? " rndv" : "",
                  (i == ep->rma_lane) ? " rma" : "");
    }
}

void log_new_ep_config(ucp_ep *ep)
{
    if (!ucs::log_enabled(UCS_LOG_LEVEL_INFO)) {
        return;
    }
    /* UCX indents this line by two columns (it is logged inside a nested scope). */
    ucs_info("  ep_cfg[%u]: %s", ep->cfg->index, describe_ep_config(ep).c_str());
    if (ucs::log_enabled(UCS_LOG_LEVEL_DEBUG)) {
        log_protocols(ep);
    }
}

} // namespace ucp
