#include "soak_traffic.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace soak {

namespace {

constexpr size_t MAX_OFFSET   = 64;
constexpr size_t GUARD_SIZE   = 64;
constexpr uint8_t GUARD_BYTE  = 0xa5; /* around every receive region */
constexpr uint8_t CANARY_BYTE = 0x3c; /* inside a receive that is cancelled */

/* recv_info as posted: a completion must overwrite both. */
constexpr ucp_tag_t UNFILLED_TAG = ~ucp_tag_t(0);
constexpr size_t UNFILLED_LENGTH = SIZE_MAX;

double unix_now()
{
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

size_t buffer_capacity(size_t max_size)
{
    return max_size + MAX_OFFSET + GUARD_SIZE;
}

} // namespace

void failure_record::note(ucs_status_t s, const char *what)
{
    if (!seen) {
        seen      = true;
        status    = s;
        unix_time = unix_now();
        where     = what;
    }
}

slot_buffer::slot_buffer(size_t capacity) : capacity_(capacity)
{
    reallocate();
}

slot_buffer::~slot_buffer()
{
    std::free(data_);
}

bool slot_buffer::reallocate()
{
    std::free(data_);
    data_ = static_cast<uint8_t *>(std::malloc(capacity_));
    if (data_ == nullptr) {
        std::fprintf(stderr, "soak: cannot allocate %zu bytes\n", capacity_);
        std::abort();
    }
    std::memset(data_, 0x11, capacity_); /* not 0: malloc+memset(0) may become calloc, untouched */
    return true;
}

/* ---------------------------------------------------------------- sender */

struct sender::slot {
    explicit slot(size_t capacity) : buffer(capacity) {}
    slot_buffer buffer;
    sender *owner = nullptr;
    bool busy     = false;
    size_t size   = 0;
    bool sync     = false;
};

sender::sender(ucp_ep_h ep, const traffic_config &config, failure_record *failure) :
    ep_(ep), config_(config), failure_(failure)
{
    for (unsigned i = 0; i < config.window; ++i) {
        slots_.push_back(std::make_unique<slot>(buffer_capacity(config.max_size)));
        slots_.back()->owner = this;
    }
}

sender::~sender() = default;

void sender::on_send(void *request, ucs_status_t status, void *user_data)
{
    auto *s = static_cast<slot *>(user_data);
    s->owner->complete(*s, status);
    ucp_request_free(request);
}

void sender::complete(slot &s, ucs_status_t status)
{
    if (s.busy) {
        s.busy = false;
        --in_flight_;
    }
    if (status != UCS_OK) {
        failure_->note(status, "send request");
        return;
    }
    ++stats_.messages;
    stats_.bytes += s.size;
    stats_.sync_sends += s.sync;
}

bool sender::start_sends(bool more)
{
    bool started = false;
    while (more && (in_flight_ < config_.window) && !failure_->seen) {
        slot &s = *slots_[next_seq_ % config_.window];
        if (s.busy) {
            break; /* sends may complete out of order: keep slots in ring order */
        }
        const uint64_t seq   = next_seq_;
        const message_plan p = plan_message(config_.tx_seed, seq, config_.max_size);
        if (p.fresh_buffer) {
            s.buffer.reallocate();
        }
        uint8_t *data = s.buffer.data() + p.offset;
        fill_pattern(data, p.size, message_key(config_.tx_seed, seq));

        ucp_request_param_t param{};
        param.op_attr_mask   = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
        param.cb.send        = on_send;
        param.user_data      = &s;
        const ucp_tag_t tag  = message_tag(seq, p.recv);
        s.size               = p.size;
        s.sync               = (p.send == send_kind::sync);
        ucs_status_ptr_t req = s.sync ? ucp_tag_send_sync_nbx(ep_, data, p.size, tag, &param) :
                                        ucp_tag_send_nbx(ep_, data, p.size, tag, &param);
        ++next_seq_;
        issued_bytes_ += p.size;
        started = true;
        if (req == nullptr) {
            complete(s, UCS_OK);
        } else if (UCS_PTR_IS_ERR(req)) {
            complete(s, UCS_PTR_STATUS(req));
        } else {
            s.busy = true;
            ++in_flight_;
        }
    }
    return started;
}

/* -------------------------------------------------------------- receiver */

struct receiver::slot {
    explicit slot(size_t capacity) : buffer(capacity) {}

    enum class state { idle, posted, completed, finished };

