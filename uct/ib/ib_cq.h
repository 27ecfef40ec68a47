/*
 * The send and receive completion queues of a verbs iface and the
 * completion channel whose fd wakes a sleeping worker. Arming polls the CQs
 * once more: a completion that came before arming raises no event, so what
 * is found then is kept and handed out by the next poll.
 */
#ifndef UCT_IB_IB_CQ_H
#define UCT_IB_IB_CQ_H

#include <ucs/type/status.h>

#include <infiniband/verbs.h>

#include <vector>

namespace uct::ib {

class cq_pair {
public:
    cq_pair() = default;
    ~cq_pair();
    cq_pair(const cq_pair &)            = delete;
    cq_pair &operator=(const cq_pair &) = delete;

    /* `tl` names the transport in error messages. */
    ucs_status_t create(ibv_context *ctx, int send_len, int recv_len, const char *tl);

    ibv_cq *send_cq() const { return send_cq_; }
    ibv_cq *recv_cq() const { return recv_cq_; }
    int fd() const { return channel_->fd; }

    /* Up to `max` completions into `wc` (those kept by arm() first); a
     * failed poll (a CQ overrun) is logged once and returns 0. */
    int poll_send(ibv_wc *wc, int max) { return poll(send_cq_, &kept_send_, wc, max); }
    int poll_recv(ibv_wc *wc, int max) { return poll(recv_cq_, &kept_recv_, wc, max); }

    /* Drains the channel and arms the CQs for `events` (uct event_flag::);
     * UCS_ERR_BUSY when completions are already there. */
    ucs_status_t arm(unsigned events);

private:
    int poll(ibv_cq *cq, std::vector<ibv_wc> *kept, ibv_wc *wc, int max);
    void drain_channel();

    const char *tl_            = "";
    ibv_comp_channel *channel_ = nullptr;
    ibv_cq *send_cq_           = nullptr;
    ibv_cq *recv_cq_           = nullptr;
    std::vector<ibv_wc> kept_send_;
    std::vector<ibv_wc> kept_recv_;
    bool failure_reported_ = false;
};

} // namespace uct::ib

#endif
