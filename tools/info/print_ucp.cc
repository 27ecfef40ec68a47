#include "print_ucp.h"
#include "ep_protocols.h"

#include <ucp/core/ucp_ep.h>
#include <ucs/config/parser.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <chrono>
#include <cstring>
#include <string>

namespace info {

namespace {

/* A connection to our own listener takes a few round trips on loopback;
 * past this something is wrong and we say so instead of hanging. */
constexpr std::chrono::seconds CONNECT_TIMEOUT{10};

int failed(const char *what, ucs_status_t status)
{
    std::fprintf(stderr, "ucx_info: %s: %s\n", what, ucs_status_string(status));
    return 1;
}

/* -D and -P: device kinds left out, through UCX_<KIND>_DEVICES="" as a
 * user would (an empty list allows no device of that kind). */
ucs_status_t restrict_devices(ucp_config_t *config, const options &opts)
{
    unsigned allowed = opts.dev_types;
    if (opts.ucp_ep && (opts.peer != placement::SELF)) {
        /* A peer in another process cannot use self; on another node, no
         * shared memory either. */
        allowed &= ~dev_type::SELF;
        if (opts.peer == placement::INTER) {
            allowed &= ~dev_type::SHM;
        }
    }
    static const struct {
        unsigned bit;
        const char *var;
    } kinds[] = {
        {dev_type::NET, "NET_DEVICES"},
        {dev_type::SHM, "SHM_DEVICES"},
        {dev_type::SELF, "SELF_DEVICES"},
        {dev_type::ACC, "ACC_DEVICES"},
    };
    for (const auto &k : kinds) {
        if (!(allowed & k.bit)) {
            ucs_status_t status = ucp_config_modify(config, k.var, "");
            if (status != UCS_OK) {
                return status;
            }
        }
    }
    return UCS_OK;
}

/* Progresses until `done` or the timeout; false on timeout. */
template <typename Done>
bool progress_until(ucp_worker_h worker, Done done)
{
    const auto deadline = std::chrono::steady_clock::now() + CONNECT_TIMEOUT;
    while (!done()) {
        ucp_worker_progress(worker);
        if (std::chrono::steady_clock::now() > deadline) {
            return false;
        }
    }
    return true;
}

ucs_status_t wait_request(ucp_worker_h worker, ucs_status_ptr_t request)
{
    if (!UCS_PTR_IS_PTR(request)) {
        return UCS_PTR_STATUS(request);
    }
    ucs_status_t status = UCS_INPROGRESS;
    if (!progress_until(worker, [&] {
            return (status = ucp_request_check_status(request)) != UCS_INPROGRESS;
        })) {
        status = UCS_ERR_TIMED_OUT;
    }
    ucp_request_free(request);
    return status;
}

void close_ep(ucp_worker_h worker, ucp_ep_h ep)
{
    if (ep == nullptr) {
        return;
    }
    ucp_request_param_t param = {};
    if (wait_request(worker, ucp_ep_close_nbx(ep, &param)) != UCS_OK) {
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
        wait_request(worker, ucp_ep_close_nbx(ep, &param));
    }
}

ucp_ep_params_t base_ep_params(const options &opts)
{
    ucp_ep_params_t params = {};
    if (opts.err_handling) {
        params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
        params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    }
    return params;
}

/* -e: an endpoint to this worker's own address. */
int print_ep_to_self(ucp_worker_h worker, const options &opts)
{
    ucp_address_t *address;
    size_t length;
    ucs_status_t status = ucp_worker_get_address(worker, &address, &length);
    if (status != UCS_OK) {
        return failed("ucp_worker_get_address", status);
    }
    ucp_ep_params_t params = base_ep_params(opts);
    params.field_mask |= UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    params.address = address;
    ucp_ep_h ep;
    status = ucp_ep_create(worker, &params, &ep);
    ucp_worker_release_address(worker, address);
    if (status != UCS_OK) {
        return failed("ucp_ep_create", status);
    }
    print_ep_protocols(ep, stdout);
    close_ep(worker, ep);
    return 0;
}

/* -A: the IP address as a socket address, port 0 (the listener picks). */
bool parse_ip(const options &opts, sockaddr_storage *addr, socklen_t *len)
{
    std::memset(addr, 0, sizeof(*addr));
    if (opts.ipv6) {
        auto *in6        = reinterpret_cast<sockaddr_in6 *>(addr);
        in6->sin6_family = AF_INET6;
        *len             = sizeof(*in6);
        return inet_pton(AF_INET6, opts.ip_address.c_str(), &in6->sin6_addr) == 1;
    }
    auto *in       = reinterpret_cast<sockaddr_in *>(addr);
    in->sin_family = AF_INET;
    *len           = sizeof(*in);
    return inet_pton(AF_INET, opts.ip_address.c_str(), &in->sin_addr) == 1;
}

/* No public call tells whether a client-server ep is wired up yet. */
bool connected(ucp_ep_h ep)
{
    return !(ep->flags & ucp::ep_flag::CONNECTING) || !ep->usable();
}

void on_conn_request(ucp_conn_request_h request, void *arg)
{
    *static_cast<ucp_conn_request_h *>(arg) = request;
}

/* -e -A: a client endpoint to our own listener on that address, printed
 * once the connection is up (the server side accepts it here too). */
int print_ep_to_listener(ucp_worker_h worker, const options &opts)
{
    sockaddr_storage addr;
    socklen_t addr_len;
    if (!parse_ip(opts, &addr, &addr_len)) {
        std::fprintf(stderr, "ucx_info: -A %s: not an IPv%c address%s\n", opts.ip_address.c_str(),
                     opts.ipv6 ? '6' : '4', opts.ipv6 ? "" : " (-6 for IPv6)");
        return 1;
    }
    ucp_conn_request_h conn_request = nullptr;
    ucp_listener_params_t lparams   = {};
    lparams.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
    lparams.sockaddr.addr    = reinterpret_cast<const sockaddr *>(&addr);
    lparams.sockaddr.addrlen = addr_len;
    lparams.conn_handler.cb  = on_conn_request;
    lparams.conn_handler.arg = &conn_request;
    ucp_listener_h listener;
    ucs_status_t status = ucp_listener_create(worker, &lparams, &listener);
    if (status != UCS_OK) {
        std::fprintf(stderr, "ucx_info: cannot listen on %s: %s\n", opts.ip_address.c_str(),
                     ucs_status_string(status));
        return 1;
    }
    ucp_listener_attr_t lattr = {};
    lattr.field_mask          = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
    status                    = ucp_listener_query(listener, &lattr);
    if (status != UCS_OK) {
        ucp_listener_destroy(listener);
        return failed("ucp_listener_query", status);
    }

    int result      = 0;
    ucp_ep_h client = nullptr, server = nullptr;
    ucp_ep_params_t params = base_ep_params(opts);
    params.field_mask |= UCP_EP_PARAM_FIELD_SOCK_ADDR | UCP_EP_PARAM_FIELD_FLAGS;
    params.flags            = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    params.sockaddr.addr    = reinterpret_cast<const sockaddr *>(&lattr.sockaddr);
    params.sockaddr.addrlen = addr_len;
    status                  = ucp_ep_create(worker, &params, &client);
    if (status != UCS_OK) {
        client = nullptr;
        result = failed("ucp_ep_create (client)", status);
    } else if (!progress_until(worker, [&] { return conn_request != nullptr; })) {
        std::fprintf(stderr,
                     "ucx_info: no connection request reached the listener on "
                     "%s within %lld s\n",
                     opts.ip_address.c_str(), static_cast<long long>(CONNECT_TIMEOUT.count()));
        result = 1;
    } else {
        ucp_ep_params_t sparams = base_ep_params(opts);
        sparams.field_mask |= UCP_EP_PARAM_FIELD_CONN_REQUEST;
        sparams.conn_request = conn_request;
        status               = ucp_ep_create(worker, &sparams, &server);
        if (status != UCS_OK) {
            server = nullptr;
            result = failed("ucp_ep_create (server)", status);
        } else {
            /* Lanes are chosen once the server's address arrives: until
             * then the ep has only a placeholder lane. */
            if (!progress_until(worker, [&] { return connected(client); })) {
                std::fprintf(stderr,
                             "ucx_info: the endpoint to the listener on %s did "
                             "not connect within %lld s\n",
                             opts.ip_address.c_str(),
                             static_cast<long long>(CONNECT_TIMEOUT.count()));
                result = 1;
            } else if (!client->usable()) {
                result = failed("connecting to the listener", client->status);
            } else {
                print_ep_protocols(client, stdout);
            }
        }
    }
    close_ep(worker, client);
    close_ep(worker, server);
    ucp_listener_destroy(listener);
    return result;
}

/* The -m size as UCP reads it, checked here so a bad one is an error. */
bool valid_mem_size(const std::string &text)
{
    const auto &size_type = ucs::config::type_size;
    size_t length         = 0;
    return size_type.parse(text.c_str(), &length, size_type) && (length != 0) &&
           (length != ucs::config::size_inf) && (length != ucs::config::size_auto);
}

int print_worker_and_ep(ucp_context_h context, const options &opts)
{
    ucp_worker_params_t wparams = {};
    wparams.field_mask          = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode         = UCS_THREAD_MODE_SINGLE;
    ucp_worker_h worker;
    ucs_status_t status = ucp_worker_create(context, &wparams, &worker);
    if (status != UCS_OK) {
        return failed("ucp_worker_create", status);
    }
    int result = 0;
    if (opts.ucp_worker) {
        ucp_worker_print_info(worker, stdout);
    }
    if (opts.ucp_ep) {
        result = opts.ip_address.empty() ? print_ep_to_self(worker, opts) :
                                           print_ep_to_listener(worker, opts);
    }
    ucp_worker_destroy(worker);
    return result;
}

} // namespace

int print_ucp(const options &opts)
{
    if (!opts.mem_size.empty() && !valid_mem_size(opts.mem_size)) {
        std::fprintf(stderr, "ucx_info: -m %s: not a memory size (e.g. 4096, 64k, 1m)\n",
                     opts.mem_size.c_str());
        return 1;
    }
    ucp_config_t *config;
    ucs_status_t status = ucp_config_read(nullptr, nullptr, &config);
    if (status != UCS_OK) {
        return failed("ucp_config_read", status);
    }
    status = restrict_devices(config, opts);
    if (status != UCS_OK) {
        ucp_config_release(config);
        return failed("ucp_config_modify", status);
    }

    ucp_params_t params = {};
    params.field_mask   = UCP_PARAM_FIELD_FEATURES;
    params.features     = opts.features;
    if (opts.num_eps != 0) {
        params.field_mask |= UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
        params.estimated_num_eps = opts.num_eps;
    }
    if (opts.num_ppn != 0) {
        params.field_mask |= UCP_PARAM_FIELD_ESTIMATED_NUM_PPN;
        params.estimated_num_ppn = opts.num_ppn;
    }
    ucp_context_h context;
    status = ucp_init(&params, config, &context);
    ucp_config_release(config);
    if (status != UCS_OK) {
        return failed("ucp_init", status);
    }

    int result = 0;
    if (opts.ucp_context) {
        ucp_context_print_info(context, stdout);
    }
    if (!opts.mem_size.empty()) {
        ucp_mem_print_info(opts.mem_size.c_str(), context, stdout);
    }
    if (opts.ucp_worker || opts.ucp_ep) {
        result = print_worker_and_ep(context, opts);
    }
    ucp_cleanup(context);
    return result;
}

} // namespace info
