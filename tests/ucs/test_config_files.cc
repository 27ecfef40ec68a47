/*
 * The configuration files UCX 1.13 reads (ucs_config_parse_config_files):
 * $HOME/ucx.conf, $UCX_CONFIG_DIR/ucx.conf and ./ucx.conf after the
 * installed ones, each later file overriding the earlier ones, the
 * environment overriding them all. Each case runs in a child process with
 * its own HOME, UCX_CONFIG_DIR and current directory.
 */
#include <catch2/catch.hpp>

#include <ucs/config/file.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace {

/* A fresh directory, removed with what it holds. */
class temp_dir {
public:
    temp_dir()
    {
        char pattern[] = "/tmp/ucs_config_dir_XXXXXX";
        REQUIRE(mkdtemp(pattern) != nullptr);
        m_path = pattern;
    }

    ~temp_dir()
    {
        unlink((m_path + "/ucx.conf").c_str());
        rmdir(m_path.c_str());
    }

    void write_conf(const std::string &text) const { std::ofstream(m_path + "/ucx.conf") << text; }

    const std::string &path() const { return m_path; }

private:
    std::string m_path;
};

/* Runs body in a child process; returns its result (0: all checks passed). */
int in_child(const std::function<int()> &body)
{
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        _exit(body());
    }
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* For child bodies: the failing line is the exit code. */
#define CHILD_CHECK(_cond) \
    do { \
        if (!(_cond)) { \
            std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #_cond); \
            return __LINE__ % 250 + 1; \
        } \
    } while (0)

std::string file_value_of(const char *name)
{
    ucs::config::file_value value;
    return ucs::config::file_lookup(name, value) ? value.value + "@" + value.location : "";
}

} // namespace

TEST_CASE("HOME, UCX_CONFIG_DIR and the current directory, later ones winning", "[config]")
{
    temp_dir home, config_dir, cwd;
    home.write_conf("UCX_CFGFILES_A = home\nUCX_CFGFILES_B = home\nUCX_CFGFILES_C = home\n"
                    "UCX_CFGFILES_D = home\n");
    config_dir.write_conf("UCX_CFGFILES_B = dir\nUCX_CFGFILES_C = dir\n");
    cwd.write_conf("UCX_CFGFILES_C = cwd\n");

    CHECK(in_child([&] {
              unsetenv("UCX_CONFIG_FILE");
              setenv("HOME", home.path().c_str(), 1);
              setenv("UCX_CONFIG_DIR", config_dir.path().c_str(), 1);
              CHILD_CHECK(chdir(cwd.path().c_str()) == 0);
              ucs::config::drop_file_cache();

              auto paths = ucs::config::file_paths();
              CHILD_CHECK(paths.size() == 5);
              CHILD_CHECK(paths[2] == home.path() + "/ucx.conf");
              CHILD_CHECK(paths[3] == config_dir.path() + "/ucx.conf");
              CHILD_CHECK(paths[4] == "./ucx.conf");

              CHILD_CHECK(file_value_of("UCX_CFGFILES_A") == "home@" + home.path() + "/ucx.conf:1");
              CHILD_CHECK(file_value_of("UCX_CFGFILES_B") ==
                          "dir@" + config_dir.path() + "/ucx.conf:1");
              CHILD_CHECK(file_value_of("UCX_CFGFILES_C") == "cwd@./ucx.conf:1");
              CHILD_CHECK(file_value_of("UCX_CFGFILES_E").empty());
              return 0;
          }) == 0);
}

TEST_CASE("the environment beats every file; UCX_CONFIG_FILE replaces the list", "[config]")
{
    temp_dir home, only;
    home.write_conf("UCX_LOG_LEVEL = info\nUCX_CFGFILES_A = home\n");
    only.write_conf("UCX_CFGFILES_B = only\n");

    /* A global option from $HOME/ucx.conf, overridden by the environment. */
    CHECK(in_child([&] {
              unsetenv("UCX_CONFIG_FILE");
              unsetenv("UCX_CONFIG_DIR");
              unsetenv("UCX_LOG_LEVEL");
              setenv("HOME", home.path().c_str(), 1);
              CHILD_CHECK(chdir(only.path().c_str()) == 0); /* ./ucx.conf too */
              ucs::config::drop_file_cache();
              CHILD_CHECK(file_value_of("UCX_LOG_LEVEL").rfind("info@", 0) == 0);
              CHILD_CHECK(file_value_of("UCX_CFGFILES_B") == "only@./ucx.conf:1");
              return 0;
          }) == 0);

    CHECK(in_child([&] {
              setenv("UCX_CONFIG_FILE", (only.path() + "/ucx.conf").c_str(), 1);
              setenv("HOME", home.path().c_str(), 1);
              ucs::config::drop_file_cache();
              CHILD_CHECK(ucs::config::file_paths().size() == 1);
              CHILD_CHECK(file_value_of("UCX_CFGFILES_A").empty());
              CHILD_CHECK(file_value_of("UCX_CFGFILES_B").rfind("only@", 0) == 0);
              return 0;
          }) == 0);
}

TEST_CASE("a missing HOME or UCX_CONFIG_DIR is skipped", "[config]")
{
    temp_dir cwd;
    CHECK(in_child([&] {
              unsetenv("UCX_CONFIG_FILE");
              unsetenv("HOME");
              setenv("UCX_CONFIG_DIR", "/nonexistent/ucx-config-dir", 1);
              CHILD_CHECK(chdir(cwd.path().c_str()) == 0);
              ucs::config::drop_file_cache();
              CHILD_CHECK(ucs::config::file_paths().size() == 4);
              CHILD_CHECK(ucs::config::file_variables().empty());
              return 0;
          }) == 0);
}
