/*
 * The UCP worker: one uct interface per resource of the context, all
 * progressed by one uct::worker, plus the places where active-message
 * handlers and endpoints will live.
 */
#ifndef UCP_CORE_UCP_WORKER_H
#define UCP_CORE_UCP_WORKER_H

#include "ucp_address.h"
#include "ucp_context.h"

#include <uct/base/uct_worker.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ucp {

/* An interface opened on one of the context's resources. */
struct worker_iface {
    uct::iface *iface;
    unsigned   tl_index;   /* into ucp_context::tls */
};

/* A UCP-level active-message handler (filled by ucp_worker_set_am_*). */
struct am_handler {
    ucp_am_recv_callback_t cb = nullptr;
    void                   *arg = nullptr;
    uint32_t               flags = 0;
};

/* Largest user header ucp_am_send_nbx will take (the AM protocol honours it). */
constexpr size_t max_am_header = 256;
/* Size of ucp_request_query() info strings. */
constexpr size_t max_info_string = 512;

} // namespace ucp

struct ucp_worker {
    explicit ucp_worker(ucp_context &ctx) : context(ctx) {}
    ucp_worker(const ucp_worker &) = delete;
    ucp_worker &operator=(const ucp_worker &) = delete;
    ~ucp_worker();

    ucp_context                        &context;
    ucs_thread_mode_t                  thread_mode = UCS_THREAD_MODE_SINGLE;
    uint64_t                           uuid = 0;
    std::string                        name;
    void                               *user_data = nullptr;
    unsigned                           events = 0;
    uint64_t                           flags = 0;
    size_t                             am_alignment = 1;
    uint64_t                           client_id = 0;

    std::unique_ptr<uct::worker>       uct_worker;
    std::vector<ucp::worker_iface>     ifaces;

    /* Taken by API calls only in UCS_THREAD_MODE_MULTI. */
    std::mutex                         lock;

    /* Extension points for the next issues (AM, endpoints). */
    std::vector<ucp::am_handler>       am_handlers;  /* indexed by AM id */
    std::vector<ucp_ep_h>              endpoints;

    /* Opens an iface per context resource; on failure closes what it opened. */
    ucs_status_t open_ifaces();

    /* This worker's address, NET entries only when net_only. */
    ucp::unpacked_address address(bool net_only) const;

    unsigned progress()
    {
        if (thread_mode == UCS_THREAD_MODE_MULTI) {
            std::lock_guard<std::mutex> guard(lock);
            return uct_worker->progress();
        }
        return uct_worker->progress();
    }
};

#endif
