#include "ucp_test_util.h"

#include <ucp/core/ucp_address.h>
#include <ucp/core/ucp_context.h>
#include <ucp/core/ucp_worker.h>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>

using namespace ucp_test;

namespace {

/* Resources of a context that are not the test transport. */
size_t real_resources(ucp_context_h context)
{
    size_t count = 0;
    for (const ucp::tl_entry &tl : context->tls) {
        count += is_fake_tl(tl.resource.tl_name) ? 0 : 1;
    }
    return count;
}

void check_worker(ucp_context_h context, ucs_thread_mode_t mode)
{
    ucp_worker_params_t params{};
    params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE | UCP_WORKER_PARAM_FIELD_NAME |
                        UCP_WORKER_PARAM_FIELD_USER_DATA;
    params.thread_mode = mode;
    params.name        = "test_worker";
    params.user_data   = &params;

    ucp_worker_h worker = nullptr;
    REQUIRE(ucp_worker_create(context, &params, &worker) == UCS_OK);
    REQUIRE(worker != nullptr);

    ucp_worker_attr_t attr{};
    attr.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE | UCP_WORKER_ATTR_FIELD_NAME |
                      UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER | UCP_WORKER_ATTR_FIELD_MAX_INFO_STRING |
                      UCP_WORKER_ATTR_FIELD_ADDRESS;
    REQUIRE(ucp_worker_query(worker, &attr) == UCS_OK);
    CHECK(attr.thread_mode == mode);
    CHECK(std::string(attr.name) == "test_worker");
    CHECK(attr.max_am_header > 0);
    CHECK(attr.max_debug_string > 0);
    REQUIRE(attr.address != nullptr);

    /* The queried address and get_address describe the same worker. */
    ucp_address_t *address = nullptr;
    size_t length          = 0;
    REQUIRE(ucp_worker_get_address(worker, &address, &length) == UCS_OK);
    CHECK(length == attr.address_length);

    ucp::unpacked_address unpacked;
    REQUIRE(ucp::unpack_address(address, length, &unpacked) == UCS_OK);
    CHECK(unpacked.worker_name == "test_worker");
    CHECK(unpacked.node_id == ucp::local_node_id());
    CHECK(unpacked.entries.size() == context->tls.size());
    for (const ucp::address_entry &e : unpacked.entries) {
        if (is_fake_tl(e.tl_name.c_str())) {
            CHECK(e.dev_addr.size() == fake_dev_addr_len);
            CHECK(e.iface_addr.size() == fake_iface_addr_len);
            CHECK(e.md_name == fake_md);
        }
    }

    ucp_worker_address_attr_t addr_attr{};
    addr_attr.field_mask = UCP_WORKER_ADDRESS_ATTR_FIELD_UID;
    REQUIRE(ucp_worker_address_query(address, &addr_attr) == UCS_OK);
    CHECK(addr_attr.worker_uid == unpacked.worker_uuid);

    ucp::unpacked_address queried;
    REQUIRE(ucp::unpack_address(attr.address, attr.address_length, &queried) == UCS_OK);
    CHECK(queried.worker_uuid == unpacked.worker_uuid);
    ucp_worker_release_address(worker, attr.address);
    ucp_worker_release_address(worker, address);

    /* No ep uses an iface yet: progress looks at each once in every
     * idle_poll_period calls, for peers that connect to us. */
    unsigned long before = fake_progress_calls;
    for (unsigned i = 0; i < ucp::idle_poll_period; ++i) {
        ucp_worker_progress(worker);
    }
    size_t fake_ifaces = context->tls.size() - real_resources(context);
    CHECK(fake_progress_calls - before == fake_ifaces);

    std::string info = print_to_string([&](FILE *f) { ucp_worker_print_info(worker, f); });
    CHECK(info.find("test_worker") != std::string::npos);

    int open_before = fake_open_ifaces;
    ucp_worker_destroy(worker);
    CHECK(fake_open_ifaces == open_before - static_cast<int>(fake_ifaces));
}

} // namespace

TEST_CASE("worker in every thread mode", "[ucp_worker]")
{
    context_holder ctx;
    REQUIRE(ctx.status == UCS_OK);
    if (real_resources(ctx.context) == 0) {
        WARN("no real transport is built yet: testing the worker with the "
             "test-only transport alone");
    }
    for (auto mode : {UCS_THREAD_MODE_SINGLE, UCS_THREAD_MODE_SERIALIZED, UCS_THREAD_MODE_MULTI}) {
        INFO("thread mode " << ucs_thread_mode_names[mode]);
        check_worker(ctx.context, mode);
    }
}

