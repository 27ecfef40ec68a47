/*
 * Helpers of the UCP core tests: RAII handles, output capture, and the
 * loopback address client-server tests listen on.
 */
#ifndef TEST_UCP_UCP_TEST_UTIL_H
#define TEST_UCP_UCP_TEST_UTIL_H

#include "config_test_util.h"
#include "fake_transport.h"

#include <ucp/api/ucp.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdint>
#include <string>

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

    context_holder(const context_holder &) = delete;
    context_holder &operator=(const context_holder &) = delete;

    std::string info() const
    {
        return print_to_string([this](FILE *f) { ucp_context_print_info(context, f); });
    }

    ucp_context_h context = nullptr;
    ucs_status_t  status;
};

} // namespace ucp_test

#endif
