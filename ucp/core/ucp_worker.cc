/*
 * ucp_worker_* entry points: creation, query, address and progress.
 */
#include "ucp_worker.h"
#include "ucp_ep.h"
#include "ucp_guard.h"
#include "ucp_wakeup.h"

#include <ucp/ext/cntr.h>
#include <ucp/ext/event_set.h>
#include <ucp/ext/pwc.h>
#include <ucp/ext/trigger.h>
#include <ucp/proto/am_handlers.h>
#include <ucp/tag/tag_recv.h>
#include <ucp/wireup/sockaddr.h>

#include <ucs/debug/log.h>

#include <ucs/sys/clock.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <random>
#include <poll.h>
#include <unistd.h>

namespace {

uint64_t new_worker_uuid()
{
    static std::atomic<uint64_t> counter{0};
    std::random_device rd;
    uint64_t value = (static_cast<uint64_t>(rd()) << 32) ^ rd();
    /* Mixing in pid and a counter keeps ids distinct even with a weak rd. */
    value ^= (static_cast<uint64_t>(getpid()) << 20) ^ counter.fetch_add(1);
    return value;
}

std::string default_worker_name()
{
    char host[64] = {};
    gethostname(host, sizeof(host) - 1);
    return std::string(host) + ":" + std::to_string(getpid());
}

ucs_status_t apply_params(ucp_worker &worker, const ucp_worker_params_t &params)
{
    const uint64_t mask = params.field_mask;
    if (mask & UCP_WORKER_PARAM_FIELD_THREAD_MODE) {
        /* Read as a plain integer: a C caller may store any value there. */
        unsigned raw_mode;
        static_assert(sizeof(raw_mode) == sizeof(params.thread_mode));
        std::memcpy(&raw_mode, &params.thread_mode, sizeof(raw_mode));
        if (raw_mode >= UCS_THREAD_MODE_LAST) {
            ucs_error("ucp_worker_create: invalid thread mode %u", raw_mode);
            return UCS_ERR_INVALID_PARAM;
        }
        worker.thread_mode = static_cast<ucs_thread_mode_t>(raw_mode);
    } else {
        worker.thread_mode = worker.context.thread_mode();
    }
    /* cpu_mask: resources are not placed by CPU yet; nothing to do. */
    if (mask & UCP_WORKER_PARAM_FIELD_EVENTS) {
        worker.events = params.events;
    }
    if (mask & UCP_WORKER_PARAM_FIELD_USER_DATA) {
        worker.user_data = params.user_data;
    }
    if ((mask & UCP_WORKER_PARAM_FIELD_EVENT_FD) &&
        !(worker.context.features & UCP_FEATURE_WAKEUP)) {
        ucs_error("ucp_worker_create: event_fd needs UCP_FEATURE_WAKEUP");
        return UCS_ERR_INVALID_PARAM;
    }
    if (mask & UCP_WORKER_PARAM_FIELD_FLAGS) {
        worker.flags = params.flags;
    }
    if ((mask & UCP_WORKER_PARAM_FIELD_NAME) && (params.name != nullptr)) {
        worker.name.assign(params.name, strnlen(params.name, UCP_ENTITY_NAME_MAX - 1));
    } else {
        worker.name = default_worker_name();
        if (worker.name.size() >= UCP_ENTITY_NAME_MAX) {
            worker.name.resize(UCP_ENTITY_NAME_MAX - 1);
        }
    }
    if (mask & UCP_WORKER_PARAM_FIELD_AM_ALIGNMENT) {
        if ((params.am_alignment != 0) &&
            ((params.am_alignment & (params.am_alignment - 1)) != 0)) {
            ucs_error("ucp_worker_create: am_alignment %zu is not a power of 2",
                      params.am_alignment);
            return UCS_ERR_INVALID_PARAM;
        }
        worker.am_alignment = (params.am_alignment == 0) ? 1 : params.am_alignment;
    }
    if (mask & UCP_WORKER_PARAM_FIELD_CLIENT_ID) {
        worker.client_id = params.client_id;
    }
    return UCS_OK;
}

void request_obj_init(void *arg, void *obj, void *)
{
    auto *worker = static_cast<ucp_worker *>(arg);
    auto *req    = static_cast<ucp::request *>(obj);
    std::memset(static_cast<void *>(req), 0, sizeof(*req));
    if (worker->context.request_init != nullptr) {
        worker->context.request_init(req->user_ptr());
    }
}

void request_obj_cleanup(void *arg, void *obj)
{
    auto *worker = static_cast<ucp_worker *>(arg);
    if (worker->context.request_cleanup != nullptr) {
        worker->context.request_cleanup(static_cast<ucp::request *>(obj)->user_ptr());
    }
}

ucs_status_t init_request_pool(ucp_worker &worker)
{
    ucs::mpool_params params;
    params.name            = "ucp_requests";
    params.elem_size       = sizeof(ucp::request) + worker.context.user_request_size;
    params.alignment       = 64;
    params.elems_per_chunk = 128;
    params.ops.obj_init    = request_obj_init;
    params.ops.obj_cleanup = request_obj_cleanup;
    params.arg             = &worker;
    return worker.request_pool.init(params);
}

ucs_status_t init_rx_message_pool(ucp_worker &worker)
{
    ucs::mpool_params params;
    params.name            = "ucp_rx_messages";
    params.elem_size       = sizeof(ucp::rx_message) + ucp::rx_message_pooled_payload;
    params.alignment       = 64;
    params.elems_per_chunk = 128;
    return worker.rx_message_pool.init(params);
}

} // namespace

