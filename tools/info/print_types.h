/* ucx_info -y: the sizes of the main public and internal types. */
#ifndef TOOLS_INFO_PRINT_TYPES_H
#define TOOLS_INFO_PRINT_TYPES_H

#include <cstdio>

namespace info {

void print_types(FILE *out);

} // namespace info

#endif
