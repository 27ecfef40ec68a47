#include "engine.h"

#include <algorithm>
#include <cstring>

namespace perftest::ucp {

template <ucp_cmd CMD>
engine<CMD>::engine(session &s, const test_spec &spec, std::string *error) :
    s_(s), spec_(spec), error_(error), worker_(s.worker()), ep_(s.ep()),
    window_(int64_t(spec.window)), recv_mask_(spec.wildcard ? 0 : ~ucp_tag_t(0)),
    am_header_(spec.am_header, 0x3c)
{
    send_param_.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    send_param_.cb.send      = send_done;
    send_param_.user_data    = &f_;
    if (spec.info().pat == pattern::STREAM_UNI) {
        send_param_.op_attr_mask |= UCP_OP_ATTR_FLAG_MULTI_SEND;
    }
    if constexpr (is_atomic(CMD)) {
        send_param_.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
        send_param_.datatype = ucp_dt_make_contig(s.length());
        if constexpr (CMD != ucp_cmd::ADD) {
            send_param_.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
            send_param_.reply_buffer = &reply_;
        }
    } else if constexpr (TWO_SIDED) {
        send_param_.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
        send_param_.datatype = s.send_datatype();
    }
    if (spec.prereg && !is_atomic(CMD)) {
        send_param_.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
        send_param_.memh = s.send_memh();
    }
    /* GPU buffers are named, as UCX's tool does, sparing the detection. */
    if (spec.send_mem != UCS_MEMORY_TYPE_HOST) {
        send_param_.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMORY_TYPE;
        send_param_.memory_type = ucs_memory_type_t(spec.send_mem);
    }

    recv_param_.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                               UCP_OP_ATTR_FIELD_DATATYPE;
    recv_param_.datatype  = s.recv_datatype();
    recv_param_.user_data = &f_;
    if constexpr (CMD == ucp_cmd::STREAM) {
        recv_param_.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
        recv_param_.flags          = UCP_STREAM_RECV_FLAG_WAITALL;
        recv_param_.cb.recv_stream = stream_recv_done;
    } else {
        recv_param_.cb.recv = tag_recv_done;
    }
    if (spec.recv_mem != UCS_MEMORY_TYPE_HOST) {
        recv_param_.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMORY_TYPE;
        recv_param_.memory_type = ucs_memory_type_t(spec.recv_mem);
    }
    am_recv_param_ = recv_param_;
    am_recv_param_.op_attr_mask &= ~uint32_t(UCP_OP_ATTR_FIELD_FLAGS);
    am_recv_param_.cb.recv_am = am_data_done;
    if (spec.prereg) {
        recv_param_.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
        recv_param_.memh = s.recv_memh();
        am_recv_param_.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
        am_recv_param_.memh = s.recv_memh();
    }

    /* Acknowledgements: one contiguous byte, on the test's own API. */
    ack_send_param_.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    ack_send_param_.cb.send      = send_done;
    ack_send_param_.user_data    = &f_;
    ack_recv_param_              = recv_param_;
    ack_recv_param_.op_attr_mask &= ~uint32_t(UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_MEMH |
                                              UCP_OP_ATTR_FIELD_MEMORY_TYPE);
}

template <ucp_cmd CMD>
engine<CMD>::~engine()
{
    if (handlers_set_) {
        set_am_handlers(false);
    }
}

template <ucp_cmd CMD>
bool engine<CMD>::fail(const std::string &why)
{
    *error_ = why;
    return false;
}

template <ucp_cmd CMD>
template <typename Done>
bool engine<CMD>::wait_until(Done done)
{
    unsigned spins = 0;
    std::chrono::steady_clock::time_point since{};
    while (!done()) {
        s_.progress();
        if (ucs_unlikely(f_.failure != UCS_OK)) {
            return fail(failed("an operation failed", f_.failure));
        }
        if (ucs_unlikely(++spins == PEER_CHECK_SPINS)) {
            spins = 0;
            if (s_.channel().peer_gone()) {
                return fail("the peer went away");
            }
            if (spec_.responder_idle && idle_peer_stuck(&since)) {
                return fail("nothing completed for 10 s while the responder did not "
                            "progress (-o): these transports need the target to progress");
            }
        }
    }
    return true;
}

/* -o: a transport that needs the idle peer's progress never completes. */
template <ucp_cmd CMD>
bool engine<CMD>::idle_peer_stuck(std::chrono::steady_clock::time_point *since)
{
    const auto now = std::chrono::steady_clock::now();
    if (since->time_since_epoch().count() == 0) {
        *since = now;
    }
    return now - *since > IDLE_PEER_TIMEOUT;
}

template <ucp_cmd CMD>
bool engine<CMD>::track(ucs_status_ptr_t request, int64_t *in_flight)
{
    if (ucs_likely(request == nullptr)) {
        return true;
    }
    if (ucs_unlikely(UCS_PTR_IS_ERR(request))) {
        return fail(failed("posting an operation", UCS_PTR_STATUS(request)));
    }
    ++*in_flight;
    return true;
}

template <ucp_cmd CMD>
void engine<CMD>::send_done(void *request, ucs_status_t status, void *user_data)
{
    auto *f = static_cast<flow *>(user_data);
    --f->sends;
    if (status != UCS_OK) {
        f->failure = status;
    }
    ucp_request_free(request);
}

template <ucp_cmd CMD>
void engine<CMD>::tag_recv_done(void *request, ucs_status_t status, const ucp_tag_recv_info_t *,
                                void *user_data)
{
    auto *f = static_cast<flow *>(user_data);
    --f->recvs;
    if (status != UCS_OK) {
        f->failure = status;
    }
    ucp_request_free(request);
}

template <ucp_cmd CMD>
void engine<CMD>::stream_recv_done(void *request, ucs_status_t status, size_t, void *user_data)
{
    auto *f = static_cast<flow *>(user_data);
    --f->recvs;
    if (status != UCS_OK) {
        f->failure = status;
    }
    ucp_request_free(request);
}

template <ucp_cmd CMD>
void engine<CMD>::am_data_done(void *request, ucs_status_t status, size_t, void *user_data)
{
    auto *f = static_cast<flow *>(user_data);
    ++f->arrived;
    if (status != UCS_OK) {
        f->failure = status;
    }
    ucp_request_free(request);
}

template <ucp_cmd CMD>
ucs_status_t engine<CMD>::on_am_data(void *arg, const void *, size_t, void *data, size_t,
                                     const ucp_am_recv_param_t *param)
{
    auto *e = static_cast<engine *>(arg);
    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
        /* Rendezvous: fetch the data into our buffer; counted when there. */
        ucs_status_ptr_t request = ucp_am_recv_data_nbx(e->worker_, data, e->s_.recv_arg(),
                                                        e->s_.recv_count(), &e->am_recv_param_);
        if (request == nullptr) {
            ++e->f_.arrived;
        } else if (UCS_PTR_IS_ERR(request)) {
            e->f_.failure = UCS_PTR_STATUS(request);
        }
        return UCS_OK;
    }
    ++e->f_.arrived;
    return UCS_OK;
}

