/*
 * The sweep's table: a row per stage (transport, test, size, then UCX's
 * eight columns), built as text so its layout can be checked.
 */
#ifndef BENCH_PERFTEST_SWEEP_TABLE_H
#define BENCH_PERFTEST_SWEEP_TABLE_H

#include "report.h"

#include <string>

namespace perftest {

/* The rule, both title lines and the rule again, each ending in '\n'. */
std::string sweep_header_text(const std::string &percentile_title);

/* "+----+---...+" (no newline). */
std::string sweep_rule_text();

/* One stage (no newline): its bars sit where the header's do, whatever
 * the values; a stage that did not run says why after the size. */
std::string sweep_row_text(const result &r, bool numeric);

} // namespace perftest

#endif
