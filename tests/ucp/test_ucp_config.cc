#include "ucp_test_util.h"

#include <ucp/core/ucp_config.h>
#include <ucs/config/registry.h>

#include <catch2/catch.hpp>

#include <algorithm>

using namespace ucp_test;

namespace {

/* Reads a config; REQUIREs success. */
struct config_holder {
    explicit config_holder(const char *env_prefix = nullptr, const char *filename = nullptr)
    {
        status = ucp_config_read(env_prefix, filename, &config);
    }

    ~config_holder()
    {
        if (status == UCS_OK) {
            ucp_config_release(config);
        }
    }

    std::string print(unsigned flags = UCS_CONFIG_PRINT_CONFIG) const
    {
        return print_to_string([&](FILE *f) {
            ucp_config_print(config, f, "test title", static_cast<ucs_config_print_flags_t>(flags));
        });
    }

    ucp_config_t *config = nullptr;
    ucs_status_t status;
};

std::string first_tl(const ucp_config_t *config)
{
    const auto &tls = config->values.tls;
    return (tls.array.count > 0) ? tls.array.names[0] : "";
}

} // namespace

TEST_CASE("the table is registered", "[ucp_config]")
{
    auto tables = ucs::config::registered_tables();
    CHECK(std::find(tables.begin(), tables.end(), &ucp::context_config_table) != tables.end());
}

TEST_CASE("defaults", "[ucp_config]")
{
    config_holder cfg;
    REQUIRE(cfg.status == UCS_OK);
    CHECK(cfg.config->values.tls.mode == UCS_CONFIG_ALLOW_LIST_ALLOW_ALL);
    CHECK(cfg.config->values.net_devices.mode == UCS_CONFIG_ALLOW_LIST_ALLOW_ALL);
    CHECK(cfg.config->values.rndv_thresh == ucs::config::size_auto);
    CHECK(cfg.config->values.zcopy_thresh == ucs::config::size_auto);
    CHECK(cfg.config->values.rndv_scheme == ucp::RNDV_SCHEME_AUTO);
    CHECK(ucp_config_read(nullptr, nullptr, nullptr) == UCS_ERR_INVALID_PARAM);
}

TEST_CASE("env prefix takes precedence", "[ucp_config]")
{
    env_guard env;
    env.set("UCX_TLS", "tcp");
    env.set("UCX_MPI_TLS", "posix");
    env.set("UCX_RNDV_THRESH", "32k");

    config_holder plain;
    REQUIRE(plain.status == UCS_OK);
    CHECK(first_tl(plain.config) == "tcp");

    config_holder mpi("MPI");
    REQUIRE(mpi.status == UCS_OK);
    CHECK(first_tl(mpi.config) == "posix");
    /* Not set with the prefix: falls back to UCX_RNDV_THRESH. */
    CHECK(mpi.config->values.rndv_thresh == 32 * 1024);

    config_holder other("OSHMEM");
    REQUIRE(other.status == UCS_OK);
    CHECK(first_tl(other.config) == "tcp");
}

TEST_CASE("a malformed variable fails the read", "[ucp_config]")
{
    env_guard env;
    env.set("UCX_RNDV_SCHEME", "sideways");
    log_capture log(UCS_LOG_LEVEL_ERROR);
    config_holder cfg;
    CHECK(cfg.status == UCS_ERR_INVALID_PARAM);
    CHECK(log.text().find("UCX_RNDV_SCHEME") != std::string::npos);
}

TEST_CASE("config file given to ucp_config_read", "[ucp_config]")
{
    SECTION("unreadable file is an error") {
        log_capture log(UCS_LOG_LEVEL_ERROR);
        config_holder cfg(nullptr, "/nonexistent/dir/ucx.conf");
        CHECK(cfg.status == UCS_ERR_IO_ERROR);
        CHECK(log.text().find("/nonexistent/dir/ucx.conf") != std::string::npos);
    }
    SECTION("values apply below the environment") {
        config_test::temp_file file("# comment\nUCX_RNDV_THRESH = 16k\n"
                                    "MAX_EAGER_LANES=3\nUCX_TLS = posix\n"
                                    "UCX_LOG_LEVEL = warn\n");
        env_guard env;
        env.set("UCX_TLS", "tcp");
        config_holder cfg(nullptr, file.path().c_str());
        REQUIRE(cfg.status == UCS_OK);
        CHECK(cfg.config->values.rndv_thresh == 16 * 1024);
        CHECK(cfg.config->values.max_eager_lanes == 3);
        CHECK(first_tl(cfg.config) == "tcp");
    }
    SECTION("a bad value in the file is an error") {
        config_test::temp_file file("UCX_RNDV_THRESH = lots\n");
        log_capture log(UCS_LOG_LEVEL_ERROR);
        config_holder cfg(nullptr, file.path().c_str());
        CHECK(cfg.status == UCS_ERR_INVALID_PARAM);
    }
}

