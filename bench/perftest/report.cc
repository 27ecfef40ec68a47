#include "report.h"

#include "modules.h"
#include "sweep_table.h"
#include "table_cells.h"

#include "../common/stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>

namespace perftest {

namespace {

/* Progress lines take their percentile from the latest iterations only,
 * so a report costs little time inside the measured loop. */
constexpr uint64_t PROGRESS_SAMPLES = 4096;

constexpr double MB = 1024.0 * 1024.0;

const char *const BOX_LINE = "+--------------------------------------------------------------------"
                             "--------------------------------------+";

std::string percentile_label(double rank)
{
    char label[32];
    std::snprintf(label, sizeof(label), "%.1f%%ile", rank);
    return label;
}

std::string layout_name(const test_spec &spec)
{
    if (spec.info().api == api_kind::UCT) {
        switch (spec.info().uct_kind) {
        case perf::test_kind::AM_SHORT_LAT:
        case perf::test_kind::AM_SHORT_BW:
        case perf::test_kind::PUT_SHORT_LAT:
        case perf::test_kind::PUT_SHORT_BW:
            return "short";
        case perf::test_kind::AM_SHORTIOV_LAT:
        case perf::test_kind::AM_SHORTIOV_BW:
            return "shortiov";
        case perf::test_kind::AM_ZCOPY_LAT:
        case perf::test_kind::AM_ZCOPY_BW:
        case perf::test_kind::PUT_ZCOPY_LAT:
        case perf::test_kind::PUT_ZCOPY_BW:
        case perf::test_kind::GET_ZCOPY_BW:
            return "zcopy";
        case perf::test_kind::AM_BCOPY_LAT:
        case perf::test_kind::AM_BCOPY_BW:
        case perf::test_kind::PUT_BCOPY_LAT:
        case perf::test_kind::PUT_BCOPY_BW:
        case perf::test_kind::GET_BCOPY_BW:
            return "bcopy";
        default:
            return "atomic";
        }
    }
    if ((spec.send_layout == layout::CONTIG) && (spec.recv_layout == layout::CONTIG)) {
        return "(automatic)";
    }
    std::string s = (spec.send_layout == layout::IOV) ? "iov" : "contig";
    return s + "," + ((spec.recv_layout == layout::IOV) ? "iov" : "contig");
}

std::string json_string(const std::string &text)
{
    std::string out = "\"";
    for (char c : text) {
        switch (c) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\t':
            out += "\\t";
            break;
        default:
            if (static_cast<unsigned char>(c) < 0x20) {
                char esc[8];
                std::snprintf(esc, sizeof(esc), "\\u%04x", unsigned(c));
                out += esc;
            } else {
                out += c;
            }
        }
    }
    return out + "\"";
}

std::string csv_field(const std::string &text)
{
    if (text.find_first_of(",\"\n") == std::string::npos) {
        return text;
    }
    std::string out = "\"";
    for (char c : text) {
        out += (c == '"') ? std::string("\"\"") : std::string(1, (c == '\n') ? ' ' : c);
    }
    return out + "\"";
}

/* JSON has no inf or nan. */
std::string json_number(double value, const char *format)
{
    if (!std::isfinite(value)) {
        return "null";
    }
    char text[64];
    std::snprintf(text, sizeof(text), format, value);
    return text;
}

const char *const CSV_HEADER =
    "test,api,transport,size,iterations,metric,percentile,latency_percentile_us,"
    "latency_average_us,latency_overall_us,bandwidth_average_mbs,bandwidth_overall_mbs,"
    "msgrate_average,msgrate_overall,status,error";

} // namespace

std::string transport_of(const test_spec &spec)
{
    if (spec.info().api == api_kind::UCT) {
        std::string tl = spec.uct_tl;
        return spec.uct_dev[0] ? tl + "/" + spec.uct_dev : tl;
    }
    return spec.tls[0] ? spec.tls : "default";
}

meter::meter(const test_spec &spec, double percentile_rank) :
    spec_(spec), rank_(percentile_rank), factor_((spec.info().pat == pattern::PINGPONG) ? 2.0 : 1.0)
{
}

