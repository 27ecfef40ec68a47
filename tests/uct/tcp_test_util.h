/*
 * tcp test helpers: an iface opened with explicit tunables, in a worker of
 * its own (test::uct_entity reads the UCX_TCP_* defaults instead).
 */
#ifndef TESTS_UCT_TCP_TEST_UTIL_H
#define TESTS_UCT_TCP_TEST_UTIL_H

#include "uct_test_util.h"

#include <uct/base/uct_worker.h>
#include <uct/tcp/tcp_config.h>
#include <uct/tcp/tcp_md.h>

#include <ucs/debug/log.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

namespace test {

/* Sends this process's log to a temporary file while in scope. */
class captured_log {
public:
    captured_log() : path_("/tmp/ucx-ng-tcp-test-" + std::to_string(getpid()) + ".log")
    {
        ucs::log_set_file(path_.c_str());
    }

    ~captured_log()
    {
        ucs::log_set_file("stdout");
        ::unlink(path_.c_str());
    }

    /* Everything logged so far; logging goes back to stdout. */
    std::string text()
    {
        ucs::log_set_file("stdout");
        std::ifstream in(path_);
        return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }

private:
    std::string path_;
};

/* tcp on one device with explicit tunables (uct_entity takes the defaults). */
class tuned_tcp {
public:
    tuned_tcp(const char *dev, const uct::tcp::tcp_config &config) :
        worker_(nullptr, UCS_THREAD_MODE_SINGLE)
    {
        uct::iface_params params;
        params.tl_name  = "tcp";
        params.dev_name = dev;
        if (md_.iface_open(worker_, params, config, &iface_) != UCS_OK) {
            iface_ = nullptr;
        }
    }

    ~tuned_tcp()
    {
        for (uct::ep *ep : eps_) {
            delete ep;
        }
        delete iface_;
    }

    bool ok() const { return iface_ != nullptr; }
    uct::iface &iface() { return *iface_; }
    uct::tcp::tcp_md &md() { return md_; }
    void progress() { worker_.progress(); }

    test::uct_addresses addresses() const { return test::addresses_of(*iface_); }

    uct::ep *connect(const test::uct_addresses &peer)
    {
        return test::connect_to(*iface_, peer, &eps_);
    }

private:
    uct::worker worker_;
    uct::tcp::tcp_md md_;
    uct::iface *iface_ = nullptr;
    std::vector<uct::ep *> eps_;
};

} // namespace test

#endif
