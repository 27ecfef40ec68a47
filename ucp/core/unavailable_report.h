/*
 * The warning UCX 1.13 gives for names in UCX_TLS and the device lists
 * (UCX_NET_DEVICES, ...) that match nothing on this host, listing what is
 * there instead. It is given whether or not other transports remain usable:
 * a typo in a site tuning should not go unnoticed.
 */
#ifndef UCP_CORE_UNAVAILABLE_REPORT_H
#define UCP_CORE_UNAVAILABLE_REPORT_H

#include "ucp_config.h"

#include <string>
#include <vector>

namespace ucp {

/* A resource a component offers on this host, before any filtering. */
struct found_resource {
    std::string tl_name;   /* "tcp" */
    std::string dev_name;  /* "eth0" */
    std::string component; /* "tcp", "posix", ... */
    uct::device_type type;
};

/*
 * Warns once per list:
 *   transports 'foo','bar' are not available, please use one or more of: cma, mm, ...
 *   network device 'bogus0' is not available, please use one or more of: 'eth0'(tcp), 'lo'(tcp)
 */
void warn_unavailable(const context_config &config, const std::vector<found_resource> &found);

} // namespace ucp

#endif
