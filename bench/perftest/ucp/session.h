/*
 * One side of a UCP test: context, worker, endpoint to the peer, message
 * buffers and (for one-sided tests) the peer's memory, all through the
 * public UCP API. Every setup step is agreed with the peer over the
 * out-of-band channel, so a step that fails on either side ends the test
 * on both with the reason, and the channel stays in step.
 */
#ifndef BENCH_PERFTEST_UCP_SESSION_H
#define BENCH_PERFTEST_UCP_SESSION_H

#include "../module.h"

#include <ucp/api/ucp.h>

#include <string>
#include <vector>

namespace perftest::ucp {

/* Waiting loops look for a vanished peer once per this many polls. */
constexpr unsigned PEER_CHECK_SPINS = 1u << 14;

class session {
public:
    /* `context`: one shared with other sessions (-T), kept by the caller;
     * nullptr: the session creates its own. */
    session(const test_spec &spec, perf::oob &channel, ucp_context_h context = nullptr);
    ~session();
    session(const session &)            = delete;
    session &operator=(const session &) = delete;

    /* Context, worker, endpoint, buffers, remote key. */
    run_status setup(std::string *error);
    /* Flushes and closes the endpoint, together with the peer. */
    run_status close(std::string *error);

    inline void progress()
    {
        if (ucs_unlikely(sleep_wait_) && (ucp_worker_progress(worker_) == 0)) {
            ucp_worker_wait(worker_);
        } else {
            ucp_worker_progress(worker_);
        }
    }

    /* A barrier that keeps the worker progressing while it waits: the peer
     * may need us to complete what it is doing (emulated RMA, flush). */
    bool progress_barrier();

    ucp_worker_h worker() const { return worker_; }
    ucp_ep_h ep() const { return ep_; }
    perf::oob &channel() { return channel_; }

    /* Message buffers, as the operations take them (contig or iov). */
    void *send_arg() { return send_iov_.empty() ? send_buf_ : (void *)send_iov_.data(); }
    void *recv_arg() { return recv_iov_.empty() ? recv_buf_ : (void *)recv_iov_.data(); }
    size_t send_count() const { return send_iov_.empty() ? length_ : send_iov_.size(); }
    size_t recv_count() const { return recv_iov_.empty() ? length_ : recv_iov_.size(); }
    ucp_datatype_t send_datatype() const;
    ucp_datatype_t recv_datatype() const;

    uint8_t *send_buffer() { return send_buf_; }
    uint8_t *recv_buffer() { return recv_buf_; }
    size_t length() const { return length_; }
    ucp_mem_h send_memh() const { return send_memh_; }
    ucp_mem_h recv_memh() const { return recv_memh_; }

    /* The peer's receive buffer (one-sided tests). */
    uint64_t remote_address() const { return remote_addr_; }
    ucp_rkey_h rkey() const { return rkey_; }

private:
    bool agreed(bool ok_here, const std::string &why_here, std::string *error);
    std::string create_worker();
    std::string connect();
    std::string make_buffers();
    std::string allocate_buffer(int fill, uint8_t mem_type, uint8_t **buffer, ucp_mem_h *memh,
                                bool *owned);
    std::string exchange_keys();
    /* ucp_mem_map flags of the buffers (-B: NONBLOCK). */
    unsigned map_flags() const;

    const test_spec &spec_;
    perf::oob &channel_;
    bool sleep_wait_;
    ucp_context_h context_ = nullptr;
    bool own_context_      = false;
    ucp_worker_h worker_   = nullptr;
    ucp_ep_h ep_           = nullptr;
    uint8_t *send_buf_     = nullptr;
    uint8_t *recv_buf_     = nullptr;
    size_t length_         = 0; /* message bytes */
    size_t buf_size_       = 0; /* allocated bytes (strided iov included) */
    std::vector<ucp_dt_iov_t> send_iov_, recv_iov_;
    ucp_mem_h send_memh_  = nullptr;
    ucp_mem_h recv_memh_  = nullptr;
    bool send_owned_      = false; /* ours to free (not UCP's) */
    bool recv_owned_      = false;
    uint64_t remote_addr_ = 0;
    ucp_rkey_h rkey_      = nullptr;
};

/* A context for the spec's test; mt_workers_shared for -T. Empty string,
 * or why not. */
std::string create_context(const test_spec &spec, bool mt_workers_shared, ucp_context_h *context_p);

/* "what: status text" */
std::string failed(const char *what, ucs_status_t status);

} // namespace perftest::ucp

#endif
