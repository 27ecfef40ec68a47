/* ucx_info -T: where CPUs, memory and devices sit, from sysfs. */
#include "print_system.h"

#include <ucs/sys/read_file.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

namespace info {

namespace {

namespace fs = std::filesystem;

std::string read_line(const fs::path &path)
{
    std::string text;
    if (ucs::sys::read_file_string(path.c_str(), &text) != UCS_OK) {
        return "";
    }
    while (!text.empty() && ((text.back() == '\n') || (text.back() == ' '))) {
        text.pop_back();
    }
    return text;
}

/* Entries of `dir` whose names start with `prefix`, sorted. */
std::vector<std::string> entries(const fs::path &dir, const std::string &prefix)
{
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto &e : fs::directory_iterator(dir, ec)) {
        const std::string name = e.path().filename().string();
        if (name.compare(0, prefix.size(), prefix) == 0) {
            names.push_back(name);
        }
    }
    std::sort(names.begin(), names.end());
    return names;
}

/* The PCI address in a device's sysfs path ("0000:00:03.0"), empty for a
 * virtual device. */
std::string pci_address(const fs::path &device_link)
{
    std::error_code ec;
    const std::string real = fs::canonical(device_link, ec).string();
    static const std::regex pci("[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\\.[0-9a-f]");
    std::string last;
    for (std::sregex_iterator it(real.begin(), real.end(), pci), end; it != end; ++it) {
        last = it->str();
    }
    return last;
}

void print_device(FILE *out, const char *kind, const std::string &name, const fs::path &class_entry)
{
    const std::string pci = pci_address(class_entry);
    if (pci.empty()) {
        std::fprintf(out, "#   %s %s: virtual\n", kind, name.c_str());
        return;
    }
    const std::string numa = read_line(fs::path("/sys/bus/pci/devices") / pci / "numa_node");
    std::fprintf(out, "#   %s %s: PCI %s, NUMA node %s\n", kind, name.c_str(), pci.c_str(),
                 (numa.empty() || (numa == "-1")) ? "unknown" : numa.c_str());
}

} // namespace

void print_topology(FILE *out)
{
    std::fprintf(out, "#\n# System topology:\n#\n");
    const fs::path nodes("/sys/devices/system/node");
    const std::vector<std::string> numa = entries(nodes, "node");
    if (numa.empty()) {
        std::fprintf(out, "#   NUMA: not reported by this system\n");
    }
    for (const std::string &node : numa) {
        std::fprintf(out, "#   NUMA %s: CPUs %s, distances %s\n", node.c_str(),
                     read_line(nodes / node / "cpulist").c_str(),
                     read_line(nodes / node / "distance").c_str());
    }
    const fs::path cpus("/sys/devices/system/cpu");
    for (const std::string &cpu : entries(cpus, "cpu")) {
        const fs::path topo       = cpus / cpu / "topology";
        const std::string package = read_line(topo / "physical_package_id");
        if (package.empty()) {
            continue; /* cpufreq, cpuidle, ...: not a CPU */
        }
        std::fprintf(out, "#   %s: socket %s, core %s, siblings %s\n", cpu.c_str(), package.c_str(),
                     read_line(topo / "core_id").c_str(),
                     read_line(topo / "thread_siblings_list").c_str());
    }
    const fs::path net("/sys/class/net");
    for (const std::string &dev : entries(net, "")) {
        print_device(out, "network device", dev, net / dev / "device");
    }
    const fs::path rdma("/sys/class/infiniband");
    for (const std::string &dev : entries(rdma, "")) {
        print_device(out, "RDMA device", dev, rdma / dev / "device");
    }
    std::fprintf(out, "#\n");
}

} // namespace info
