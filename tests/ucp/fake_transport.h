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
extern std::atomic<int> fake_open_ifaces;

/* Whether a tl name belongs to the fake transport. */
bool is_fake_tl(const char *tl_name);

/*
 * "ucp_test_zc" (component and md "ucp_test_zc", device "fzc0", SELF): a
 * loopback transport whose md needs a memory handle for zero-copy data, for
 * the eager zcopy tests. am_zcopy refuses an entry its handle does not
 * cover, reads the data only when it delivers it, from the next progress()
 * (so a send completes from there), and keeps at most fake_zc_queue_max
 * messages queued (then UCS_ERR_NO_RESOURCE). Its performance model is
 * poor: never preferred over a real transport.
 */
constexpr const char *fake_zc_tl     = "ucp_test_zc";
constexpr unsigned fake_zc_queue_max = 4;
constexpr size_t fake_zc_max_bcopy   = 4096;
constexpr size_t fake_zc_max_iov     = 4;

/* Its md is listed only while this is true (so contexts of other tests,
 * on all transports, never see it). */
extern std::atomic<bool> fake_zc_enabled;
/* Its md says md_flag::REG_PINS when opened while this is true. */
extern std::atomic<bool> fake_zc_pins;
extern std::atomic<long> fake_zc_registrations;        /* live memory handles */
extern std::atomic<unsigned long> fake_zc_reg_calls;   /* mem_reg calls, ever */
extern std::atomic<unsigned long> fake_zc_zcopy_sends; /* am_zcopy accepted */
extern std::atomic<unsigned long> fake_zc_bad_memh;    /* entries not covered */

} // namespace ucp_test

#endif
