#include <uct/ib/ib_iface_base.h>

#include <algorithm>
#include <cstddef>

namespace uct::ib {

ib_ep_base::ib_ep_base(ib_iface_base &iface) : ep(iface), base_(iface)
{
}

ib_ep_base::~ib_ep_base()
{
    *alive_ = false;
}

ucs_status_t ib_ep_base::pending_add(pending_req *req, unsigned)
{
    if (ready() == UCS_OK) {
        return UCS_ERR_BUSY;
    }
    pending_.push_back(req);
    base_.schedule_pending(this);
    return UCS_OK;
}

void ib_ep_base::pending_purge(pending_purge_callback_t cb, void *arg)
{
    while (pending_req *req = pending_.pop_front()) {
        cb(req, arg);
    }
}

unsigned ib_ep_base::dispatch_pending()
{
    unsigned count                    = 0;
    const std::shared_ptr<bool> alive = alive_;
    dispatching_                      = true;
    while (!pending_.empty() && (ready() == UCS_OK)) {
        pending_req *req          = pending_.pop_front();
        const ucs_status_t status = req->func(req);
        if (!*alive) {
            return count;
        }
        if ((status == UCS_ERR_NO_RESOURCE) || (status == UCS_INPROGRESS)) {
            pending_.push_front(req); /* stays first */
            break;
        }
        ++count;
    }
    dispatching_ = false;
    return count;
}

ib_iface_base::ib_iface_base(const iface_params &params) :
    err_handler_(params.err_handler), err_arg_(params.err_handler_arg)
{
}

void ib_iface_base::remove_ep(uint32_t key, ib_ep_base *ep)
{
    auto it = eps_.find(key);
    if ((it != eps_.end()) && (it->second == ep)) {
        eps_.erase(it);
    }
    pending_eps_.erase(std::remove(pending_eps_.begin(), pending_eps_.end(), ep),
                       pending_eps_.end());
    errors_.erase(std::remove_if(errors_.begin(), errors_.end(),
                                 [ep](const auto &e) { return e.first == ep; }),
                  errors_.end());
}

void ib_iface_base::schedule_pending(ib_ep_base *ep)
{
    if (std::find(pending_eps_.begin(), pending_eps_.end(), ep) == pending_eps_.end()) {
        pending_eps_.push_back(ep);
    }
}

void ib_iface_base::report(ib_ep_base *ep, ucs_status_t status)
{
    errors_.emplace_back(ep, status);
}

unsigned ib_iface_base::report_errors()
{
    unsigned count = 0;
    while (!errors_.empty()) {
        auto [ep, status] = errors_.front();
        errors_.pop_front();
        if (err_handler_ != nullptr) {
            err_handler_(err_arg_, ep, status);
        }
        ++count;
    }
    return count;
}

unsigned ib_iface_base::dispatch_pending()
{
    unsigned count = 0;
    for (size_t i = 0; i < pending_eps_.size();) {
        ib_ep_base *ep = pending_eps_[i];
        count += ep->dispatch_pending();
        /* A request may have destroyed eps, this one included. */
        if ((i < pending_eps_.size()) && (pending_eps_[i] == ep)) {
            if (ep->has_pending()) {
                ++i;
            } else {
                pending_eps_.erase(pending_eps_.begin() + ptrdiff_t(i));
            }
        }
    }
    return count;
}

void ib_iface_base::flush_waiter_done(completion *self)
{
    static_assert(offsetof(flush_waiter, inner) == 0);
    auto *waiter     = reinterpret_cast<flush_waiter *>(self);
    completion *user = waiter->user;
    waiter->user     = nullptr; /* free for the next iface flush */
    invoke_completion(user, self->status);
}

ucs_status_t ib_iface_base::flush(unsigned flags, completion *comp)
{
    /* All or nothing: no ep starts a flush unless each one can. */
    for (const auto &[key, ep] : eps_) {
        if (!ep->flush_ready()) {
            return UCS_ERR_NO_RESOURCE;
        }
    }
    flush_waiter *waiter = nullptr;
    if (comp != nullptr) {
        for (auto &w : flush_waiters_) {
            if (w->user == nullptr) {
                waiter = w.get();
                break;
            }
        }
        if (waiter == nullptr) {
            flush_waiters_.push_back(std::make_unique<flush_waiter>());
            waiter = flush_waiters_.back().get();
        }
        waiter->inner = {flush_waiter_done, 1, UCS_OK};
        waiter->user  = comp;
    }
    bool outstanding = false;
    for (const auto &[key, ep] : eps_) {
        completion *inner = (waiter != nullptr) ? &waiter->inner : nullptr;
        if (inner != nullptr) {
            ++inner->count;
        }
        const ucs_status_t status = ep->flush(flags, inner);
        if (status == UCS_INPROGRESS) {
            outstanding = true;
        } else if (inner != nullptr) {
            --inner->count;
        }
    }
    if (!outstanding) {
        if (waiter != nullptr) {
            waiter->user = nullptr;
        }
        return UCS_OK;
    }
    if (waiter != nullptr) {
        --waiter->inner.count; /* the initial reference; the eps hold the rest */
    }
    return UCS_INPROGRESS;
}

} // namespace uct::ib
