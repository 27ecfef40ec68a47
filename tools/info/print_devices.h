/* ucx_info -d: every memory domain, transport and device with its capabilities. */
#ifndef TOOLS_INFO_PRINT_DEVICES_H
#define TOOLS_INFO_PRINT_DEVICES_H

#include <cstdio>
#include <string>

namespace info {

/* Returns the number of transports printed. A non-empty tl_filter (-t)
 * keeps only that transport; when none matches, stderr says which exist. */
unsigned print_devices(FILE *out, const std::string &tl_filter = "");

} // namespace info

#endif
