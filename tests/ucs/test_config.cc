/*
 * Configuration tables: filling from environment, file and defaults, env
 * prefixes, table prefixes, sub-tables, set/get by name, clone, printing.
 */
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include "config_test_util.h"

#include <ucs/config/registry.h>
#include <ucs/config/table.h>

#include <algorithm>
#include <cstring>
#include <sstream>

using namespace ucs::config;
using namespace config_test;

namespace {

struct rndv_opts {
    size_t thresh;
    double bw;
};

struct test_opts {
    char *name;
    ucs_config_names_array_t tls;
    ucs_config_allow_list_t devices;
    int count;
    unsigned level;
    size_t seg_size;
    double timeout;
    int flag;
    rndv_opts rndv;
    unsigned secret;
};

const field rndv_fields[] = {
    UCS_CONFIG_FIELD(rndv_opts, thresh, "THRESH", "auto", "Size from which rendezvous is used.",
                     type_size),
    UCS_CONFIG_FIELD(rndv_opts, bw, "BW", "10GBs", "Assumed bandwidth.", type_bw),
};
const table rndv_table = {"rendezvous", "", rndv_fields, sizeof(rndv_opts)};

const field test_fields[] = {
    UCS_CONFIG_FIELD(test_opts, name, "CFGTEST_NAME", "anonymous",
                     "A name.\nSecond line of the name's doc.", type_string),
    UCS_CONFIG_FIELD(test_opts, tls, "CFGTEST_TLS", "shm,tcp", "Transports to use.",
                     type_string_list),
    UCS_CONFIG_FIELD(test_opts, devices, "CFGTEST_DEVICES", "all", "Devices to use.",
                     type_allow_list),
    UCS_CONFIG_FIELD(test_opts, count, "CFGTEST_COUNT", "4", "How many.", type_int),
    UCS_CONFIG_FIELD(test_opts, level, "CFGTEST_LEVEL", "info", "A log level.",
                     type_enum(ucs::log_level_names)),
    UCS_CONFIG_FIELD(test_opts, seg_size, "CFGTEST_SEG_SIZE", "8k", "Segment size.", type_size),
    UCS_CONFIG_FIELD(test_opts, timeout, "CFGTEST_TIMEOUT", "10ms", "How long to wait.", type_time),
    UCS_CONFIG_FIELD(test_opts, flag, "CFGTEST_FLAG", "n", "A switch.", type_bool),
    UCS_CONFIG_FIELD(test_opts, rndv, "CFGTEST_RNDV_", "", "Rendezvous settings.",
                     type_table(rndv_table)),
    UCS_CONFIG_FIELD(test_opts, secret, "CFGTEST_SECRET", "7", "An internal knob.", type_uint,
                     field_hidden),
};
const table test_table = {"Config test options", "", test_fields, sizeof(test_opts)};

/* A table with a table prefix: UCX_TTCP_TSNDBUF, or UCX_TSNDBUF. */
struct prefixed_opts {
    size_t sndbuf;
    int nodelay;
};
const field prefixed_fields[] = {
    UCS_CONFIG_FIELD(prefixed_opts, sndbuf, "TSNDBUF", "64k", "Send buffer.", type_size),
    UCS_CONFIG_FIELD(prefixed_opts, nodelay, "TNODELAY", "y", "No delay.", type_bool),
};
const table prefixed_table = {"Prefixed", "TTCP_", prefixed_fields, sizeof(prefixed_opts)};

const char *const test_vars[] = {
    "UCX_CFGTEST_NAME",      "UCX_CFGTEST_TLS",    "UCX_CFGTEST_DEVICES",
    "UCX_CFGTEST_COUNT",     "UCX_CFGTEST_LEVEL",  "UCX_CFGTEST_SEG_SIZE",
    "UCX_CFGTEST_TIMEOUT",   "UCX_CFGTEST_FLAG",   "UCX_CFGTEST_RNDV_THRESH",
    "UCX_CFGTEST_RNDV_BW",   "UCX_CFGTEST_SECRET", "UCX_CFGT_CFGTEST_COUNT",
    "UCX_CFGT_CFGTEST_NAME", "UCX_TTCP_TSNDBUF",   "UCX_TSNDBUF",
    "UCX_TTCP_TNODELAY",     "UCX_TNODELAY",
};

/* A clean environment for the test variables and no config file. */
struct clean_env {
    env_guard env;
    config_file_scope no_file;

