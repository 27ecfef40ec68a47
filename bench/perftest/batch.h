/*
 * -b FILE: UCX's batch files. Each line is a test: its name, then options
 * for it, which are added to the command line's (so `-s 64` on a line
 * overrides the command line's size for that test). Empty lines and text
 * after '#' are ignored.
 */
#ifndef BENCH_PERFTEST_BATCH_H
#define BENCH_PERFTEST_BATCH_H

#include "options.h"

#include <vector>

namespace perftest {

/* The tests of opts.batch_file, each parsed with argv (less its -b) plus
 * the line. False, having said why on stderr, for an unreadable file, an
 * empty one, or a line that is not a valid test. */
bool read_batch(const cli &opts, int argc, char **argv, std::vector<test_spec> *stages);

} // namespace perftest

#endif
