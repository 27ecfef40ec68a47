/*
 * Facts about the machine the process runs on. Values that cannot change
 * while the process lives are computed once and cached.
 */
#ifndef UCS_SYS_SYS_INFO_H
#define UCS_SYS_SYS_INFO_H

#include <cstddef>
#include <sys/types.h>

namespace ucs::sys {

/* Base page size in bytes (a power of two). */
size_t page_size();

/* L1 data cache line in bytes: sysfs coherency_line_size, else 64. */
size_t cache_line_size();

/* CPUs online when first asked; at least 1. */
unsigned cpu_count();

/* Default huge page size in bytes (/proc/meminfo Hugepagesize), 0 if none. */
size_t huge_page_size();

/* Installed physical memory in bytes, 0 if unknown. */
size_t physical_memory_size();

/* This node's host name; never NULL. */
const char *host_name();

/* The calling thread's kernel id. */
pid_t get_tid();

} // namespace ucs::sys

#endif
