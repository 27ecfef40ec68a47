#include <catch2/catch.hpp>

#include <ucs/memory/memtype_registry.h>
#include <ucs/sys/affinity.h>
#include <ucs/sys/clock.h>
#include <ucs/sys/identity.h>
#include <ucs/sys/random.h>
#include <ucs/sys/read_file.h>
#include <ucs/sys/sys_info.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <sched.h>
#include <stdexcept>
#include <string>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <thread>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

namespace {

bool is_power_of_two(size_t value)
{
    return (value != 0) && ((value & (value - 1)) == 0);
}

uint64_t monotonic_ns()
{
    struct timespec ts;
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

/* A temporary file with the given content, removed at scope exit. */
struct temp_file {
    std::string path;

    explicit temp_file(const std::string &content)
    {
        char name[]  = "/tmp/ucs_test_sys_XXXXXX";
        const int fd = ::mkstemp(name);
        REQUIRE(fd >= 0);
        REQUIRE(::write(fd, content.data(), content.size()) == ssize_t(content.size()));
        ::close(fd);
        path = name;
    }

    ~temp_file() { ::unlink(path.c_str()); }
};

/* Values a forked child reports back through a pipe. */
struct child_identity {
    uint64_t machine_id_cached;
    uint64_t machine_id_fresh;
    uint64_t pid_ns;
    uint64_t user_ns;
    uint64_t net_node; /* node_id({net}) */
    uint64_t ipc_node; /* node_id({ipc}) */
    int unshare_errno; /* a new network namespace was asked for: 0 if made */
};

/* The child's view; with `new_net_ns` it first moves to a network
 * namespace of its own (root only; unshare_errno says why not). */
child_identity identity_from_child(bool new_net_ns = false)
{
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::close(fds[0]);
        const int unshare_errno = !new_net_ns ? 0 : (::unshare(CLONE_NEWNET) == 0) ? 0 : errno;
        using ucs::sys::namespace_type;
        const child_identity mine = {ucs::sys::machine_id(),
                                     ucs::sys::compute_machine_id(),
                                     ucs::sys::pid_namespace_id(),
                                     ucs::sys::user_namespace_id(),
                                     ucs::sys::node_id({namespace_type::net}),
                                     ucs::sys::node_id({namespace_type::ipc}),
                                     unshare_errno};
        const bool ok             = ::write(fds[1], &mine, sizeof(mine)) == sizeof(mine);
        ::_exit(ok ? 0 : 1);
    }

    ::close(fds[1]);
    child_identity theirs = {};
    const ssize_t n       = ::read(fds[0], &theirs, sizeof(theirs));
    ::close(fds[0]);
    int wstatus = 0;
    REQUIRE(::waitpid(pid, &wstatus, 0) == pid);
    REQUIRE(WIFEXITED(wstatus));
    REQUIRE(WEXITSTATUS(wstatus) == 0);
    REQUIRE(n == ssize_t(sizeof(theirs)));
    return theirs;
}

/* Unregisters test detectors even when an assertion fails half-way. */
struct detector_cleanup {
    ~detector_cleanup()
    {
        for (int t = UCS_MEMORY_TYPE_HOST + 1; t < UCS_MEMORY_TYPE_LAST; ++t) {
            ucs::memtype::unregister_detector(static_cast<ucs_memory_type_t>(t));
        }
    }
};

/* Memory outside the malloc heap (which detect() answers as host without
 * asking any detector): the stand-in for device memory. */
class mapped_region {
public:
    explicit mapped_region(size_t size) : size_(size)
    {
        void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        data_   = (p == MAP_FAILED) ? nullptr : static_cast<char *>(p);
    }
    ~mapped_region()
    {
        if (data_ != nullptr) {
            munmap(data_, size_);
        }
    }
    mapped_region(const mapped_region &)            = delete;
    mapped_region &operator=(const mapped_region &) = delete;

    char *data() const { return data_; }
    size_t size() const { return size_; }

private:
    size_t size_;
    char *data_;
};

ucs::memtype::detector range_detector(const void *start, size_t size)
{
    const auto begin = reinterpret_cast<uintptr_t>(start);
    const auto end   = begin + size;
    return [begin, end](const void *address, size_t length) {
        const auto a = reinterpret_cast<uintptr_t>(address);
        return (a >= begin) && (a + length <= end);
    };
}

} // namespace

