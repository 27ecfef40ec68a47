/*
 * ucx_info -p/-w/-e/-m: a UCP context (features from -u, devices from -D,
 * endpoint estimates from -n/-N), its worker, an endpoint and a memory
 * allocation, each printed by UCP's own print_info call.
 */
#ifndef TOOLS_INFO_PRINT_UCP_H
#define TOOLS_INFO_PRINT_UCP_H

#include "info_options.h"

namespace info {

/* Returns the exit code: 0, or 1 with the reason on stderr. */
int print_ucp(const options &opts);

} // namespace info

#endif
