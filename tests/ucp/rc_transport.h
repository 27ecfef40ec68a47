/*
 * "ucp_test_rc": a transport that exists only in test_ucp and connects an
 * endpoint to an endpoint, as an InfiniBand RC queue pair does, so that
 * UCP's connect-to-ep wireup is tested between real processes before a
 * verbs transport exists (issue 14 item 2, issue 21).
 *
 * Each iface is a unix datagram socket in the abstract namespace (one
 * network namespace and one machine: that is its reach). An ep is created
 * unconnected (iface::ep_create), has an address (the iface's and its own
 * index and generation, ep::get_address) and is connected to exactly one
 * peer ep (ep::connect_to_ep). As an RC QP:
 *  - sends on an ep not connected yet return UCS_ERR_NO_RESOURCE;
 *  - a message for an ep that is not connected to the sending ep (never
 *    connected, connected elsewhere, destroyed) is dropped by the receiver
 *    and counted in rc_dropped_unconnected;
 *  - delivery is reliable and in order per ep pair (unix datagrams between
 *    two sockets are), a full receiver gives UCS_ERR_NO_RESOURCE;
 *  - put and get are executed by the target's progress after checking the
 *    key and bounds of a registration of its md (a bad access fails the
 *    initiator's ep, as a remote access error moves a QP to error);
 *  - flush completes when the target has executed everything before it;
 *  - a peer whose socket is gone (the process died) fails the ep with
 *    UCS_ERR_CONNECTION_RESET through the iface's error handler, found by
 *    the next send, a keepalive check() or check_peers().
 * Its performance model beats tcp's (not shared memory's), so with
 * UCX_TLS=ucp_test_rc,tcp UCP picks it for every lane and tcp only carries
 * the wireup.
 *
 * The md is listed only while rc_enabled is true, so contexts of other
 * tests never see it; forked children inherit the flag.
 */
#ifndef TEST_UCP_RC_TRANSPORT_H
#define TEST_UCP_RC_TRANSPORT_H

#include <atomic>
#include <cstddef>

namespace ucp_test {

constexpr const char *rc_tl   = "ucp_test_rc";
constexpr const char *rc_dev  = "rc0";
constexpr size_t rc_max_short = 256;
constexpr size_t rc_max_bcopy = 8192;
constexpr size_t rc_max_zcopy = 65536;

extern std::atomic<bool> rc_enabled;
/* Messages this process's ifaces refused: their ep was not connected to
 * the sending ep. */
extern std::atomic<unsigned long> rc_dropped_unconnected;
/* Active messages this process's ifaces delivered to a handler. */
extern std::atomic<unsigned long> rc_delivered_am;
/* Put and get calls this process's eps issued (returned OK or INPROGRESS). */
struct rc_rma_counts {
    std::atomic<unsigned long> put_short{0}, put_bcopy{0}, put_zcopy{0};
    std::atomic<unsigned long> get_bcopy{0}, get_zcopy{0};
};
extern rc_rma_counts rc_rma_issued;

/* Eps created, and connect_to_ep calls that succeeded. */
extern std::atomic<unsigned long> rc_eps_created;
extern std::atomic<unsigned long> rc_eps_connected;

/* Lists the transport for the guard's lifetime. */
class rc_enable_guard {
public:
    rc_enable_guard() { rc_enabled = true; }
    ~rc_enable_guard() { rc_enabled = false; }
    rc_enable_guard(const rc_enable_guard &)            = delete;
    rc_enable_guard &operator=(const rc_enable_guard &) = delete;
};

} // namespace ucp_test

#endif