template <ucp_cmd CMD>
ucs_status_t engine<CMD>::on_am_ack(void *arg, const void *, size_t, void *, size_t,
                                    const ucp_am_recv_param_t *)
{
    ++static_cast<engine *>(arg)->f_.acks;
    return UCS_OK;
}

template <ucp_cmd CMD>
bool engine<CMD>::set_am_handlers(bool install)
{
    for (unsigned id : {DATA_AM_ID, ACK_AM_ID}) {
        ucp_am_handler_param_t param = {};
        param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                           UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
        param.id            = id;
        param.flags         = UCP_AM_FLAG_WHOLE_MSG;
        param.cb            = install ? ((id == DATA_AM_ID) ? on_am_data : on_am_ack) : nullptr;
        param.arg           = this;
        ucs_status_t status = ucp_worker_set_am_recv_handler(worker_, &param);
        if (status != UCS_OK) {
            return fail(failed("ucp_worker_set_am_recv_handler", status));
        }
    }
    handlers_set_ = install;
    return true;
}

template <ucp_cmd CMD>
bool engine<CMD>::post_send()
{
    if (ucs_unlikely(f_.sends >= window_) && !wait_until([this] { return f_.sends < window_; })) {
        return false;
    }
    ucs_status_ptr_t request;
    if constexpr (CMD == ucp_cmd::TAG) {
        request = ucp_tag_send_nbx(ep_, s_.send_arg(), s_.send_count(), DATA_TAG, &send_param_);
    } else if constexpr (CMD == ucp_cmd::TAG_SYNC) {
        request = ucp_tag_send_sync_nbx(ep_, s_.send_arg(), s_.send_count(), DATA_TAG,
                                        &send_param_);
    } else if constexpr (CMD == ucp_cmd::STREAM) {
        request = ucp_stream_send_nbx(ep_, s_.send_arg(), s_.send_count(), &send_param_);
    } else if constexpr (CMD == ucp_cmd::AM) {
        request = ucp_am_send_nbx(ep_, DATA_AM_ID, am_header_.data(), am_header_.size(),
                                  s_.send_arg(), s_.send_count(), &send_param_);
    } else if constexpr (CMD == ucp_cmd::PUT) {
        request = ucp_put_nbx(ep_, s_.send_buffer(), s_.length(), s_.remote_address(), s_.rkey(),
                              &send_param_);
    } else if constexpr (CMD == ucp_cmd::PUT_FLUSH) {
        request = ucp_put_nbx(ep_, s_.send_buffer(), s_.length(), s_.remote_address(), s_.rkey(),
                              &send_param_);
        if (!track(request, &f_.sends)) {
            return false;
        }
        request = ucp_ep_flush_nbx(ep_, &send_param_);
    } else if constexpr (CMD == ucp_cmd::GET) {
        request = ucp_get_nbx(ep_, s_.send_buffer(), s_.length(), s_.remote_address(), s_.rkey(),
                              &send_param_);
    } else {
        constexpr ucp_atomic_op_t op = (CMD == ucp_cmd::SWAP)  ? UCP_ATOMIC_OP_SWAP :
                                       (CMD == ucp_cmd::CSWAP) ? UCP_ATOMIC_OP_CSWAP :
                                                                 UCP_ATOMIC_OP_ADD;
        request = ucp_atomic_op_nbx(ep_, op, &operand_, 1, s_.remote_address(), s_.rkey(),
                                    &send_param_);
    }
    return track(request, &f_.sends);
}

