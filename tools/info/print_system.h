/* ucx_info -s, -T, -M: facts about this machine. */
#ifndef TOOLS_INFO_PRINT_SYSTEM_H
#define TOOLS_INFO_PRINT_SYSTEM_H

#include <cstdio>

namespace info {

/* -s: timer, CPU, memory. */
void print_system(FILE *out);

/* -T: NUMA nodes with their CPUs and distances, and where each network and
 * RDMA device sits (NUMA node, PCI address). */
void print_topology(FILE *out);

/* -M: memcpy bandwidth from 4 KiB to 64 MiB. */
void print_memcpy_bandwidth(FILE *out);

} // namespace info

#endif
