/*
 * The cma, self and tcp tunables come from UCX_<TL>_* variables through the
 * configuration registry: each variable reaches the iface, the iface
 * params' env prefix wins over the plain name, and a bad value refuses the
 * iface with UCS_ERR_INVALID_PARAM and a message naming the variable.
 */
#include <catch2/catch.hpp>

#include "../ucs/config_test_util.h"
#include "uct_test_util.h"

#include <uct/sm/cma/cma_access.h>
#include <uct/sm/cma/cma_config.h>
#include <uct/sm/self/self_config.h>
#include <uct/tcp/tcp_config.h>

#include <ucs/config/registry.h>

#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

namespace {

using config_test::config_file_scope;
using config_test::env_guard;
using config_test::log_capture;

/* Opens `tl` with the environment as it is now; the log goes to `log`. */
struct opened {
    log_capture log{UCS_LOG_LEVEL_ERROR};
    test::uct_entity entity;

    explicit opened(const char *tl, const std::string &env_prefix = "") :
        entity(tl, "", 0, env_prefix)
    {
    }
};

/* The iface refused with UCS_ERR_INVALID_PARAM and said which variable. */
void check_refused(const opened &o, const std::string &variable)
{
    CHECK_FALSE(o.entity.ok());
    CHECK(o.entity.error().find(ucs_status_string(UCS_ERR_INVALID_PARAM)) != std::string::npos);
    const std::string log = o.log.text();
    INFO("log: " << log);
    CHECK(log.find(variable) != std::string::npos);
}

bool cma_available()
{
    std::string reason;
    if (!uct::cma::cma_usable(uct::cma::default_cma_config(), &reason)) {
        WARN("cma is not usable here: " << reason);
        return false;
    }
    return true;
}

/* Whether a registered table's title mentions title_part (ucx_info -c lists it). */
bool registry_knows(const char *title_part)
{
    for (const auto *t : ucs::config::registered_tables()) {
        if (std::strstr(t->title, title_part) != nullptr) {
            return true;
        }
    }
    return false;
}

} // namespace

/* ---- cma ---- */

TEST_CASE("cma defaults are UCX's where UCX has the variable", "[cma]")
{
    const auto c = uct::cma::default_cma_config();
    CHECK(c.max_iov == 16);
    CHECK(c.keyless_rma);
    CHECK(c.bandwidth_Bps == Approx(11145.0 * 1024 * 1024));
    CHECK(uct::cma::validate_cma_config(c) == UCS_OK);
    CHECK(registry_knows("CMA"));
}

TEST_CASE("UCX_CMA_* variables configure the cma iface", "[cma]")
{
    if (!cma_available()) {
        return;
    }
    config_file_scope no_file;
    env_guard env;
    env.set("UCX_CMA_MAX_IOV", "4");
    env.set("UCX_CMA_BW", "5GBs");
    opened o("cma");
    REQUIRE(o.entity.ok());
    CHECK(o.entity.attr().get.max_iov == 4);
    CHECK(o.entity.attr().put.max_iov == 4);
    CHECK(o.entity.attr().perf.bandwidth_Bps == 5.0 * 1024 * 1024 * 1024);

    /* Behaviour follows the attribute: 4 iovs read, 5 are refused. */
    uct::ep *ep = o.entity.connect(o.entity.addresses());
    REQUIRE(ep != nullptr);
    std::vector<uint8_t> source(64), dest(64, 0);
    std::iota(source.begin(), source.end(), uint8_t(1));
    std::vector<uct::iov> iovs;
    for (size_t i = 0; i < 5; ++i) {
        iovs.push_back(uct::iov{dest.data() + 8 * i, 8, uct::MEM_HANDLE_NULL});
    }
    const auto remote = uint64_t(uintptr_t(source.data()));
    CHECK(ep->get_zcopy(iovs.data(), 4, remote, 0, nullptr) == UCS_OK);
    CHECK(std::memcmp(dest.data(), source.data(), 32) == 0);
    CHECK(ep->get_zcopy(iovs.data(), 5, remote, 0, nullptr) == UCS_ERR_INVALID_PARAM);
}

TEST_CASE("UCX_CMA_KEYLESS_RMA=n refuses keyless access", "[cma]")
{
    if (!cma_available()) {
        return;
    }
    config_file_scope no_file;
    env_guard env;
    env.set("UCX_CMA_KEYLESS_RMA", "n");
    opened o("cma");
    REQUIRE(o.entity.ok());
    uct::ep *ep = o.entity.connect(o.entity.addresses());
    REQUIRE(ep != nullptr);
    uint64_t source = 42, dest = 0;
    uct::iov iov{&dest, sizeof(dest), uct::MEM_HANDLE_NULL};
    CHECK(ep->get_zcopy(&iov, 1, uint64_t(uintptr_t(&source)), 0, nullptr) ==
          UCS_ERR_INVALID_PARAM);
    CHECK(dest == 0);
}

