/*
 * Finds and opens ucx_perftest's modules: next to the executable (the
 * build tree), then in the directory they are installed to. A module is
 * never closed: unloading a libucp that was initialized is asking for
 * trouble, and the process ends soon anyway.
 */
#ifndef BENCH_PERFTEST_MODULES_H
#define BENCH_PERFTEST_MODULES_H

#include "module.h"

#include <string>

namespace perftest {

/* The run function of the UCP or uct module; nullptr with *error set. */
module_run_fn load_test_module(api_kind api, std::string *error);

/* The file of the libucp the UCP module runs on (it may not be ours: see
 * LD_LIBRARY_PATH, or an MPI library that loaded UCX first); empty when
 * the module cannot be loaded. */
std::string ucp_library_path();

/* dlopen()s a module by file name (RTLD_NOW | flags); nullptr with *error. */
void *open_module(const char *file_name, int flags, std::string *error);

} // namespace perftest

#endif
