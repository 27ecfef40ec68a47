#include "print_system.h"

#include <ucs/sys/clock.h>
#include <ucs/sys/identity.h>
#include <ucs/sys/read_file.h>
#include <ucs/sys/sys_info.h>

#include <cmath>
#include <string>
#include <time.h>

namespace info {

namespace {

std::string trim(const std::string &text)
{
    const size_t first = text.find_first_not_of(" \t");
    if (first == std::string::npos) {
        return "";
    }
    return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

/* The value of "key : value" in /proc/cpuinfo (the first CPU's); empty if
 * there is none. */
std::string cpuinfo_field(const std::string &cpuinfo, const char *key)
{
    size_t pos = 0;
    while (pos < cpuinfo.size()) {
        size_t end = cpuinfo.find('\n', pos);
        if (end == std::string::npos) {
            end = cpuinfo.size();
        }
        const std::string line = cpuinfo.substr(pos, end - pos);
        pos                    = end + 1;
        const size_t colon     = line.find(':');
        if ((colon != std::string::npos) && (trim(line.substr(0, colon)) == key)) {
            return trim(line.substr(colon + 1));
        }
    }
    return "";
}

std::string cpu_vendor(const std::string &cpuinfo)
{
    const std::string id = cpuinfo_field(cpuinfo, "vendor_id");
    if (id == "GenuineIntel") {
        return "Intel";
    }
    if (id == "AuthenticAMD") {
        return "AMD";
    }
    if (!id.empty()) {
        return id;
    }
    /* aarch64 names an implementer code instead. */
    const std::string implementer = cpuinfo_field(cpuinfo, "CPU implementer");
    return implementer.empty() ? "unknown" : "implementer " + implementer;
}

double monotonic_seconds()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

/* How well the tick rate the library uses matches the OS clock, over
 * 20 ms: 100% is a perfect match (what UCX calls the timer accuracy). */
double timer_accuracy_percent()
{
    const double t0               = monotonic_seconds();
    const ucs::sys::ticks_t start = ucs::sys::get_time();
    while (monotonic_seconds() - t0 < 0.02) {
    }
    const double elapsed  = monotonic_seconds() - t0;
    const double measured = ucs::sys::time_to_sec(ucs::sys::get_time() - start);
    return 100.0 * (1.0 - std::fabs(measured - elapsed) / elapsed);
}

std::string size_text(size_t bytes)
{
    const char *units[] = {"", "K", "M", "G", "T"};
    unsigned u          = 0;
    while ((u < 4) && (bytes >= 1024) && (bytes % 1024 == 0)) {
        bytes /= 1024;
        ++u;
    }
    return std::to_string(bytes) + units[u];
}

} // namespace

void print_system(FILE *out)
{
    std::string cpuinfo;
    ucs::sys::read_file_string("/proc/cpuinfo", &cpuinfo, 1 << 20);
    std::fprintf(out, "# Timer frequency: %.3f MHz (%s)\n", ucs::sys::time_frequency() / 1e6,
                 ucs::sys::time_uses_cycle_counter() ? "CPU cycle counter" : "CLOCK_MONOTONIC");
    std::fprintf(out, "# Timer accuracy: %.3f %%\n", timer_accuracy_percent());
    std::fprintf(out, "# CPU vendor: %s\n", cpu_vendor(cpuinfo).c_str());
    const std::string model = cpuinfo_field(cpuinfo, "model name");
    std::fprintf(out, "# CPU model: %s\n", model.empty() ? "unknown" : model.c_str());
    std::fprintf(out, "# CPUs online: %u\n", ucs::sys::cpu_count());
    std::fprintf(out, "# Cache line size: %zu bytes\n", ucs::sys::cache_line_size());
    std::fprintf(out, "# Page size: %s, huge page size: %s\n",
                 size_text(ucs::sys::page_size()).c_str(),
                 ucs::sys::huge_page_size() ? size_text(ucs::sys::huge_page_size()).c_str() :
                                              "none");
    std::fprintf(out, "# Physical memory: %.2f GiB\n",
                 double(ucs::sys::physical_memory_size()) / double(1ull << 30));
    std::fprintf(out, "# Host name: %s\n", ucs::sys::host_name());
    std::fprintf(out, "# Machine id: 0x%016llx\n",
                 static_cast<unsigned long long>(ucs::sys::machine_id()));
}

} // namespace info
