/*
 * The table registry, the unused-variable warning and the ucs global options.
 */
#include <catch2/catch.hpp>

#include "config_test_util.h"

#include <ucs/config/global_opts.h>
#include <ucs/config/registry.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

using namespace ucs::config;
using namespace config_test;

namespace {

struct probe_opts {
    int count;
    unsigned depth;
};

const field probe_fields[] = {
    UCS_CONFIG_FIELD(probe_opts, count, "PROBE_COUNT", "1", "A count.", type_int),
    UCS_CONFIG_FIELD(probe_opts, depth, "PROBE_DEPTH", "2", "A depth.", type_uint, field_hidden),
};
const table probe_table = {"Probe options", "", probe_fields, sizeof(probe_opts)};

const char *const global_vars[] = {
    "UCX_LOG_LEVEL",     "UCX_LOG_FILE",      "UCX_MEMTYPE_CACHE",        "UCX_ASYNC_MAX_EVENTS",
    "UCX_HANDLE_ERRORS", "UCX_ERROR_SIGNALS", "UCX_WARN_UNUSED_ENV_VARS",
};

/*
 * Runs a test with the global options' variables unset and no config file;
 * afterwards restores them, reloads the global options and the log output.
 */
struct global_opts_scope {
    env_guard env;
    config_file_scope no_file;

    global_opts_scope()
    {
        for (const char *var : global_vars) {
            env.unset(var);
        }
    }

    ~global_opts_scope()
    {
        env.restore();
        ucs::config::drop_file_cache();
        ucs::global_opts_load();
    }
};

bool contains(const std::vector<std::string> &items, const std::string &prefix)
{
    return std::any_of(items.begin(), items.end(),
                       [&](const std::string &item) { return item.rfind(prefix, 0) == 0; });
}

} // namespace

TEST_CASE("tables register once and unregister with their registration", "[config]")
{
    auto count_probe = [] {
        auto tables = registered_tables();
        return std::count(tables.begin(), tables.end(), &probe_table);
    };
    CHECK(count_probe() == 0);
    {
        table_registration registration(probe_table);
        CHECK(count_probe() == 1);
        register_table(probe_table);
        CHECK(count_probe() == 1);
    }
    CHECK(count_probe() == 0);

    auto tables = registered_tables();
    CHECK(std::count(tables.begin(), tables.end(), &ucs::global_opts_table) == 1);
}

TEST_CASE("print_all prints every registered table", "[config]")
{
    global_opts_scope scope;
    table_registration registration(probe_table);
    scope.env.set("UCX_PROBE_COUNT", "12");

    std::string text = print_to_string([](FILE *stream) {
        CHECK(print_all(stream, UCS_CONFIG_PRINT_CONFIG | UCS_CONFIG_PRINT_HEADER) == UCS_OK);
    });
    CHECK(text.find("# UCS global options\n") != std::string::npos);
    CHECK(text.find("# Probe options\n") != std::string::npos);
    CHECK(text.find("UCX_LOG_LEVEL=warn\n") != std::string::npos);
    CHECK(text.find("UCX_HANDLE_ERRORS=bt\n") != std::string::npos);
    CHECK(text.find("UCX_ERROR_SIGNALS=ILL,SEGV,BUS,FPE\n") != std::string::npos);
    CHECK(text.find("UCX_PROBE_COUNT=12\n") != std::string::npos);
    CHECK(text.find("UCX_PROBE_DEPTH") == std::string::npos);

    std::string hidden = print_to_string([](FILE *stream) {
        print_all(stream, UCS_CONFIG_PRINT_CONFIG | UCS_CONFIG_PRINT_HIDDEN | UCS_CONFIG_PRINT_DOC);
    });
    CHECK(hidden.find("UCX_PROBE_DEPTH=2\n") != std::string::npos);
    CHECK(hidden.find("# A depth.\n") != std::string::npos);
    CHECK(hidden.find(" bt     - print \"Caught signal\" and the symbolised backtrace") !=
          std::string::npos);

    /* A malformed value: reported, the other tables still printed. */
    scope.env.set("UCX_PROBE_COUNT", "twelve");
    log_capture log(UCS_LOG_LEVEL_ERROR);
    std::string bad = print_to_string([](FILE *stream) {
        CHECK(print_all(stream, UCS_CONFIG_PRINT_CONFIG) == UCS_ERR_INVALID_PARAM);
    });
    CHECK(bad.find("# Probe options: invalid configuration") != std::string::npos);
    CHECK(bad.find("UCX_LOG_LEVEL=") != std::string::npos);
    CHECK(log.text().find("Invalid value for UCX_PROBE_COUNT: 'twelve'") != std::string::npos);
}