    slot_buffer buffer;
    receiver *owner = nullptr;
    state st        = state::idle;
    uint64_t seq    = 0;
    message_plan plan{};
    void *request        = nullptr;
    bool first_of_cancel = false; /* cancel kind: the receive cancelled at once */
    bool cancel_at_end   = false; /* posted for a message never sent */
    ucs_status_t status  = UCS_OK;
    ucp_tag_recv_info_t info{};

    uint8_t *region() { return buffer.data() + plan.offset; }
};

receiver::receiver(ucp_worker_h worker, const traffic_config &config, failure_record *failure) :
    worker_(worker), config_(config), failure_(failure)
{
    for (unsigned i = 0; i < config.window; ++i) {
        slots_.push_back(std::make_unique<slot>(buffer_capacity(config.max_size)));
        slots_.back()->owner = this;
    }
}

receiver::~receiver() = default;

void receiver::on_recv(void *request, ucs_status_t status, const ucp_tag_recv_info_t *info,
                       void *user_data)
{
    auto *s   = static_cast<slot *>(user_data);
    s->status = status;
    if ((status == UCS_OK) && (info != nullptr)) {
        s->info = *info;
    }
    s->st      = slot::state::completed;
    s->request = nullptr;
    --s->owner->posted_;
    ucp_request_free(request);
}

/* Posts a receive (msg == nullptr) or takes a probed message into slot s. */
ucs_status_ptr_t receiver::post(slot &s, ucp_tag_t tag, ucp_tag_t mask, ucp_tag_message_h msg)
{
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                         UCP_OP_ATTR_FIELD_RECV_INFO;
    param.cb.recv            = on_recv;
    param.user_data          = &s;
    param.recv_info.tag_info = &s.info;

    s.st   = slot::state::posted;
    s.info = {UNFILLED_TAG, UNFILLED_LENGTH};
    ++posted_;
    ucs_status_ptr_t req = (msg == nullptr) ?
                               ucp_tag_recv_nbx(worker_, s.region(), s.plan.size, tag, mask,
                                                &param) :
                               ucp_tag_msg_recv_nbx(worker_, s.region(), s.plan.size, msg, &param);
    if ((req == nullptr) || UCS_PTR_IS_ERR(req)) {
        /* Done at once (info filled by the call) or failed: no callback. */
        s.status = UCS_PTR_STATUS(req);
        s.st     = slot::state::completed;
        if ((req == nullptr) && (s.info.sender_tag == UNFILLED_TAG) &&
            (s.info.length == UNFILLED_LENGTH)) {
            /* UCX before 1.16 leaves recv_info unfilled here (upstream
             * df0798c "Populate tag_info on immediate completion"). */
            ++stats_.imm_info_missing;
            if (config_.allow_missing_imm_info) {
                s.info = {message_tag(s.seq, s.plan.recv), s.plan.size};
            }
        }
        --posted_;
        return req;
    }
    if (s.st == slot::state::posted) {
        s.request = req;
    }
    return req;
}

/* Takes message next_post_ as its plan says; false when it must wait. */
bool receiver::post_next()
{
    if ((next_post_ >= total_) || (next_post_ - next_done_ >= config_.window) || failure_->seen) {
        return false;
    }
    if (cancel_pending_ != nullptr) {
        /* Until the cancelled receive has ended, a wildcard posted for a
         * later message could take this one. */
        if (cancel_pending_->first_of_cancel && (cancel_pending_->st != slot::state::finished)) {
            return false;
        }
        cancel_pending_ = nullptr;
    }
    slot &s = *slots_[next_post_ % config_.window];
    if (s.st != slot::state::idle) {
        return false; /* the previous user of the slot is not finished yet */
    }

    const uint64_t seq   = next_post_;
    const message_plan p = plan_message(config_.rx_seed, seq, config_.max_size);
    const ucp_tag_t tag  = message_tag(seq, p.recv);
    const ucp_tag_t full = ~ucp_tag_t(0);

    ucp_tag_message_h msg = nullptr;
    if (p.recv == recv_kind::unexpected) {
        ucp_tag_recv_info_t info;
        if (ucp_tag_probe_nb(worker_, tag, full, 0, &info) == nullptr) {
            return false; /* not arrived yet: it will be unexpected */
        }
    } else if (p.recv == recv_kind::probe) {
        ucp_tag_recv_info_t info;
        msg = p.full_wildcard ? ucp_tag_probe_nb(worker_, 0, 0, 1, &info) :
                                ucp_tag_probe_nb(worker_, tag, full, 1, &info);
        if (msg == nullptr) {
            return false;
        }
        stats_.tag_errors += (info.sender_tag != tag);
        stats_.length_errors += (info.length != p.size);
    }

    s.seq             = seq;
    s.plan            = p;
    s.first_of_cancel = (p.recv == recv_kind::cancel);
    s.cancel_at_end   = false;
    uint8_t *base     = s.buffer.data();
    if (p.fresh_buffer) {
        s.buffer.reallocate();
        base = s.buffer.data();
    }
    std::memset(base, GUARD_BYTE, p.offset);
    std::memset(base + p.offset + p.size, GUARD_BYTE, GUARD_SIZE);

    if (p.recv == recv_kind::cancel) {
        /* Cancelled before any progress: it can only have matched a message
         * that had arrived already, at posting time. */
        std::memset(s.region(), CANARY_BYTE, p.size);
        ucs_status_ptr_t req = post(s, tag, p.full_wildcard ? 0 : full, nullptr);
        if ((req != nullptr) && !UCS_PTR_IS_ERR(req)) {
            ucp_request_cancel(worker_, req);
        }
        cancel_pending_ = &s;
        ++next_post_;
        return true;
    }

    const ucp_tag_t mask = (p.recv == recv_kind::wildcard) ? (p.full_wildcard ? 0 : TAG_KIND_MASK) :
                                                             full;
    post(s, tag, mask, msg);
    ++next_post_;
    return true;
}

/* A completed request: check it, or post the second receive of a cancel. */
void receiver::finish(slot &s)
{
    const ucp_tag_t tag = message_tag(s.seq, s.plan.recv);
    uint8_t *base       = s.buffer.data();
    stats_.guard_bytes += count_not(base, s.plan.offset, GUARD_BYTE) +
                          count_not(base + s.plan.offset + s.plan.size, GUARD_SIZE, GUARD_BYTE);

    if (s.status == UCS_ERR_CANCELED) {
        if (s.cancel_at_end) {
            ++stats_.cancelled_at_end;
            s.first_of_cancel = false;
            s.st              = slot::state::finished;
        } else if (s.first_of_cancel) {
            /* Must not have consumed anything: the message goes to the next one. */
            stats_.canary_bytes += count_not(s.region(), s.plan.size, CANARY_BYTE);
            ++stats_.cancelled;
            s.first_of_cancel = false;
            post(s, tag, ~ucp_tag_t(0), nullptr);
        } else {
            ++stats_.status_errors; /* cancelled though nobody cancelled it */
            s.st = slot::state::finished;
        }
        return;
    }
    if (s.status != UCS_OK) {
        failure_->note(s.status, "receive request");
        s.first_of_cancel = false;
        s.st              = slot::state::finished;
        return;
    }
    if (s.cancel_at_end) {
        ++stats_.status_errors; /* matched a message that was never sent */
    }
    if (s.first_of_cancel) {
        ++stats_.cancel_too_late; /* it had matched at posting time: keeps the data */
        s.first_of_cancel = false;
    }
    stats_.tag_errors += (s.info.sender_tag != tag);
    stats_.length_errors += (s.info.length != s.plan.size);
    stats_.corrupt_bytes += count_corrupt_bytes(s.region(), s.plan.size,
                                                message_key(config_.rx_seed, s.seq));
    ++stats_.messages;
    ++stats_.by_kind[unsigned(s.plan.recv)];
    stats_.bytes += s.plan.size;
    s.st = slot::state::finished;
}

bool receiver::advance()
{
    bool moved = false;
    for (uint64_t seq = next_done_; seq < next_post_; ++seq) {
        slot &s = *slots_[seq % config_.window];
        if (s.st == slot::state::completed) {
            finish(s);
            moved = true;
        }
    }
    while ((next_done_ < next_post_) &&
           (slots_[next_done_ % config_.window]->st == slot::state::finished)) {
        slots_[next_done_ % config_.window]->st = slot::state::idle;
        ++next_done_;
        moved = true;
    }
    while (post_next()) {
        moved = true;
    }
    return moved;
}

void receiver::cancel_slot(slot &s)
{
    if ((s.st == slot::state::posted) && (s.request != nullptr)) {
        ucp_request_cancel(worker_, s.request);
    }
}

void receiver::set_total(uint64_t count)
{
    total_ = count;
    for (uint64_t seq = count; seq < next_post_; ++seq) {
        slot &s         = *slots_[seq % config_.window];
        s.cancel_at_end = true;
        cancel_slot(s);
    }
}

void receiver::cancel_all()
{
    for (auto &s : slots_) {
        if (s->st == slot::state::posted) {
            s->cancel_at_end = true;
            cancel_slot(*s);
        }
    }
}

bool receiver::done() const
{
    return (total_ != UINT64_MAX) && (next_post_ >= total_) && (next_done_ == next_post_) &&
           (posted_ == 0);
}

} // namespace soak
