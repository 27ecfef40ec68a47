/*
 * The UCP test loops, one instance per command so the choice of operation
 * costs nothing per iteration. Ping-pong: the initiator sends, the
 * responder answers, one round trip per iteration. Stream: the initiator
 * keeps up to `window` operations in flight, one iteration per operation,
 * and stops the clock when the responder acknowledged the last message
 * (two-sided) or a flush completed them all (one-sided).
 *
 * Operations are *_nbx calls without UCP_OP_ATTR_FLAG_NO_IMM_CMPL: NULL
 * means completed at once, a request completes in a callback that counts
 * it and frees it.
 */
#ifndef BENCH_PERFTEST_UCP_ENGINE_H
#define BENCH_PERFTEST_UCP_ENGINE_H

#include "session.h"

#include <chrono>

namespace perftest::ucp {

/* Requests in flight and messages arrived, kept by UCP's callbacks. */
struct flow {
    int64_t sends        = 0;
    int64_t recvs        = 0;
    uint64_t arrived     = 0; /* AM data messages received */
    uint64_t acks        = 0; /* AM acknowledgements received */
    ucs_status_t failure = UCS_OK;
};

constexpr ucp_tag_t DATA_TAG  = 0x5045524654455354ull; /* "PERFTEST" */
constexpr ucp_tag_t ACK_TAG   = 0x5045524641434b00ull;
constexpr unsigned DATA_AM_ID = 1;
/* -o: how long the initiator waits for a completion that needs no peer. */
constexpr std::chrono::seconds IDLE_PEER_TIMEOUT{10};
constexpr unsigned ACK_AM_ID = 2;

template <ucp_cmd CMD>
class engine {
public:
    engine(session &s, const test_spec &spec, std::string *error);
    ~engine();

    /* Warm-up, then the measured run (timed into tl on the initiator). */
    run_status run(bool initiator, perf::timeline *tl);

    /* The parts of run() for -T, where each thread runs its engine's
     * phases and the caller keeps the barriers: handlers and the
     * timeline's room, one phase, the handlers' removal. */
    bool begin(bool initiator, perf::timeline *tl);
    bool phase(bool initiator, uint64_t count, perf::timeline *tl);
    bool end();

private:
    static constexpr bool TWO_SIDED = !is_one_sided(CMD);

    template <bool TIMED>
    bool pingpong_initiator(uint64_t count, perf::timeline *tl);
    bool pingpong_responder(uint64_t count);
    template <bool TIMED>
    bool stream_initiator(uint64_t count, perf::timeline *tl);
    bool stream_responder(uint64_t count);

    bool post_send();
    bool post_recv();
    bool probe_recv();
    bool stream_recv_data();
    bool idle_peer_stuck(std::chrono::steady_clock::time_point *since);
    bool wait_message();
    bool send_ack();
    bool wait_ack();
    bool flush();
    bool set_am_handlers(bool install);

    template <typename Done>
    bool wait_until(Done done);
    bool track(ucs_status_ptr_t request, int64_t *in_flight);
    bool fail(const std::string &why);

    uint8_t next_sn()
    {
        uint8_t sn = sn_;
        sn_        = uint8_t((sn_ + 1) % 0xff);
        return sn;
    }
    uint8_t last_byte_received() const
    {
        return __atomic_load_n(s_.recv_buffer() + s_.length() - 1, __ATOMIC_ACQUIRE);
    }

    static void send_done(void *request, ucs_status_t status, void *user_data);
    static void tag_recv_done(void *request, ucs_status_t status, const ucp_tag_recv_info_t *info,
                              void *user_data);
    static void stream_recv_done(void *request, ucs_status_t status, size_t length,
                                 void *user_data);
    static void am_data_done(void *request, ucs_status_t status, size_t length, void *user_data);
    static ucs_status_t on_am_data(void *arg, const void *header, size_t header_length, void *data,
                                   size_t length, const ucp_am_recv_param_t *param);
    static ucs_status_t on_am_ack(void *arg, const void *header, size_t header_length, void *data,
                                  size_t length, const ucp_am_recv_param_t *param);

    session &s_;
    const test_spec &spec_;
    std::string *error_;
    flow f_;
    ucp_worker_h worker_;
    ucp_ep_h ep_;
    int64_t window_;
    ucp_tag_t recv_mask_;
    ucp_request_param_t send_param_     = {};
    ucp_request_param_t recv_param_     = {};
    ucp_request_param_t am_recv_param_  = {};
    ucp_request_param_t ack_send_param_ = {};
    ucp_request_param_t ack_recv_param_ = {};
    std::vector<uint8_t> am_header_;
    uint64_t operand_        = 1; /* atomics: value added / swapped */
    uint64_t reply_          = 0; /* atomics: fetched value */
    uint8_t ack_buf_[8]      = {};
    size_t stream_length_    = 0;
    size_t stream_carry_     = 0; /* -r recv_data: bytes of the next message */
    uint64_t arrived_target_ = 0;
    uint64_t acks_target_    = 0;
    uint8_t sn_              = 0;
    bool handlers_set_       = false;
};

} // namespace perftest::ucp

#endif