TEST_CASE("the env prefix of the iface params wins for cma", "[cma]")
{
    if (!cma_available()) {
        return;
    }
    config_file_scope no_file;
    env_guard env;
    env.set("UCX_CMA_MAX_IOV", "4");
    env.set("UCX_MPI_CMA_MAX_IOV", "3");
    {
        opened o("cma", "MPI_");
        REQUIRE(o.entity.ok());
        CHECK(o.entity.attr().get.max_iov == 3);
    }
    {
        opened o("cma");
        REQUIRE(o.entity.ok());
        CHECK(o.entity.attr().get.max_iov == 4);
    }
}

TEST_CASE("a bad UCX_CMA_* value refuses the cma iface", "[cma]")
{
    if (!cma_available()) {
        return;
    }
    config_file_scope no_file;
    env_guard env;
    SECTION("out of range") {
        env.set("UCX_CMA_MAX_IOV", "0");
        opened o("cma");
        check_refused(o, "UCX_CMA_MAX_IOV");
    }
    SECTION("malformed") {
        env.set("UCX_CMA_MAX_IOV", "many");
        opened o("cma");
        check_refused(o, "Invalid value for UCX_CMA_MAX_IOV");
    }
    SECTION("auto bandwidth") {
        env.set("UCX_CMA_BW", "auto");
        opened o("cma");
        check_refused(o, "UCX_CMA_BW");
    }
    SECTION("under the env prefix") {
        env.set("UCX_MPI_CMA_MAX_IOV", "100000");
        opened o("cma", "MPI_");
        check_refused(o, "UCX_CMA_MAX_IOV");
    }
}

/* ---- self ---- */

namespace {

size_t received_length = 0;

ucs_status_t record_length(void *, void *, size_t length, unsigned)
{
    received_length = length;
    return UCS_OK;
}

} // namespace

TEST_CASE("self defaults are UCX's where UCX has the variable", "[self]")
{
    const auto c = uct::self::default_self_config();
    CHECK(c.seg_size == 8192);
    CHECK(c.nested_queue_len > 0);
    CHECK(uct::self::validate_self_config(c) == UCS_OK);
    CHECK(registry_knows("Self"));
}

TEST_CASE("UCX_SELF_* variables configure the self iface", "[self]")
{
    config_file_scope no_file;
    env_guard env;
    env.set("UCX_SELF_SEG_SIZE", "1k");
    env.set("UCX_SELF_BW", "3GBs");
    opened o("self");
    REQUIRE(o.entity.ok());
    const auto &attr = o.entity.attr();
    CHECK(attr.am.max_bcopy == 1024);
    CHECK(attr.am.max_short == 1024);
    CHECK(attr.perf.bandwidth_Bps == 3.0 * 1024 * 1024 * 1024);

    /* The largest short message (with its header) goes through; one byte
     * more is refused. */
    REQUIRE(o.entity.iface().set_am_handler(1, record_length, nullptr, 0) == UCS_OK);
    uct::ep *ep = o.entity.connect(o.entity.addresses());
    REQUIRE(ep != nullptr);
    const size_t max_payload = attr.am.max_short - sizeof(uint64_t);
    std::vector<uint8_t> payload(max_payload + 1, 7);
    received_length = 0;
    CHECK(ep->am_short(1, 0, payload.data(), unsigned(max_payload)) == UCS_OK);
    CHECK(received_length == 1024);
    CHECK(ep->am_short(1, 0, payload.data(), unsigned(max_payload + 1)) == UCS_ERR_INVALID_PARAM);
}

TEST_CASE("the env prefix of the iface params wins for self", "[self]")
{
    config_file_scope no_file;
    env_guard env;
    env.set("UCX_SELF_SEG_SIZE", "4k");
    env.set("UCX_MPI_SELF_SEG_SIZE", "2k");
    {
        opened o("self", "MPI_");
        REQUIRE(o.entity.ok());
        CHECK(o.entity.attr().am.max_bcopy == 2048);
    }
    {
        opened o("self");
        REQUIRE(o.entity.ok());
        CHECK(o.entity.attr().am.max_bcopy == 4096);
    }
}

