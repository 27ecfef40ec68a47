/*
 * When cma declares itself usable: the Yama ptrace policy is read from a
 * file the tests point at temporary files, and an md built on an
 * unusable configuration offers no resources and refuses to open.
 */
#include <catch2/catch.hpp>

#include <uct/base/uct_iface.h>
#include <uct/base/uct_worker.h>
#include <uct/sm/cma/cma_access.h>
#include <uct/sm/cma/cma_md.h>

#include <ucs/debug/log.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

namespace {

/* A temporary file removed when the test ends. */
class temp_file {
public:
    explicit temp_file(const std::string &content)
    {
        char name[] = "/tmp/test_cma_XXXXXX";
        int fd      = mkstemp(name);
        REQUIRE(fd >= 0);
        REQUIRE(write(fd, content.data(), content.size()) == ssize_t(content.size()));
        close(fd);
        path_ = name;
    }
    ~temp_file() { unlink(path_.c_str()); }
    const char *path() const { return path_.c_str(); }

private:
    std::string path_;
};

int scope_of(const std::string &content, ucs_status_t *status)
{
    temp_file file(content);
    int scope = -100;
    *status   = uct::cma::read_ptrace_scope(file.path(), &scope);
    return scope;
}


/* Sends log output to a temporary file for the scope's lifetime. */
class log_capture {
public:
    log_capture()
    {
        char name[] = "/tmp/test_cma_log_XXXXXX";
        int fd      = mkstemp(name);
        REQUIRE(fd >= 0);
        close(fd);
        path_ = name;
        REQUIRE(ucs::log_set_file(path_.c_str()) == UCS_OK);
    }
    ~log_capture()
    {
        ucs::log_set_file("stdout");
        unlink(path_.c_str());
    }
    std::string text() const
    {
        std::fflush(ucs::log_stream());
        std::ifstream in(path_);
        return std::string(std::istreambuf_iterator<char>(in), {});
    }

private:
    std::string path_;
};

} // namespace

TEST_CASE("cma reads the Yama ptrace scope file", "[cma]")
{
    ucs_status_t status;
    for (int value = 0; value <= 3; ++value) {
        CHECK(scope_of(std::to_string(value) + "\n", &status) == value);
        CHECK(status == UCS_OK);
    }
    CHECK(scope_of("2", &status) == 2);
    CHECK(status == UCS_OK);

    int scope = -100;
    CHECK(uct::cma::read_ptrace_scope("/nonexistent/yama/ptrace_scope", &scope) == UCS_OK);
    CHECK(scope == uct::cma::YAMA_ABSENT);

    for (const char *junk : {"", "\n", "abc", "1x", "-1", "12345", " "}) {
        INFO("content '" << junk << "'");
        scope_of(junk, &status);
        CHECK(status == UCS_ERR_INVALID_PARAM);
    }
}

TEST_CASE("cma ptrace policy decision", "[cma]")
{
    std::string reason;
    CHECK(uct::cma::ptrace_policy_allows(uct::cma::YAMA_ABSENT, false, &reason));
    CHECK(uct::cma::ptrace_policy_allows(0, false, &reason));
    CHECK(uct::cma::ptrace_policy_allows(1, false, &reason));
    CHECK(uct::cma::ptrace_policy_allows(2, true, &reason));

    reason.clear();
    CHECK_FALSE(uct::cma::ptrace_policy_allows(2, false, &reason));
    CHECK(reason.find("CAP_SYS_PTRACE") != std::string::npos);
    reason.clear();
    CHECK_FALSE(uct::cma::ptrace_policy_allows(3, true, &reason));
    CHECK(reason.find("3") != std::string::npos);
    reason.clear();
    CHECK_FALSE(uct::cma::ptrace_policy_allows(42, true, &reason));
    CHECK_FALSE(reason.empty());
}

TEST_CASE("cma reads CAP_SYS_PTRACE from a status file", "[cma]")
{
    temp_file with("Name:\tx\nCapInh:\t0000000000000000\nCapEff:\t0000000000080000\n");
    temp_file without("Name:\tx\nCapEff:\t00000000fff7ffff\n");
    temp_file garbage("Name:\tx\nCapEff:\tzz\n");
    CHECK(uct::cma::status_has_cap_sys_ptrace(with.path()));
    CHECK_FALSE(uct::cma::status_has_cap_sys_ptrace(without.path()));
    CHECK_FALSE(uct::cma::status_has_cap_sys_ptrace(garbage.path()));
    CHECK_FALSE(uct::cma::status_has_cap_sys_ptrace("/nonexistent/status"));
}

TEST_CASE("cma md on a forbidding ptrace policy has no resources", "[cma]")
{
    uct::worker worker(nullptr, UCS_THREAD_MODE_SINGLE);
    uct::iface_params params;

    SECTION("scope 3 forbids every attach") {
        temp_file scope("3\n");
        uct::cma::cma_config config = uct::cma::default_cma_config();
        config.ptrace_scope_file    = scope.path();
        uct::cma::cma_md md(config);

        std::string reason;
        CHECK_FALSE(uct::cma::cma_usable(config, &reason));
        CHECK(reason.find("ptrace_scope is 3") != std::string::npos);

        std::vector<uct::tl_resource> tls;
        CHECK(md.query_tl_resources(&tls) == UCS_OK);
        CHECK(tls.empty());
        uct::iface *iface = nullptr;
        log_capture log;
        CHECK(md.iface_open(worker, params, &iface) == UCS_ERR_UNSUPPORTED);
        CHECK(iface == nullptr);
        /* The user is told why. */
        CHECK(log.text().find("ptrace_scope is 3") != std::string::npos);
    }

    SECTION("an unreadable policy is treated as forbidding") {
        temp_file scope("garbage");
        uct::cma::cma_config config = uct::cma::default_cma_config();
        config.ptrace_scope_file    = scope.path();
        uct::cma::cma_md md(config);
        std::vector<uct::tl_resource> tls;
        CHECK(md.query_tl_resources(&tls) == UCS_OK);
        CHECK(tls.empty());
    }

    SECTION("scope 1 and no Yama allow it") {
        std::string why;
        if (!uct::cma::cma_syscall_works(&why)) {
            WARN("skipped: " << why);
            return;
        }
        for (std::string content : {"1\n", ""}) {
            std::unique_ptr<temp_file> scope;
            uct::cma::cma_config config = uct::cma::default_cma_config();
            if (content.empty()) {
                config.ptrace_scope_file = "/nonexistent/ptrace_scope";
            } else {
                scope                    = std::make_unique<temp_file>(content);
                config.ptrace_scope_file = scope->path();
            }
            uct::cma::cma_md md(config);
            std::vector<uct::tl_resource> tls;
            REQUIRE(md.query_tl_resources(&tls) == UCS_OK);
            REQUIRE(tls.size() == 1);
            CHECK(std::string(tls[0].tl_name) == "cma");
            CHECK(std::string(tls[0].dev_name) == "memory");
            CHECK(tls[0].type == uct::device_type::SHM);

            uct::iface *iface = nullptr;
            REQUIRE(md.iface_open(worker, params, &iface) == UCS_OK);
            delete iface;
        }
    }
}
