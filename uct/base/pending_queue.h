/*
 * A FIFO of pending requests linked through their own priv bytes: adding
 * and dispatching allocate nothing.
 */
#ifndef UCT_BASE_PENDING_QUEUE_H
#define UCT_BASE_PENDING_QUEUE_H

#include <uct/base/uct_types.h>

#include <cstring>

namespace uct {

class pending_queue {
public:
    bool empty() const { return head_ == nullptr; }

    void push_back(pending_req *req)
    {
        set_next(req, nullptr);
        if (tail_ == nullptr) {
            head_ = req;
        } else {
            set_next(tail_, req);
        }
        tail_ = req;
    }

    void push_front(pending_req *req)
    {
        set_next(req, head_);
        head_ = req;
        if (tail_ == nullptr) {
            tail_ = req;
        }
    }

    /* Unlinks and returns the first request; nullptr when empty. */
    pending_req *pop_front()
    {
        pending_req *req = head_;
        if (req != nullptr) {
            head_ = next(req);
            if (head_ == nullptr) {
                tail_ = nullptr;
            }
        }
        return req;
    }

    /* Forgets every request without touching them (their owners may be gone). */
    void reset() { head_ = tail_ = nullptr; }

private:
    static pending_req *next(const pending_req *req)
    {
        pending_req *n;
        std::memcpy(&n, req->priv, sizeof(n));
        return n;
    }

    static void set_next(pending_req *req, pending_req *n)
    {
        std::memcpy(req->priv, &n, sizeof(n));
    }

    pending_req *head_ = nullptr;
    pending_req *tail_ = nullptr;
};

} // namespace uct

#endif
