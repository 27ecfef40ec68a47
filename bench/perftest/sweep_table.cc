#include "sweep_table.h"

#include "table_cells.h"

#include <iterator>

namespace perftest {

namespace {

struct column {
    const char *title; /* "": the percentile column */
    int width;
};

const column columns[] = {
    {"transport", 12}, {"test", 14},    {"size", 10},    {"# iterations", 14},
    {"", 10},          {"average", 9},  {"overall", 9},  {"average", 10},
    {"overall", 10},   {"average", 11}, {"overall", 11},
};

} // namespace

std::string sweep_rule_text()
{
    std::string rule = "+";
    for (const column &c : columns) {
        rule += std::string(size_t(c.width), '-') + "+";
    }
    return rule;
}

std::string sweep_header_text(const std::string &percentile_title)
{
    std::string text = sweep_rule_text() + "\n|";
    for (int i = 0; i < 4; ++i) {
        text += std::string(size_t(columns[i].width), ' ') + "|";
    }
    text += centered_cell("latency/overhead (usec)",
                          columns[4].width + columns[5].width + columns[6].width + 2) +
            "|" + centered_cell("bandwidth (MB/s)", columns[7].width + columns[8].width + 1) + "|" +
            centered_cell("message rate (msg/s)", columns[9].width + columns[10].width + 1) +
            "|\n|";
    for (const column &c : columns) {
        text += centered_cell((c.title[0] == '\0') ? percentile_title : c.title, c.width) + "|";
    }
    return text + "\n" + sweep_rule_text() + "\n";
}

std::string sweep_row_text(const result &r, bool numeric)
{
    /* Each cell is its column's width less the space beside its bar. */
    std::string row = "| " + text_cell(r.transport, columns[0].width - 1) + "| " +
                      text_cell(r.test, columns[1].width - 1) + "|" +
                      number_cell(double(r.size), columns[2].width - 1, 0, false) + " |";
    if (r.status != "ok") {
        return row + " " + r.status + ": " + r.error;
    }
    const struct {
        double value;
        int decimals;
    } cells[] = {
        {double(r.iters), 0}, {r.lat_percentile, 3}, {r.lat_average, 3},  {r.lat_overall, 3},
        {r.bw_average, 2},    {r.bw_overall, 2},     {r.rate_average, 0}, {r.rate_overall, 0},
    };
    for (size_t i = 0; i < std::size(cells); ++i) {
        row += number_cell(cells[i].value, columns[i + 3].width - 1, cells[i].decimals, numeric) +
               " |";
    }
    return row;
}

} // namespace perftest
