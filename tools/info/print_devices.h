/* ucx_info -d: every memory domain, transport and device with its capabilities. */
#ifndef TOOLS_INFO_PRINT_DEVICES_H
#define TOOLS_INFO_PRINT_DEVICES_H

#include <cstdio>

namespace info {

/* Returns the number of transports printed. */
unsigned print_devices(FILE *out);

} // namespace info

#endif