result meter::failure(const std::string &status, const std::string &error) const
{
    result r;
    r.test      = spec_.info().name;
    r.api       = (spec_.info().api == api_kind::UCP) ? "ucp" : "uct";
    r.transport = transport_of(spec_);
    r.metric    = spec_.info().metric;
    r.size      = spec_.message_size();
    r.status    = status;
    r.error     = error;
    return r;
}

result meter::make(const perf::timeline &tl, uint64_t done, uint64_t now_stamp, double spt,
                   uint64_t pct_first) const
{
    result r = failure("ok", "");
    r.iters  = done;
    if (done == 0) {
        return r;
    }
    const double bytes   = double(spec_.message_size());
    auto per_iteration_s = [&](uint64_t ticks, uint64_t count) {
        return double(ticks) * spt / double(count) / factor_;
    };

    std::vector<uint64_t> samples = perf::durations(tl, pct_first, done);
    r.lat_percentile              = double(perf::percentile(samples, rank_)) * spt / factor_ * 1e6;

    uint64_t since       = started_ ? last_iter_ : 0;
    uint64_t since_stamp = started_ ? last_stamp_ : tl.start_stamp();
    if (done > since) {
        double t       = per_iteration_s(now_stamp - since_stamp, done - since);
        r.lat_average  = t * 1e6;
        r.bw_average   = (t > 0) ? bytes / t / MB : 0;
        r.rate_average = (t > 0) ? 1.0 / t : 0;
    }
    double t       = per_iteration_s(now_stamp - tl.start_stamp(), done);
    r.lat_overall  = t * 1e6;
    r.bw_overall   = (t > 0) ? bytes / t / MB : 0;
    r.rate_overall = (t > 0) ? 1.0 / t : 0;
    return r;
}

result meter::progress(const perf::timeline &tl, double seconds_per_tick)
{
    uint64_t done  = tl.done();
    uint64_t first = (done > PROGRESS_SAMPLES) ? done - PROGRESS_SAMPLES : 0;
    result r       = make(tl, done, tl.stamp(done), seconds_per_tick, first);
    started_       = true;
    last_iter_     = done;
    last_stamp_    = tl.stamp(done);
    return r;
}

result meter::final(const perf::timeline &tl)
{
    return make(tl, tl.done(), tl.end_stamp(), tl.seconds_per_tick(), 0);
}

result meter::final_threads(const std::vector<const perf::timeline *> &tls)
{
    result r = failure("ok", "");
    std::vector<uint64_t> samples;
    double rate = 0, spt = 0;
    for (const perf::timeline *tl : tls) {
        if (tl->done() == 0) {
            continue;
        }
        std::vector<uint64_t> d = perf::durations(*tl, 0, tl->done());
        samples.insert(samples.end(), d.begin(), d.end());
        spt = tl->seconds_per_tick();
        rate += double(tl->done()) * factor_ / (double(tl->total_ticks()) * spt);
        r.iters += tl->done();
    }
    if ((r.iters == 0) || (rate <= 0)) {
        return r;
    }
    r.lat_percentile = double(perf::percentile(samples, rank_)) * spt / factor_ * 1e6;
    r.rate_overall   = rate;
    r.bw_overall     = rate * double(spec_.message_size()) / MB;
    r.lat_overall    = double(tls.size()) / rate * 1e6;
    r.rate_average   = r.rate_overall;
    r.bw_average     = r.bw_overall;
    r.lat_average    = r.lat_overall;
    return r;
}

printer::printer(const cli &opts, bool sweep) : opts_(opts), sweep_(sweep)
{
}

bool printer::wants_progress() const
{
    return !sweep_ && !opts_.final_only &&
           ((opts_.format == output_format::TABLE) || (opts_.format == output_format::UCX_CSV));
}