    clean_env()
    {
        for (const char *var : test_vars) {
            env.unset(var);
        }
    }
};

/* A filled test_opts, released at the end of the scope. */
struct filled_opts {
    test_opts opts;
    ucs_status_t status;

    explicit filled_opts(const char *env_prefix = nullptr)
    {
        std::memset(&opts, 0xab, sizeof(opts));
        status = fill(&opts, test_table, env_prefix);
    }

    ~filled_opts()
    {
        if (status == UCS_OK) {
            release(&opts, test_table);
        }
    }

    std::string get(const char *name) const
    {
        std::string value;
        REQUIRE(get_value(&opts, test_table, name, value) == UCS_OK);
        return value;
    }
};

} // namespace

TEST_CASE("fill uses the defaults when nothing is set", "[config]")
{
    clean_env clean;
    filled_opts f;
    REQUIRE(f.status == UCS_OK);
    CHECK(std::string(f.opts.name) == "anonymous");
    REQUIRE(f.opts.tls.count == 2);
    CHECK(std::string(f.opts.tls.names[0]) == "shm");
    CHECK(f.opts.devices.mode == UCS_CONFIG_ALLOW_LIST_ALLOW_ALL);
    CHECK(f.opts.count == 4);
    CHECK(f.opts.level == UCS_LOG_LEVEL_INFO);
    CHECK(f.opts.seg_size == 8192u);
    CHECK(f.opts.timeout == Approx(0.01));
    CHECK(f.opts.flag == 0);
    CHECK(f.opts.rndv.thresh == size_auto);
    CHECK(f.opts.rndv.bw == 10.0 * 1024 * 1024 * 1024);
    CHECK(f.opts.secret == 7u);
}

TEST_CASE("fill_defaults ignores the environment", "[config]")
{
    clean_env clean;
    clean.env.set("UCX_CFGTEST_COUNT", "99");
    test_opts opts;
    REQUIRE(fill_defaults(&opts, test_table) == UCS_OK);
    CHECK(opts.count == 4);
    release(&opts, test_table);
}

TEST_CASE("environment beats config file beats default", "[config]")
{
    clean_env clean;
    config_file_scope file("UCX_CFGTEST_COUNT = 5\n"
                           "CFGTEST_NAME = from_file\n"
                           "UCX_CFGTEST_SEG_SIZE=1m\n");
    clean.env.set("UCX_CFGTEST_COUNT", "7");

    {
        filled_opts f;
        REQUIRE(f.status == UCS_OK);
        CHECK(f.opts.count == 7);                       /* environment */
        CHECK(std::string(f.opts.name) == "from_file"); /* file, short form */
        CHECK(f.opts.seg_size == (size_t(1) << 20));    /* file, no spaces */
        CHECK(f.opts.timeout == Approx(0.01));          /* default */
    }

    clean.env.unset("UCX_CFGTEST_COUNT");
    {
        filled_opts f;
        REQUIRE(f.status == UCS_OK);
        CHECK(f.opts.count == 5);
    }
}

TEST_CASE("the config file is read once until the cache is dropped", "[config]")
{
    clean_env clean;
    config_file_scope file("UCX_CFGTEST_COUNT = 5\n");
    {
        filled_opts f;
        CHECK(f.opts.count == 5);
    }

    file.file().write("UCX_CFGTEST_COUNT = 6\n");
    {
        filled_opts f;
        CHECK(f.opts.count == 5); /* still the cached file */
    }

    drop_file_cache();
    {
        filled_opts f;
        CHECK(f.opts.count == 6);
    }
    CHECK(file_paths() == std::vector<std::string>{file.file().path()});
    auto vars = file_variables();
    REQUIRE(vars.size() == 1);
    CHECK(vars[0] == "UCX_CFGTEST_COUNT");
}

TEST_CASE("an empty UCX_CONFIG_FILE means no file; a missing file is ignored", "[config]")
{
    clean_env clean;
    {
        config_file_scope none;
        CHECK(file_paths().empty());
        filled_opts f;
        CHECK(f.opts.count == 4);
    }
    {
        config_file_scope file("UCX_CFGTEST_COUNT = 5\n");
        env_guard env;
        env.set("UCX_CONFIG_FILE", file.file().path() + ".does-not-exist");
        drop_file_cache();
        log_capture log(UCS_LOG_LEVEL_WARN);
        filled_opts f;
        CHECK(f.status == UCS_OK);
        CHECK(f.opts.count == 4);
        CHECK(log.text().empty());
    }
}

