/*
 * What the verbs transports' ifaces and eps share: the eps of an iface by
 * a 32-bit key (rc: QP number, ud: ep id), eps waiting to dispatch pending
 * requests, failures waiting to be reported to the error handler, the
 * all-or-nothing iface flush, and an ep's pending queue.
 */
#ifndef UCT_IB_IB_IFACE_BASE_H
#define UCT_IB_IB_IFACE_BASE_H

#include <uct/base/pending_queue.h>
#include <uct/base/uct_iface.h>

#include <deque>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

namespace uct::ib {

class ib_iface_base;

class ib_ep_base : public ep {
public:
    ucs_status_t pending_add(pending_req *req, unsigned flags) override;
    void pending_purge(pending_purge_callback_t cb, void *arg) override;

    /* For the iface. */
    bool has_pending() const { return !pending_.empty(); }
    /* Dispatches queued requests while ready(); returns how many went. */
    unsigned dispatch_pending();
    /* Whether a flush could be issued now (the iface's all-or-nothing flush). */
    virtual bool flush_ready() const = 0;

protected:
    explicit ib_ep_base(ib_iface_base &iface);
    ~ib_ep_base() override;

    /* UCS_OK when a request can be posted now. */
    virtual ucs_status_t ready() const = 0;
    /* Queued requests go first, except to the dispatcher itself. */
    bool pending_blocks() const { return !pending_.empty() && !dispatching_; }

    ib_iface_base &base_;
    /* False once the ep is destroyed: callbacks it runs may destroy it. */
    std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
    pending_queue pending_;

private:
    bool dispatching_ = false;
};

class ib_iface_base : public iface {
public:
    ucs_status_t flush(unsigned flags, completion *comp) override;

    /* For the eps. */
    void add_ep(uint32_t key, ib_ep_base *ep) { eps_[key] = ep; }
    /* Forgets `ep` (under `key`), its queued dispatch and reports. */
    void remove_ep(uint32_t key, ib_ep_base *ep);
    void schedule_pending(ib_ep_base *ep);
    /* The error handler hears of `ep` from a later progress. */
    void report(ib_ep_base *ep, ucs_status_t status);

protected:
    explicit ib_iface_base(const iface_params &params);

    bool has_pending_eps() const { return !pending_eps_.empty(); }
    bool has_reports() const { return !errors_.empty(); }
    unsigned dispatch_pending();
    unsigned report_errors();

    std::unordered_map<uint32_t, ib_ep_base *> eps_;

private:
    struct flush_waiter {
        completion inner; /* first: the eps' flushes count it down */
        completion *user;
    };
    static void flush_waiter_done(completion *self);

    error_handler_t err_handler_;
    void *err_arg_;
    std::vector<ib_ep_base *> pending_eps_;
    std::deque<std::pair<ib_ep_base *, ucs_status_t>> errors_;
    std::deque<std::unique_ptr<flush_waiter>> flush_waiters_;
};

} // namespace uct::ib

#endif
