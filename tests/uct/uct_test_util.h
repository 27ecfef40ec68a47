/*
 * Opening a transport by name for tests: finds the component and md that
 * offer `tl_name` (on `dev_name`, or the first device), opens the md and an
 * iface in a fresh worker, and packs the addresses a peer needs. Also a
 * completion that counts its calls, and the guard of forked children.
 */
#ifndef TESTS_UCT_UCT_TEST_UTIL_H
#define TESTS_UCT_UCT_TEST_UTIL_H

#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <uct/base/uct_worker.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <csignal>
#include <sys/prctl.h>
#include <unistd.h>

namespace test {

/* A uct completion that counts how often it ran and keeps the last status;
 * `n` operations must complete before it runs. */
struct counted_comp : uct::completion {
    int fired         = 0;
    ucs_status_t last = UCS_OK;

    explicit counted_comp(int n = 1)
    {
        func = [](uct::completion *self) {
            auto *c = static_cast<counted_comp *>(self);
            ++c->fired;
            c->last = c->status;
        };
        count  = n;
        status = UCS_OK;
    }

    /* Ready for one more operation. */
    void rearm()
    {
        count  = 1;
        status = UCS_OK;
    }
};

/* In a forked child: dies with its parent, so an aborted test leaves no
 * process spinning. */
inline void die_with_parent()
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() == 1) {
        _exit(1);
    }
}

struct uct_addresses {
    std::vector<uint8_t> device;
    std::vector<uint8_t> iface;

    std::vector<uint8_t> serialize() const;
    static bool deserialize(const std::vector<uint8_t> &blob, uct_addresses *out);
};

/* What a peer needs to reach `iface`. */
uct_addresses addresses_of(const uct::iface &iface);

/* A CONNECT_TO_IFACE ep from `iface` to `peer`, kept in `owned`; null on
 * failure. */
uct::ep *connect_to(uct::iface &iface, const uct_addresses &peer, std::vector<uct::ep *> *owned);

class uct_entity {
public:
    /* Opens the transport; check ok() (false with a message if unavailable).
     * env_prefix ("MPI_") is handed to iface_open like ucp does; err_handler
     * (with err_arg) becomes the iface's error handler. */
    uct_entity(const std::string &tl_name, const std::string &dev_name = "", size_t rx_headroom = 0,
               const std::string &env_prefix = "", uct::error_handler_t err_handler = nullptr,
               void *err_arg = nullptr);
    ~uct_entity();

    bool ok() const { return iface_ != nullptr; }
    const std::string &error() const { return error_; }

    uct::worker &worker() { return *worker_; }
    uct::md &md() { return *md_; }
    uct::iface &iface() { return *iface_; }
    uct::component &component() { return *component_; }
    const uct::iface_attr &attr() const { return iface_->attr(); }

    uct_addresses addresses() const;

    /* An ep to the peer with these addresses (CONNECT_TO_IFACE transports). */
    uct::ep *connect(const uct_addresses &peer);
    /* An unconnected ep, owned like connect()'s (CONNECT_TO_EP transports),
     * and its address; null on failure. */
    uct::ep *create_ep(std::vector<uint8_t> *ep_address);

    unsigned progress() { return worker_->progress(); }

    /* Progresses until `done` or a 10 s deadline; false on the deadline. */
    template <typename Pred>
    bool progress_until(Pred done)
    {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!done()) {
            if (std::chrono::steady_clock::now() > deadline) {
                return false;
            }
            progress();
        }
        return true;
    }

private:
    std::string error_;
    std::unique_ptr<uct::worker> worker_;
    uct::component *component_ = nullptr;
    uct::md *md_               = nullptr;
    uct::iface *iface_         = nullptr;
    std::vector<uct::ep *> eps_;
};

} // namespace test

#endif
