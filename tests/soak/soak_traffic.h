/*
 * The two halves of a soak process, both driven from one thread and one
 * worker: a sender that streams planned messages to the peer, and a
 * receiver that takes the peer's stream with the receive kind each
 * message's plan names and checks every byte. Each keeps up to `window`
 * messages in flight, so both directions run at once.
 */
#ifndef TESTS_SOAK_SOAK_TRAFFIC_H
#define TESTS_SOAK_SOAK_TRAFFIC_H

#include "soak_plan.h"

#include <ucp/api/ucp.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace soak {

/* Counters of one direction; the receiver fills the checks. */
struct stream_stats {
    uint64_t messages                            = 0;
    uint64_t bytes                               = 0;
    uint64_t sync_sends                          = 0;
    uint64_t by_kind[unsigned(recv_kind::count)] = {};
    uint64_t cancelled                           = 0; /* cancel kind: cancelled before any match */
    uint64_t cancel_too_late  = 0; /* cancel kind: had matched already, kept its data */
    uint64_t cancelled_at_end = 0; /* receives posted ahead for messages never sent */
    uint64_t imm_info_missing = 0; /* immediate completions that left recv_info unfilled */
    /* Errors: all must stay 0. */
    uint64_t corrupt_bytes = 0; /* payload bytes that differ from the pattern */
    uint64_t guard_bytes   = 0; /* bytes written around the receive region */
    uint64_t canary_bytes  = 0; /* bytes written by a cancelled receive */
    uint64_t length_errors = 0;
    uint64_t tag_errors    = 0;
    uint64_t status_errors = 0; /* requests completed with an unexpected status */

    uint64_t error_count() const
    {
        return corrupt_bytes + guard_bytes + canary_bytes + length_errors + tag_errors +
               status_errors;
    }

    /* What fails a run: the errors, and unfilled recv_info unless allowed. */
    uint64_t failure_count(bool allow_missing_imm_info) const
    {
        return error_count() + (allow_missing_imm_info ? 0 : imm_info_missing);
    }
};

/* A buffer per window slot, large enough for any message at any offset. */
class slot_buffer {
public:
    explicit slot_buffer(size_t capacity);
    ~slot_buffer();
    slot_buffer(const slot_buffer &)            = delete;
    slot_buffer &operator=(const slot_buffer &) = delete;

    uint8_t *data() { return data_; }
    /* Frees and allocates again (new pages: memory hooks and caches see
     * the old ones go), touching every page so resident memory stays put. */
    bool reallocate();

private:
    size_t capacity_;
    uint8_t *data_ = nullptr;
};

struct traffic_config {
    uint64_t tx_seed; /* our stream */
    uint64_t rx_seed; /* the peer's stream */
    size_t max_size;
    unsigned window;
    bool allow_missing_imm_info; /* UCX 1.13: tolerate, count, do not fail */
};

/* The first failure a request or the ep reported, for --expect-failure. */
struct failure_record {
    bool seen           = false;
    ucs_status_t status = UCS_OK;
    double unix_time    = 0; /* CLOCK_REALTIME: comparable across namespaces */
    std::string where;
    void note(ucs_status_t s, const char *what);
};

class sender {
public:
    sender(ucp_ep_h ep, const traffic_config &config, failure_record *failure);
    ~sender();

    /* Starts sends while the window has room and `more` allows. */
    bool start_sends(bool more);
    bool idle() const { return in_flight_ == 0; }
    uint64_t issued() const { return next_seq_; }
    uint64_t issued_bytes() const { return issued_bytes_; }
    const stream_stats &stats() const { return stats_; }

private:
    struct slot;
    static void on_send(void *request, ucs_status_t status, void *user_data);
    void complete(slot &s, ucs_status_t status);

    ucp_ep_h ep_;
    traffic_config config_;
    failure_record *failure_;
    std::vector<std::unique_ptr<slot>> slots_;
    uint64_t next_seq_     = 0;
    unsigned in_flight_    = 0;
    uint64_t issued_bytes_ = 0;
    stream_stats stats_;
};

class receiver {
public:
    receiver(ucp_worker_h worker, const traffic_config &config, failure_record *failure);
    ~receiver();

    /* Posts, probes and checks what can be done now; returns false when a
     * check failed in a way that makes going on pointless. */
    bool advance();
    /* The peer sent `count` messages in all: receives posted beyond are
     * cancelled (they must end with UCS_ERR_CANCELED, untouched). */
    void set_total(uint64_t count);
    /* After a failure: cancels every posted receive. */
    void cancel_all();
    bool done() const;
    bool quiet() const { return posted_ == 0; }
    uint64_t completed() const { return next_done_; }
    const stream_stats &stats() const { return stats_; }

private:
    struct slot;
    static void on_recv(void *request, ucs_status_t status, const ucp_tag_recv_info_t *info,
                        void *user_data);
    bool post_next();
    ucs_status_ptr_t post(slot &s, ucp_tag_t tag, ucp_tag_t mask, ucp_tag_message_h msg);
    void finish(slot &s);
    void cancel_slot(slot &s);

    ucp_worker_h worker_;
    traffic_config config_;
    failure_record *failure_;
    std::vector<std::unique_ptr<slot>> slots_;
    uint64_t next_post_   = 0; /* next message to take */
    uint64_t next_done_   = 0; /* oldest not finished */
    uint64_t total_       = UINT64_MAX;
    unsigned posted_      = 0;       /* requests still pending */
    slot *cancel_pending_ = nullptr; /* cancel not ended yet */
    stream_stats stats_;
};

} // namespace soak

#endif