TEST_CASE("page size and cache line size are sane", "[sys]")
{
    const size_t page = ucs::sys::page_size();
    CHECK(is_power_of_two(page));
    CHECK(page >= 4096);
    CHECK(page == size_t(::sysconf(_SC_PAGESIZE)));

    const size_t line = ucs::sys::cache_line_size();
    CHECK(is_power_of_two(line));
    CHECK(line >= 32);
    CHECK(line <= 256);

    long long sysfs_line = 0;
    if (ucs::sys::read_file_number("/sys/devices/system/cpu/cpu0/cache/index0/"
                                   "coherency_line_size",
                                   &sysfs_line) == UCS_OK) {
        CHECK(line == size_t(sysfs_line));
    }
}

TEST_CASE("cpu count and affinity", "[sys]")
{
    const unsigned cpus = ucs::sys::cpu_count();
    CHECK(cpus >= 1);
    CHECK(cpus == unsigned(::sysconf(_SC_NPROCESSORS_ONLN)));

    ucs_cpu_set_t set;
    REQUIRE(ucs::sys::get_affinity(&set) == UCS_OK);
    const unsigned allowed = ucs::sys::cpu_set_count(&set);
    CHECK(allowed >= 1);
    CHECK(allowed <= UCS_CPU_SETSIZE);
    cpu_set_t native;
    REQUIRE(::sched_getaffinity(0, sizeof(native), &native) == 0);
    CHECK(allowed == unsigned(CPU_COUNT(&native)));
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        CHECK(ucs_cpu_is_set(cpu, &set) == (CPU_ISSET(cpu, &native) ? 1 : 0));
    }

    ucs_cpu_set_t process_set;
    REQUIRE(ucs::sys::get_affinity(&process_set, ::getpid()) == UCS_OK);
    CHECK(ucs::sys::cpu_set_count(&process_set) >= 1);

    /* Pin a scratch thread to one CPU; the test thread is left alone. */
    const int first = ucs_cpu_set_find_lcs(&set);
    REQUIRE(ucs_cpu_is_set(first, &set));
    ucs_status_t set_status = UCS_ERR_LAST, get_status = UCS_ERR_LAST;
    unsigned pinned_count = 0;
    bool pinned_right     = false;
    int running_on        = -1;
    std::thread pinned([&]() {
        ucs_cpu_set_t one;
        UCS_CPU_ZERO(&one);
        UCS_CPU_SET(first, &one);
        set_status = ucs::sys::set_affinity(&one);
        ucs_cpu_set_t now;
        get_status   = ucs::sys::get_affinity(&now);
        pinned_count = ucs::sys::cpu_set_count(&now);
        pinned_right = ucs_cpu_is_set(first, &now);
        running_on   = ::sched_getcpu();
    });
    pinned.join();
    CHECK(set_status == UCS_OK);
    CHECK(get_status == UCS_OK);
    CHECK(pinned_count == 1);
    CHECK(pinned_right);
    CHECK(running_on == first);

    /* Our own affinity did not change. */
    ucs_cpu_set_t again;
    REQUIRE(ucs::sys::get_affinity(&again) == UCS_OK);
    CHECK(std::memcmp(&again, &set, sizeof(set)) == 0);

    ucs_cpu_set_t empty;
    UCS_CPU_ZERO(&empty);
    CHECK(ucs::sys::set_affinity(&empty) == UCS_ERR_INVALID_PARAM);
    CHECK(ucs::sys::set_affinity(nullptr) == UCS_ERR_INVALID_PARAM);
    CHECK(ucs::sys::get_affinity(nullptr) == UCS_ERR_INVALID_PARAM);
    CHECK(ucs::sys::get_affinity(&set, -5) == UCS_ERR_INVALID_PARAM);
    /* A thread id that cannot exist (above pid_max's ceiling). */
    CHECK(ucs::sys::get_affinity(&set, (1 << 22) + 12345) == UCS_ERR_NO_ELEM);
    CHECK(ucs::sys::cpu_set_count(nullptr) == 0);
}

