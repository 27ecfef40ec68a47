/*
 * The UCP worker: one uct interface per resource of the context, the ones
 * in use progressed by one uct::worker (see worker_iface), plus the places
 * where active-message handlers and endpoints live.
 */
#ifndef UCP_CORE_UCP_WORKER_H
#define UCP_CORE_UCP_WORKER_H

#include "ucp_address.h"
#include "ucp_context.h"
#include "ucp_ep_config.h"
#include "ucp_request.h"

#include <ucp/rma/rma_worker.h>
#include <ucp/wireup/wireup.h>
#include <ucs/async/recursive_lock.h>
#include <ucs/datastruct/callback_queue.h>
#include <ucs/datastruct/ptr_array.h>
#include <ucs/memory/mpool.h>
#include <uct/base/uct_worker.h>

#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ucp {

/*
 * An interface opened on one of the context's resources. Only active ones
 * are progressed on every call: those a lane of an ep uses, and those a
 * message or an event arrived on (a peer that connected to us through our
 * worker address). The others are looked at every idle_poll_period calls.
 */
struct worker_iface {
    uct::iface *iface;
    unsigned tl_index; /* into ucp_context::tls */
    bool active;       /* to be progressed on every call */
};

/* Progress calls between two looks at the inactive ifaces (a power of 2),
 * and looks between two polls of their event fds. */
constexpr unsigned idle_poll_period    = 256;
constexpr unsigned idle_fd_poll_period = 16;

/* Operations completed inside their call between two looks at the clock
 * (see ucp_worker::completed_in_call; a power of 2). */
constexpr unsigned immediate_check_period = 64;
/* How often, at most, the ifaces look for peers whose process died
 * (uct::iface::check_peers: one epoll_wait per shared-memory iface), from
 * the idle-period checks above. Bounds peer-failure detection on shared
 * memory; see docs/reliability.md. */
constexpr double peer_check_period_sec = 0.1;

/* A UCP-level active-message handler (filled by ucp_worker_set_am_*). */
struct am_handler {
    ucp_am_recv_callback_t cb   = nullptr;
    ucp_am_callback_t legacy_cb = nullptr; /* ucp_worker_set_am_handler */
    void *arg                   = nullptr;
    uint32_t flags              = 0;
};

/* Receive-side state of active messages and streams (ucp/am, ucp/stream),
 * made on first use. */
struct am_worker;
struct stream_worker;

/* Largest user header ucp_am_send_nbx will take (the AM protocol honours it). */
constexpr size_t max_am_header = 256;
/* Size of ucp_request_query() info strings. */
constexpr size_t max_info_string = 512;

struct rx_message;
struct wakeup;
namespace cs {
class cm;
}

/* Key of a multi-fragment message being received: sender worker + id. */
struct msg_key {
    uint64_t uuid;
    uint64_t msg_id;
    bool operator==(const msg_key &) const = default;
};

struct msg_key_hash {
    size_t operator()(const msg_key &k) const
    {
        return std::hash<uint64_t>()(k.uuid * 0x9e3779b97f4a7c15ull ^ k.msg_id);
    }
};

/* An ep's place in ep matching: the peer worker and the ep's conn_sn. */
using conn_key = msg_key;

/* Eps in ep matching (ucp/wireup/wireup.h), found by their conn_key made of
 * their own remote_uuid and conn_sn, which stay put while they are in a set:
 * a node holds no copy of the key (16 bytes, with thousands of eps). */
struct ep_match_hash {
    using is_transparent = void;
    size_t operator()(const conn_key &key) const noexcept;
    size_t operator()(const ucp_ep *ep) const noexcept;
};
struct ep_match_equal {
    using is_transparent = void;
    bool operator()(const ucp_ep *a, const ucp_ep *b) const noexcept;
    bool operator()(const conn_key &key, const ucp_ep *ep) const noexcept;
    bool operator()(const ucp_ep *ep, const conn_key &key) const noexcept;
};
using ep_match_set = std::unordered_set<ucp_ep *, ep_match_hash, ep_match_equal>;

/*
 * Work deferred out of transport callbacks, one slot of the worker's
 * progress_queue each, registered in this order when the worker is made so
 * that progress runs them in this order: a failed lane before its peer's
 * wireup, wireups before the replies waiting for their ep to be ready.
 * A feature schedules its slot when it queues work, and its callback
 * schedules it again while work is left.
 */
enum class deferred : unsigned {
    FAILED_LANES,
    CLOSED_PEERS,
    WIREUPS,
    REPLIES,
    RNDV,
    STREAM,
    RMA,
    FLUSH,
    count
};

/* A control reply that found its lane busy; sent again from progress. */
struct queued_reply {
    uint64_t ep_id; /* our ep the request named; resolved when sending */
    uint64_t uuid;  /* the peer worker that ep must reach */
    uint8_t am_id;
    uint64_t req_id;
    int8_t status;
};

} // namespace ucp

struct ucp_cntr;
namespace ucp::ext {
struct trigger_state;
struct pwc_state;
class event_set;
} // namespace ucp::ext

