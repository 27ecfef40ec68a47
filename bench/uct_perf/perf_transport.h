/*
 * One side of a benchmark connection, through the generic uct interface
 * only: find the component and md that offer the transport, open an iface
 * in a private worker, exchange addresses with the peer and connect, to the
 * peer's iface (CONNECT_TO_IFACE) or to its ep (CONNECT_TO_EP).
 */
#ifndef BENCH_UCT_PERF_PERF_TRANSPORT_H
#define BENCH_UCT_PERF_PERF_TRANSPORT_H

#include "../common/oob.h"

#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <uct/base/uct_worker.h>
#include <ucs/async/async_context.h>

#include <memory>
#include <string>
#include <vector>

namespace perf {

class transport {
public:
    transport()                             = default;
    transport(const transport &)            = delete;
    transport &operator=(const transport &) = delete;
    ~transport();

    /* Opens tl on dev (first device if empty); prints why on failure.
     * async_thread: the worker gets an async context running its own
     * thread (UCX's -A thread_spinlock/thread_mutex). */
    bool open(const std::string &tl_name, const std::string &dev_name, bool async_thread = false);

    /* Connects to a peer doing the same, exchanging addresses over `channel`. */
    bool connect_peer(oob &channel);
    /* Connects to this very iface (transports that reach only themselves). */
    bool connect_self();
    /* True for a transport that reaches nothing but its own iface. */
    bool self_only() const { return type_ == uct::device_type::SELF; }

    uct::worker &worker() { return *worker_; }
    uct::component &component() { return *component_; }
    uct::md &md() { return *md_; }
    uct::iface &iface() { return *iface_; }
    uct::ep &ep() { return *ep_; }
    const uct::iface_attr &attr() const { return iface_->attr(); }
    const std::string &description() const { return description_; }

    unsigned progress() { return worker_->progress(); }

private:
    /* Declared first: the worker and interfaces go before it. */
    std::unique_ptr<ucs::async_context> async_;
    std::unique_ptr<uct::worker> worker_;
    uct::component *component_ = nullptr;
    uct::md *md_               = nullptr;
    uct::iface *iface_         = nullptr;
    uct::ep *ep_               = nullptr;
    std::string description_;
    uct::device_type type_ = uct::device_type::NET;
};

/* Prints every component / md / transport / device this build offers. */
void list_transports();

} // namespace perf

#endif
