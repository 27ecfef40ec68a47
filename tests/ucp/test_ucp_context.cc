#include "ucp_test_util.h"

#include <ucp/core/ucp_request.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>

using namespace ucp_test;

TEST_CASE("version reports the UCP API level", "[ucp_context]")
{
    unsigned major = 0, minor = 0, release = 0;
    ucp_get_version(&major, &minor, &release);
    CHECK(major == UCP_API_MAJOR);
    CHECK(minor == UCP_API_MINOR);

    std::string expected = std::to_string(major) + "." + std::to_string(minor) + "." +
                           std::to_string(release);
    std::string text = ucp_get_version_string();
    CHECK(text.rfind(expected, 0) == 0);
    CHECK(text.find("ucx-ng") != std::string::npos);

    ucp_get_version(nullptr, nullptr, nullptr); /* must not crash */

    ucp_lib_attr_t lib{};
    lib.field_mask = UCP_LIB_ATTR_FIELD_MAX_THREAD_LEVEL;
    REQUIRE(ucp_lib_query(&lib) == UCS_OK);
    CHECK(lib.max_thread_level == UCS_THREAD_MODE_MULTI);
    CHECK(ucp_lib_query(nullptr) == UCS_ERR_INVALID_PARAM);
}

TEST_CASE("init refuses bad arguments", "[ucp_context]")
{
    log_capture log(UCS_LOG_LEVEL_ERROR);
    ucp_context_h context = nullptr;
    ucp_params_t params   = tag_params();

    CHECK(ucp_init(nullptr, nullptr, &context) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_init(&params, nullptr, nullptr) == UCS_ERR_INVALID_PARAM);

    SECTION("no features") {
        params.features = 0;
        CHECK(ucp_init(&params, nullptr, &context) == UCS_ERR_INVALID_PARAM);
        CHECK(log.text().find("features") != std::string::npos);
    }
    SECTION("features not in the field mask") {
        params.field_mask = 0;
        CHECK(ucp_init(&params, nullptr, &context) == UCS_ERR_INVALID_PARAM);
    }
    SECTION("unknown feature bits") {
        params.features |= 1ull << 40;
        CHECK(ucp_init(&params, nullptr, &context) == UCS_ERR_INVALID_PARAM);
    }
    SECTION("newer major API") {
        CHECK(ucp_init_version(UCP_API_MAJOR + 1, 0, &params, nullptr, &context) ==
              UCS_ERR_UNSUPPORTED);
        CHECK(log.text().find("major") != std::string::npos);
    }
    CHECK(context == nullptr);

    /* Handles the API may be given NULL for. */
    ucp_cleanup(nullptr);
    ucp_context_attr_t attr{};
    CHECK(ucp_context_query(nullptr, &attr) == UCS_ERR_INVALID_PARAM);
    ucp_context_print_info(nullptr, stdout);
}

TEST_CASE("older minor API versions are accepted", "[ucp_context]")
{
    ucp_params_t params   = tag_params();
    ucp_context_h context = nullptr;
    REQUIRE(ucp_init_version(UCP_API_MAJOR, 0, &params, nullptr, &context) == UCS_OK);
    ucp_cleanup(context);
}

TEST_CASE("context query", "[ucp_context]")
{
    ucp_params_t params = tag_params();
    params.field_mask |= UCP_PARAM_FIELD_NAME | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                         UCP_PARAM_FIELD_REQUEST_SIZE;
    params.name              = "my_context";
    params.mt_workers_shared = 1;
    params.request_size      = 40;
    context_holder ctx(params);
    REQUIRE(ctx.status == UCS_OK);

    ucp_context_attr_t attr{};
    attr.field_mask = UCP_ATTR_FIELD_REQUEST_SIZE | UCP_ATTR_FIELD_THREAD_MODE |
                      UCP_ATTR_FIELD_MEMORY_TYPES | UCP_ATTR_FIELD_NAME;
    REQUIRE(ucp_context_query(ctx.context, &attr) == UCS_OK);
    CHECK(attr.request_size == sizeof(ucp::request));
    CHECK(attr.request_size % 16 == 0);
    CHECK(attr.thread_mode == UCS_THREAD_MODE_MULTI);
    CHECK((attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_HOST)) != 0);
    CHECK(std::string(attr.name) == "my_context");

    /* Fields outside the mask are left alone. */
    ucp_context_attr_t only_size{};
    only_size.field_mask = UCP_ATTR_FIELD_REQUEST_SIZE;
    std::memset(&only_size.thread_mode, 0x5a, sizeof(only_size.thread_mode));
    REQUIRE(ucp_context_query(ctx.context, &only_size) == UCS_OK);
    const auto *raw = reinterpret_cast<const unsigned char *>(&only_size.thread_mode);
    CHECK(std::all_of(raw, raw + sizeof(only_size.thread_mode),
                      [](unsigned char c) { return c == 0x5a; }));
}

TEST_CASE("fields outside the field mask are never read", "[ucp_context]")
{
    ucp_params_t params = tag_params();
    /* Pointers that would crash if dereferenced. */
    params.name              = reinterpret_cast<const char *>(uintptr_t{8});
    params.request_init      = reinterpret_cast<ucp_request_init_callback_t>(uintptr_t{8});
    params.mt_workers_shared = 1;
    context_holder ctx(params);
    REQUIRE(ctx.status == UCS_OK);

    ucp_context_attr_t attr{};
    attr.field_mask = UCP_ATTR_FIELD_THREAD_MODE | UCP_ATTR_FIELD_NAME;
    REQUIRE(ucp_context_query(ctx.context, &attr) == UCS_OK);
    CHECK(attr.thread_mode == UCS_THREAD_MODE_SINGLE);
    CHECK(std::string(attr.name).rfind("ucp_context_", 0) == 0);
}

