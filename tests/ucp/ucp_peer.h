/*
 * One side of a UCP test connection: a context and worker on the transports
 * named by UCX_TLS, an endpoint to the peer whose address came over the
 * test socket, and helpers to wait for requests. Used in the parent and in
 * forked children alike (no Catch2 inside).
 */
#ifndef TEST_UCP_UCP_PEER_H
#define TEST_UCP_UCP_PEER_H

#include "two_process.h"

#include <ucp/api/ucp.h>

#include <poll.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace ucp_test {

/* UCP settings by name and value, as ucp_config_modify takes them. */
using settings = std::vector<std::pair<const char *, const char *>>;

class peer {
public:
    peer()                        = default;
    peer(const peer &)            = delete;
    peer &operator=(const peer &) = delete;

    ~peer() { close(); }

    /* Context + worker on `tls` (UCX_TLS syntax). */
    ucs_status_t init(const char *tls, uint64_t features = UCP_FEATURE_TAG, size_t request_size = 0)
    {
        return init_with(tls, features, {}, false, request_size);
    }

    /* The same with extra UCP settings (ZCOPY_THRESH, RNDV_THRESH...), and
     * optionally UCP_PARAM_FIELD_MT_WORKERS_SHARED set. */
    ucs_status_t init_with(const char *tls, uint64_t features, const settings &extra,
                           bool shared_workers = false, size_t request_size = 0)
    {
        ucp_config_t *config;
        ucs_status_t status = ucp_config_read(nullptr, nullptr, &config);
        if (status != UCS_OK) {
            return status;
        }
        status = ucp_config_modify(config, "TLS", tls);
        for (const auto &s : extra) {
            if (status == UCS_OK) {
                status = ucp_config_modify(config, s.first, s.second);
            }
        }
        if (status == UCS_OK) {
            ucp_params_t params{};
            params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_REQUEST_SIZE |
                                UCP_PARAM_FIELD_MT_WORKERS_SHARED;
            params.features          = features;
            params.request_size      = request_size;
            params.mt_workers_shared = shared_workers ? 1 : 0;
            status                   = ucp_init(&params, config, &context);
        }
        ucp_config_release(config);
        if (status != UCS_OK) {
            return status;
        }
        ucp_worker_params_t wparams{};
        wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
        wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
        return ucp_worker_create(context, &wparams, &worker);
    }

    /* The worker's address; `net_only`: only its network transports
     * (UCP_WORKER_ADDRESS_FLAG_NET_ONLY, as an application gives to a peer
     * it wants to reach over the network). */
    std::vector<uint8_t> address(bool net_only = false) const
    {
        ucp_worker_attr_t attr{};
        attr.field_mask    = UCP_WORKER_ATTR_FIELD_ADDRESS | UCP_WORKER_ATTR_FIELD_ADDRESS_FLAGS;
        attr.address_flags = net_only ? UCP_WORKER_ADDRESS_FLAG_NET_ONLY : 0;
        if (ucp_worker_query(worker, &attr) != UCS_OK) {
            return {};
        }
        std::vector<uint8_t> blob(reinterpret_cast<uint8_t *>(attr.address),
                                  reinterpret_cast<uint8_t *>(attr.address) + attr.address_length);
        ucp_worker_release_address(worker, attr.address);
        return blob;
    }

    ucs_status_t connect(const std::vector<uint8_t> &remote,
                         ucp_err_handling_mode_t mode  = UCP_ERR_HANDLING_MODE_NONE,
                         ucp_err_handler_cb_t on_error = nullptr, void *arg = nullptr)
    {
        ucp_ep_params_t params{};
        params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                            UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
        params.address  = reinterpret_cast<const ucp_address_t *>(remote.data());
        params.err_mode = mode;
        if (on_error != nullptr) {
            params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLER;
            params.err_handler.cb  = on_error;
            params.err_handler.arg = arg;
        }
        return ucp_ep_create(worker, &params, &ep);
    }

    /* Exchanges addresses over the test socket and connects. */
    bool connect_over(int fd)
    {
        std::vector<uint8_t> remote;
        return test::send_blob(fd, address()) && test::recv_blob(fd, &remote) &&
               (connect(remote) == UCS_OK);
    }

    /* Reads a value from the test socket, progressing meanwhile: a
     * transport may still hold data of sends that completed locally. */
    template <typename T>
    bool recv_value_progress(int fd, T *value)
    {
        struct pollfd pfd = {fd, POLLIN, 0};
        while (::poll(&pfd, 1, 0) == 0) {
            ucp_worker_progress(worker);
        }
        return test::recv_value(fd, value);
    }

