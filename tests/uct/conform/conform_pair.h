/*
 * The fixture of every conformance test: this process's side of a transport
 * (a test::uct_entity with an error handler that records what it reports,
 * and an ep to the peer) plus the peer (peer.h), and the bounded waits the
 * tests need. Opening skips, rather than fails, only when this machine has
 * no resource for the transport (CONFORM_OPEN says why).
 */
#ifndef TESTS_UCT_CONFORM_CONFORM_PAIR_H
#define TESTS_UCT_CONFORM_CONFORM_PAIR_H

#include "conform_list.h"
#include "conform_ops.h"
#include "peer.h"

#include "../uct_test_util.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace test::conform {

class pair {
public:
    explicit pair(const transport_spec &spec);
    ~pair();
    pair(const pair &)            = delete;
    pair &operator=(const pair &) = delete;

    /* False when the machine has no resource for the transport: why(). */
    bool ok() const { return ep_ != nullptr; }
    const std::string &why() const { return why_; }

    const std::string &name() const { return spec_.entry; }
    uct_entity &local() { return *entity_; }
    uct::iface &iface() { return entity_->iface(); }
    uct::md &md() { return entity_->md(); }
    uct::component &component() { return entity_->component(); }
    const uct::iface_attr &attr() const { return entity_->attr(); }
    uct::ep &ep() { return *ep_; }
    conform::peer &peer() { return *peer_; }
    unsigned progress() { return entity_->progress(); }

    /* What the iface's error handler reported, in order. */
    struct failure {
        uct::ep *ep;
        ucs_status_t status;
    };
    const std::vector<failure> &failures() const { return failures_; }

    /* Progresses (yielding when idle) until `done`, at most WAIT_TIMEOUT. */
    bool wait_until(const std::function<bool()> &done);
    /* Retries `op` while it answers UCS_ERR_NO_RESOURCE, progressing in
     * between (bounded); returns its last answer. */
    ucs_status_t retry(const std::function<ucs_status_t()> &op);
    /* For an operation that returned `status` with completion `comp`:
     * UCS_INPROGRESS waits for the completion and gives its status
     * (UCS_ERR_TIMED_OUT if it never ran; comp.fired counts the calls);
     * anything else is returned as is. */
    ucs_status_t complete(ucs_status_t status, counted_comp &comp);
    /* ep flush with a completion, retried and waited for. */
    ucs_status_t flush_ep();

    /* The peer's region, and its key unpacked here. */
    struct remote_region {
        region_desc desc;
        std::unique_ptr<unpacked_key> key;
        uct::rkey_t rkey() const { return key->rkey(); }
    };
    /* REQUIREs that the peer exposes `length` bytes of pattern(seed). */
    remote_region expose(size_t length, uint64_t seed);

private:
    static ucs_status_t on_error(void *arg, uct::ep *ep, ucs_status_t status);

    transport_spec spec_;
    std::string why_;
    std::vector<failure> failures_;
    std::unique_ptr<uct_entity> entity_;
    /* Zcopy entries' registrations; released before the md closes. */
    std::unique_ptr<registration_scope> registrations_;
    std::unique_ptr<conform::peer> peer_;
    uct::ep *ep_ = nullptr;
};

} // namespace test::conform

/* Declares `pair _p` for `spec`, or skips the test body with the reason. */
#define CONFORM_OPEN(_p, _spec) \
    test::conform::pair _p(_spec); \
    if (!_p.ok()) { \
        WARN((_spec).entry << ": skipped: " << _p.why()); \
        return; \
    }

#endif
