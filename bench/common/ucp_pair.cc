#include "ucp_pair.h"

#include <cstdint>
#include <vector>

namespace perf {

ucp_pair::~ucp_pair()
{
    if (ep != nullptr) {
        ucp_request_param_t param{};
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
        wait(ucp_ep_close_nbx(ep, &param));
    }
    if (worker != nullptr) {
        ucp_worker_destroy(worker);
    }
    if (context != nullptr) {
        ucp_cleanup(context);
    }
}

std::string ucp_pair::setup(oob &channel, const char *tls, uint64_t features)
{
    ucp_config_t *config;
    if (ucp_config_read(nullptr, nullptr, &config) != UCS_OK) {
        return "ucp_config_read failed";
    }
    if (tls != nullptr) {
        ucp_config_modify(config, "TLS", tls);
    }
    ucp_params_t params{};
    params.field_mask   = UCP_PARAM_FIELD_FEATURES;
    params.features     = features;
    ucs_status_t status = ucp_init(&params, config, &context);
    ucp_config_release(config);
    if (status != UCS_OK) {
        context = nullptr;
        return "ucp_init failed";
    }
    ucp_worker_params_t wp{};
    if (ucp_worker_create(context, &wp, &worker) != UCS_OK) {
        worker = nullptr;
        return "ucp_worker_create failed";
    }
    ucp_address_t *address;
    size_t length;
    if (ucp_worker_get_address(worker, &address, &length) != UCS_OK) {
        return "ucp_worker_get_address failed";
    }
    std::vector<uint8_t> mine(reinterpret_cast<uint8_t *>(address),
                              reinterpret_cast<uint8_t *>(address) + length);
    ucp_worker_release_address(worker, address);
    if (!channel.exchange(mine, &remote_address)) {
        return "address exchange failed";
    }
    ucp_ep_params_t ep_params{};
    ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep_params.address    = reinterpret_cast<const ucp_address_t *>(remote_address.data());
    if (ucp_ep_create(worker, &ep_params, &ep) != UCS_OK) {
        ep = nullptr;
        return "ucp_ep_create failed";
    }
    return "";
}

ucs_status_t wait_request(ucp_worker_h worker, ucs_status_ptr_t request)
{
    if (!UCS_PTR_IS_PTR(request)) {
        return UCS_PTR_STATUS(request);
    }
    ucs_status_t status;
    while ((status = ucp_request_check_status(request)) == UCS_INPROGRESS) {
        ucp_worker_progress(worker);
    }
    ucp_request_free(request);
    return status;
}

ucs_status_t ucp_pair::wait(ucs_status_ptr_t request)
{
    return wait_request(worker, request);
}

} // namespace perf