struct ucp_worker {
    explicit ucp_worker(ucp_context &ctx) : context(ctx) {}
    ucp_worker(const ucp_worker &)            = delete;
    ucp_worker &operator=(const ucp_worker &) = delete;
    ~ucp_worker();

    ucp_context &context;
    ucs_thread_mode_t thread_mode = UCS_THREAD_MODE_SINGLE;
    uint64_t uuid                 = 0;
    std::string name;
    void *user_data     = nullptr;
    unsigned events     = 0;
    uint64_t flags      = 0;
    size_t am_alignment = 1;
    uint64_t client_id  = 0;
    /* UCX_ATOMIC_MODE resolved (cpu or device) once from the resources. */
    ucp::atomic_mode atomic_mode = ucp::ATOMIC_MODE_CPU;

    std::unique_ptr<uct::worker> uct_worker;
    std::vector<ucp::worker_iface> ifaces;

    /* Taken by API calls only in UCS_THREAD_MODE_MULTI; recursive because
     * callbacks run under it and may call the API again. */
    ucs::recursive_lock lock;

    std::vector<ucp::am_handler> am_handlers; /* indexed by AM id */
    /* Indexed by layered id - UCP_EXT_AM_ID_LAYERED (<ucp/api/ucp_ext.h>). */
    std::vector<ucp::am_handler> layered_am_handlers;
    ucp::am_worker *am_state         = nullptr;
    ucp::stream_worker *stream_state = nullptr;

    /* Requests: pooled elements of sizeof(request) + user request_size. */
    ucs::mpool request_pool;
    /* Descriptors of small unexpected messages (tag/tag_recv.h). */
    ucs::mpool rx_message_pool;
    /* Records of operations counted on counters (ucp/ext/op_cntr.cc), set
     * up by the first one. */
    ucs::mpool counted_op_pool;

    /* Endpoints by index; ep_by_id() checks the generation of an id. */
    ucs::ptr_array<ucp_ep> ep_ids;
    uint32_t ep_generation = 1;
    /* Live eps this worker made for peers' REQUESTs (no USER flag),
     * bounded by UCX_MAX_PEER_EPS with the REQUESTs still queued. */
    unsigned num_peer_eps    = 0;
    uint64_t dropped_wireups = 0;
    /* Messages dropped because the ep they named is not ours (stale, forged). */
    uint64_t dropped_bad_ep_ids = 0;
    /* Ep matching (ucp/wireup/wireup.h): eps made to each peer by address
     * so far, our REQUESTs not answered yet, and eps made for the peer's
     * REQUESTs not adopted by the application yet, by (peer, conn_sn). */
    std::unordered_map<uint64_t, uint32_t> conn_sn_next;
    ucp::ep_match_set eps_expected;
    ucp::ep_match_set eps_unexpected;
    /* What eps with the same lanes share (ucp_ep_config.h), ep_cfg[i]. */
    std::vector<std::unique_ptr<ucp::ep_config>> ep_configs;

    /* Requests a peer's reply names: index in the low 32 bits, a generation
     * in the high ones so a stale or forged id matches nothing. */
    ucs::ptr_array<ucp::request> req_ids;
    uint32_t req_generation = 1;

    /* Tag matching and multi-fragment messages in flight. */
    ucp::tag::matcher tag_matcher;
    std::unordered_map<ucp::msg_key, ucp::request *, ucp::msg_key_hash> rx_expected;
    std::unordered_map<ucp::msg_key, ucp::rx_message *, ucp::msg_key_hash> rx_unexpected;
    uint64_t next_msg_id = 0;

    /* Deferred work (ucp::deferred) and polling features, run by progress:
     * the extensions (triggered operations, collectives, poll sets) register
     * their callbacks here too. */
    ucs::callback_queue progress_queue;
    /* By progress_queue id: 1 if ucp_worker_callback_add gave it. */
    std::vector<uint8_t> api_callbacks;

    /* Work deferred out of transport callbacks. */
    std::vector<std::pair<const uct::ep *, ucs_status_t>> failed_lanes;
    std::deque<ucp::queued_reply> queued_replies;
    /* Wireup messages checked by the handler, acted on from progress; a
     * REQUEST for a client-server ep still connecting waits here. */
    std::deque<ucp::wireup::message> wireup_msgs;
    unsigned queued_requests = 0; /* REQUESTs among them */
    /* Close notices: (peer worker uuid, our ep id). Id 0: the peer closed
     * its last ep to us, and all our eps to it fail; else the peer's ep
     * paired with that one of ours closed, which goes if it is internal. */
    std::vector<std::pair<uint64_t, uint64_t>> closed_peers;
    /* Rendezvous receives waiting for an ep to their sender or a free lane. */
    std::vector<ucp::request *> rndv_deferred;
    std::vector<ucp::request *> flush_requests;
    /* RMA and atomics: fence bookkeeping, replies owed to peers. */
    ucp::rma::worker_state rma;