namespace ucp {

atomic_mode resolve_atomic_mode(const ucp_worker &worker)
{
    const auto mode = static_cast<atomic_mode>(worker.context.config.atomic_mode);
    if (mode != ATOMIC_MODE_GUESS) {
        return mode;
    }
    /* Device atomics where a transport has every operation the context's
     * features ask for (as UCX guesses): in device mode a CPU atomic on the
     * same word would not be atomic with the NIC's, so none may be missing.
     * A device with some of them (verbs: 64-bit add and compare-swap) leaves
     * the context in cpu mode, where its peers' CPUs apply what comes.
     * Every worker of a context sees the same resources. */
    using uct::atomic_op;
    using uct::atomic_op_bit;
    const uint64_t post = atomic_op_bit(atomic_op::ADD) | atomic_op_bit(atomic_op::AND) |
                          atomic_op_bit(atomic_op::OR) | atomic_op_bit(atomic_op::XOR);
    const uint64_t fetch = post | atomic_op_bit(atomic_op::SWAP) | atomic_op_bit(atomic_op::CSWAP);
    const uint64_t features = worker.context.features;
    const bool need32       = (features & UCP_FEATURE_AMO32) != 0;
    const bool need64       = (features & UCP_FEATURE_AMO64) != 0;
    if (!need32 && !need64) {
        return ATOMIC_MODE_CPU;
    }
    for (const worker_iface &wi : worker.ifaces) {
        const uct::iface_attr &attr = wi.iface->attr();
        const bool has32            = ((attr.atomic32_post & post) == post) &&
                           ((attr.atomic32_fetch & fetch) == fetch);
        const bool has64 = ((attr.atomic64_post & post) == post) &&
                           ((attr.atomic64_fetch & fetch) == fetch);
        if ((attr.flags & uct::iface_flag::ATOMIC_DEVICE) && (!need32 || has32) &&
            (!need64 || has64)) {
            return ATOMIC_MODE_DEVICE;
        }
    }
    return ATOMIC_MODE_CPU;
}

} // namespace ucp

