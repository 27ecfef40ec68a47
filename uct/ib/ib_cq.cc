#include <uct/ib/ib_cq.h>

#include <uct/base/uct_types.h>
#include <ucs/debug/log.h>

#include <fcntl.h>

#include <algorithm>

namespace uct::ib {

namespace {

constexpr int ARM_POLL_BATCH = 16;

} // namespace

cq_pair::~cq_pair()
{
    /* A CQ with unacknowledged events cannot be destroyed. */
    drain_channel();
    for (ibv_cq *cq : {send_cq_, recv_cq_}) {
        if (cq != nullptr) {
            ibv_destroy_cq(cq);
        }
    }
    if (channel_ != nullptr) {
        ibv_destroy_comp_channel(channel_);
    }
}

ucs_status_t cq_pair::create(ibv_context *ctx, int send_len, int recv_len, const char *tl)
{
    tl_      = tl;
    channel_ = ibv_create_comp_channel(ctx);
    if (channel_ == nullptr) {
        ucs_error("%s: ibv_create_comp_channel failed: %m", tl);
        return UCS_ERR_IO_ERROR;
    }
    const int fl = ::fcntl(channel_->fd, F_GETFL);
    if ((fl < 0) || (::fcntl(channel_->fd, F_SETFL, fl | O_NONBLOCK) != 0)) {
        ucs_error("%s: cannot make the completion channel non-blocking: %m", tl);
        return UCS_ERR_IO_ERROR;
    }
    send_cq_ = ibv_create_cq(ctx, send_len, nullptr, channel_, 0);
    recv_cq_ = ibv_create_cq(ctx, recv_len, nullptr, channel_, 0);
    if ((send_cq_ == nullptr) || (recv_cq_ == nullptr)) {
        ucs_error("%s: ibv_create_cq failed: %m", tl);
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

int cq_pair::poll(ibv_cq *cq, std::vector<ibv_wc> *kept, ibv_wc *wc, int max)
{
    if (ucs_unlikely(!kept->empty())) {
        const int n = std::min(max, int(kept->size()));
        std::copy(kept->begin(), kept->begin() + n, wc);
        kept->erase(kept->begin(), kept->begin() + n);
        return n;
    }
    const int n = ibv_poll_cq(cq, max, wc);
    if (ucs_unlikely(n < 0)) {
        /* A CQ overrun: the device lost completions, nothing here recovers it. */
        if (!failure_reported_) {
            failure_reported_ = true;
            ucs_error("%s: polling a CQ failed (%d): the CQ overran", tl_, n);
        }
        return 0;
    }
    return n;
}

void cq_pair::drain_channel()
{
    if (channel_ == nullptr) {
        return;
    }
    ibv_cq *cq   = nullptr;
    void *cq_ctx = nullptr;
    while (ibv_get_cq_event(channel_, &cq, &cq_ctx) == 0) {
        ibv_ack_cq_events(cq, 1);
    }
}

ucs_status_t cq_pair::arm(unsigned events)
{
    drain_channel();
    if (!kept_send_.empty() || !kept_recv_.empty()) {
        return UCS_ERR_BUSY;
    }
    const bool send = (events & event_flag::SEND_COMP) != 0;
    const bool recv = (events & (event_flag::RECV | event_flag::RECV_SIG)) != 0;
    if ((send && (ibv_req_notify_cq(send_cq_, 0) != 0)) ||
        (recv && (ibv_req_notify_cq(recv_cq_, 0) != 0))) {
        ucs_error("%s: ibv_req_notify_cq failed", tl_);
        return UCS_ERR_IO_ERROR;
    }
    ibv_wc wc[ARM_POLL_BATCH];
    int n = ibv_poll_cq(send_cq_, ARM_POLL_BATCH, wc);
    kept_send_.assign(wc, wc + std::max(n, 0));
    n = ibv_poll_cq(recv_cq_, ARM_POLL_BATCH, wc);
    kept_recv_.assign(wc, wc + std::max(n, 0));
    return (kept_send_.empty() && kept_recv_.empty()) ? UCS_OK : UCS_ERR_BUSY;
}

} // namespace uct::ib