/* -U: the message is left unexpected until a probe finds it. */
template <ucp_cmd CMD>
bool engine<CMD>::probe_recv()
{
    ucp_tag_message_h message = nullptr;
    ucp_tag_recv_info_t info;
    if (!wait_until([&] {
            message = ucp_tag_probe_nb(worker_, DATA_TAG, recv_mask_, 1, &info);
            return message != nullptr;
        })) {
        return false;
    }
    return track(ucp_tag_msg_recv_nbx(worker_, s_.recv_arg(), s_.recv_count(), message,
                                      &recv_param_),
                 &f_.recvs);
}

/* -r recv_data: takes the stream's data where UCP holds it, a message's
 * worth, and releases it (bytes of the next message are kept for it). */
template <ucp_cmd CMD>
bool engine<CMD>::stream_recv_data()
{
    size_t need = s_.length();
    return wait_until([&] {
        while (need > 0) {
            if (stream_carry_ > 0) {
                size_t take = std::min(stream_carry_, need);
                stream_carry_ -= take;
                need -= take;
                continue;
            }
            size_t length         = 0;
            ucs_status_ptr_t data = ucp_stream_recv_data_nb(ep_, &length);
            if (data == nullptr) {
                return false;
            }
            if (UCS_PTR_IS_ERR(data)) {
                f_.failure = UCS_PTR_STATUS(data);
                return false;
            }
            stream_carry_ += length;
            ucp_stream_data_release(ep_, data);
        }
        return true;
    });
}

template <ucp_cmd CMD>
bool engine<CMD>::post_recv()
{
    if constexpr ((CMD == ucp_cmd::TAG) || (CMD == ucp_cmd::TAG_SYNC)) {
        if (spec_.tag_probe) {
            return probe_recv();
        }
    }
    if constexpr (CMD == ucp_cmd::STREAM) {
        if (spec_.stream_recv_data) {
            return stream_recv_data();
        }
    }
    if (ucs_unlikely(f_.recvs >= window_) && !wait_until([this] { return f_.recvs < window_; })) {
        return false;
    }
    ucs_status_ptr_t request;
    if constexpr (CMD == ucp_cmd::STREAM) {
        request = ucp_stream_recv_nbx(ep_, s_.recv_arg(), s_.recv_count(), &stream_length_,
                                      &recv_param_);
    } else {
        request = ucp_tag_recv_nbx(worker_, s_.recv_arg(), s_.recv_count(), DATA_TAG, recv_mask_,
                                   &recv_param_);
    }
    return track(request, &f_.recvs);
}