TEST_CASE("malformed config file lines are warned about and skipped", "[config]")
{
    clean_env clean;
    config_file_scope file("garbage line\n"                                 /* 1 */
                           "UCX_CFGTEST_COUNT = 3\n"                        /* 2 */
                           "= novalue\n"                                    /* 3 */
                           "BAD NAME = 1\n"                                 /* 4 */
                           "# a comment\n"                                  /* 5 */
                           "\n"                                             /* 6 */
                           "   \t\n"                                        /* 7 */
                           "UCX_CFGTEST_NAME = \"quoted # value\"  # why\n" /* 8 */
                           "UCX_CFGTEST_TLS = tcp  # just tcp\n"            /* 9 */
                           "UCX_CFGTEST_LEVEL = \"unterminated\n"           /* 10 */
                           "UCX_CFGTEST_SEG_SIZE = 2k\r\n");                /* 11 */
    log_capture log(UCS_LOG_LEVEL_WARN);
    filled_opts f;
    REQUIRE(f.status == UCS_OK);
    CHECK(f.opts.count == 3);
    CHECK(std::string(f.opts.name) == "quoted # value");
    REQUIRE(f.opts.tls.count == 1);
    CHECK(std::string(f.opts.tls.names[0]) == "tcp");
    CHECK(f.opts.level == UCS_LOG_LEVEL_INFO); /* line 10 skipped: default */
    CHECK(f.opts.seg_size == 2048u);

    std::string text        = log.text();
    const std::string &path = file.file().path();
    CHECK(count_of(text, "malformed line") == 4);
    CHECK(text.find(path + ":1:") != std::string::npos);
    CHECK(text.find(path + ":3:") != std::string::npos);
    CHECK(text.find(path + ":4:") != std::string::npos);
    CHECK(text.find(path + ":10:") != std::string::npos);
    CHECK(text.find("garbage line") != std::string::npos);
    CHECK(text.find(path + ":2:") == std::string::npos);
    CHECK(text.find(path + ":8:") == std::string::npos);

    /* Parsed once: filling again does not warn again. */
    filled_opts again;
    CHECK(count_of(log.text(), "malformed line") == 4);
}

TEST_CASE("a file that is no configuration file is refused in bounded time", "[config]")
{
    clean_env clean;
    /* An endless file, a binary one, a FIFO nobody writes, and a file of
     * endless lines: each read costs at most the size limit, never hangs,
     * and sets nothing. */
    temp_file binary(std::string("UCX_CFGTEST_COUNT = 7\n") + std::string(1, '\0') + "x\n");
    std::string fifo_path = binary.path() + ".fifo";
    REQUIRE(mkfifo(fifo_path.c_str(), 0600) == 0);
    struct expectation {
        std::string path;
        const char *warning;
    };
    for (const expectation &e :
         {expectation{"/dev/urandom", "larger than 1 MiB"},
          expectation{"/dev/zero", "larger than 1 MiB"},
          expectation{binary.path(), "not a text file"}, expectation{fifo_path, ""}}) {
        CAPTURE(e.path);
        env_guard env;
        env.set("UCX_CONFIG_FILE", e.path);
        drop_file_cache();
        log_capture log(UCS_LOG_LEVEL_WARN);
        filled_opts f;
        CHECK(f.status == UCS_OK);
        CHECK(f.opts.count == 4); /* the default */
        CHECK(file_variables().empty());
        CHECK(log.text().find(e.warning) != std::string::npos);
    }
    unlink(fifo_path.c_str());
    drop_file_cache();

    std::string long_lines(std::string(5000, 'A') + " = 1\n");
    for (int i = 0; i < 30; ++i) {
        long_lines += "not a setting\n";
    }
    long_lines += "UCX_CFGTEST_COUNT = 6\n";
    config_file_scope file(long_lines);
    log_capture log(UCS_LOG_LEVEL_WARN);
    filled_opts f;
    CHECK(f.opts.count == 6); /* the good line still counts */
    CHECK(count_of(log.text(), "malformed line ignored") == 10);
    CHECK(log.text().find("21 more malformed lines ignored") != std::string::npos);
    CHECK(log.text().size() < 4000); /* not the 5000-character line */
}