void printer::start()
{
    if (opts_.format == output_format::CSV) {
        std::printf("%s\n", CSV_HEADER);
    } else if (sweep_ && (opts_.format == output_format::TABLE)) {
        std::printf("%s", sweep_header_text(percentile_label(opts_.percentile)).c_str());
    }
    std::fflush(stdout);
}

void printer::info_box(const test_spec &spec, bool closed)
{
    if ((opts_.format != output_format::TABLE) && (opts_.format != output_format::UCX_CSV)) {
        return;
    }
    const bool ucp   = spec.info().api == api_kind::UCP;
    std::string size = std::to_string(spec.sizes[0]);
    for (uint32_t i = 1; i < spec.iov_count; ++i) {
        size += ',';
        size += std::to_string(spec.sizes[i]);
    }
    std::printf("%s\n", BOX_LINE);
    auto line = [](const char *key, const std::string &value) {
        std::printf("| %-13s %-90s |\n", key, value.c_str());
    };
    line("API:", ucp ? "protocol layer" : "transport layer (uct)");
    line("Test:", spec.info().description);
    if (!ucp) {
        line("Transport:", spec.uct_tl);
        line("Device:", spec.uct_dev[0] ? spec.uct_dev : "(first)");
    } else {
        std::string library = ucp_library_path();
        if (!library.empty()) {
            line("UCP library:", library);
        }
        if (spec.tls[0] != '\0') {
            line("UCX_TLS:", spec.tls);
        }
    }
    line("Data layout:", layout_name(spec));
    static const char *const mem_names[] = {"host", "cuda", "cuda-managed", "rocm", "rocm-managed"};
    auto mem_name                        = [](uint8_t type) {
        return (type < std::size(mem_names)) ? mem_names[type] : "?";
    };
    line("Send memory:", mem_name(spec.send_mem));
    line("Recv memory:", mem_name(spec.recv_mem));
    line("Message size:", size);
    if (closed) {
        std::printf("%s\n", BOX_LINE);
    }
    std::fflush(stdout);
}

void printer::begin_test(const test_spec &spec)
{
    if (sweep_) {
        return;
    }
    if (opts_.format == output_format::UCX_CSV) {
        std::printf("iterations,%.1f_percentile_lat,avg_lat,overall_lat,avg_bw,overall_bw,"
                    "avg_mr,overall_mr\n",
                    opts_.percentile);
    } else if (opts_.format == output_format::TABLE) {
        const char *rule   = "+--------------+--------------+----------+---------+---------+"
                             "----------+----------+-----------+-----------+";
        std::string metric = std::string(spec.info().metric) + " (usec)";
        std::printf("+--------------+--------------+------------------------------+"
                    "---------------------+-----------------------+\n");
        std::printf("|              |              |%s|   bandwidth (MB/s)  |  message rate "
                    "(msg/s) |\n",
                    centered_cell(metric, 30).c_str());
        std::printf("%s\n", rule);
        std::printf("|%s| # iterations |%s| average | overall |  average |  overall |  "
                    "average  |  overall  |\n",
                    centered_cell(opts_.final_only ? "Test" : "Stage", 14).c_str(),
                    centered_cell(percentile_label(opts_.percentile), 10).c_str());
        std::printf("%s\n", rule);
    }
    std::fflush(stdout);
}

void printer::numbers_line(const char *label, const result &r)
{
    /* UCX's widths; a cell keeps one space before it whatever its value. */
    const struct {
        double value;
        int width, decimals;
    } cells[] = {
        {double(r.iters), 18, 0}, {r.lat_percentile, 11, 3}, {r.lat_average, 10, 3},
        {r.lat_overall, 10, 3},   {r.bw_average, 12, 2},     {r.bw_overall, 11, 2},
        {r.rate_average, 12, 0},  {r.rate_overall, 12, 0},
    };
    std::string line = text_cell(label, 10);
    for (const auto &c : cells) {
        line += ' ';
        line += number_cell(c.value, c.width - 1, c.decimals, opts_.numeric);
    }
    std::printf("%s\n", line.c_str());
}