/* Ping-pong: waits for the peer's next message. */
template <ucp_cmd CMD>
bool engine<CMD>::wait_message()
{
    if constexpr (CMD == ucp_cmd::AM) {
        ++arrived_target_;
        return wait_until([this] { return f_.arrived >= arrived_target_; });
    } else if constexpr (CMD == ucp_cmd::PUT) {
        uint8_t sn = next_sn();
        return wait_until([this, sn] { return last_byte_received() == sn; });
    } else {
        return post_recv() && wait_until([this] { return f_.recvs == 0; });
    }
}

template <ucp_cmd CMD>
bool engine<CMD>::send_ack()
{
    ucs_status_ptr_t request;
    if constexpr (CMD == ucp_cmd::STREAM) {
        request = ucp_stream_send_nbx(ep_, ack_buf_, 1, &ack_send_param_);
    } else if constexpr (CMD == ucp_cmd::AM) {
        request = ucp_am_send_nbx(ep_, ACK_AM_ID, nullptr, 0, ack_buf_, 1, &ack_send_param_);
    } else {
        request = ucp_tag_send_nbx(ep_, ack_buf_, 1, ACK_TAG, &ack_send_param_);
    }
    return track(request, &f_.sends) && wait_until([this] { return f_.sends == 0; });
}

template <ucp_cmd CMD>
bool engine<CMD>::wait_ack()
{
    if constexpr (CMD == ucp_cmd::AM) {
        ++acks_target_;
        return wait_until([this] { return f_.acks >= acks_target_; });
    } else {
        ucs_status_ptr_t request;
        if constexpr (CMD == ucp_cmd::STREAM) {
            request = ucp_stream_recv_nbx(ep_, ack_buf_, 1, &stream_length_, &ack_recv_param_);
        } else {
            request = ucp_tag_recv_nbx(worker_, ack_buf_, 1, ACK_TAG, ~ucp_tag_t(0),
                                       &ack_recv_param_);
        }
        return track(request, &f_.recvs) && wait_until([this] { return f_.recvs == 0; });
    }
}

template <ucp_cmd CMD>
bool engine<CMD>::flush()
{
    ucp_request_param_t param = {};
    param.op_attr_mask        = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send             = send_done;
    param.user_data           = &f_;
    return track(ucp_ep_flush_nbx(ep_, &param), &f_.sends) &&
           wait_until([this] { return f_.sends == 0; });
}

template <ucp_cmd CMD>
template <bool TIMED>
bool engine<CMD>::pingpong_initiator(uint64_t count, perf::timeline *tl)
{
    for (uint64_t i = 0; i < count; ++i) {
        if constexpr (CMD == ucp_cmd::PUT) {
            s_.send_buffer()[s_.length() - 1] = sn_;
        }
        if (!post_send() || !wait_message()) {
            return false;
        }
        if constexpr (TIMED) {
            tl->iteration_done();
        }
    }
    if constexpr (TIMED) {
        tl->stop();
    }
    return wait_until([this] { return f_.sends == 0; });
}

template <ucp_cmd CMD>
bool engine<CMD>::pingpong_responder(uint64_t count)
{
    for (uint64_t i = 0; i < count; ++i) {
        if (!wait_message()) {
            return false;
        }
        if constexpr (CMD == ucp_cmd::PUT) {
            /* wait_message() moved sn_ on; answer with the one it saw. */
            s_.send_buffer()[s_.length() - 1] = last_byte_received();
        }
        if (!post_send()) {
            return false;
        }
    }
    return wait_until([this] { return f_.sends == 0; });
}

