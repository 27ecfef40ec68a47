#include <catch2/catch.hpp>

#include <ucs/debug/log.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

namespace {

std::string read_file(const std::string &path)
{
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

/* Restores the default level and output after each test. */
struct log_guard {
    ucs_log_level_t saved = ucs::g_log_level;
    ~log_guard()
    {
        ucs::log_set_level(saved);
        ucs::log_set_file("stdout");
    }
};

std::string escape_regex(const std::string &text)
{
    std::string out;
    for (char c : text) {
        if (std::strchr("[](){}.*+?^$|\\", c) != nullptr) {
            out += '\\';
        }
        out += c;
    }
    return out;
}

int side_effects = 0;
int count_call()
{
    return ++side_effects;
}

} // namespace

TEST_CASE("log level names parse both ways", "[log]")
{
    ucs_log_level_t level = UCS_LOG_LEVEL_FATAL;
    CHECK(ucs::log_level_from_string("warn", &level));
    CHECK(level == UCS_LOG_LEVEL_WARN);
    CHECK(ucs::log_level_from_string("DEBUG", &level));
    CHECK(level == UCS_LOG_LEVEL_DEBUG);
    CHECK(ucs::log_level_from_string("poll", &level));
    CHECK(level == UCS_LOG_LEVEL_TRACE_POLL);
    CHECK(ucs::log_level_from_string("trace_data", &level));
    CHECK(level == UCS_LOG_LEVEL_TRACE_DATA);
    CHECK_FALSE(ucs::log_level_from_string("nonsense", &level));
    CHECK_FALSE(ucs::log_level_from_string("", &level));
    CHECK_FALSE(ucs::log_level_from_string(nullptr, &level));
    for (int i = 0; i < UCS_LOG_LEVEL_LAST; ++i) {
        CHECK(ucs::log_level_from_string(ucs::log_level_names[i], &level));
        CHECK(level == i);
    }
}

TEST_CASE("a disabled level does not evaluate its arguments", "[log]")
{
    log_guard guard;
    ucs::log_set_level(UCS_LOG_LEVEL_WARN);
    side_effects = 0;
    ucs_debug("never formatted %d", count_call());
    ucs_trace("never formatted %d", count_call());
    CHECK(side_effects == 0);
}

TEST_CASE("messages go to the log file with host:pid and file:line", "[log]")
{
    log_guard guard;
    char path[] = "/tmp/ucs_log_test_XXXXXX";
    int fd      = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);

    REQUIRE(ucs::log_set_file(path) == UCS_OK);
    ucs::log_set_level(UCS_LOG_LEVEL_INFO);
    ucs_info("hello %d", 42);
    ucs_debug("hidden %d", 7);
    ucs_warn("second line");
    ucs::log_set_file("stdout");

    std::string text = read_file(path);
    unlink(path);

    CHECK(text.find("hello 42") != std::string::npos);
    CHECK(text.find("second line") != std::string::npos);
    CHECK(text.find("hidden") == std::string::npos);
    CHECK(text.find(ucs::log_process_id()) != std::string::npos);
    CHECK(text.find("test_log.cc:") != std::string::npos);
    CHECK(text.find(" INFO ") != std::string::npos);
    CHECK(text.find(" WARN ") != std::string::npos);
}

/*
 * UCX 1.13 prints, e.g.
 * "[1795758584.511571] [vm:20963:0]     ucp_context.c:1849 UCX  INFO  Version 1.13.1":
 * time, host:pid:thread number, file right-aligned in 17 columns, line
 * left-aligned in 4, "UCX", the level padded to 5 columns, the message.
 */
TEST_CASE("log lines have UCX 1.13's layout", "[log]")
{
    log_guard guard;
    char path[] = "/tmp/ucs_log_layout_XXXXXX";
    int fd      = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);

    REQUIRE(ucs::log_set_file(path) == UCS_OK);
    ucs::log_set_level(UCS_LOG_LEVEL_INFO);
    ucs_error("layout %s", "check");
    ucs_info("info line");
    ucs::log_set_file("stdout");
    std::string text = read_file(path);
    unlink(path);

    char pid[16];
    std::snprintf(pid, sizeof(pid), "%-5d", static_cast<int>(getpid()));
    std::string proc = "[";
    proc += ucs::log_host_name();
    proc += ':';
    proc += pid;
    proc += ':';
    proc += std::to_string(ucs::log_thread_number());
    proc += ']';
    const std::regex error_line("\\[[0-9]+\\.[0-9]{6}\\] " + escape_regex(proc) +
                                "       test_log.cc:[0-9][0-9 ]{3} UCX  ERROR layout check\n");
    const std::regex info_line("       test_log.cc:[0-9][0-9 ]{3} UCX  INFO  info line\n");
    INFO(text);
    CHECK(std::regex_search(text, error_line));
    CHECK(std::regex_search(text, info_line));
}

TEST_CASE("log file names expand %p to the process id", "[log]")
{
    log_guard guard;
    std::string pattern  = "/tmp/ucs_log_pid_%p.txt";
    std::string expected = "/tmp/ucs_log_pid_" + std::to_string(getpid()) + ".txt";
    unlink(expected.c_str());
    REQUIRE(ucs::log_set_file(pattern.c_str()) == UCS_OK);
    ucs_warn("to pid file");
    ucs::log_set_file("stdout");
    CHECK(read_file(expected).find("to pid file") != std::string::npos);
    unlink(expected.c_str());
}

TEST_CASE("an unwritable log file is an error, output unchanged", "[log]")
{
    log_guard guard;
    FILE *before = ucs::log_stream();
    CHECK(ucs::log_set_file("/nonexistent-dir/x/y.log") == UCS_ERR_IO_ERROR);
    CHECK(ucs::log_stream() == before);
}