TEST_CASE("env prefix variables win over plain ones", "[config]")
{
    clean_env clean;
    config_file_scope file("UCX_CFGT_CFGTEST_NAME = prefixed_file\n"
                           "UCX_CFGTEST_NAME = plain_file\n");
    clean.env.set("UCX_CFGTEST_COUNT", "7");
    clean.env.set("UCX_CFGT_CFGTEST_COUNT", "9");

    {
        filled_opts f("CFGT");
        REQUIRE(f.status == UCS_OK);
        CHECK(f.opts.count == 9);
        CHECK(std::string(f.opts.name) == "prefixed_file");
    }
    {
        filled_opts f("CFGT_"); /* a trailing '_' is the same prefix */
        CHECK(f.opts.count == 9);
    }
    {
        filled_opts f;
        CHECK(f.opts.count == 7);
        CHECK(std::string(f.opts.name) == "plain_file");
    }
    {
        filled_opts f("OTHER");
        CHECK(f.opts.count == 7);
    }
    auto prefixes = env_prefixes();
    CHECK(std::count(prefixes.begin(), prefixes.end(), "CFGT") == 1);

    /* An env-prefixed variable also wins over a plain one from the file. */
    clean.env.unset("UCX_CFGTEST_COUNT");
    clean.env.unset("UCX_CFGT_CFGTEST_COUNT");
    clean.env.set("UCX_CFGT_CFGTEST_NAME", "prefixed_env");
    filled_opts f("CFGT");
    CHECK(std::string(f.opts.name) == "prefixed_env");
}

TEST_CASE("a table prefix is optional in variable names, and wins", "[config]")
{
    clean_env clean;
    prefixed_opts opts;

    REQUIRE(fill(&opts, prefixed_table) == UCS_OK);
    CHECK(opts.sndbuf == 65536u);
    CHECK(opts.nodelay == 1);

    clean.env.set("UCX_TSNDBUF", "1k");
    REQUIRE(fill(&opts, prefixed_table) == UCS_OK);
    CHECK(opts.sndbuf == 1024u);

    clean.env.set("UCX_TTCP_TSNDBUF", "2k");
    REQUIRE(fill(&opts, prefixed_table) == UCS_OK);
    CHECK(opts.sndbuf == 2048u);

    auto leaves = flatten(prefixed_table);
    REQUIRE(leaves.size() == 2);
    CHECK(leaves[0].name == "TTCP_TSNDBUF");
    CHECK(leaves[0].short_name == "TSNDBUF");

    REQUIRE(set_value(&opts, prefixed_table, "TNODELAY", "n") == UCS_OK);
    CHECK(opts.nodelay == 0);
    REQUIRE(set_value(&opts, prefixed_table, "UCX_TTCP_TNODELAY", "y") == UCS_OK);
    CHECK(opts.nodelay == 1);

    std::string text = print_to_string([&](FILE *stream) {
        print(stream, &opts, prefixed_table, UCS_CONFIG_PRINT_CONFIG);
    });
    CHECK(text.find("UCX_TTCP_TSNDBUF=2K\n") != std::string::npos);
}

TEST_CASE("sub-tables are read with the field's name as prefix", "[config]")
{
    clean_env clean;
    clean.env.set("UCX_CFGTEST_RNDV_THRESH", "16k");
    clean.env.set("UCX_CFGTEST_RNDV_BW", "100MB/s");
    filled_opts f;
    REQUIRE(f.status == UCS_OK);
    CHECK(f.opts.rndv.thresh == 16384u);
    CHECK(f.opts.rndv.bw == 100.0 * 1024 * 1024);

    auto leaves = flatten(test_table);
    REQUIRE(leaves.size() == 11);
    CHECK(leaves[8].name == "CFGTEST_RNDV_THRESH");
    CHECK(leaves[8].offset == offsetof(test_opts, rndv) + offsetof(rndv_opts, thresh));
    CHECK(leaves[9].name == "CFGTEST_RNDV_BW");

    REQUIRE(set_value(&f.opts, test_table, "CFGTEST_RNDV_THRESH", "inf") == UCS_OK);
    CHECK(f.opts.rndv.thresh == size_inf);
    CHECK(f.get("UCX_CFGTEST_RNDV_THRESH") == "inf");
}

