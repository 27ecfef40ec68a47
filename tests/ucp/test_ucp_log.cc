/*
 * What UCX_LOG_LEVEL=info and debug show, in UCX 1.13's words: the version
 * and library path when a context starts, "ep_cfg[N]: tag(...) ..." per lane
 * configuration, and at debug the lanes and protocol choice of each ep.
 */
#include "ucp_peer.h"
#include "ucp_test_util.h"

#include <catch2/catch.hpp>

#include <ucp/core/ucp_request.h>
#include <ucs/config/registry.h>

#include <cstdio>
#include <regex>
#include <vector>

using namespace ucp_test;

namespace {

using config_test::occurrences;

} // namespace

TEST_CASE("info level: the version and where libucp was loaded from", "[ucp_log]")
{
    env_guard env;
    env.set("UCX_RNDV_THRESH", "64k");
    ucs::config::rearm_unused_env_warning(); /* the UCX_* list is logged once */
    log_capture log(UCS_LOG_LEVEL_INFO);
    context_holder ctx;
    REQUIRE(ctx.status == UCS_OK);
    const std::string text = log.text();
    INFO(text);
    CHECK(std::regex_search(text, std::regex("ucp_context.cc:[0-9 ]{4} UCX  INFO  "
                                             "Version 1\\.13\\.[0-9]+ .*\\(loaded from "
                                             "/[^)]*libucp\\.so[.0-9]*\\)\n")));
    /* And, as UCX 1.13, the UCX_* variables in effect. */
    CHECK(std::regex_search(text, std::regex("UCX  INFO  UCX_\\* env variables?: [^\n]*"
                                             "UCX_RNDV_THRESH=64k")));

    log_capture quiet(UCS_LOG_LEVEL_WARN);
    context_holder ctx2;
    CHECK(quiet.text().find("Version") == std::string::npos);
}

TEST_CASE("info level: one ep_cfg line per lane configuration of a worker", "[ucp_log]")
{
    peer a, b;
    REQUIRE(a.init("tcp") == UCS_OK);
    REQUIRE(b.init("tcp") == UCS_OK);
    log_capture log(UCS_LOG_LEVEL_INFO);
    REQUIRE(a.connect(b.address()) == UCS_OK);
    REQUIRE(b.connect(a.address()) == UCS_OK);
    const std::string text = log.text();
    INFO(text);

    /* UCX 1.13: "ucp_worker.c:1763 UCX  INFO    ep_cfg[0]: tag(tcp/lo tcp/eth0)" */
    const std::regex line("UCX  INFO    ep_cfg\\[0\\]: tag\\(tcp/[^ )]+( tcp/[^ )]+)*\\)\n");
    auto first = std::sregex_iterator(text.begin(), text.end(), line);
    CHECK(std::distance(first, std::sregex_iterator()) == 2); /* each worker numbers its own */
    CHECK(text.find("ep_cfg[1]") == std::string::npos);
}

TEST_CASE("info level: ep_cfg names the lanes of every requested operation", "[ucp_log]")
{
    peer p;
    REQUIRE(p.init("self", UCP_FEATURE_TAG | UCP_FEATURE_RMA | UCP_FEATURE_AMO64 | UCP_FEATURE_AM |
                               UCP_FEATURE_STREAM) == UCS_OK);
    log_capture log(UCS_LOG_LEVEL_INFO);
    REQUIRE(p.connect(p.address()) == UCS_OK);
    const std::string text = log.text();
    INFO(text);
    CHECK(std::regex_search(text, std::regex("  ep_cfg\\[0\\]: tag\\(self/[^ )]+\\) "
                                             "rma(_am)?\\(self/[^ )]+\\) "
                                             "amo(_am)?\\(self/[^ )]+\\) "
                                             "am\\(self/[^ )]+\\) "
                                             "stream\\(self/[^ )]+\\)\n")));
}

TEST_CASE("debug level: lanes at wireup and the protocol chosen per size", "[ucp_log]")
{
    peer a, b;
    REQUIRE(a.init("tcp") == UCS_OK);
    REQUIRE(b.init("tcp") == UCS_OK);
    log_capture log(UCS_LOG_LEVEL_DEBUG);
    REQUIRE(a.connect(b.address()) == UCS_OK);
    const std::string text = log.text();
    INFO(text);
    CHECK(std::regex_search(text, std::regex("UCX  DEBUG worker '[^']*' ep [0-9]+ to "
                                             "'[^']*': lane\\[0\\] tcp/[^ ]+ am")));
    CHECK(text.find("UCX  DEBUG #   tag_send, contiguous data (message size in bytes):") !=
          std::string::npos);
    CHECK(occurrences(text, "eager bcopy") >= 1);
    CHECK(occurrences(text, "ep_cfg[0]: ") == 1);         /* the info line, once */
    CHECK(occurrences(text, "ep_cfg[0] of worker") == 1); /* its table, once */
}

TEST_CASE("req level: a request's life from start to release, in builds that log it", "[ucp_log]")
{
    peer p;
    REQUIRE(p.init("self") == UCS_OK);
    REQUIRE(p.connect(p.address()) == UCS_OK);
    std::vector<uint8_t> out(64 * 1024, 3), in(out.size(), 0); /* a rendezvous */
    log_capture log(UCS_LOG_LEVEL_TRACE_REQ);
    ucp_request_param_t param{};
    void *recv = ucp_tag_recv_nbx(p.worker, in.data(), in.size(), 5, ~ucp_tag_t(0), &param);
    void *send = ucp_tag_send_nbx(p.ep, out.data(), out.size(), 5, &param);
    REQUIRE(UCS_PTR_IS_PTR(recv));
    REQUIRE(UCS_PTR_IS_PTR(send));
    CHECK(p.wait(send) == UCS_OK);
    CHECK(p.wait(recv) == UCS_OK);
    CHECK(in == out);
    const std::string text = log.text();
    INFO(text);
    if (ucs::max_log_level < UCS_LOG_LEVEL_TRACE_REQ) {
        /* A release build, as UCX's: the trace levels are compiled out. */
        WARN("this build logs up to debug: request traces need assertions on");
        CHECK(text.find(": started") == std::string::npos);
        return;
    }
    for (void *req : {send, recv}) {
        char name[32];
        std::snprintf(name, sizeof(name), "req %p: ",
                      static_cast<void *>(static_cast<char *>(req) - sizeof(ucp::request)));
        const size_t started  = text.find(std::string(name) + "started");
        const size_t complete = text.find(std::string(name) + "completed, Success");
        const size_t freed    = text.find(std::string(name) + "freed by the application");
        const size_t released = text.find(std::string(name) + "released");
        REQUIRE(started != std::string::npos);
        REQUIRE(complete != std::string::npos);
        REQUIRE(freed != std::string::npos);
        REQUIRE(released != std::string::npos);
        CHECK(started < complete);
        CHECK(complete < freed);
        CHECK(freed < released);
    }
    /* At the levels below, the same requests are not mentioned. */
    log_capture quiet(UCS_LOG_LEVEL_TRACE);
    recv = ucp_tag_recv_nbx(p.worker, in.data(), in.size(), 6, ~ucp_tag_t(0), &param);
    send = ucp_tag_send_nbx(p.ep, out.data(), out.size(), 6, &param);
    REQUIRE(UCS_PTR_IS_PTR(send));
    CHECK(p.wait(send) == UCS_OK);
    CHECK(p.wait(recv) == UCS_OK);
    CHECK(quiet.text().find(": started") == std::string::npos);
}