TEST_CASE("a transport that does not exist gives NO_DEVICE", "[ucp_context]")
{
    env_guard env;
    env.set("UCX_TLS", "no_such_transport");
    log_capture log(UCS_LOG_LEVEL_ERROR);
    context_holder ctx;
    CHECK(ctx.status == UCS_ERR_NO_DEVICE);
    std::string text = log.text();
    CHECK(text.find("UCX_TLS=no_such_transport") != std::string::npos);
    /* The message lists what exists, which includes the test transport. */
    CHECK(text.find(fake_net_tl) != std::string::npos);
}

TEST_CASE("UCX_TLS and device lists select resources", "[ucp_context]")
{
    env_guard env;

    SECTION("default: everything") {
        context_holder ctx;
        REQUIRE(ctx.status == UCS_OK);
        std::string info = ctx.info();
        CHECK(info.find(fake_net_tl) != std::string::npos);
        CHECK(info.find(fake_self_tl) != std::string::npos);
        CHECK(info.find(fake_md) != std::string::npos);
    }
    SECTION("one transport") {
        env.set("UCX_TLS", fake_net_tl);
        context_holder ctx;
        REQUIRE(ctx.status == UCS_OK);
        std::string info = ctx.info();
        CHECK(info.find(fake_net_tl) != std::string::npos);
        CHECK(info.find(fake_self_tl) == std::string::npos);
    }
    SECTION("negation") {
        env.set("UCX_TLS", std::string("^") + fake_net_tl);
        context_holder ctx;
        REQUIRE(ctx.status == UCS_OK);
        std::string info = ctx.info();
        CHECK(info.find(fake_net_tl) == std::string::npos);
        CHECK(info.find(fake_self_tl) != std::string::npos);
    }
    SECTION("device lists by device type") {
        env.set("UCX_TLS", std::string(fake_net_tl) + "," + fake_self_tl);
        env.set("UCX_NET_DEVICES", "^fnet0");
        context_holder ctx;
        REQUIRE(ctx.status == UCS_OK);
        std::string info = ctx.info();
        CHECK(info.find(fake_net_tl) == std::string::npos);
        CHECK(info.find(fake_self_tl) != std::string::npos);

        env.set("UCX_SELF_DEVICES", "nothing");
        log_capture log(UCS_LOG_LEVEL_ERROR);
        context_holder none;
        CHECK(none.status == UCS_ERR_NO_DEVICE);
        CHECK(log.text().find("UCX_SELF_DEVICES=nothing") != std::string::npos);
    }
    SECTION("an alias selects its members only") {
        env.set("UCX_TLS", "shm");
        context_holder ctx;
        if (ctx.status == UCS_OK) {
            std::string info = ctx.info();
            CHECK(info.find(fake_net_tl) == std::string::npos);
        } else {
            WARN("no shared-memory transport (posix, sysv, cma) is built yet");
            CHECK(ctx.status == UCS_ERR_NO_DEVICE);
        }
    }
}

/* UCX 1.13 words it "transport 'foo' is not available, please use one or more
 * of: ..." and gives it even when other named transports remain usable. */
TEST_CASE("a missing transport or device is named with what exists, while others work",
          "[ucp_context]")
{
    env_guard env;

    SECTION("transports") {
        env.set("UCX_TLS", std::string("nosuch_a,") + fake_net_tl + ",nosuch_b");
        log_capture log(UCS_LOG_LEVEL_WARN);
        context_holder ctx;
        CHECK(ctx.status == UCS_OK);
        std::string text = log.text();
        INFO(text);
        CHECK(text.find("UCX  WARN  transports 'nosuch_a','nosuch_b' are not available, "
                        "please use one or more of: ") != std::string::npos);
        CHECK(text.find(fake_self_tl) != std::string::npos);
    }
    SECTION("excluded names are checked too") {
        env.set("UCX_TLS", "^nosuch_c");
        log_capture log(UCS_LOG_LEVEL_WARN);
        context_holder ctx;
        CHECK(ctx.status == UCS_OK);
        CHECK(log.text().find("transport 'nosuch_c' is not available") != std::string::npos);
    }
    SECTION("network devices") {
        env.set("UCX_NET_DEVICES", "nosuch0,fnet0");
        log_capture log(UCS_LOG_LEVEL_WARN);
        context_holder ctx;
        CHECK(ctx.status == UCS_OK);
        std::string text = log.text();
        INFO(text);
        CHECK(text.find("network device 'nosuch0' is not available, please use one or "
                        "more of: ") != std::string::npos);
        CHECK(text.find("'fnet0'(ucp_test)") != std::string::npos);
    }
    SECTION("UCX_WARN_INVALID_CONFIG=n silences it") {
        env.set("UCX_TLS", std::string("nosuch_a,") + fake_net_tl);
        env.set("UCX_WARN_INVALID_CONFIG", "n");
        log_capture log(UCS_LOG_LEVEL_WARN);
        context_holder ctx;
        CHECK(ctx.status == UCS_OK);
        CHECK(log.text().find("not available") == std::string::npos);
    }
    SECTION("names that exist give no warning") {
        env.set("UCX_TLS", std::string(fake_net_tl) + "," + fake_self_tl + ",all");
        env.set("UCX_NET_DEVICES", "fnet0");
        log_capture log(UCS_LOG_LEVEL_WARN);
        context_holder ctx;
        CHECK(ctx.status == UCS_OK);
        CHECK(log.text().find("not available") == std::string::npos);
    }
}
