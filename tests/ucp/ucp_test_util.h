/*
 * Helpers of the UCP core tests: RAII handles, output capture, and the
 * loopback address client-server tests listen on, with a listener that
 * keeps its connection requests and the two ways of making a client-server
 * ep (PEER error mode).
 */
#ifndef TEST_UCP_UCP_TEST_UTIL_H
#define TEST_UCP_UCP_TEST_UTIL_H

#include "config_test_util.h"
#include "fake_transport.h"

#include <ucp/api/ucp.h>
#include <uct/base/uct_md.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ucp_test {

using config_test::env_guard;
using config_test::log_capture;
using config_test::print_to_string;

/* 127.0.0.1:port (port 0: the listener picks one). */
inline sockaddr_in loopback(uint16_t port)
{
    sockaddr_in addr{};
    addr.sin_family      = AF_INET;
    addr.sin_port        = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return addr;
}

/* A listener on 127.0.0.1 that keeps its connection requests. */
struct listening {
    ucp_listener_h listener = nullptr;
    std::vector<ucp_conn_request_h> requests;

    listening()                             = default;
    listening(const listening &)            = delete;
    listening &operator=(const listening &) = delete;

    ~listening()
    {
        if (listener != nullptr) {
            ucp_listener_destroy(listener);
        }
    }

    static void on_conn(ucp_conn_request_h request, void *arg)
    {
        static_cast<listening *>(arg)->requests.push_back(request);
    }

    ucs_status_t listen(ucp_worker_h worker)
    {
        sockaddr_in addr = loopback(0);
        ucp_listener_params_t params{};
        params.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR |
                            UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
        params.sockaddr.addr    = reinterpret_cast<const sockaddr *>(&addr);
        params.sockaddr.addrlen = sizeof(addr);
        params.conn_handler.cb  = on_conn;
        params.conn_handler.arg = this;
        return ucp_listener_create(worker, &params, &listener);
    }

    uint16_t port() const
    {
        ucp_listener_attr_t attr{};
        attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
        if (ucp_listener_query(listener, &attr) != UCS_OK) {
            return 0;
        }
        return ntohs(reinterpret_cast<const sockaddr_in *>(&attr.sockaddr)->sin_port);
    }
};

/* Accepts a connection request (PEER mode, `on_error` if given). As in UCX,
 * the error callback gets `user_data` when it is set, else `error_arg`. */
inline ucs_status_t accept_request(ucp_worker_h worker, ucp_conn_request_h request, void *user_data,
                                   ucp_ep_h *ep_p, ucp_err_handler_cb_t on_error = nullptr,
                                   void *error_arg = nullptr)
{
    ucp_ep_params_t params{};
    params.field_mask   = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    params.conn_request = request;
    params.err_mode     = UCP_ERR_HANDLING_MODE_PEER;
    if (user_data != nullptr) {
        params.field_mask |= UCP_EP_PARAM_FIELD_USER_DATA;
        params.user_data = user_data;
    }
    if (on_error != nullptr) {
        params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
        params.err_handler.cb  = on_error;
        params.err_handler.arg = error_arg;
    }
    return ucp_ep_create(worker, &params, ep_p);
}

/* Creates a client ep to 127.0.0.1:port, PEER mode (it returns while
 * connecting). */
inline ucs_status_t connect_client(ucp_worker_h worker, uint16_t port, void *user_data,
                                   ucp_ep_h *ep_p)
{
    sockaddr_in addr = loopback(port);
    ucp_ep_params_t params{};
    params.field_mask = UCP_EP_PARAM_FIELD_SOCK_ADDR | UCP_EP_PARAM_FIELD_FLAGS |
                        UCP_EP_PARAM_FIELD_USER_DATA | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    params.flags            = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    params.sockaddr.addr    = reinterpret_cast<const sockaddr *>(&addr);
    params.sockaddr.addrlen = sizeof(addr);
    params.user_data        = user_data;
    params.err_mode         = UCP_ERR_HANDLING_MODE_PEER;
    return ucp_ep_create(worker, &params, ep_p);
}

inline ucp_params_t tag_params()
{
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_TAG;
    return params;
}

/* A context from the environment as it is now; null on failure. */
class context_holder {
public:
    explicit context_holder(const ucp_params_t &params = tag_params())
    {
        status = ucp_init(&params, nullptr, &context);
    }

    ~context_holder()
    {
        if (status == UCS_OK) {
            ucp_cleanup(context);
        }
    }

    context_holder(const context_holder &)            = delete;
    context_holder &operator=(const context_holder &) = delete;

    std::string info() const
    {
        return print_to_string([this](FILE *f) { ucp_context_print_info(context, f); });
    }

    ucp_context_h context = nullptr;
    ucs_status_t status;
};

/* Whether a verbs device offers rc_verbs here (the module and a device, or the
 * emulated device of tests/verbs_emu). */
inline bool rc_verbs_available()
{
    uct::component *component = nullptr;
    uct::md *md               = nullptr;
    uct::tl_resource resource;
    if (uct::open_md_of("rc_verbs", "", &component, &md, &resource) != UCS_OK) {
        return false;
    }
    delete md;
    return true;
}

/* In a Catch test case: returns from it, with a warning, where no verbs
 * device offers rc_verbs (meson test ucp_rc_verbs runs it on the emulated
 * device). */
#define UCP_TEST_SKIP_WITHOUT_RC_VERBS() \
    do { \
        if (!ucp_test::rc_verbs_available()) { \
            WARN("rc_verbs: skipped: no verbs device here; meson test ucp_rc_verbs runs this " \
                 "on the emulated device"); \
            return; \
        } \
    } while (0)

} // namespace ucp_test

#endif