namespace {

ucs_status_t create_worker(ucp_context &context, const ucp_worker_params_t &params,
                           ucp_worker_h *worker_p)
{
    auto worker         = std::make_unique<ucp_worker>(context);
    ucs_status_t status = apply_params(*worker, params);
    if (status != UCS_OK) {
        return status;
    }
    worker->uuid = new_worker_uuid();
    /* In MULTI mode this worker's lock serialises every call into the
     * transports, so they run single-threaded and keep lock-free data paths. */
    const ucs_thread_mode_t uct_mode = (worker->thread_mode == UCS_THREAD_MODE_MULTI) ?
                                           UCS_THREAD_MODE_SERIALIZED :
                                           worker->thread_mode;
    worker->uct_worker               = std::make_unique<uct::worker>(nullptr, uct_mode);
    worker->next_msg_id              = worker->uuid * 0x9e3779b97f4a7c15ull;
    worker->peer_check_interval      = ucs::sys::time_from_sec(ucp::peer_check_period_sec);
    worker->peer_check_next          = ucs::sys::get_time() + worker->peer_check_interval;
    const double interval            = context.config.keepalive_interval;
    if ((interval > 0) && (interval < 1e9)) {
        worker->keepalive_interval = std::max<uint64_t>(ucs::sys::time_from_sec(interval), 1);
        worker->keepalive_next     = ucs::sys::get_time() + worker->keepalive_interval;
    }
    const double immediate = context.config.immediate_progress_interval;
    if (immediate < 1e9) {
        worker->immediate_progress_interval = std::max<uint64_t>(ucs::sys::time_from_sec(immediate),
                                                                 1);
    }
    ucp::register_deferred_work(worker.get());
    status = init_request_pool(*worker);
    if (status != UCS_OK) {
        return status;
    }
    status = init_rx_message_pool(*worker);
    if (status != UCS_OK) {
        return status;
    }
    status = worker->open_ifaces();
    if (status != UCS_OK) {
        return status;
    }
    worker->atomic_mode = ucp::resolve_atomic_mode(*worker);
    if (context.features & UCP_FEATURE_WAKEUP) {
        status = ucp::worker_wakeup_init(worker.get(), params);
        if (status != UCS_OK) {
            return status;
        }
    }
    ucs_debug("created worker '%s' (uuid 0x%llx) with %zu ifaces", worker->name.c_str(),
              static_cast<unsigned long long>(worker->uuid), worker->ifaces.size());
    *worker_p = worker.release();
    return UCS_OK;
}

} // namespace

ucp_worker::~ucp_worker()
{
    /* Out of every poll and wait set first: their epoll sets hold our fd. */
    ucp::ext::member_gone({UCP_OBJECT_WORKER, this}, &event_sets);
    /* Endpoints first: they hold uct eps of the ifaces below. */
    std::vector<ucp_ep *> eps;
    for (unsigned i = 0; i < ep_ids.size(); ++i) {
        if (ucp_ep *ep = ep_ids.lookup(i)) {
            eps.push_back(ep);
        }
    }
    for (ucp_ep *ep : eps) {
        /* Closed first: destroying the worker is no peer failure to report. */
        ep->flags |= ucp::ep_flag::CLOSED;
        ucp::ep_set_failed(ep, UCS_ERR_CANCELED);
        ucp::ep_destroy(ep);
    }
    ucp::sockaddr_cleanup(this);
    ucp::tag_recv_cleanup(this);
    ucp::am_cleanup(this);
    ucp::stream_cleanup(this);
    ucp::ext::triggers_cleanup(this); /* what the cleanups above did not complete */
    ucp::ext::pwc_cleanup(this);
    ucp::cntr_cleanup(this); /* their fds hold the wakeup fd */
    for (auto it = ifaces.rbegin(); it != ifaces.rend(); ++it) {
        uct_worker->progress_unregister(it->iface);
        delete it->iface;
    }
    ifaces.clear();
    ucp::worker_wakeup_cleanup(this);
}

ucs_status_t ucp_worker::open_ifaces()
{
    std::string env_prefix = context.env_prefix.empty() ? "" : context.env_prefix + "_";
    for (unsigned i = 0; i < context.tls.size(); ++i) {
        const ucp::tl_entry &tl = context.tls[i];
        uct::iface_params params;
        params.tl_name         = tl.resource.tl_name;
        params.dev_name        = tl.resource.dev_name;
        params.env_prefix      = env_prefix.c_str();
        params.err_handler     = ucp::worker_lane_error;
        params.err_handler_arg = this;

        uct::iface *iface   = nullptr;
        ucs_status_t status = context.mds[tl.md_index].md->iface_open(*uct_worker, params, &iface);
        if (status != UCS_OK) {
            ucs_error("worker '%s': failed to open %s/%s: %s", name.c_str(), tl.resource.tl_name,
                      tl.resource.dev_name, ucs_status_string(status));
            return status; /* the destructor closes the ones already open */
        }
        /* Transports register for progress when opened; we progress an
         * iface on every call only once something uses it. */
        uct_worker->progress_unregister(iface);
        ifaces.push_back({iface, i, false});
        ++num_inactive_ifaces;
        status = ucp::set_am_handlers(this, iface);
        if (status != UCS_OK) {
            return status;
        }
    }
    return UCS_OK;
}