TEST_CASE("memory sizes and host name", "[sys]")
{
    const size_t huge = ucs::sys::huge_page_size();
    long long kb      = 0;
    if (ucs::sys::read_file_keyed_number("/proc/meminfo", "Hugepagesize", &kb) == UCS_OK) {
        CHECK(huge == size_t(kb) * 1024);
        CHECK(is_power_of_two(huge));
        CHECK(huge > ucs::sys::page_size());
    } else {
        CHECK(huge == 0);
    }

    const size_t physical = ucs::sys::physical_memory_size();
    struct sysinfo info;
    REQUIRE(::sysinfo(&info) == 0);
    const double total = double(info.totalram) * info.mem_unit;
    CHECK(physical >= (size_t(16) << 20));
    CHECK(double(physical) > total * 0.9);
    CHECK(double(physical) < total * 1.1);

    char name[HOST_NAME_MAX + 1] = {};
    REQUIRE(::gethostname(name, sizeof(name) - 1) == 0);
    REQUIRE(ucs::sys::host_name() != nullptr);
    CHECK(std::string(ucs::sys::host_name()) == name);
    CHECK(std::strlen(ucs::sys::host_name()) > 0);

    CHECK(ucs::sys::get_tid() > 0);
    pid_t other_tid = 0;
    std::thread t([&]() { other_tid = ucs::sys::get_tid(); });
    t.join();
    CHECK(other_tid > 0);
    CHECK(other_tid != ucs::sys::get_tid());
}