TEST_CASE("modify", "[ucp_config]")
{
    config_holder cfg;
    REQUIRE(cfg.status == UCS_OK);

    CHECK(ucp_config_modify(cfg.config, "RNDV_THRESH", "8k") == UCS_OK);
    CHECK(cfg.config->values.rndv_thresh == 8192);
    CHECK(ucp_config_modify(cfg.config, "UCX_RNDV_SCHEME", "put_zcopy") == UCS_OK);
    CHECK(cfg.config->values.rndv_scheme == ucp::RNDV_SCHEME_PUT_ZCOPY);
    CHECK(ucp_config_modify(cfg.config, "TLS", "^tcp") == UCS_OK);
    CHECK(cfg.config->values.tls.mode == UCS_CONFIG_ALLOW_LIST_NEGATE);

    CHECK(ucp_config_modify(cfg.config, "NO_SUCH_SETTING", "1") == UCS_ERR_NO_ELEM);
    {
        log_capture log(UCS_LOG_LEVEL_ERROR);
        CHECK(ucp_config_modify(cfg.config, "RNDV_THRESH", "big") == UCS_ERR_INVALID_PARAM);
    }
    CHECK(cfg.config->values.rndv_thresh == 8192); /* old value kept */

    /* UCX's per-memory-type fragment sizes: the host entry counts. */
    CHECK(cfg.config->values.rndv_frag_size == 512 * 1024);
    CHECK(ucp_config_modify(cfg.config, "RNDV_FRAG_SIZE", "cuda:8M,host:256K") == UCS_OK);
    CHECK(cfg.config->values.rndv_frag_size == 256 * 1024);
    CHECK(ucp_config_modify(cfg.config, "RNDV_FRAG_SIZE", "1m") == UCS_OK);
    CHECK(cfg.config->values.rndv_frag_size == 1024 * 1024);
    for (const char *bad : {"gpu:1m", "host:", "0", "host:1m,", "cuda:lots"}) {
        INFO(bad);
        log_capture log(UCS_LOG_LEVEL_ERROR);
        CHECK(ucp_config_modify(cfg.config, "RNDV_FRAG_SIZE", bad) == UCS_ERR_INVALID_PARAM);
    }
    CHECK(cfg.config->values.rndv_frag_size == 1024 * 1024);

    CHECK(ucp_config_modify(nullptr, "TLS", "tcp") == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_config_modify(cfg.config, nullptr, "tcp") == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_config_modify(cfg.config, "TLS", nullptr) == UCS_ERR_INVALID_PARAM);
}

TEST_CASE("print shows every field", "[ucp_config]")
{
    config_holder cfg;
    REQUIRE(cfg.status == UCS_OK);
    REQUIRE(ucp_config_modify(cfg.config, "RNDV_THRESH", "1m") == UCS_OK);

    std::string text = cfg.print(UCS_CONFIG_PRINT_CONFIG | UCS_CONFIG_PRINT_HEADER |
                                 UCS_CONFIG_PRINT_DOC);
    for (const char *name :
         {"UCX_TLS=", "UCX_NET_DEVICES=", "UCX_SHM_DEVICES=", "UCX_SELF_DEVICES=",
          "UCX_RNDV_THRESH=", "UCX_ZCOPY_THRESH=", "UCX_BCOPY_THRESH=", "UCX_RNDV_SCHEME=",
          "UCX_MAX_EAGER_LANES=", "UCX_MAX_RNDV_LANES=", "UCX_ESTIMATED_NUM_EPS=",
          "UCX_ESTIMATED_NUM_PPN="}) {
        INFO(name);
        CHECK(text.find(name) != std::string::npos);
    }
    CHECK(text.find("test title") != std::string::npos);
    CHECK(text.find("rendezvous") != std::string::npos);        /* a doc string */
    CHECK(text.find("UCX_MEMTYPE_CACHE") == std::string::npos); /* global table's */
    CHECK(text.find("UCX_RNDV_THRESH=1M") != std::string::npos);

    ucp_config_print(nullptr, stdout, "x", UCS_CONFIG_PRINT_CONFIG); /* no crash */
}

TEST_CASE("UCX_TLS aliases and negation", "[ucp_config]")
{
    config_holder cfg;
    REQUIRE(cfg.status == UCS_OK);
    const auto &tls = cfg.config->values.tls;

    REQUIRE(ucp_config_modify(cfg.config, "TLS", "sm,tcp") == UCS_OK);
    for (const char *tl : {"posix", "sysv", "cma", "tcp"}) {
        CHECK(ucp::tl_allowed(tls, tl));
    }
    CHECK_FALSE(ucp::tl_allowed(tls, "self"));

    REQUIRE(ucp_config_modify(cfg.config, "TLS", "mm") == UCS_OK);
    CHECK(ucp::tl_allowed(tls, "posix"));
    CHECK_FALSE(ucp::tl_allowed(tls, "cma"));

    REQUIRE(ucp_config_modify(cfg.config, "TLS", "^shm") == UCS_OK);
    CHECK_FALSE(ucp::tl_allowed(tls, "sysv"));
    CHECK(ucp::tl_allowed(tls, "tcp"));
    CHECK(ucp::tl_allowed(tls, "self"));

    REQUIRE(ucp_config_modify(cfg.config, "TLS", "all") == UCS_OK);
    CHECK(ucp::tl_allowed(tls, "anything"));
}

TEST_CASE("a config given to ucp_init is used", "[ucp_config]")
{
    config_holder cfg;
    REQUIRE(cfg.status == UCS_OK);
    REQUIRE(ucp_config_modify(cfg.config, "TLS", fake_self_tl) == UCS_OK);

    ucp_params_t params   = tag_params();
    ucp_context_h context = nullptr;
    REQUIRE(ucp_init(&params, cfg.config, &context) == UCS_OK);
    std::string info = print_to_string([&](FILE *f) { ucp_context_print_info(context, f); });
    ucp_cleanup(context);
    CHECK(info.find(fake_self_tl) != std::string::npos);
    CHECK(info.find(fake_net_tl) == std::string::npos);
}