TEST_CASE("a malformed value fails with the variable, value and accepted form", "[config]")
{
    clean_env clean;
    clean.env.set("UCX_CFGTEST_TIMEOUT", "soon");
    log_capture log(UCS_LOG_LEVEL_ERROR);
    filled_opts f;
    CHECK(f.status == UCS_ERR_INVALID_PARAM);
    /* What was filled before the bad field was released. */
    CHECK(f.opts.name == nullptr);
    CHECK(f.opts.tls.names == nullptr);
    CHECK(f.opts.tls.count == 0);

    std::string text = log.text();
    CHECK(text.find("Invalid value for UCX_CFGTEST_TIMEOUT: 'soon' "
                    "(expected time value: <number>[s|ms|us|ns]") != std::string::npos);

    clean.env.set("UCX_CFGTEST_TIMEOUT", "1s");
    clean.env.set("UCX_CFGTEST_LEVEL", "nonsense");
    filled_opts g;
    CHECK(g.status == UCS_ERR_INVALID_PARAM);
    CHECK(log.text().find("Invalid value for UCX_CFGTEST_LEVEL: 'nonsense' "
                          "(expected one of: fatal, error, warn") != std::string::npos);
}

TEST_CASE("a malformed value in the file names the file and line", "[config]")
{
    clean_env clean;
    config_file_scope file("# settings\nUCX_CFGTEST_COUNT = many\n");
    log_capture log(UCS_LOG_LEVEL_ERROR);
    filled_opts f;
    CHECK(f.status == UCS_ERR_INVALID_PARAM);
    CHECK(log.text().find("Invalid value for UCX_CFGTEST_COUNT: 'many' at " + file.file().path() +
                          ":2 (expected integer)") != std::string::npos);
}

TEST_CASE("a malformed value with an env prefix names the prefixed variable", "[config]")
{
    clean_env clean;
    clean.env.set("UCX_CFGT_CFGTEST_COUNT", "x1");
    log_capture log(UCS_LOG_LEVEL_ERROR);
    filled_opts f("CFGT");
    CHECK(f.status == UCS_ERR_INVALID_PARAM);
    CHECK(log.text().find("UCX_CFGT_CFGTEST_COUNT: 'x1'") != std::string::npos);
}

TEST_CASE("set and get values by name", "[config]")
{
    clean_env clean;
    filled_opts f;
    REQUIRE(f.status == UCS_OK);

    CHECK(set_value(&f.opts, test_table, "CFGTEST_COUNT", "42") == UCS_OK);
    CHECK(f.opts.count == 42);
    CHECK(f.get("CFGTEST_COUNT") == "42");

    CHECK(set_value(&f.opts, test_table, "UCX_CFGTEST_NAME", "renamed") == UCS_OK);
    CHECK(std::string(f.opts.name) == "renamed");
    CHECK(f.get("UCX_CFGTEST_NAME") == "renamed");

    CHECK(set_value(&f.opts, test_table, "cfgtest_tls", "rc,ud") == UCS_OK);
    CHECK(f.opts.tls.count == 2);
    CHECK(f.get("CFGTEST_TLS") == "rc,ud");

    CHECK(set_value(&f.opts, test_table, "CFGTEST_SEG_SIZE", "4k") == UCS_OK);
    CHECK(f.get("CFGTEST_SEG_SIZE") == "4K");
    CHECK(f.get("CFGTEST_LEVEL") == "info");
    CHECK(f.get("CFGTEST_DEVICES") == "all");

    /* Unknown names and malformed values. */
    CHECK(set_value(&f.opts, test_table, "NO_SUCH_FIELD", "1") == UCS_ERR_NO_ELEM);
    CHECK(set_value(&f.opts, test_table, "UCX_", "1") == UCS_ERR_NO_ELEM);
    std::string value;
    CHECK(get_value(&f.opts, test_table, "NO_SUCH_FIELD", value) == UCS_ERR_NO_ELEM);
    {
        log_capture log(UCS_LOG_LEVEL_ERROR);
        CHECK(set_value(&f.opts, test_table, "CFGTEST_COUNT", "lots") == UCS_ERR_INVALID_PARAM);
        CHECK(log.text().find("Invalid value for UCX_CFGTEST_COUNT: 'lots'") != std::string::npos);
    }
    CHECK(f.opts.count == 42); /* unchanged */
    {
        log_capture log(UCS_LOG_LEVEL_ERROR);
        CHECK(set_value(&f.opts, test_table, "CFGTEST_TLS", "a,,b") == UCS_ERR_INVALID_PARAM);
    }
    CHECK(f.get("CFGTEST_TLS") == "rc,ud");

    /* Bad arguments. */
    CHECK(set_value(nullptr, test_table, "CFGTEST_COUNT", "1") == UCS_ERR_INVALID_PARAM);
    CHECK(set_value(&f.opts, test_table, nullptr, "1") == UCS_ERR_INVALID_PARAM);
    CHECK(set_value(&f.opts, test_table, "CFGTEST_COUNT", nullptr) == UCS_ERR_INVALID_PARAM);
    CHECK(get_value(&f.opts, test_table, nullptr, value) == UCS_ERR_INVALID_PARAM);
    CHECK(fill(nullptr, test_table) == UCS_ERR_INVALID_PARAM);
}