TEST_CASE("worker on each real transport alone", "[ucp_worker]")
{
    context_holder all;
    REQUIRE(all.status == UCS_OK);
    std::vector<std::string> names;
    for (const ucp::tl_entry &tl : all.context->tls) {
        if (!is_fake_tl(tl.resource.tl_name)) {
            names.push_back(tl.resource.tl_name);
        }
    }
    if (names.empty()) {
        WARN("no real transport is built yet: nothing to test here");
        SUCCEED();
        return;
    }
    for (const std::string &tl : names) {
        INFO("UCX_TLS=" << tl);
        env_guard env;
        env.set("UCX_TLS", tl);
        context_holder ctx;
        REQUIRE(ctx.status == UCS_OK);
        check_worker(ctx.context, UCS_THREAD_MODE_SINGLE);
    }
}

TEST_CASE("worker defaults and ignored fields", "[ucp_worker]")
{
    context_holder ctx;
    REQUIRE(ctx.status == UCS_OK);

    ucp_worker_params_t params{};
    params.field_mask = 0;
    std::memset(&params.thread_mode, 0x5a, sizeof(params.thread_mode)); /* not in the mask */
    params.name         = reinterpret_cast<const char *>(uintptr_t{8});
    ucp_worker_h worker = nullptr;
    REQUIRE(ucp_worker_create(ctx.context, &params, &worker) == UCS_OK);

    ucp_worker_attr_t attr{};
    attr.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE | UCP_WORKER_ATTR_FIELD_NAME;
    REQUIRE(ucp_worker_query(worker, &attr) == UCS_OK);
    CHECK(attr.thread_mode == UCS_THREAD_MODE_SINGLE);
    CHECK(std::string(attr.name).find(':') != std::string::npos); /* host:pid */
    ucp_worker_destroy(worker);
}

TEST_CASE("net-only address", "[ucp_worker]")
{
    context_holder ctx;
    REQUIRE(ctx.status == UCS_OK);
    ucp_worker_params_t params{};
    ucp_worker_h worker = nullptr;
    REQUIRE(ucp_worker_create(ctx.context, &params, &worker) == UCS_OK);

    ucp_worker_attr_t attr{};
    attr.field_mask    = UCP_WORKER_ATTR_FIELD_ADDRESS | UCP_WORKER_ATTR_FIELD_ADDRESS_FLAGS;
    attr.address_flags = UCP_WORKER_ADDRESS_FLAG_NET_ONLY;
    REQUIRE(ucp_worker_query(worker, &attr) == UCS_OK);
    ucp::unpacked_address unpacked;
    REQUIRE(ucp::unpack_address(attr.address, attr.address_length, &unpacked) == UCS_OK);
    bool has_fake_net = false;
    for (const ucp::address_entry &e : unpacked.entries) {
        CHECK(e.dev_type == uct::device_type::NET);
        has_fake_net = has_fake_net || (e.tl_name == fake_net_tl);
    }
    CHECK(has_fake_net);
    CHECK(unpacked.net_only);
    ucp_worker_release_address(worker, attr.address);
    ucp_worker_destroy(worker);
}

TEST_CASE("worker refuses bad arguments", "[ucp_worker]")
{
    log_capture log(UCS_LOG_LEVEL_ERROR);
    context_holder ctx;
    REQUIRE(ctx.status == UCS_OK);
    ucp_worker_params_t params{};
    ucp_worker_h worker = nullptr;

    CHECK(ucp_worker_create(nullptr, &params, &worker) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_worker_create(ctx.context, nullptr, &worker) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_worker_create(ctx.context, &params, nullptr) == UCS_ERR_INVALID_PARAM);

    params.field_mask       = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    const unsigned bad_mode = 7; /* what a C caller might store */
    std::memcpy(&params.thread_mode, &bad_mode, sizeof(bad_mode));
    CHECK(ucp_worker_create(ctx.context, &params, &worker) == UCS_ERR_INVALID_PARAM);

    params.field_mask   = UCP_WORKER_PARAM_FIELD_AM_ALIGNMENT;
    params.am_alignment = 24;
    CHECK(ucp_worker_create(ctx.context, &params, &worker) == UCS_ERR_INVALID_PARAM);

    params.field_mask = UCP_WORKER_PARAM_FIELD_EVENT_FD; /* no WAKEUP feature */
    params.event_fd   = 0;
    CHECK(ucp_worker_create(ctx.context, &params, &worker) == UCS_ERR_INVALID_PARAM);
    CHECK(worker == nullptr);

    ucp_worker_attr_t attr{};
    ucp_address_t *address = nullptr;
    size_t length          = 0;
    CHECK(ucp_worker_query(nullptr, &attr) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_worker_get_address(nullptr, &address, &length) == UCS_ERR_INVALID_PARAM);
    CHECK(ucp_worker_progress(nullptr) == 0);
    ucp_worker_destroy(nullptr);
    ucp_worker_release_address(nullptr, nullptr);

    ucp_worker_address_attr_t addr_attr{};
    CHECK(ucp_worker_address_query(nullptr, &addr_attr) == UCS_ERR_INVALID_PARAM);
    uint8_t garbage[64] = {1, 2, 3};
    CHECK(ucp_worker_address_query(reinterpret_cast<ucp_address_t *>(garbage), &addr_attr) ==
          UCS_ERR_INVALID_PARAM);
}