ucp::unpacked_address ucp_worker::address(bool net_only) const
{
    return address(net_only, nullptr);
}

ucp::unpacked_address ucp_worker::address(bool net_only,
                                          std::vector<unsigned> *iface_of_entry) const
{
    ucp::unpacked_address addr;
    addr.worker_uuid = uuid;
    addr.node_id     = ucp::local_node_id();
    addr.worker_name = name;
    addr.net_only    = net_only;
    for (unsigned i = 0; i < ifaces.size(); ++i) {
        const ucp::worker_iface &wi = ifaces[i];
        const ucp::tl_entry &tl     = context.tls[wi.tl_index];
        if (net_only && (tl.resource.type != uct::device_type::NET)) {
            continue;
        }
        ucp::address_entry e;
        e.tl_name                   = tl.resource.tl_name;
        e.md_name                   = context.mds[tl.md_index].name;
        e.dev_type                  = tl.resource.type;
        const uct::iface_attr &attr = wi.iface->attr();
        e.flags                     = ((attr.flags & uct::iface_flag::CONNECT_TO_IFACE) ?
                                           ucp::address_entry_flag::CONNECT_TO_IFACE :
                                           0) |
                  ((attr.flags & uct::iface_flag::CONNECT_TO_EP) ?
                       ucp::address_entry_flag::CONNECT_TO_EP :
                       0);
        if (e.flags == 0) {
            continue; /* nothing can connect to it */
        }
        e.dev_addr.resize(attr.device_addr_len);
        e.iface_addr.resize(attr.iface_addr_len);
        ucs_status_t status = wi.iface->get_device_address(e.dev_addr.data());
        if (status == UCS_OK) {
            status = wi.iface->get_address(e.iface_addr.data());
        }
        if (status != UCS_OK) {
            ucs_warn("worker '%s': %s/%s has no address (%s), leaving it out", name.c_str(),
                     tl.resource.tl_name, tl.resource.dev_name, ucs_status_string(status));
            continue;
        }
        addr.entries.push_back(std::move(e));
        if (iface_of_entry != nullptr) {
            iface_of_entry->push_back(i);
        }
    }
    return addr;
}

ucs_status_t ucp_worker::register_ep(ucp_ep *ep)
{
    ucs_status_t status = ep_ids.insert(ep, &ep->id);
    if (status != UCS_OK) {
        return status;
    }
    ep->local_id = (uint64_t(ep_generation++) << 32) | ep->id;
    if (ep_generation == 0) {
        ep_generation = 1; /* 0 never names an ep */
    }
    return UCS_OK;
}

ucp_ep *ucp_worker::ep_by_id(uint64_t id, uint64_t peer_uuid) const
{
    ucp_ep *ep = ep_ids.lookup(uint32_t(id));
    if ((ep == nullptr) || (ep->local_id != id) || (ep->remote_uuid != peer_uuid)) {
        return nullptr;
    }
    return ep;
}

uint64_t ucp_worker::register_request(ucp::request *req)
{
    unsigned index;
    if (req_ids.insert(req, &index) != UCS_OK) {
        return 0;
    }
    uint64_t id = (uint64_t(req_generation++) << 32) | index;
    if (req_generation == 0) {
        req_generation = 1; /* 0 never names a request */
    }
    req->id = id;
    req->flags |= ucp::request_flag::HAS_ID;
    return id;
}

ucp::request *ucp_worker::lookup_request(uint64_t id) const
{
    ucp::request *req = req_ids.lookup(uint32_t(id));
    if ((req == nullptr) || (req->id != id)) {
        return nullptr;
    }
    return req;
}

void ucp_worker::unregister_request(ucp::request *req)
{
    if (req->flags & ucp::request_flag::HAS_ID) {
        req_ids.remove(uint32_t(req->id));
        req->flags &= ~ucp::request_flag::HAS_ID;
    }
}