TEST_CASE("unknown UCX_ variables are listed with close names", "[config]")
{
    global_opts_scope scope;
    table_registration registration(probe_table);
    scope.env.set("UCX_LOG_LEVLE", "info"); /* swapped letters */
    scope.env.set("UCX_PROBE_CONT", "3");   /* a missing letter */
    scope.env.set("UCX_probe_count", "3");  /* wrong case: getenv misses it */
    scope.env.set("UCX_PROBE", "1");        /* a prefix of known names */
    scope.env.set("UCX_ZZZZZZZZZZZZ", "1"); /* nothing close */
    scope.env.set("UCX_PROBE_COUNT", "3");  /* known */
    scope.env.set("UCX_PROBE_DEPTH", "3");  /* known, hidden */
    scope.env.set("UCX_MEM_EVENTS", "no");  /* read by libucm, no table */

    auto unused = unused_env_vars();
    CHECK(contains(unused, "UCX_LOG_LEVLE (maybe: UCX_LOG_LEVEL?)"));
    CHECK(contains(unused, "UCX_PROBE_CONT (maybe: UCX_PROBE_COUNT"));
    CHECK(contains(unused, "UCX_probe_count (maybe: UCX_PROBE_COUNT"));
    CHECK(contains(unused, "UCX_PROBE (maybe: "));
    auto probe = std::find_if(unused.begin(), unused.end(),
                              [](const std::string &s) { return s.rfind("UCX_PROBE (", 0) == 0; });
    REQUIRE(probe != unused.end());
    CHECK(probe->find("UCX_PROBE_COUNT") != std::string::npos);
    CHECK(probe->find("UCX_PROBE_DEPTH") != std::string::npos);
    CHECK(std::find(unused.begin(), unused.end(), "UCX_ZZZZZZZZZZZZ") != unused.end());
    CHECK_FALSE(contains(unused, "UCX_PROBE_COUNT"));
    CHECK_FALSE(contains(unused, "UCX_PROBE_DEPTH"));
    CHECK_FALSE(contains(unused, "UCX_CONFIG_FILE"));
    CHECK_FALSE(contains(unused, "UCX_MEM_EVENTS"));
}

TEST_CASE("variables of an unregistered table are unknown", "[config]")
{
    global_opts_scope scope;
    scope.env.set("UCX_PROBE_COUNT", "3");
    {
        table_registration registration(probe_table);
        CHECK_FALSE(contains(unused_env_vars(), "UCX_PROBE_COUNT"));
    }
    CHECK(contains(unused_env_vars(), "UCX_PROBE_COUNT"));
}

TEST_CASE("variables with a known env prefix are not unknown", "[config]")
{
    global_opts_scope scope;
    table_registration registration(probe_table);
    scope.env.set("UCX_PRB_PROBE_COUNT", "5");
    scope.env.set("UCX_PRB_PROBE_CUONT", "5");

    probe_opts opts;
    REQUIRE(fill(&opts, probe_table, "PRB") == UCS_OK);
    CHECK(opts.count == 5);

    auto unused = unused_env_vars();
    CHECK_FALSE(contains(unused, "UCX_PRB_PROBE_COUNT"));
    CHECK(contains(unused, "UCX_PRB_PROBE_CUONT (maybe: UCX_PRB_PROBE_COUNT"));
}

TEST_CASE("the unused-variable warning is logged once", "[config]")
{
    global_opts_scope scope;
    table_registration registration(probe_table);
    scope.env.set("UCX_LOG_LEVLE", "info");
    scope.env.set("UCX_PROBE_CONT", "1");
    REQUIRE(ucs::global_opts_load() == UCS_OK);

    log_capture log(UCS_LOG_LEVEL_WARN);
    rearm_unused_env_warning();
    CHECK(warn_unused_env_vars());
    CHECK_FALSE(warn_unused_env_vars());
    rearm_unused_env_warning();

    std::string text = log.text();
    INFO(text);
    CHECK(count_of(text, "unused environment variable") == 1);
    CHECK(text.find("UCX_LOG_LEVLE (maybe: UCX_LOG_LEVEL?)") != std::string::npos);
    CHECK(text.find("UCX_PROBE_CONT (maybe: UCX_PROBE_COUNT") != std::string::npos);
    CHECK(text.find("UCX_WARN_UNUSED_ENV_VARS=n") != std::string::npos);

    /* Switched off by its own option. */
    scope.env.set("UCX_WARN_UNUSED_ENV_VARS", "n");
    REQUIRE(ucs::global_opts_load() == UCS_OK);
    log_capture quiet(UCS_LOG_LEVEL_WARN);
    CHECK_FALSE(warn_unused_env_vars());
    rearm_unused_env_warning();
    CHECK(quiet.text().find("unused environment") == std::string::npos);
}