TEST_CASE("a bad UCX_SELF_* value refuses the self iface", "[self]")
{
    config_file_scope no_file;
    env_guard env;
    SECTION("segment too small") {
        env.set("UCX_SELF_SEG_SIZE", "32");
        opened o("self");
        check_refused(o, "UCX_SELF_SEG_SIZE");
    }
    SECTION("malformed") {
        env.set("UCX_SELF_SEG_SIZE", "big");
        opened o("self");
        check_refused(o, "Invalid value for UCX_SELF_SEG_SIZE");
    }
    SECTION("header larger than the segment") {
        env.set("UCX_SELF_SEG_SIZE", "64");
        env.set("UCX_SELF_AM_MAX_HDR", "128");
        opened o("self");
        check_refused(o, "UCX_SELF_AM_MAX_HDR");
    }
    SECTION("empty nested queue") {
        env.set("UCX_SELF_NESTED_QUEUE_LEN", "0");
        opened o("self");
        check_refused(o, "UCX_SELF_NESTED_QUEUE_LEN");
    }
}

/* ---- tcp ---- */

TEST_CASE("tcp defaults are UCX's where UCX has the variable", "[tcp]")
{
    const auto c = uct::tcp::default_tcp_config();
    CHECK(c.tx_seg_size == 8 * 1024);
    CHECK(c.rx_seg_size == 64 * 1024);
    CHECK(c.max_iov == 6);
    CHECK(c.max_poll == 16);
    CHECK(c.nodelay);
    CHECK(c.sndbuf == 0); /* auto: the kernel tunes it */
    CHECK(c.rcvbuf == 0);
    CHECK(uct::tcp::check_tcp_config(c) == UCS_OK);
    CHECK(registry_knows("TCP"));
}

TEST_CASE("UCX_TCP_* variables configure the tcp iface", "[tcp]")
{
    config_file_scope no_file;
    env_guard env;
    env.set("UCX_TCP_TX_SEG_SIZE", "16k");
    env.set("UCX_TCP_MAX_IOV", "3");
    env.set("UCX_TCP_MAX_SHORT", "64");
    env.set("UCX_TCP_SNDBUF", "256k");
    opened o("tcp");
    REQUIRE(o.entity.ok());
    const auto &attr = o.entity.attr();
    CHECK(attr.am.max_bcopy == 16 * 1024);
    CHECK(attr.put.max_bcopy == 16 * 1024);
    CHECK(attr.am.max_iov == 3);
    CHECK(attr.put.max_iov == 3);
    CHECK(attr.am.max_short == 64);

    /* Behaviour follows: 4 iovs are refused before anything is sent. */
    uct::ep *ep = o.entity.connect(o.entity.addresses());
    REQUIRE(ep != nullptr);
    uint8_t data[4] = {1, 2, 3, 4};
    uct::iov iovs[4];
    for (auto &iov : iovs) {
        iov = uct::iov{data, 1, uct::MEM_HANDLE_NULL};
    }
    CHECK(ep->am_zcopy(1, nullptr, 0, iovs, 4, 0, nullptr) == UCS_ERR_INVALID_PARAM);
}

TEST_CASE("the env prefix of the iface params wins for tcp", "[tcp]")
{
    config_file_scope no_file;
    env_guard env;
    env.set("UCX_TCP_TX_SEG_SIZE", "16k");
    env.set("UCX_MPI_TCP_TX_SEG_SIZE", "4k");
    {
        opened o("tcp", "MPI_");
        REQUIRE(o.entity.ok());
        CHECK(o.entity.attr().am.max_bcopy == 4096);
    }
    {
        opened o("tcp");
        REQUIRE(o.entity.ok());
        CHECK(o.entity.attr().am.max_bcopy == 16 * 1024);
    }
}

TEST_CASE("a bad UCX_TCP_* value refuses the tcp iface", "[tcp]")
{
    config_file_scope no_file;
    env_guard env;
    SECTION("too many iovs") {
        env.set("UCX_TCP_MAX_IOV", "100");
        opened o("tcp");
        check_refused(o, "UCX_TCP_MAX_IOV");
    }
    SECTION("malformed boolean") {
        env.set("UCX_TCP_NODELAY", "maybe");
        opened o("tcp");
        check_refused(o, "Invalid value for UCX_TCP_NODELAY");
    }
    SECTION("infinite socket buffer") {
        env.set("UCX_TCP_SNDBUF", "inf");
        opened o("tcp");
        check_refused(o, "UCX_TCP_SNDBUF");
    }
    SECTION("receive buffer too small") {
        env.set("UCX_TCP_RX_SEG_SIZE", "100");
        opened o("tcp");
        check_refused(o, "UCX_TCP_RX_SEG_SIZE");
    }
    SECTION("under the env prefix") {
        env.set("UCX_MPI_TCP_MAX_POLL", "0");
        opened o("tcp", "MPI_");
        check_refused(o, "MAX_POLL");
    }
}
