/*
 * A transport that exists only in test_ucp, so that context and worker
 * tests run before the real transports are merged (and next to them after).
 * Component "ucp_test" has one md "ucp_test_md" with two resources:
 *   ucp_test_net  / fnet0  (NET)
 *   ucp_test_self / fself  (SELF)
 */
#ifndef TEST_UCP_FAKE_TRANSPORT_H
#define TEST_UCP_FAKE_TRANSPORT_H

#include <atomic>
#include <cstddef>

namespace ucp_test {

constexpr const char *fake_component = "ucp_test";
constexpr const char *fake_md        = "ucp_test_md";
constexpr const char *fake_net_tl    = "ucp_test_net";
constexpr const char *fake_net_dev   = "fnet0";
constexpr const char *fake_self_tl   = "ucp_test_self";
constexpr const char *fake_self_dev  = "fself";
constexpr size_t fake_dev_addr_len   = 8;
constexpr size_t fake_iface_addr_len = 4;

/* Calls of progress() on any fake iface, and ifaces now open. */
extern std::atomic<unsigned long> fake_progress_calls;
extern std::atomic<int>           fake_open_ifaces;

/* Whether a tl name belongs to the fake transport. */
bool is_fake_tl(const char *tl_name);

} // namespace ucp_test

#endif
