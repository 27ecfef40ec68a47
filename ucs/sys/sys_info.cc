#include <ucs/sys/sys_info.h>

#include <ucs/sys/read_file.h>

#include <climits>
#include <string>
#include <sys/syscall.h>
#include <unistd.h>

namespace ucs::sys {

namespace {

constexpr size_t default_cache_line_size = 64;

bool is_power_of_two(size_t value)
{
    return (value != 0) && ((value & (value - 1)) == 0);
}

size_t detect_cache_line_size()
{
    long long value = 0;
    if ((read_file_number("/sys/devices/system/cpu/cpu0/cache/index0/"
                          "coherency_line_size",
                          &value) == UCS_OK) &&
        (value >= 16) && (value <= 1024) && is_power_of_two(static_cast<size_t>(value))) {
        return static_cast<size_t>(value);
    }

    const long sc_value = ::sysconf(_SC_LEVEL1_DCACHE_LINESIZE);
    if ((sc_value >= 16) && (sc_value <= 1024) && is_power_of_two(static_cast<size_t>(sc_value))) {
        return static_cast<size_t>(sc_value);
    }
    return default_cache_line_size;
}

size_t detect_huge_page_size()
{
    long long kb = 0;
    if ((read_file_keyed_number("/proc/meminfo", "Hugepagesize", &kb) != UCS_OK) || (kb <= 0)) {
        return 0;
    }
    return static_cast<size_t>(kb) * 1024;
}

std::string detect_host_name()
{
    char name[HOST_NAME_MAX + 1] = {};
    if (::gethostname(name, sizeof(name) - 1) != 0) {
        return "localhost";
    }
    return name;
}

} // namespace

size_t page_size()
{
    static const size_t value = [] {
        const long result = ::sysconf(_SC_PAGESIZE);
        return (result > 0) ? static_cast<size_t>(result) : size_t(4096);
    }();
    return value;
}

size_t cache_line_size()
{
    static const size_t value = detect_cache_line_size();
    return value;
}

unsigned cpu_count()
{
    static const unsigned value = [] {
        const long result = ::sysconf(_SC_NPROCESSORS_ONLN);
        return (result > 0) ? static_cast<unsigned>(result) : 1u;
    }();
    return value;
}

size_t huge_page_size()
{
    static const size_t value = detect_huge_page_size();
    return value;
}

size_t physical_memory_size()
{
    static const size_t value = [] {
        const long pages = ::sysconf(_SC_PHYS_PAGES);
        return (pages > 0) ? static_cast<size_t>(pages) * page_size() : size_t(0);
    }();
    return value;
}

const char *host_name()
{
    static const std::string value = detect_host_name();
    return value.c_str();
}

pid_t get_tid()
{
    return static_cast<pid_t>(::syscall(SYS_gettid));
}

} // namespace ucs::sys