void printer::csv_line(const result &r)
{
    std::printf("%.0f,%.3f,%.3f,%.3f,%.2f,%.2f,%.0f,%.0f\n", double(r.iters), r.lat_percentile,
                r.lat_average, r.lat_overall, r.bw_average, r.bw_overall, r.rate_average,
                r.rate_overall);
}

void printer::progress(const result &r)
{
    if (!wants_progress()) {
        return;
    }
    if (opts_.format == output_format::UCX_CSV) {
        csv_line(r);
    } else {
        numbers_line("", r);
    }
    std::fflush(stdout);
}

void printer::sweep_row(const result &r)
{
    std::printf("%s\n", sweep_row_text(r, opts_.numeric).c_str());
}

void printer::end_test(const result &r)
{
    if (r.status != "ok") {
        std::fprintf(stderr, "ucx_perftest: %s (%s, %zu bytes) %s: %s\n", r.test.c_str(),
                     r.transport.c_str(), r.size, r.status.c_str(), r.error.c_str());
    }
    switch (opts_.format) {
    case output_format::TABLE:
        if (sweep_) {
            sweep_row(r);
        } else if (r.status == "ok") {
            numbers_line(opts_.final_only ? "" : "Final:", r);
        }
        break;
    case output_format::UCX_CSV:
        if (r.status == "ok") {
            csv_line(r);
        }
        break;
    case output_format::CSV:
        std::printf("%s,%s,%s,%zu,%llu,%s,%.1f,%.3f,%.3f,%.3f,%.2f,%.2f,%.0f,%.0f,%s,%s\n",
                    r.test.c_str(), r.api.c_str(), csv_field(r.transport).c_str(), r.size,
                    (unsigned long long)r.iters, r.metric.c_str(), opts_.percentile,
                    r.lat_percentile, r.lat_average, r.lat_overall, r.bw_average, r.bw_overall,
                    r.rate_average, r.rate_overall, r.status.c_str(), csv_field(r.error).c_str());
        break;
    case output_format::JSON:
        done_.push_back(r);
        break;
    }
    std::fflush(stdout);
}

void printer::finish()
{
    if (sweep_ && (opts_.format == output_format::TABLE)) {
        std::printf("%s\n", sweep_rule_text().c_str());
    }
    if (opts_.format != output_format::JSON) {
        std::fflush(stdout);
        return;
    }
    std::printf("{\n  \"tool\": \"ucx_perftest\",\n  \"percentile\": %s,\n"
                "  \"ucp_library\": %s,\n  \"results\": [",
                json_number(opts_.percentile, "%.1f").c_str(),
                json_string(ucp_library_path()).c_str());
    for (size_t i = 0; i < done_.size(); ++i) {
        const result &r = done_[i];
        std::printf("%s\n    {\"test\": %s, \"api\": %s, \"transport\": %s, \"size\": %zu, "
                    "\"iterations\": %llu, \"metric\": %s, \"latency_percentile_us\": %s, "
                    "\"latency_average_us\": %s, \"latency_overall_us\": %s, "
                    "\"bandwidth_average_mbs\": %s, \"bandwidth_overall_mbs\": %s, "
                    "\"msgrate_average\": %s, \"msgrate_overall\": %s, \"status\": %s, "
                    "\"error\": %s}",
                    (i == 0) ? "" : ",", json_string(r.test).c_str(), json_string(r.api).c_str(),
                    json_string(r.transport).c_str(), r.size, (unsigned long long)r.iters,
                    json_string(r.metric).c_str(), json_number(r.lat_percentile, "%.4f").c_str(),
                    json_number(r.lat_average, "%.4f").c_str(),
                    json_number(r.lat_overall, "%.4f").c_str(),
                    json_number(r.bw_average, "%.3f").c_str(),
                    json_number(r.bw_overall, "%.3f").c_str(),
                    json_number(r.rate_average, "%.1f").c_str(),
                    json_number(r.rate_overall, "%.1f").c_str(), json_string(r.status).c_str(),
                    json_string(r.error).c_str());
    }
    std::printf("\n  ]\n}\n");
    std::fflush(stdout);
}

} // namespace perftest
