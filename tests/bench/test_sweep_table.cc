/*
 * ucx_perftest's sweep table stays aligned whatever the numbers: every row's
 * bars sit where the header's are, and a number too wide for its column
 * loses decimals (then goes to exponent form) instead of pushing the row.
 */
#include <catch2/catch.hpp>

#include <bench/perftest/sweep_table.h>
#include <bench/perftest/table_cells.h>

#include <sstream>
#include <string>
#include <vector>

namespace {

std::vector<size_t> bars(const std::string &line, char bar)
{
    std::vector<size_t> at;
    for (size_t i = 0; i < line.size(); ++i) {
        if (line[i] == bar) {
            at.push_back(i);
        }
    }
    return at;
}

perftest::result row(double scale)
{
    perftest::result r;
    r.test           = "tag_bw";
    r.transport      = "posix";
    r.size           = 4194304;
    r.iters          = uint64_t(10000 * scale);
    r.lat_percentile = 1.5 * scale;
    r.lat_average    = 2.25 * scale;
    r.lat_overall    = 2.5 * scale;
    r.bw_average     = 1234.5 * scale;
    r.bw_overall     = 1200.25 * scale;
    r.rate_average   = 400000 * scale;
    r.rate_overall   = 410000 * scale;
    return r;
}

} // namespace

TEST_CASE("sweep rows line up with the header for any value", "[perftest]")
{
    std::istringstream header(perftest::sweep_header_text("50.0%ile"));
    std::string rule, titles1, titles2;
    std::getline(header, rule);
    std::getline(header, titles1);
    std::getline(header, titles2);
    const std::vector<size_t> columns = bars(rule, '+');
    REQUIRE(columns.size() == 12);
    CHECK(bars(titles2, '|') == columns);

    /* From small values to latencies of 10000 usec and more, bandwidths of
     * 10^5 MB/s and rates past the column's digits. */
    for (double scale : {0.001, 1.0, 10000.0, 1e6, 1e9, 1e15}) {
        INFO("scale " << scale);
        for (bool grouped : {false, true}) {
            std::string text = perftest::sweep_row_text(row(scale), grouped);
            INFO(text);
            CHECK(text.size() == rule.size());
            CHECK(bars(text, '|') == columns);
        }
    }
}

TEST_CASE("long transport and test names are cut, not spilled", "[perftest]")
{
    perftest::result r     = row(1.0);
    r.transport            = "tcp,posix,sysv,cma,self";
    r.test                 = "ucp_put_flush_lat";
    const std::string text = perftest::sweep_row_text(r, false);
    CHECK(bars(text, '|') == bars(perftest::sweep_rule_text(), '+'));
    CHECK(text.find("tcp,posix,~") != std::string::npos);
}

TEST_CASE("number cells keep their width", "[perftest]")
{
    CHECK(perftest::number_cell(1.5, 8, 3, false) == "   1.500");
    CHECK(perftest::number_cell(12345.678, 8, 3, false) == "12345.68");
    CHECK(perftest::number_cell(1234567.8, 8, 3, false) == " 1234568");
    CHECK(perftest::number_cell(123456789.0, 8, 3, false) == "1.23e+08");
    CHECK(perftest::number_cell(1e300, 4, 3, false) == "####");
    CHECK(perftest::text_cell("posix", 7) == "posix  ");
    CHECK(perftest::text_cell("posix,sysv", 7) == "posix,~");
}