TEST_CASE("global options have their defaults", "[config]")
{
    global_opts_scope scope;
    REQUIRE(ucs::global_opts_load() == UCS_OK);
    const ucs::global_options &opts = ucs::global_opts();
    CHECK(opts.log_level == UCS_LOG_LEVEL_WARN);
    REQUIRE(opts.log_file != nullptr);
    CHECK(std::string(opts.log_file).empty());
    CHECK(opts.memtype_cache == 1);
    CHECK(opts.async_max_events == 1024u);
    CHECK(opts.handle_errors == UCS_BIT(UCS_HANDLE_ERROR_BACKTRACE));
    REQUIRE(opts.error_signals.count == 4);
    CHECK(std::string(opts.error_signals.names[0]) == "ILL");
    CHECK(std::string(opts.error_signals.names[3]) == "FPE");
    CHECK(opts.warn_unused_env_vars == 1);
    CHECK(ucs::global_opts_status() == UCS_OK);
    CHECK(ucs::g_log_level == UCS_LOG_LEVEL_WARN);
}

TEST_CASE("global options apply the log level and log file", "[config]")
{
    global_opts_scope scope;
    temp_file log_file;
    scope.env.set("UCX_LOG_LEVEL", "debug");
    scope.env.set("UCX_LOG_FILE", log_file.path());
    scope.env.set("UCX_HANDLE_ERRORS", "bt,freeze");
    scope.env.set("UCX_ERROR_SIGNALS", "SEGV");
    scope.env.set("UCX_ASYNC_MAX_EVENTS", "64");

    REQUIRE(ucs::global_opts_load() == UCS_OK);
    CHECK(ucs::g_log_level == UCS_LOG_LEVEL_DEBUG);
    CHECK(ucs::global_opts().log_level == UCS_LOG_LEVEL_DEBUG);
    CHECK(ucs::global_opts().handle_errors ==
          (UCS_BIT(UCS_HANDLE_ERROR_BACKTRACE) | UCS_BIT(UCS_HANDLE_ERROR_FREEZE)));
    CHECK(ucs::global_opts().error_signals.count == 1);
    CHECK(ucs::global_opts().async_max_events == 64u);
    CHECK(std::string(ucs::global_opts().log_file) == log_file.path());

    ucs_debug("to the configured log file");
    CHECK(log_file.text().find("to the configured log file") != std::string::npos);
}

TEST_CASE("global options come from the config file too", "[config]")
{
    global_opts_scope scope;
    config_file_scope file("UCX_LOG_LEVEL = info\nUCX_MEMTYPE_CACHE = n\n");
    REQUIRE(ucs::global_opts_load() == UCS_OK);
    CHECK(ucs::g_log_level == UCS_LOG_LEVEL_INFO);
    CHECK(ucs::global_opts().memtype_cache == 0);

    scope.env.set("UCX_LOG_LEVEL", "error"); /* the environment wins */
    REQUIRE(ucs::global_opts_load() == UCS_OK);
    CHECK(ucs::g_log_level == UCS_LOG_LEVEL_ERROR);
}

TEST_CASE("a bad UCX_LOG_LEVEL is an error status naming the variable", "[config]")
{
    global_opts_scope scope;
    log_capture log(UCS_LOG_LEVEL_WARN);
    scope.env.set("UCX_LOG_LEVEL", "nonsense");

    CHECK(ucs::global_opts_load() == UCS_ERR_INVALID_PARAM);
    CHECK(ucs::global_opts_status() == UCS_ERR_INVALID_PARAM);
    CHECK(ucs::g_log_level == UCS_LOG_LEVEL_WARN); /* nothing applied */
    CHECK(ucs::global_opts().log_level == UCS_LOG_LEVEL_WARN);
    CHECK(ucs::global_opts().async_max_events == 1024u); /* the defaults */

    std::string text = log.text();
    CHECK(text.find("Invalid value for UCX_LOG_LEVEL: 'nonsense' "
                    "(expected one of: fatal, error, warn") != std::string::npos);

    scope.env.set("UCX_LOG_LEVEL", "warn");
    CHECK(ucs::global_opts_load() == UCS_OK);
    CHECK(ucs::global_opts_status() == UCS_OK);
}

TEST_CASE("an unwritable UCX_LOG_FILE is reported in the status", "[config]")
{
    global_opts_scope scope;
    scope.env.set("UCX_LOG_FILE", "/nonexistent-dir/x/y.log");
    CHECK(ucs::global_opts_load() == UCS_ERR_IO_ERROR);
    CHECK(ucs::global_opts_status() == UCS_ERR_IO_ERROR);
}

TEST_CASE("global_init is idempotent and safe from many threads", "[config]")
{
    std::atomic<int> ok{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i) {
        threads.emplace_back([&] {
            ucs::global_init();
            if ((ucs::global_opts_status() == UCS_OK) &&
                (ucs::global_opts().async_max_events > 0)) {
                ++ok;
            }
        });
    }
    for (auto &thread : threads) {
        thread.join();
    }
    CHECK(ok.load() == 8);
    const ucs::global_options *before = &ucs::global_opts();
    ucs::global_init();
    CHECK(&ucs::global_opts() == before);
}