template <ucp_cmd CMD>
template <bool TIMED>
bool engine<CMD>::stream_initiator(uint64_t count, perf::timeline *tl)
{
    for (uint64_t i = 0; i < count; ++i) {
        if (!post_send()) {
            return false;
        }
        if constexpr (TIMED) {
            tl->iteration_done();
        }
    }
    if (!wait_until([this] { return f_.sends == 0; })) {
        return false;
    }
    bool done;
    if constexpr (TWO_SIDED) {
        done = wait_ack();
    } else {
        done = flush();
    }
    if constexpr (TIMED) {
        tl->stop();
    }
    return done;
}

template <ucp_cmd CMD>
bool engine<CMD>::stream_responder(uint64_t count)
{
    if constexpr (!TWO_SIDED) {
        /* Nothing to do: the barrier after the phase keeps progressing. */
        (void)count;
        return true;
    } else {
        if constexpr (CMD == ucp_cmd::AM) {
            arrived_target_ += count;
            if (!wait_until([this] { return f_.arrived >= arrived_target_; })) {
                return false;
            }
        } else {
            for (uint64_t i = 0; i < count; ++i) {
                if (!post_recv()) {
                    return false;
                }
                /* A stream receive takes the next bytes: one at a time. */
                if ((CMD == ucp_cmd::STREAM) && !wait_until([this] { return f_.recvs == 0; })) {
                    return false;
                }
            }
            if (!wait_until([this] { return f_.recvs == 0; })) {
                return false;
            }
        }
        return send_ack();
    }
}

template <ucp_cmd CMD>
bool engine<CMD>::phase(bool initiator, uint64_t count, perf::timeline *tl)
{
    const bool pingpong = spec_.info().pat == pattern::PINGPONG;
    if (!initiator) {
        return pingpong ? pingpong_responder(count) : stream_responder(count);
    }
    if (tl != nullptr) {
        tl->start();
        return pingpong ? pingpong_initiator<true>(count, tl) : stream_initiator<true>(count, tl);
    }
    return pingpong ? pingpong_initiator<false>(count, nullptr) :
                      stream_initiator<false>(count, nullptr);
}

template <ucp_cmd CMD>
bool engine<CMD>::begin(bool initiator, perf::timeline *tl)
{
    if ((CMD == ucp_cmd::AM) && !set_am_handlers(true)) {
        return false;
    }
    if (initiator) {
        tl->prepare(spec_.iters);
    }
    return true;
}

template <ucp_cmd CMD>
bool engine<CMD>::end()
{
    return (CMD != ucp_cmd::AM) || set_am_handlers(false);
}

template <ucp_cmd CMD>
run_status engine<CMD>::run(bool initiator, perf::timeline *tl)
{
    if (!begin(initiator, tl)) {
        return run_status::FATAL;
    }
    if (!s_.progress_barrier()) {
        fail("the peer went away before the test");
        return run_status::FATAL;
    }
    /* The responder waits here while the initiator runs a phase: -o makes
     * it wait without progressing. */
    auto barrier = [&] {
        return (spec_.responder_idle && !initiator) ? s_.channel().barrier() :
                                                      s_.progress_barrier();
    };
    if (spec_.warmup > 0) {
        if (!phase(initiator, spec_.warmup, nullptr)) {
            return run_status::FATAL;
        }
        if (!barrier()) {
            fail("the peer went away after the warm-up");
            return run_status::FATAL;
        }
    }
    if (!phase(initiator, spec_.iters, initiator ? tl : nullptr)) {
        return run_status::FATAL;
    }
    /* -o: the idle responder must not move on to closing (and progress)
     * before the initiator is done. */
    if (spec_.responder_idle && !barrier()) {
        fail("the peer went away during the test");
        return run_status::FATAL;
    }
    return end() ? run_status::OK : run_status::FATAL;
}

template class engine<ucp_cmd::TAG>;
template class engine<ucp_cmd::TAG_SYNC>;
template class engine<ucp_cmd::PUT>;
template class engine<ucp_cmd::GET>;
template class engine<ucp_cmd::PUT_FLUSH>;
template class engine<ucp_cmd::ADD>;
template class engine<ucp_cmd::FADD>;
template class engine<ucp_cmd::SWAP>;
template class engine<ucp_cmd::CSWAP>;
template class engine<ucp_cmd::STREAM>;
template class engine<ucp_cmd::AM>;

} // namespace perftest::ucp