TEST_CASE("clone makes an independent deep copy", "[config]")
{
    clean_env clean;
    clean.env.set("UCX_CFGTEST_DEVICES", "^eth0");
    filled_opts f;
    REQUIRE(f.status == UCS_OK);

    test_opts copy;
    REQUIRE(clone(&f.opts, &copy, test_table) == UCS_OK);
    CHECK(copy.name != f.opts.name);
    CHECK(copy.tls.names != f.opts.tls.names);
    CHECK(copy.devices.mode == UCS_CONFIG_ALLOW_LIST_NEGATE);

    REQUIRE(set_value(&f.opts, test_table, "CFGTEST_NAME", "changed") == UCS_OK);
    REQUIRE(set_value(&f.opts, test_table, "CFGTEST_COUNT", "1") == UCS_OK);
    CHECK(std::string(copy.name) == "anonymous");
    CHECK(copy.count == 4);

    for (const leaf &l : flatten(test_table)) {
        if ((l.name == "CFGTEST_NAME") || (l.name == "CFGTEST_COUNT")) {
            continue;
        }
        std::string a, b;
        REQUIRE(get_value(&f.opts, test_table, l.name.c_str(), a) == UCS_OK);
        REQUIRE(get_value(&copy, test_table, l.name.c_str(), b) == UCS_OK);
        CHECK(a == b);
    }
    release(&copy, test_table);
    CHECK(copy.name == nullptr);
}

TEST_CASE("print shows every visible field as UCX_NAME=value", "[config]")
{
    clean_env clean;
    filled_opts f;
    REQUIRE(f.status == UCS_OK);

    std::string text = print_to_string([&](FILE *stream) {
        CHECK(print(stream, &f.opts, test_table, UCS_CONFIG_PRINT_CONFIG) == UCS_OK);
    });
    for (const leaf &l : flatten(test_table)) {
        std::string line = "UCX_" + l.name + "=";
        if (l.f->flags & field_hidden) {
            CHECK(text.find(line) == std::string::npos);
        } else {
            CHECK(text.find(line) != std::string::npos);
        }
    }
    CHECK(text.find("UCX_CFGTEST_NAME=anonymous\n") != std::string::npos);
    CHECK(text.find("UCX_CFGTEST_SEG_SIZE=8K\n") != std::string::npos);
    CHECK(text.find("UCX_CFGTEST_TIMEOUT=10ms\n") != std::string::npos);
    CHECK(text.find("UCX_CFGTEST_RNDV_THRESH=auto\n") != std::string::npos);
    CHECK(text.find('#') == std::string::npos); /* no doc, no header */
    CHECK(count_of(text, "\n") == 10);          /* one line per field */

    std::string hidden = print_to_string([&](FILE *stream) {
        print(stream, &f.opts, test_table, UCS_CONFIG_PRINT_CONFIG | UCS_CONFIG_PRINT_HIDDEN);
    });
    CHECK(hidden.find("UCX_CFGTEST_SECRET=7\n") != std::string::npos);
    CHECK(count_of(hidden, "\n") == 11);

    std::string prefixed = print_to_string([&](FILE *stream) {
        print(stream, &f.opts, test_table, UCS_CONFIG_PRINT_CONFIG, nullptr, "CFGT");
    });
    CHECK(prefixed.find("UCX_CFGT_CFGTEST_COUNT=4\n") != std::string::npos);
}