TEST_CASE("machine id and namespaces match in a forked child", "[sys]")
{
    const uint64_t id = ucs::sys::machine_id();
    CHECK(id != 0);
    CHECK(ucs::sys::machine_id() == id);
    CHECK(ucs::sys::compute_machine_id() == id);

    const uint64_t pid_ns  = ucs::sys::pid_namespace_id();
    const uint64_t user_ns = ucs::sys::user_namespace_id();
    REQUIRE(pid_ns != 0);
    REQUIRE(user_ns != 0);
    struct stat st;
    REQUIRE(::stat("/proc/self/ns/pid", &st) == 0);
    CHECK(pid_ns == uint64_t(st.st_ino));
    REQUIRE(::stat("/proc/self/ns/user", &st) == 0);
    CHECK(user_ns == uint64_t(st.st_ino));

    uint64_t inode = 0;
    CHECK(ucs::sys::namespace_inode(ucs::sys::namespace_type::ipc, &inode) == UCS_OK);
    CHECK(inode != 0);
    CHECK(ucs::sys::namespace_inode(ucs::sys::namespace_type::pid, nullptr) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(ucs::sys::namespace_inode(static_cast<ucs::sys::namespace_type>(77), &inode) ==
          UCS_ERR_INVALID_PARAM);

    const child_identity child = identity_from_child();
    CHECK(child.machine_id_cached == id);
    CHECK(child.machine_id_fresh == id);
    CHECK(child.pid_ns == pid_ns);
    CHECK(child.user_ns == user_ns);
}

TEST_CASE("node id narrowed by namespaces: same node only in the same ones", "[sys]")
{
    using ucs::sys::namespace_type;
    const uint64_t net_node = ucs::sys::node_id({namespace_type::net});
    const uint64_t ipc_node = ucs::sys::node_id({namespace_type::ipc});
    CHECK(net_node != 0);
    CHECK(ucs::sys::node_id({}) == ucs::sys::machine_id());
    CHECK(net_node != ucs::sys::machine_id());
    CHECK(net_node != ipc_node);
    CHECK(ucs::sys::node_id({namespace_type::net}) == net_node);

    const child_identity child = identity_from_child();
    CHECK(child.net_node == net_node);
    CHECK(child.ipc_node == ipc_node);

    const child_identity moved = identity_from_child(true);
    if (moved.unshare_errno != 0) {
        WARN("skipped: a new network namespace needs root (unshare: "
             << std::strerror(moved.unshare_errno) << ")");
        return;
    }
    CHECK(moved.machine_id_cached == ucs::sys::machine_id());
    CHECK(moved.net_node != net_node); /* loopback tcp does not reach it */
    CHECK(moved.ipc_node == ipc_node); /* shared memory still could */
}

TEST_CASE("ptrace scope follows Yama", "[sys]")
{
    const int scope           = ucs::sys::ptrace_scope();
    long long value           = 0;
    const ucs_status_t status = ucs::sys::read_file_number("/proc/sys/kernel/yama/ptrace_scope",
                                                           &value);
    if (status == UCS_OK) {
        CHECK(scope == int(value));
        CHECK(scope >= 0);
        CHECK(scope <= 3);
    } else {
        CHECK(status == UCS_ERR_NO_ELEM);
        CHECK(scope == -1);
    }
}

TEST_CASE("secret_equal compares every byte, whole words and the tail", "[sys]")
{
    uint8_t a[19], b[19];
    for (size_t i = 0; i < sizeof(a); ++i) {
        a[i] = b[i] = uint8_t(0x5a + i);
    }
    for (size_t length = 0; length <= sizeof(a); ++length) {
        CHECK(ucs::sys::secret_equal(a, b, length));
    }
    /* One differing byte anywhere (in a word or in the tail) makes them
     * differ, from the lengths that include it on. */
    for (size_t at = 0; at < sizeof(a); ++at) {
        b[at] ^= 0x01;
        for (size_t length = 0; length <= sizeof(a); ++length) {
            CHECK(ucs::sys::secret_equal(a, b, length) == (length <= at));
        }
        b[at] ^= 0x01;
    }
    /* Unaligned starts. */
    CHECK(ucs::sys::secret_equal(a + 1, b + 1, 16));
    b[17] = 0;
    CHECK_FALSE(ucs::sys::secret_equal(a + 1, b + 1, 17));
}

TEST_CASE("get_time is monotonic and converts like clock_gettime", "[sys]")
{
    CHECK(ucs::sys::time_frequency() > 0);

    ucs::sys::ticks_t prev = ucs::sys::get_time();
    bool monotonic         = true;
    for (int i = 0; i < 10000; ++i) {
        const ucs::sys::ticks_t now = ucs::sys::get_time();
        if (now < prev) {
            monotonic = false;
        }
        prev = now;
    }
    CHECK(monotonic);

    /* Another thread, after a happens-before edge, never reads an earlier time. */
    const ucs::sys::ticks_t before = ucs::sys::get_time();
    ucs::sys::ticks_t in_thread    = 0;
    std::thread t([&]() { in_thread = ucs::sys::get_time(); });
    t.join();
    CHECK(in_thread >= before);

    /* A ~50 ms busy wait measured both ways agrees within 20%. */
    const uint64_t ns_start         = monotonic_ns();
    const ucs::sys::ticks_t t_start = ucs::sys::get_time();
    while (monotonic_ns() - ns_start < 50000000ull) {
    }
    const ucs::sys::ticks_t t_end = ucs::sys::get_time();
    const uint64_t ns_end         = monotonic_ns();
    const double clock_sec        = double(ns_end - ns_start) / 1e9;
    const double ticks_sec        = ucs::sys::time_to_sec(t_end - t_start);
    CHECK(ticks_sec > clock_sec * 0.8);
    CHECK(ticks_sec < clock_sec * 1.2);
    CHECK(ucs::sys::time_to_msec(t_end - t_start) == Approx(ticks_sec * 1e3).epsilon(1e-9));
    CHECK(ucs::sys::time_to_usec(t_end - t_start) == Approx(ticks_sec * 1e6).epsilon(1e-9));
    CHECK(ucs::sys::time_to_nsec(t_end - t_start) == Approx(ticks_sec * 1e9).epsilon(1e-9));

    /* Conversions both ways. */
    const ucs::sys::ticks_t one_ms = ucs::sys::time_from_msec(1);
    CHECK(one_ms > 0);
    CHECK(ucs::sys::time_to_usec(one_ms) == Approx(1000).epsilon(0.01));
    CHECK(ucs::sys::time_from_usec(1000) == one_ms);
    CHECK(ucs::sys::time_from_sec(0.001) == one_ms);
    CHECK(ucs::sys::time_from_nsec(1e6) == one_ms);
    CHECK(ucs::sys::time_to_sec(ucs::sys::time_from_sec(2.5)) == Approx(2.5).epsilon(1e-6));
    CHECK(ucs::sys::time_from_sec(-1.0) == 0);
    if (ucs::sys::time_uses_cycle_counter()) {
        CHECK(ucs::sys::time_frequency() > 1e6);
    } else {
        CHECK(ucs::sys::time_frequency() == 1e9);
    }
}

TEST_CASE("file readers parse numbers and report errors", "[sys]")
{
    long long value = 0;
    {
        temp_file f("  42\n");
        CHECK(ucs::sys::read_file_number(f.path.c_str(), &value) == UCS_OK);
        CHECK(value == 42);
    }
    {
        temp_file f("-7");
        CHECK(ucs::sys::read_file_number(f.path.c_str(), &value) == UCS_OK);
        CHECK(value == -7);
    }
    for (const char *bad : {"12abc", "", "abc", "1 2", "99999999999999999999"}) {
        temp_file f(bad);
        CHECK(ucs::sys::read_file_number(f.path.c_str(), &value) == UCS_ERR_INVALID_PARAM);
    }
    CHECK(ucs::sys::read_file_number("/nonexistent/ucs/file", &value) == UCS_ERR_NO_ELEM);
    CHECK(ucs::sys::read_file_number(nullptr, &value) == UCS_ERR_INVALID_PARAM);
    CHECK(ucs::sys::read_file_number("/proc/self/stat", nullptr) == UCS_ERR_INVALID_PARAM);
    CHECK(ucs::sys::read_file_number("/tmp", &value) == UCS_ERR_IO_ERROR);

    std::string content;
    {
        temp_file f("line one\nline two\n");
        CHECK(ucs::sys::read_file_string(f.path.c_str(), &content) == UCS_OK);
        CHECK(content == "line one\nline two\n");
        content = "unchanged";
        CHECK(ucs::sys::read_file_string(f.path.c_str(), &content, 5) == UCS_ERR_EXCEEDS_LIMIT);
        CHECK(content == "unchanged");
    }
    /* procfs reports size 0 but has content. */
    CHECK(ucs::sys::read_file_string("/proc/self/status", &content) == UCS_OK);
    CHECK(content.find("Pid:") != std::string::npos);

    {
        temp_file f("Hugepages_Total: 0\nHugepagesize:    2048 kB\n"
                    "Negative: -3\nBroken: x\n");
        CHECK(ucs::sys::read_file_keyed_number(f.path.c_str(), "Hugepagesize", &value) == UCS_OK);
        CHECK(value == 2048);
        CHECK(ucs::sys::read_file_keyed_number(f.path.c_str(), "Hugepages_Total", &value) ==
              UCS_OK);
        CHECK(value == 0);
        CHECK(ucs::sys::read_file_keyed_number(f.path.c_str(), "Negative", &value) == UCS_OK);
        CHECK(value == -3);
        /* A prefix of a key is not the key. */
        CHECK(ucs::sys::read_file_keyed_number(f.path.c_str(), "Huge", &value) == UCS_ERR_NO_ELEM);
        CHECK(ucs::sys::read_file_keyed_number(f.path.c_str(), "Broken", &value) ==
              UCS_ERR_INVALID_PARAM);
        CHECK(ucs::sys::read_file_keyed_number(f.path.c_str(), "", &value) ==
              UCS_ERR_INVALID_PARAM);
        CHECK(ucs::sys::read_file_keyed_number(f.path.c_str(), nullptr, &value) ==
              UCS_ERR_INVALID_PARAM);
    }

    CHECK(ucs::sys::parse_number(" 17 ", &value));
    CHECK(value == 17);
    CHECK_FALSE(ucs::sys::parse_number("0x10", &value));
    CHECK_FALSE(ucs::sys::parse_number(nullptr, &value));
}

TEST_CASE("memory type detection defaults to host", "[sys]")
{
    detector_cleanup cleanup;
    std::vector<char> buffer(4096);

    CHECK_FALSE(ucs::memtype::have_detectors());
    CHECK(ucs::memtype::detect(buffer.data(), buffer.size()) == UCS_MEMORY_TYPE_HOST);
    CHECK(ucs::memtype::detect(nullptr, 0) == UCS_MEMORY_TYPE_HOST);
    CHECK(ucs::memtype::unregister_detector(UCS_MEMORY_TYPE_CUDA) == UCS_ERR_NO_ELEM);
}

TEST_CASE("a registered detector claims its range; unregister restores host", "[sys]")
{
    detector_cleanup cleanup;
    mapped_region device(4096), managed(4096), host(4096);

    REQUIRE(ucs::memtype::register_detector(UCS_MEMORY_TYPE_CUDA,
                                            range_detector(device.data(), device.size())) ==
            UCS_OK);
    CHECK(ucs::memtype::have_detectors());
    CHECK(ucs::memtype::detect(device.data() + 100, 64) == UCS_MEMORY_TYPE_CUDA);
    CHECK(ucs::memtype::detect(host.data(), 64) == UCS_MEMORY_TYPE_HOST);
    /* Runs past the end of the claimed range: not claimed. */
    CHECK(ucs::memtype::detect(device.data() + 4000, 200) == UCS_MEMORY_TYPE_HOST);

    CHECK(ucs::memtype::register_detector(UCS_MEMORY_TYPE_CUDA,
                                          range_detector(host.data(), host.size())) ==
          UCS_ERR_ALREADY_EXISTS);
    CHECK(ucs::memtype::detect(host.data(), 64) == UCS_MEMORY_TYPE_HOST);

    REQUIRE(ucs::memtype::register_detector(UCS_MEMORY_TYPE_CUDA_MANAGED,
                                            range_detector(managed.data(), managed.size())) ==
            UCS_OK);
    CHECK(ucs::memtype::detect(managed.data(), 8) == UCS_MEMORY_TYPE_CUDA_MANAGED);
    CHECK(ucs::memtype::detect(device.data(), 8) == UCS_MEMORY_TYPE_CUDA);

    /* Both claim: the lower memory type answers, whatever the order. */
    REQUIRE(ucs::memtype::register_detector(UCS_MEMORY_TYPE_ROCM,
                                            [](const void *, size_t) { return true; }) == UCS_OK);
    CHECK(ucs::memtype::detect(device.data(), 8) == UCS_MEMORY_TYPE_CUDA);
    CHECK(ucs::memtype::detect(host.data(), 8) == UCS_MEMORY_TYPE_ROCM);
    REQUIRE(ucs::memtype::unregister_detector(UCS_MEMORY_TYPE_ROCM) == UCS_OK);
    CHECK(ucs::memtype::detect(host.data(), 8) == UCS_MEMORY_TYPE_HOST);

    REQUIRE(ucs::memtype::unregister_detector(UCS_MEMORY_TYPE_CUDA) == UCS_OK);
    CHECK(ucs::memtype::detect(device.data() + 100, 64) == UCS_MEMORY_TYPE_HOST);
    CHECK(ucs::memtype::detect(managed.data(), 8) == UCS_MEMORY_TYPE_CUDA_MANAGED);
    CHECK(ucs::memtype::have_detectors());
    CHECK(ucs::memtype::unregister_detector(UCS_MEMORY_TYPE_CUDA) == UCS_ERR_NO_ELEM);

    REQUIRE(ucs::memtype::unregister_detector(UCS_MEMORY_TYPE_CUDA_MANAGED) == UCS_OK);
    CHECK_FALSE(ucs::memtype::have_detectors());
    CHECK(ucs::memtype::detect(managed.data(), 8) == UCS_MEMORY_TYPE_HOST);
}

TEST_CASE("memory type registry rejects bad input", "[sys]")
{
    detector_cleanup cleanup;
    auto yes = [](const void *, size_t) { return true; };
    CHECK(ucs::memtype::register_detector(UCS_MEMORY_TYPE_HOST, yes) == UCS_ERR_INVALID_PARAM);
    CHECK(ucs::memtype::register_detector(UCS_MEMORY_TYPE_UNKNOWN, yes) == UCS_ERR_INVALID_PARAM);
    CHECK(ucs::memtype::register_detector(static_cast<ucs_memory_type_t>(7), yes) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(ucs::memtype::register_detector(UCS_MEMORY_TYPE_CUDA, nullptr) == UCS_ERR_INVALID_PARAM);
    CHECK(ucs::memtype::unregister_detector(UCS_MEMORY_TYPE_HOST) == UCS_ERR_INVALID_PARAM);
    CHECK(ucs::memtype::unregister_detector(UCS_MEMORY_TYPE_LAST) == UCS_ERR_INVALID_PARAM);
    CHECK_FALSE(ucs::memtype::have_detectors());

    /* A detector that throws does not claim, and does not escape detect(). */
    REQUIRE(ucs::memtype::register_detector(UCS_MEMORY_TYPE_CUDA, [](const void *, size_t) -> bool {
                throw std::runtime_error("driver failure");
            }) == UCS_OK);
    int local = 0;
    CHECK(ucs::memtype::detect(&local, sizeof(local)) == UCS_MEMORY_TYPE_HOST);
}

namespace {

/* A provider that hands out blocks of its own and counts them. */
std::atomic<int> g_provided{0};
alignas(64) char g_block[1024];

void *provide(size_t length)
{
    if (length > sizeof(g_block) || (g_provided.load() != 0)) {
        return nullptr; /* one block at a time; the rest is malloc'ed */
    }
    ++g_provided;
    return g_block;
}

void take_back(void *block, size_t length)
{
    CHECK(block == g_block);
    CHECK(length == 100);
    --g_provided;
}

constexpr ucs::memtype::host_allocator counting_provider = {provide, take_back};

std::vector<int> g_landed; /* what the deferred copier has written */

ucs_status_t defer_start(void *dest, ucs_memory_type_t, const void *src, ucs_memory_type_t,
                         size_t length)
{
    g_landed.push_back(int(length));
    (void)dest;
    (void)src;
    return UCS_OK;
}

ucs_status_t defer_finish()
{
    g_landed.push_back(-1);
    return UCS_OK;
}

constexpr ucs::memtype::async_copier deferring_copier = {defer_start, defer_finish};

} // namespace

TEST_CASE("bounce buffers come from the registered provider, else malloc, and go back to "
          "whoever gave them",
          "[sys]")
{
    /* No provider: malloc'ed, writable, freed. */
    auto *plain = static_cast<char *>(ucs::memtype::bounce_alloc(100));
    REQUIRE(plain != nullptr);
    std::memset(plain, 1, 100);
    ucs::memtype::bounce_free(plain);
    ucs::memtype::bounce_free(nullptr);

    CHECK(ucs::memtype::register_bounce_allocator(nullptr) == UCS_ERR_INVALID_PARAM);
    REQUIRE(ucs::memtype::register_bounce_allocator(&counting_provider) == UCS_OK);
    CHECK(ucs::memtype::register_bounce_allocator(&counting_provider) == UCS_ERR_ALREADY_EXISTS);
    void *provided = ucs::memtype::bounce_alloc(100);  /* the provider's block */
    void *fallback = ucs::memtype::bounce_alloc(100);  /* it has none left: malloc */
    void *big      = ucs::memtype::bounce_alloc(4096); /* too big for it: malloc */
    CHECK(g_provided.load() == 1);
    CHECK(provided == g_block); /* asked for exactly the length: no header */
    std::memset(fallback, 2, 100);
    std::memset(big, 3, 4096);
    /* Unregistered while a block is out: it still goes back to its provider. */
    CHECK(ucs::memtype::unregister_bounce_allocator() == UCS_OK);
    CHECK(ucs::memtype::unregister_bounce_allocator() == UCS_ERR_NO_ELEM);
    ucs::memtype::bounce_free(fallback);
    ucs::memtype::bounce_free(big);
    ucs::memtype::bounce_free(provided);
    CHECK(g_provided.load() == 0);
}

TEST_CASE("asynchronous copies: the type's pair when registered, else an immediate copy", "[sys]")
{
    char host[8] = "abcdefg", other[8] = {};
    /* No pair: copy_start copies host memory at once; finish has nothing to do. */
    CHECK(ucs::memtype::copy_start(other, UCS_MEMORY_TYPE_HOST, host, UCS_MEMORY_TYPE_HOST,
                                   sizeof(host)) == UCS_OK);
    CHECK(std::memcmp(other, host, sizeof(host)) == 0);
    CHECK(ucs::memtype::copy_finish(UCS_MEMORY_TYPE_CUDA) == UCS_OK);
    CHECK(ucs::memtype::copy_start(other, UCS_MEMORY_TYPE_CUDA, host, UCS_MEMORY_TYPE_HOST, 1) ==
          UCS_ERR_UNSUPPORTED);

    CHECK(ucs::memtype::register_async_copier(UCS_MEMORY_TYPE_HOST, &deferring_copier) ==
          UCS_ERR_INVALID_PARAM);
    ucs::memtype::async_copier half = {defer_start, nullptr};
    CHECK(ucs::memtype::register_async_copier(UCS_MEMORY_TYPE_CUDA, &half) ==
          UCS_ERR_INVALID_PARAM);
    REQUIRE(ucs::memtype::register_async_copier(UCS_MEMORY_TYPE_CUDA, &deferring_copier) == UCS_OK);
    CHECK(ucs::memtype::register_async_copier(UCS_MEMORY_TYPE_CUDA, &deferring_copier) ==
          UCS_ERR_ALREADY_EXISTS);
    g_landed.clear();
    /* Either side of the device type picks its pair. */
    CHECK(ucs::memtype::copy_start(other, UCS_MEMORY_TYPE_CUDA, host, UCS_MEMORY_TYPE_HOST, 3) ==
          UCS_OK);
    CHECK(ucs::memtype::copy_start(other, UCS_MEMORY_TYPE_HOST, host, UCS_MEMORY_TYPE_CUDA, 5) ==
          UCS_OK);
    CHECK(ucs::memtype::copy_finish(UCS_MEMORY_TYPE_CUDA) == UCS_OK);
    CHECK(ucs::memtype::copy_finish(UCS_MEMORY_TYPE_ROCM) == UCS_OK); /* no pair: none */
    CHECK(g_landed == std::vector<int>{3, 5, -1});
    CHECK(ucs::memtype::unregister_async_copier(UCS_MEMORY_TYPE_CUDA) == UCS_OK);
    CHECK(ucs::memtype::unregister_async_copier(UCS_MEMORY_TYPE_CUDA) == UCS_ERR_NO_ELEM);
}

TEST_CASE("memory type detection races registration safely", "[sys]")
{
    detector_cleanup cleanup;
    mapped_region device(4096);

    std::atomic<bool> stop{false}, started{false};
    std::atomic<long> host_answers{0}, cuda_answers{0}, other_answers{0};
    std::thread reader([&]() {
        started = true;
        while (!stop.load(std::memory_order_relaxed)) {
            switch (ucs::memtype::detect(device.data(), 16)) {
            case UCS_MEMORY_TYPE_HOST:
                ++host_answers;
                break;
            case UCS_MEMORY_TYPE_CUDA:
                ++cuda_answers;
                break;
            default:
                ++other_answers;
                break;
            }
        }
    });

    while (!started) {
        std::this_thread::yield();
    }

    int failures = 0;
    for (int i = 0; i < 300; ++i) {
        failures += ucs::memtype::register_detector(UCS_MEMORY_TYPE_CUDA,
                                                    range_detector(device.data(), device.size())) !=
                    UCS_OK;
        /* Let the reader see this state at least once in a while. */
        const long seen     = cuda_answers.load();
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
        while ((i % 10 == 0) && (cuda_answers.load() == seen) &&
               (std::chrono::steady_clock::now() < deadline)) {
            std::this_thread::yield();
        }
        failures += ucs::memtype::unregister_detector(UCS_MEMORY_TYPE_CUDA) != UCS_OK;
    }
    stop = true;
    reader.join();

    CHECK(failures == 0);
    CHECK(other_answers == 0);
    CHECK(cuda_answers > 0);
    CHECK(host_answers > 0);
    CHECK(ucs::memtype::detect(device.data(), 16) == UCS_MEMORY_TYPE_HOST);
}

TEST_CASE("malloc heap memory is host without asking the detectors", "[sys]")
{
    detector_cleanup cleanup;
    static std::atomic<int> calls{0};
    calls = 0;
    REQUIRE(ucs::memtype::register_detector(UCS_MEMORY_TYPE_CUDA, [](const void *, size_t) {
                ++calls;
                return true;
            }) == UCS_OK);
    /* A small block comes from the heap (the program break grows for it). */
    std::unique_ptr<char[]> small(new char[64]);
    const bool on_heap = (reinterpret_cast<uintptr_t>(small.get()) <
                          reinterpret_cast<uintptr_t>(sbrk(0)));
    if (on_heap) {
        CHECK(ucs::memtype::detect(small.get(), 64) == UCS_MEMORY_TYPE_HOST);
        CHECK(calls == 0);
    } else {
        WARN("malloc gave a block outside the program break: the heap shortcut is not "
             "exercised");
    }
    /* Mapped memory is asked about. */
    mapped_region mapped(4096);
    CHECK(ucs::memtype::detect(mapped.data(), 64) == UCS_MEMORY_TYPE_CUDA);
    CHECK(calls == 1);
}

TEST_CASE("a remembered region answers its memory type until forgotten", "[sys]")
{
    detector_cleanup cleanup;
    static std::atomic<int> calls{0};
    calls = 0;
    REQUIRE(ucs::memtype::register_detector(UCS_MEMORY_TYPE_ROCM, [](const void *, size_t) {
                ++calls;
                return true;
            }) == UCS_OK);
    mapped_region outer(8192), inner(4096);
    ucs::memtype::remember(outer.data(), outer.size(), UCS_MEMORY_TYPE_HOST);
    ucs::memtype::remember(inner.data(), inner.size(), UCS_MEMORY_TYPE_CUDA_MANAGED);
    CHECK(ucs::memtype::detect(outer.data() + 100, 64) == UCS_MEMORY_TYPE_HOST);
    CHECK(ucs::memtype::detect(inner.data(), 4096) == UCS_MEMORY_TYPE_CUDA_MANAGED);
    CHECK(calls == 0);
    /* Running past the region's end: the detectors answer. */
    CHECK(ucs::memtype::detect(inner.data() + 4000, 200) == UCS_MEMORY_TYPE_ROCM);
    CHECK(calls == 1);
    ucs::memtype::forget(inner.data(), inner.size());
    CHECK(ucs::memtype::detect(inner.data(), 64) == UCS_MEMORY_TYPE_ROCM);
    CHECK(calls == 2);
    ucs::memtype::forget(outer.data(), outer.size());
    CHECK(ucs::memtype::detect(outer.data(), 64) == UCS_MEMORY_TYPE_ROCM);
    CHECK(calls == 3);
}