namespace {

const field compat_fields[] = {
    UCS_CONFIG_FIELD(probe_opts, count, "COUNT", "1", "A count.", type_int),
    UCS_CONFIG_FIELD(probe_opts, depth, "DEPTH", "2", "A depth.", type_uint, field_no_effect),
};
const alias compat_aliases[] = {
    {"OLDNAME_COUNT", "CPT_COUNT"},
    {"OTHERNAME_COUNT", "CPT_COUNT"},
};
const char *const compat_no_effect[] = {"OLDNAME_FEATURE"};
const table compat_table             = {"Compat options",   "CPT_",         compat_fields,
                                        sizeof(probe_opts), compat_aliases, compat_no_effect};

} // namespace

TEST_CASE("UCX 1.13 names: aliases set the field, after its own names", "[config]")
{
    global_opts_scope scope;
    table_registration registration(compat_table);
    probe_opts opts;

    scope.env.set("UCX_OTHERNAME_COUNT", "8");
    REQUIRE(fill(&opts, compat_table) == UCS_OK);
    CHECK(opts.count == 8);

    scope.env.set("UCX_OLDNAME_COUNT", "7"); /* listed first: wins over the other alias */
    REQUIRE(fill(&opts, compat_table) == UCS_OK);
    CHECK(opts.count == 7);

    scope.env.set("UCX_CPT_COUNT", "6"); /* the field's own name wins */
    REQUIRE(fill(&opts, compat_table) == UCS_OK);
    CHECK(opts.count == 6);
    scope.env.unset("UCX_CPT_COUNT");

    /* With an env prefix, the prefixed alias comes first. */
    scope.env.set("UCX_PFX_OLDNAME_COUNT", "5");
    REQUIRE(fill(&opts, compat_table, "PFX") == UCS_OK);
    CHECK(opts.count == 5);

    /* A malformed value is named by the alias it came from. */
    scope.env.unset("UCX_PFX_OLDNAME_COUNT");
    scope.env.set("UCX_OLDNAME_COUNT", "seven");
    log_capture log(UCS_LOG_LEVEL_ERROR);
    CHECK(fill(&opts, compat_table) == UCS_ERR_INVALID_PARAM);
    CHECK(log.text().find("Invalid value for UCX_OLDNAME_COUNT: 'seven'") != std::string::npos);
}

TEST_CASE("UCX 1.13 names with no effect: a diag note, never 'unused'", "[config]")
{
    global_opts_scope scope;
    table_registration registration(compat_table);
    scope.env.set("UCX_OLDNAME_FEATURE", "y");
    scope.env.set("UCX_CPT_DEPTH", "3");
    scope.env.set("UCX_OLDNAME_COUNT", "3");

    auto unused = unused_env_vars();
    CHECK_FALSE(contains(unused, "UCX_OLDNAME_FEATURE"));
    CHECK_FALSE(contains(unused, "UCX_OLDNAME_COUNT"));

    log_capture log(UCS_LOG_LEVEL_DIAG);
    rearm_unused_env_warning();
    warn_unused_env_vars();
    rearm_unused_env_warning();
    std::string text = log.text();
    INFO(text);
    CHECK(text.find("UCX  DIAG  ") != std::string::npos);
    CHECK(text.find("UCX_OLDNAME_FEATURE") != std::string::npos);
    CHECK(text.find("UCX_CPT_DEPTH") != std::string::npos);
    CHECK(text.find("UCX 1.13 settings accepted with no effect here") != std::string::npos);
    CHECK(text.find("unused environment variable") == std::string::npos);
    CHECK(text.find("UCX_OLDNAME_COUNT") == std::string::npos); /* honoured: no note */

    /* ucx_info -c -a -f says so too. */
    probe_opts opts;
    REQUIRE(fill(&opts, compat_table) == UCS_OK);
    std::string printed = print_to_string([&](FILE *stream) {
        print(stream, &opts, compat_table,
              UCS_CONFIG_PRINT_CONFIG | UCS_CONFIG_PRINT_DOC | UCS_CONFIG_PRINT_HIDDEN);
    });
    CHECK(printed.find("# also read from: UCX_COUNT, UCX_OLDNAME_COUNT, UCX_OTHERNAME_COUNT\n") !=
          std::string::npos);
    CHECK(printed.find("# no effect here (accepted for compatibility with UCX 1.13)") !=
          std::string::npos);
    CHECK(printed.find("# UCX_OLDNAME_FEATURE: accepted for compatibility with UCX 1.13, "
                       "no effect here\n") != std::string::npos);
}
