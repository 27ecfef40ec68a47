/*
 * The other end of a conformance pair, as the test bodies see it: memory it
 * exposes, the active messages it received, and control over whether it
 * consumes anything. Two kinds, chosen by the transport's device type:
 * - local_peer (device_type::SELF): the same iface in this process;
 * - remote_peer (every other transport): a forked process running
 *   peer_agent, driven by commands over a socketpair. While the parent waits
 *   for an answer it keeps progressing its own worker, so sends it queued
 *   still go out.
 * Test bodies use only this interface, so they run unchanged on both.
 */
#ifndef TESTS_UCT_CONFORM_PEER_H
#define TESTS_UCT_CONFORM_PEER_H

#include "am_sink.h"
#include "conform_list.h"
#include "conform_memory.h"

#include "../uct_test_util.h"

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace test::conform {

/* Bound of every wait in the suite: far above what any step takes. */
constexpr std::chrono::milliseconds WAIT_TIMEOUT{10000};

/* A region the peer exposed: where it is in the peer and its packed key. */
struct region_desc {
    uint64_t address = 0;
    uint64_t length  = 0;
    std::vector<uint8_t> packed_key;
};

class peer {
public:
    virtual ~peer() = default;

    /* The peer's iface addresses, to connect an ep to. */
    virtual const uct_addresses &addresses() const = 0;
    virtual bool in_process() const                = 0;
    /* CONNECT_TO_EP transports: the peer makes an ep connected to ours (at
     * `ep_address`, on our device at `device_address`) and gives its
     * ep's address back. */
    virtual bool connect_ep(const std::vector<uint8_t> &device_address,
                            const std::vector<uint8_t> &ep_address,
                            std::vector<uint8_t> *peer_ep_address) = 0;

    /* At least `length` bytes exposed through the peer's md, holding
     * pattern(length, seed). */
    virtual bool expose(size_t length, uint64_t seed, region_desc *out) = 0;
    /* Bytes of an exposed region, read or written by the peer itself. */
    virtual bool read(uint64_t address, size_t length, std::vector<uint8_t> *out) = 0;
    virtual bool write(uint64_t address, const std::vector<uint8_t> &bytes)       = 0;

    /* Waits (bounded) until at least `count` messages reached the am_sink,
     * then hands over all of them, each cut to `max_bytes`; false if fewer
     * than `count` arrived (what did arrive is still in *out). */
    virtual bool take_ams(size_t count, size_t max_bytes, std::vector<am_record> *out) = 0;
    virtual bool keep_descs(bool on)                                                   = 0;
    virtual bool release_kept(kept_report *out)                                        = 0;

    /* Runs `fn` while the peer consumes nothing: a process that does not
     * progress, or (self) inside one of the iface's AM handlers, where the
     * iface queues instead of delivering. `fn` must not throw (no REQUIRE);
     * it may kill() the peer. */
    virtual bool while_held(const std::function<void()> &fn) = 0;

    /* Kills the peer process (SIGKILL) and reaps it; false in process. */
    virtual bool kill() = 0;
    /* Ends the peer in order; false if it reported a failure. */
    virtual bool finish() = 0;
};

/* The same iface in this process (its worker is the one `entity` progresses). */
std::unique_ptr<peer> make_local_peer(uct_entity &entity);

/* Forks a process that opens `spec` and serves commands; `progress` runs
 * this process's worker while waiting for answers. Null with *why on failure. */
std::unique_ptr<peer> make_remote_peer(const transport_spec &spec,
                                       std::function<unsigned()> progress, std::string *why);

} // namespace test::conform

#endif