void ucp_worker::activate_iface(unsigned index)
{
    ucp::worker_iface &wi = ifaces[index];
    if (wi.active) {
        return;
    }
    wi.active = true;
    --num_inactive_ifaces;
    /* Safe from inside the uct worker's progress, which walks its list by
     * index. cma and the like register themselves when they have work. */
    if (!wi.iface->progresses_on_demand()) {
        uct_worker->progress_register(wi.iface);
    }
    ucs_debug("worker '%s': progressing %s/%s from now on", name.c_str(),
              context.tls[wi.tl_index].resource.tl_name,
              context.tls[wi.tl_index].resource.dev_name);
}

unsigned ucp_worker::progress_inactive_ifaces()
{
    /* Event fds cost a system call: asked only every few looks. Transports
     * whose progress is cheap without eps (shared memory) show arrivals
     * there; tcp shows new connections on its fd at once. */
    const bool poll_fds = (++inactive_looks % ucp::idle_fd_poll_period) == 0;
    unsigned count      = 0;
    for (unsigned i = 0; i < ifaces.size(); ++i) {
        ucp::worker_iface &wi = ifaces[i];
        if (wi.active) {
            continue;
        }
        unsigned n = wi.iface->progress();
        if ((n == 0) && poll_fds && (wi.iface->attr().event_flags & uct::event_flag::FD)) {
            int fd = -1;
            if (wi.iface->event_fd_get(&fd) == UCS_OK) {
                pollfd pfd{fd, POLLIN, 0};
                n = (::poll(&pfd, 1, 0) > 0) ? 1 : 0;
            }
        }
        if (n != 0) {
            activate_iface(i); /* a peer reaches us there */
            count += n;
        }
    }
    return count;
}

unsigned ucp_worker::check_peers()
{
    const uint64_t now = ucs::sys::get_time();
    if (now < peer_check_next) {
        return 0;
    }
    peer_check_next = now + peer_check_interval;
    unsigned count  = 0;
    for (const ucp::worker_iface &wi : ifaces) {
        count += wi.iface->check_peers();
    }
    return count;
}

namespace {

/* The body of progress, inlined into ucp_worker_progress (the hot loop of
 * every application) instead of called through the PLT. */
inline unsigned progress_inline(ucp_worker &w)
{
    ++w.progress_depth;
    unsigned count = w.uct_worker->progress();
    /* Once every idle_poll_period calls: dead peers and keepalive when
     * their time has come, and the ifaces no ep uses (yet) for peers that
     * connect to us. */
    if (ucs_unlikely((++w.progress_count & (ucp::idle_poll_period - 1)) == 0)) {
        count += w.check_peers();
        if (w.keepalive_interval != 0) {
            ucp::worker_keepalive(&w);
        }
        if (w.num_inactive_ifaces != 0) {
            count += w.progress_inactive_ifaces();
        }
    }
    if (ucs_unlikely(!w.progress_queue.idle())) {
        count += w.progress_queue.dispatch();
    }
    --w.progress_depth;
    w.immediate_ops = 0;
    return count;
}

} // namespace

unsigned ucp_worker::progress_locked()
{
    return progress_inline(*this);
}

void ucp_worker::progress_after_immediate_run()
{
    if ((immediate_progress_interval == 0) || (progress_depth != 0)) {
        return;
    }
    const uint64_t now = ucs::sys::get_time();
    if (immediate_ops == ucp::immediate_check_period) {
        immediate_since = now; /* a run starts */
    } else if (now - immediate_since >= immediate_progress_interval) {
        progress_locked();
    }
}

namespace {

ucs_status_t get_address(ucp_worker &worker, bool net_only, ucp_address_t **address_p,
                         size_t *length_p)
{
    return ucp::guarded("ucp_worker_get_address", [&]() {
        void *buffer;
        ucs_status_t status = ucp::pack_address(worker.address(net_only), &buffer, length_p);
        if (status == UCS_OK) {
            *address_p = static_cast<ucp_address_t *>(buffer);
        }
        return status;
    });
}

} // namespace

