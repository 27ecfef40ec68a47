/*
 * Cells of fixed width for ucx_perftest's tables: a number that does not
 * fit with its usual decimals loses decimals, then goes to exponent form,
 * so a row stays aligned (and its columns apart) whatever the values.
 */
#ifndef BENCH_PERFTEST_TABLE_CELLS_H
#define BENCH_PERFTEST_TABLE_CELLS_H

#include <string>

namespace perftest {

/* `value` right-aligned in exactly `width` characters, with `decimals`
 * when it fits; `grouped`: thousands separators of the locale (-N). */
std::string number_cell(double value, int width, int decimals, bool grouped);

/* `text` left-aligned in exactly `width` characters; a longer one is cut
 * and ends with '~'. */
std::string text_cell(const std::string &text, int width);

/* `text` centred in `width` characters (left as is when longer). */
std::string centered_cell(const std::string &text, int width);

} // namespace perftest

#endif
