/*
 * What the log says about endpoint configurations, as UCX 1.13 does:
 *  info:  when a worker makes an endpoint configuration (ucp_ep_config.h),
 *         one line naming the transports each operation uses, numbered as
 *         the worker's configurations are:
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

/* Debug: the lanes of an ep that just got them. */
void log_ep_lanes(const ucp_ep *ep);

/* Info: the ep_cfg[N] line of ep's configuration, which was just made. */
void log_new_ep_config(ucp_ep *ep);

/* The "tag(...) rma(...) ..." part of the info line for ep's lanes. */
std::string describe_ep_config(const ucp_ep *ep);

} // namespace ucp

#endif