    /* Keepalive: eps with peer error handling probe their peers. */
    uint64_t keepalive_interval = 0; /* ticks, 0: off */
    uint64_t keepalive_next     = 0;
    unsigned progress_count     = 0;
    /* Progress calls running (nested ones too: ucp_worker_fence from a
     * callback); callbacks inside them must not start another. */
    unsigned progress_depth = 0;
    /* Operations that completed inside their call since the last progress,
     * when that run reached immediate_check_period, and how long it may
     * last before the worker progresses by itself (ticks; 0: never). */
    unsigned immediate_ops               = 0;
    uint64_t immediate_since             = 0;
    uint64_t immediate_progress_interval = 0;
    /* Next look for dead peers (check_peers), in ticks. */
    uint64_t peer_check_next     = 0;
    uint64_t peer_check_interval = 0;
    /* Ifaces not progressed on every call (see worker_iface). */
    unsigned num_inactive_ifaces = 0;
    unsigned inactive_looks      = 0;

    /* UCP_FEATURE_WAKEUP state (ucp_wakeup.cc), nullptr without the feature. */
    ucp::wakeup *wakeup = nullptr;
    /* Counters created on this worker (ucp/ext/cntr.h). */
    std::unordered_set<ucp_cntr *> counters;
    /* Triggered operations (ucp/ext/trigger.h), made by the first one. */
    ucp::ext::trigger_state *triggers = nullptr;
    /* Put and get with completion ids (ucp/ext/pwc.h), made by the first
     * call or message. */
    ucp::ext::pwc_state *pwc = nullptr;
    /* Poll and wait sets the worker is in (ucp/ext/event_set.h). */
    std::vector<ucp::ext::event_set *> event_sets;
    /* Client-server connection manager, created by the first listener or
     * sockaddr ep (ucp/wireup/sockaddr_cm.h). */
    ucp::cs::cm *sockaddr_cm      = nullptr;
    unsigned sockaddr_progress_id = ucs::callback_queue::invalid_id;

    /* Opens an iface per context resource; on failure closes what it opened. */
    ucs_status_t open_ifaces();

    /* Progresses ifaces[index] on every call from now on (safe to call from
     * inside a transport's progress). */
    void activate_iface(unsigned index);

    /* Looks at the inactive ifaces; activates those with incoming work. */
    unsigned progress_inactive_ifaces();

    /* Asks each iface for dead peers when peer_check_interval has passed;
     * their eps are reported through worker_lane_error. */
    unsigned check_peers();

    /* This worker's address, NET entries only when net_only. */
    ucp::unpacked_address address(bool net_only) const;

    /* This worker's address, and for each of its entries the iface index. */
    ucp::unpacked_address address(bool net_only, std::vector<unsigned> *iface_of_entry) const;

    /* Gives `ep` its id (index in ep_ids and a generation). */
    ucs_status_t register_ep(ucp_ep *ep);
    /* The live ep a peer's message names by `id` if it reaches worker
     * `uuid`; nullptr for a stale or forged id (or another peer's ep). */
    ucp_ep *ep_by_id(uint64_t id, uint64_t uuid) const;

    /* Request ids for replies. */
    uint64_t register_request(ucp::request *req);
    ucp::request *lookup_request(uint64_t id) const;
    void unregister_request(ucp::request *req);

    /* A pooled request, or nullptr when memory ran out. */
    ucp::request *get_request() { return static_cast<ucp::request *>(request_pool.get()); }

    /* The next progress runs the deferred work of this kind. */
    void schedule(ucp::deferred work) { progress_queue.schedule(unsigned(work)); }

    /* Progress without taking the lock (callers hold it when they must). */
    unsigned progress_locked();

    /*
     * An RMA or atomic operation completed inside its API call, without a
     * request. A process that only spins on such operations never calls
     * progress, yet peers may need it: their emulated puts and atomics to
     * this process's memory (an OpenSHMEM PE polling its own variable with
     * atomic fetches, or testing a lock whose home it is) wait in its
     * transports. So a run of them lasting immediate_progress_interval
     * progresses the worker once. The common case costs an increment; the
     * clock is read once per immediate_check_period operations in a row.
     */
    void completed_in_call()
    {
        if (ucs_unlikely((++immediate_ops & (ucp::immediate_check_period - 1)) == 0)) {
            progress_after_immediate_run();
        }
    }
    void progress_after_immediate_run();

    bool multi_threaded() const { return thread_mode == UCS_THREAD_MODE_MULTI; }
};

namespace ucp {

/* UCX_ATOMIC_MODE for this worker: cpu or device (guess resolved). */
atomic_mode resolve_atomic_mode(const ucp_worker &worker);

/* Holds the worker lock for the scope of an API call in MULTI mode. */
class worker_guard {
public:
    explicit worker_guard(ucp_worker *w) : worker_(w->multi_threaded() ? w : nullptr)
    {
        if (worker_ != nullptr) {
            worker_->lock.lock();
        }
    }
    ~worker_guard()
    {
        if (worker_ != nullptr) {
            worker_->lock.unlock();
        }
    }
    worker_guard(const worker_guard &)            = delete;
    worker_guard &operator=(const worker_guard &) = delete;

private:
    ucp_worker *worker_;
};

} // namespace ucp

#endif