    /* Progresses until a message with exactly `tag` waits unexpected (the
     * sender's earlier messages have arrived too: order per sender). */
    bool wait_unexpected(ucp_tag_t tag)
    {
        return test::poll_until(
            [&] {
            ucp_tag_recv_info_t info;
            return ucp_tag_probe_nb(worker, tag, ~ucp_tag_t(0), 0, &info) != nullptr;
            },
            [&] { ucp_worker_progress(worker); });
    }

    /* Progresses until `request` completes; frees it; NULL is done already. */
    ucs_status_t wait(ucs_status_ptr_t request)
    {
        if (request == nullptr) {
            return UCS_OK;
        }
        if (UCS_PTR_IS_ERR(request)) {
            return UCS_PTR_STATUS(request);
        }
        ucs_status_t status;
        while ((status = ucp_request_check_status(request)) == UCS_INPROGRESS) {
            ucp_worker_progress(worker);
        }
        ucp_request_free(request);
        return status;
    }

    /* Blocking receive into buffer; info filled. */
    ucs_status_t recv(void *buffer, size_t length, ucp_tag_t tag, ucp_tag_t mask,
                      ucp_tag_recv_info_t *info, ucp_datatype_t dt = ucp_dt_make_contig(1))
    {
        ucp_request_param_t param{};
        param.op_attr_mask       = UCP_OP_ATTR_FIELD_RECV_INFO | UCP_OP_ATTR_FIELD_DATATYPE;
        param.recv_info.tag_info = info;
        param.datatype           = dt;
        ucs_status_ptr_t req     = ucp_tag_recv_nbx(worker, buffer, length, tag, mask, &param);
        if ((req == nullptr) || UCS_PTR_IS_ERR(req)) {
            return UCS_PTR_STATUS(req);
        }
        ucs_status_t status;
        while ((status = ucp_tag_recv_request_test(req, info)) == UCS_INPROGRESS) {
            ucp_worker_progress(worker);
        }
        ucp_request_free(req);
        return status;
    }

    ucs_status_t send(const void *buffer, size_t length, ucp_tag_t tag,
                      ucp_datatype_t dt = ucp_dt_make_contig(1))
    {
        ucp_request_param_t param{};
        param.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
        param.datatype     = dt;
        return wait(ucp_tag_send_nbx(ep, buffer, length, tag, &param));
    }

    /* Closes the ep at once (UCP_EP_CLOSE_FLAG_FORCE); the close's status. */
    ucs_status_t close_ep()
    {
        ucp_request_param_t param{};
        param.op_attr_mask  = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags         = UCP_EP_CLOSE_FLAG_FORCE;
        ucs_status_t status = wait(ucp_ep_close_nbx(ep, &param));
        ep                  = nullptr;
        return status;
    }

    void close()
    {
        if (ep != nullptr) {
            close_ep();
        }
        if (worker != nullptr) {
            ucp_worker_destroy(worker);
            worker = nullptr;
        }
        if (context != nullptr) {
            ucp_cleanup(context);
            context = nullptr;
        }
    }

    ucp_context_h context = nullptr;
    ucp_worker_h worker   = nullptr;
    ucp_ep_h ep           = nullptr;
};

/* What an ep's error handler saw: how often it ran, and the last status. */
struct ep_errors {
    unsigned calls      = 0;
    ucs_status_t status = UCS_OK;

    /* An ucp_err_handler_cb_t whose `arg` is the ep_errors. */
    static void record(void *arg, ucp_ep_h, ucs_status_t status)
    {
        auto *errors = static_cast<ep_errors *>(arg);
        ++errors->calls;
        errors->status = status;
    }
};

/* Installs (cb != nullptr) or clears a UCP AM handler for `id`. */
inline ucs_status_t set_am_handler(ucp_worker_h worker, uint16_t id, ucp_am_recv_callback_t cb,
                                   void *arg, uint32_t flags = 0)
{
    ucp_am_handler_param_t param{};
    param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                       UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
    param.id    = id;
    param.cb    = cb;
    param.arg   = arg;
    param.flags = flags;
    return ucp_worker_set_am_recv_handler(worker, &param);
}

/* Deterministic bytes of message `seed`, so the receiver can check them. */
inline void fill_pattern(uint8_t *buffer, size_t length, uint64_t seed)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < length; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        buffer[i] = uint8_t(x);
    }
}

inline bool check_pattern(const uint8_t *buffer, size_t length, uint64_t seed)
{
    if (length == 0) {
        return true;
    }
    std::vector<uint8_t> expected(length);
    fill_pattern(expected.data(), length, seed);
    return std::memcmp(buffer, expected.data(), length) == 0;
}

} // namespace ucp_test

#endif