extern "C" {

ucs_status_t ucp_worker_create(ucp_context_h context, const ucp_worker_params_t *params,
                               ucp_worker_h *worker_p)
{
    if ((context == nullptr) || (params == nullptr) || (worker_p == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    return ucp::guarded("ucp_worker_create",
                        [&]() { return create_worker(*context, *params, worker_p); });
}

void ucp_worker_destroy(ucp_worker_h worker)
{
    ucp::guarded("ucp_worker_destroy", [&]() {
        delete worker;
        return UCS_OK;
    });
}

ucs_status_t ucp_worker_query(ucp_worker_h worker, ucp_worker_attr_t *attr)
{
    if ((worker == nullptr) || (attr == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    const uint64_t mask = attr->field_mask;
    if (mask & UCP_WORKER_ATTR_FIELD_THREAD_MODE) {
        attr->thread_mode = worker->thread_mode;
    }
    if (mask & UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER) {
        attr->max_am_header = ucp::max_am_header;
    }
    if (mask & UCP_WORKER_ATTR_FIELD_NAME) {
        std::snprintf(attr->name, sizeof(attr->name), "%s", worker->name.c_str());
    }
    if (mask & UCP_WORKER_ATTR_FIELD_MAX_INFO_STRING) {
        attr->max_debug_string = ucp::max_info_string;
    }
    if (mask & UCP_WORKER_ATTR_FIELD_ADDRESS) {
        bool net_only = (mask & UCP_WORKER_ATTR_FIELD_ADDRESS_FLAGS) &&
                        (attr->address_flags & UCP_WORKER_ADDRESS_FLAG_NET_ONLY);
        return get_address(*worker, net_only, &attr->address, &attr->address_length);
    }
    return UCS_OK;
}

ucs_status_t ucp_worker_get_address(ucp_worker_h worker, ucp_address_t **address_p,
                                    size_t *address_length_p)
{
    if ((worker == nullptr) || (address_p == nullptr) || (address_length_p == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    return get_address(*worker, false, address_p, address_length_p);
}

void ucp_worker_release_address(ucp_worker_h, ucp_address_t *address)
{
    std::free(address);
}

ucs_status_t ucp_worker_address_query(ucp_address_t *address, ucp_worker_address_attr_t *attr)
{
    if ((address == nullptr) || (attr == nullptr)) {
        return UCS_ERR_INVALID_PARAM;
    }
    uint64_t uuid;
    /* Only a pointer: the fixed header is all we may read before checking it. */
    ucs_status_t status = ucp::address_peek(address, ucp::address_header_size, nullptr, &uuid);
    if ((status == UCS_OK) && (attr->field_mask & UCP_WORKER_ADDRESS_ATTR_FIELD_UID)) {
        attr->worker_uid = uuid;
    }
    return status;
}

unsigned ucp_worker_progress(ucp_worker_h worker)
{
    if (worker == nullptr) {
        return 0;
    }
    try {
        ucp::worker_guard guard(worker);
        return progress_inline(*worker);
    } catch (...) {
        ucs_error("ucp_worker_progress: unexpected failure");
        return 0;
    }
}

void ucp_worker_print_info(ucp_worker_h worker, FILE *stream)
{
    if ((worker == nullptr) || (stream == nullptr)) {
        return;
    }
    ucp::guarded("ucp_worker_print_info", [&]() {
        std::fprintf(stream, "#\n# UCP worker '%s'\n#\n", worker->name.c_str());
        std::fprintf(stream, "#     uuid: 0x%016llx\n",
                     static_cast<unsigned long long>(worker->uuid));
        std::fprintf(stream, "#     thread mode: %s\n", ucs_thread_mode_names[worker->thread_mode]);
        std::fprintf(stream, "#     atomic mode: %s\n",
                     ucp::atomic_mode_names[worker->atomic_mode]);
        std::fprintf(stream, "#     endpoint configurations: %zu\n", worker->ep_configs.size());
        for (const ucp::worker_iface &wi : worker->ifaces) {
            const uct::tl_resource &res = worker->context.tls[wi.tl_index].resource;
            const uct::iface_attr &attr = wi.iface->attr();
            std::fprintf(stream,
                         "#     iface %s/%s: am short %zu bcopy %zu, "
                         "address %zu+%zu bytes, %s\n",
                         res.tl_name, res.dev_name, attr.am.max_short, attr.am.max_bcopy,
                         attr.device_addr_len, attr.iface_addr_len,
                         wi.active ? "progressed" : "idle (looked at now and then)");
        }
        std::fprintf(stream, "#\n");
        return UCS_OK;
    });
}

} // extern "C"
