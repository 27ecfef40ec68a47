/*
 * What the log says about endpoint configurations, as UCX 1.13 does:
 *  info:  the first time a worker sees a lane configuration, one line naming
 *         the transports each operation uses, numbered per worker:
 *             ep_cfg[0]: tag(tcp/lo) rma_am(tcp/lo) amo_am(tcp/lo) am(tcp/lo)
 *         ("rma_am"/"amo_am": emulated over active messages);
 *  debug: for every ep, its lanes (wireup), and for a new configuration the
 *         protocol chosen per message size (ucp_ep_print_info's table).
 */
#ifndef UCP_CORE_EP_CONFIG_LOG_H
#define UCP_CORE_EP_CONFIG_LOG_H

#include <string>

struct ucp_ep;

namespace ucp {

/* Call once the ep has its lanes. */
void log_ep_config(ucp_ep *ep);

/* The "tag(...) rma(...) ..." part of the info line for ep's lanes. */
std::string describe_ep_config(const ucp_ep *ep);

} // namespace ucp

#endif