TEST_CASE("print with DOC and HEADER", "[config]")
{
    clean_env clean;
    filled_opts f;
    REQUIRE(f.status == UCS_OK);

    std::string text = print_to_string([&](FILE *stream) {
        print(stream, &f.opts, test_table,
              UCS_CONFIG_PRINT_CONFIG | UCS_CONFIG_PRINT_DOC | UCS_CONFIG_PRINT_HEADER);
    });
    CHECK(text.rfind("#\n# Config test options\n#\n", 0) == 0);

    /* Each doc line comes before its field, with the accepted form. */
    size_t doc   = text.find("# A name.\n# Second line of the name's doc.\n");
    size_t value = text.find("UCX_CFGTEST_NAME=anonymous");
    REQUIRE(doc != std::string::npos);
    REQUIRE(value != std::string::npos);
    CHECK(doc < value);
    CHECK(text.find("# syntax:    string\n", doc) < value);

    size_t level_doc = text.find("# A log level.");
    size_t level     = text.find("UCX_CFGTEST_LEVEL=info");
    REQUIRE(level_doc != std::string::npos);
    CHECK(level_doc < level);
    CHECK(text.find("# syntax:    one of: fatal, error", level_doc) < level);
    CHECK(text.find("An internal knob.") == std::string::npos); /* hidden */
    CHECK(count_of(text, "# syntax:") == 10);

    std::string titled = print_to_string([&](FILE *stream) {
        print(stream, &f.opts, test_table, UCS_CONFIG_PRINT_HEADER, "Other title");
    });
    CHECK(titled == "#\n# Other title\n#\n"); /* no CONFIG: header only */
}

TEST_CASE("print comments out values equal to the default", "[config]")
{
    clean_env clean;
    clean.env.set("UCX_CFGTEST_COUNT", "5");
    clean.env.set("UCX_CFGTEST_SEG_SIZE", "8192"); /* the default, spelled otherwise */
    filled_opts f;
    REQUIRE(f.status == UCS_OK);

    std::string text = print_to_string([&](FILE *stream) {
        print(stream, &f.opts, test_table,
              UCS_CONFIG_PRINT_CONFIG | UCS_CONFIG_PRINT_COMMENT_DEFAULT);
    });
    CHECK(text.find("\nUCX_CFGTEST_COUNT=5\n") != std::string::npos);
    CHECK(text.find("#UCX_CFGTEST_COUNT") == std::string::npos);
    CHECK(text.find("#UCX_CFGTEST_SEG_SIZE=8K\n") != std::string::npos);
    CHECK(text.find("#UCX_CFGTEST_NAME=anonymous\n") != std::string::npos);
    CHECK(count_of(text, "#UCX_") == 9);
}

TEST_CASE("printed values read back to the same configuration", "[config]")
{
    clean_env clean;
    clean.env.set("UCX_CFGTEST_NAME", "x y");
    clean.env.set("UCX_CFGTEST_TLS", "rc_mlx5,dc_mlx5,self");
    clean.env.set("UCX_CFGTEST_DEVICES", "^mlx5_0:1");
    clean.env.set("UCX_CFGTEST_TIMEOUT", "250us");
    clean.env.set("UCX_CFGTEST_RNDV_BW", "1.5Gbps");
    clean.env.set("UCX_CFGTEST_FLAG", "yes");
    filled_opts f;
    REQUIRE(f.status == UCS_OK);

    auto print_all_fields = [&](const test_opts &opts) {
        return print_to_string([&](FILE *stream) {
            print(stream, &opts, test_table, UCS_CONFIG_PRINT_CONFIG | UCS_CONFIG_PRINT_HIDDEN);
        });
    };
    std::string text = print_all_fields(f.opts);

    test_opts copy;
    REQUIRE(fill_defaults(&copy, test_table) == UCS_OK);
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        size_t equals = line.find('=');
        REQUIRE(equals != std::string::npos);
        CHECK(set_value(&copy, test_table, line.substr(0, equals).c_str(),
                        line.substr(equals + 1).c_str()) == UCS_OK);
    }
    CHECK(print_all_fields(copy) == text);
    CHECK(copy.timeout == Approx(250e-6));
    CHECK(copy.flag == 1);
    release(&copy, test_table);
}

TEST_CASE("print rejects bad arguments", "[config]")
{
    clean_env clean;
    filled_opts f;
    CHECK(print(nullptr, &f.opts, test_table, UCS_CONFIG_PRINT_CONFIG) == UCS_ERR_INVALID_PARAM);
    CHECK(print(stdout, nullptr, test_table, UCS_CONFIG_PRINT_CONFIG) == UCS_ERR_INVALID_PARAM);
}
