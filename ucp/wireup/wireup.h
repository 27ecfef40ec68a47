/*
 * The wireup handshake: pairs each ep with exactly one ep of the peer
 * worker, tells each the other's ep id (which messages expecting an answer
 * name, ucp/proto/wire.h), and connects the lanes of connect-to-ep
 * transports (RC queue pairs) to each other. As UCX 1.13 does:
 *
 *   A: ucp_ep_create                      B
 *      lanes: connect-to-iface ones
 *      connected, connect-to-ep ones
 *      created unconnected
 *      REQUEST ------------------------->  pairs it with an ep: one of B's
 *      (A's uuid, ep id, conn_sn, worker   own to A with the same conn_sn,
 *      address, its p2p ep addresses)      else a new one; connects its p2p
 *                                          lanes to A's ep addresses
 *              <------------------------- REPLY (B's ep id, its p2p ep
 *      connects its p2p lanes; READY       addresses)
 *      ACK (if p2p lanes) --------------> READY
 *
 * Wireup messages go out of a connect-to-iface lane of the ep (AM_WIREUP),
 * or of an aux ep of such a transport when every lane connects to an ep;
 * with no such transport to the peer the ep is not made. An ep with p2p
 * lanes holds every send in its proxy (proxy_ep.h) until READY; the
 * passive side (B) is READY only after the ACK (or A's REPLY), so it never
 * sends on a lane whose peer is not connected yet. An ep of connect-to-iface
 * lanes only sends at once; a message that names the peer's ep waits, with
 * what follows it, for the REPLY.
 *
 * Ep matching: the n-th ep the application makes to a peer by address
 * carries conn_sn n. A REQUEST finds our n-th ep to its sender if we made
 * one (both sides connecting at once: each processes the other's REQUEST,
 * and the pair is formed once, whichever message arrives first), else
 * makes an internal ep that our n-th ucp_ep_create to that peer adopts
 * later. Several eps from one worker to a peer each get their own.
 * A client-server REQUEST names the client's port instead and pairs with
 * the client's ep connecting from it. An ep to its own worker is paired
 * with itself.
 *
 * Every message is validated in the AM handler (lengths, counts, the
 * address, that REPLY/ACK name a live ep of ours to their sender) and
 * acted on from progress (deferred::WIREUPS): eps are never made inside a
 * transport callback. REQUESTs from peers without an ep of ours are
 * bounded by UCX_MAX_PEER_EPS.
 */
#ifndef UCP_WIREUP_WIREUP_H
#define UCP_WIREUP_WIREUP_H

#include <ucp/proto/wire.h>

#include <cstdint>
#include <vector>

struct ucp_worker;
struct ucp_ep;

namespace ucp::wireup {

/* One connect-to-ep lane's ep address from a wireup message. */
struct ep_address {
    uint16_t entry; /* in the sender's worker address */
    std::vector<uint8_t> bytes;
};

/* A validated wireup message waiting for progress. */
struct message {
    wire::wireup_hdr hdr;
    std::vector<uint8_t> address; /* REQUEST: the sender's worker address */
    std::vector<ep_address> ep_addrs;
};

/* Most wireup REQUESTs that wait for progress at once. */
constexpr size_t max_queued_messages = 4096;

/*
 * ucp_ep_create to a worker address: adopts the ep our peer's REQUEST made
 * if it matches, else makes an ep and sends our REQUEST (an ep to our own
 * worker is paired with itself). `client_port` != 0: the server's ep of a
 * client-server connection from that port (no matching by conn_sn).
 */
ucs_status_t connect(ucp_worker *worker, const void *address, size_t max_length,
                     uint16_t client_port, ucp_ep **ep_p);

/* Acts on the queued wireup messages; returns how many. */
unsigned progress(ucp_worker *worker);
bool messages_left(const ucp_worker &worker);

/* The ep leaves ep matching (failed or destroyed). */
void ep_forget(ucp_ep *ep);

/* What print_info says about the ep's wireup. */
const char *state_name(const ucp_ep *ep);

} // namespace ucp::wireup

namespace ucp {

/* AM_WIREUP handler (installed on every iface). */
ucs_status_t wireup_handler(void *arg, void *data, size_t length, unsigned flags);

} // namespace ucp

#endif
